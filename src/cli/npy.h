/* NumPy .npy files: writing a tensor (format version 1.0), so a run's
 * inputs and outputs open in any numpy tool, and reading one (versions
 * 1.0, 2.0 and 3.0; little-endian, C order, the dtypes of sp_dtype). */
#ifndef SP_CLI_NPY_H
#define SP_CLI_NPY_H

#include "simpler/types.h"

#include <stddef.h>
#include <stdint.h>

#define NPY_ESYMLINK (-2)
#define NPY_EFORMAT (-3)

/* A .npy file's array: dtype, shape and its bytes (malloc'd). */
typedef struct npy_array {
    int dtype; /* sp_dtype; numpy's uint16 reads as SP_DTYPE_U16 (bf16's bits too) */
    int ndim;  /* 1..SP_MAX_DIMS; a 0-d array reads as shape (1,) */
    int64_t shape[SP_MAX_DIMS];
    void *data;
    size_t bytes;
} npy_array;

/* Write the contiguous host data of `t` to `path` (a new file renamed over
 * it). 0; NPY_ESYMLINK, writing nothing, if `path` is a symbolic link; or
 * -1 with errno set. */
int npy_write(const char *path, const sp_tensor *t, const void *data);
/* Read `path` into `out` (free out->data). 0; -1 with errno set (cannot
 * open or read it); or NPY_EFORMAT with the reason in `err`: not a .npy
 * file, truncated, Fortran order, big-endian, a dtype simpler has no
 * match for (object, string, structured, complex), more than SP_MAX_DIMS
 * dimensions or an empty array. */
int npy_read(const char *path, npy_array *out, char *err, size_t err_len);

#endif
