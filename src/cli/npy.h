/* Writing a tensor as a NumPy .npy file (format version 1.0), so a run's
 * inputs and outputs open in any numpy tool. */
#ifndef SP_CLI_NPY_H
#define SP_CLI_NPY_H

#include "simpler/types.h"

#define NPY_ESYMLINK (-2)

/* Write the contiguous host data of `t` to `path` (a new file renamed over
 * it). 0; NPY_ESYMLINK, writing nothing, if `path` is a symbolic link; or
 * -1 with errno set. */
int npy_write(const char *path, const sp_tensor *t, const void *data);

#endif
