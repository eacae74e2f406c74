/* Files found relative to the running executable (build/bin/...): the
 * runtime modules in ../lib, the callables in ../examples and ../bench. */
#ifndef SP_COMMON_PATHS_H
#define SP_COMMON_PATHS_H

#include <stddef.h>

/* "<directory of this executable>/<rel>" into buf. 0, or -1 if the
 * executable cannot be found or the path does not fit. */
int sp__path_beside_exe(char *buf, size_t len, const char *rel);

#endif
