/* Files found relative to the running executable or to the library this
 * code is linked into: the command's data
 * (the examples' callables, the smoke objects), installed or in the build
 * tree, and the build tree's own files (build/bin/... beside ../lib). */
#ifndef SP_COMMON_PATHS_H
#define SP_COMMON_PATHS_H

#include <stddef.h>

/* "<directory of this executable>/<rel>" into buf. 0, or -1 if the
 * executable cannot be found or the path does not fit. */
int sp__path_beside_exe(char *buf, size_t len, const char *rel);

/* The directory of the loaded object that holds `addr` (pass a static
 * function of the caller's: the library it is linked into, or the
 * executable when it is linked statically). 0, or -1 if the loader does
 * not know it or it does not fit. */
int sp__object_dir(const void *addr, char *buf, size_t len);

/* The command's data file `rel` ("examples/bgemm.spc",
 * "smoke/sp_smoke_kernel.so") into buf: the first that exists of
 * <exe dir>/../share/simpler/<rel> (installed: P/bin/simpler, P/share/...)
 * and its place in the build tree (build/examples/, build/lib/ for smoke/).
 * 0, or -1 if neither exists (buf then holds the installed path, for the
 * message) or the path does not fit. */
int sp__data_path(char *buf, size_t len, const char *rel);

#endif
