/* .npy writer: magic, version 1.0, a padded Python-literal header, data. */
#include "cli/npy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "simpler/tensor.h"

static const char *npy_descr(int dtype)
{
    switch (dtype) {
    case SP_DTYPE_F32:
        return "<f4";
    case SP_DTYPE_F16:
        return "<f2";
    case SP_DTYPE_F64:
        return "<f8";
    case SP_DTYPE_I8:
        return "|i1";
    case SP_DTYPE_U8:
        return "|u1";
    case SP_DTYPE_I16:
        return "<i2";
    case SP_DTYPE_U16:
        return "<u2";
    case SP_DTYPE_I32:
        return "<i4";
    case SP_DTYPE_U32:
        return "<u4";
    case SP_DTYPE_I64:
        return "<i8";
    case SP_DTYPE_U64:
        return "<u8";
    case SP_DTYPE_BOOL:
        return "|b1";
    case SP_DTYPE_BF16:
        return "<u2"; /* numpy has no bfloat16: the raw bits */
    default:
        return NULL;
    }
}

int npy_write(const char *path, const sp_tensor *t, const void *data)
{
    const char *descr = npy_descr(t->dtype);
    if (!descr) {
        errno = EINVAL;
        return -1;
    }
    char shape[160] = "";
    size_t n = 0;
    for (int d = 0; d < t->ndim; d++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld,", (long long)t->shape[d]);
    char header[256];
    int len = snprintf(header, sizeof header,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    /* Pad with spaces so magic + lengths + header + '\n' is a multiple of 64. */
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    /* Never through a symbolic link: one planted where an output goes would
     * have it overwrite the link's target. The file is written under a
     * fresh name (O_EXCL) and renamed over `path`, so a link planted after
     * the check is replaced, not followed. */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        errno = ELOOP;
        return NPY_ESYMLINK;
    }
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    mode_t mask = umask(0);
    umask(mask);
    FILE *f = fchmod(fd, 0666 & ~mask) == 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    uint16_t hlen = (uint16_t)(len + pad + 1);
    pre[8] = (unsigned char)(hlen & 0xff);
    pre[9] = (unsigned char)(hlen >> 8);
    fwrite(pre, 1, sizeof pre, f);
    fwrite(header, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    size_t bytes = (size_t)sp_tensor_numel(t) * sp_dtype_size(t->dtype);
    size_t wrote = fwrite(data, 1, bytes, f);
    int rc = fclose(f);
    if (wrote != bytes || rc != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}
