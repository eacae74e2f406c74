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

/* ---- reading ---------------------------------------------------------------
 * The header is a Python dict literal, e.g.
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (64, 32), }
 * numpy writes exactly these three keys; each is looked up by name. */

static const struct {
    char kind;
    int size;
    int dtype;
} npy_types[] = {
    {'f', 2, SP_DTYPE_F16}, {'f', 4, SP_DTYPE_F32}, {'f', 8, SP_DTYPE_F64}, {'i', 1, SP_DTYPE_I8},
    {'u', 1, SP_DTYPE_U8},  {'i', 2, SP_DTYPE_I16}, {'u', 2, SP_DTYPE_U16}, {'i', 4, SP_DTYPE_I32},
    {'u', 4, SP_DTYPE_U32}, {'i', 8, SP_DTYPE_I64}, {'u', 8, SP_DTYPE_U64}, {'b', 1, SP_DTYPE_BOOL},
};

/* The value after 'key': in the header; NULL if the key is absent. */
static const char *header_value(const char *h, const char *key)
{
    char quoted[32];
    const char *p = NULL;
    for (int q = 0; q < 2 && !p; q++) {
        snprintf(quoted, sizeof quoted, q ? "\"%s\"" : "'%s'", key);
        p = strstr(h, quoted);
    }
    if (!p)
        return NULL;
    p += strlen(key) + 2;
    while (*p == ' ')
        p++;
    if (*p++ != ':')
        return NULL;
    while (*p == ' ')
        p++;
    return p;
}

static int parse_descr(const char *v, int *dtype, char *err, size_t err_len)
{
    if (*v == '[' || *v == '{') {
        snprintf(err, err_len, "a structured dtype (%.40s): simpler tensors have one dtype", v);
        return -1;
    }
    if (*v != '\'' && *v != '"') {
        snprintf(err, err_len, "the header's descr is not a string");
        return -1;
    }
    char q = *v++, d[16];
    size_t n = strcspn(v, "'\"");
    if (n == 0 || n >= sizeof d || v[n] != q) {
        snprintf(err, err_len, "the header's descr is malformed");
        return -1;
    }
    memcpy(d, v, n);
    d[n] = '\0';
    char order = d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=' ? d[0] : '=';
    const char *t = order == d[0] ? d + 1 : d;
    char *end;
    long size = strtol(t + 1, &end, 10);
    if (t[0] == 'O') {
        snprintf(err, err_len,
                 "dtype '%s' is numpy's object dtype (Python objects): save a "
                 "numeric array",
                 d);
        return -1;
    }
    for (size_t i = 0; *end == '\0' && i < sizeof npy_types / sizeof npy_types[0]; i++) {
        if (npy_types[i].kind != t[0] || npy_types[i].size != size)
            continue;
        if (order == '>' && size > 1) {
            snprintf(err, err_len,
                     "dtype '%s' is big-endian: save it little-endian "
                     "(a.astype(a.dtype.newbyteorder('<')))",
                     d);
            return -1;
        }
        *dtype = npy_types[i].dtype;
        return 0;
    }
    snprintf(err, err_len,
             "dtype '%s' has no simpler dtype (f2 f4 f8 i1..i8 u1..u8 b1 are "
             "read)",
             d);
    return -1;
}

static int parse_shape(const char *v, npy_array *a, char *err, size_t err_len)
{
    if (*v++ != '(') {
        snprintf(err, err_len, "the header's shape is not a tuple");
        return -1;
    }
    a->ndim = 0;
    for (;;) {
        while (*v == ' ' || *v == ',')
            v++;
        if (*v == ')')
            break;
        char *end;
        errno = 0;
        long long d = strtoll(v, &end, 10);
        if (end == v || errno || d < 0) {
            snprintf(err, err_len, "the header's shape is malformed");
            return -1;
        }
        if (a->ndim == SP_MAX_DIMS) {
            snprintf(err, err_len, "the array has more than %d dimensions", SP_MAX_DIMS);
            return -1;
        }
        a->shape[a->ndim++] = d;
        v = end;
    }
    if (a->ndim == 0) { /* a 0-d array: one element */
        a->ndim = 1;
        a->shape[0] = 1;
    }
    return 0;
}

int npy_read(const char *path, npy_array *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    int rc = NPY_EFORMAT;
    char *header = NULL;
    unsigned char pre[12];
    size_t got = fread(pre, 1, 10, f);
    if (got < 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        snprintf(err, err_len, "not a .npy file (no \\x93NUMPY magic)");
        goto out;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            snprintf(err, err_len, "truncated header");
            goto out;
        }
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 |
               (uint32_t)pre[11] << 24;
    } else {
        snprintf(err, err_len, "format version %u.%u (1.0, 2.0 and 3.0 are read)", pre[6], pre[7]);
        goto out;
    }
    if (hlen > (1u << 20)) {
        snprintf(err, err_len, "a %u-byte header (at most 1 MiB)", hlen);
        goto out;
    }
    header = malloc(hlen + 1);
    if (!header) {
        errno = ENOMEM;
        rc = -1;
        goto out;
    }
    if (fread(header, 1, hlen, f) != hlen) {
        snprintf(err, err_len, "truncated header");
        goto out;
    }
    header[hlen] = '\0';
    /* numpy writes ASCII (3.0 allows UTF-8 in field names, which simpler's
     * dtypes never have); anything else is not a header: never echoed. */
    for (uint32_t i = 0; i < hlen; i++)
        if ((unsigned char)header[i] < 0x20 ? header[i] != '\n' && header[i] != '\t'
                                            : (unsigned char)header[i] > 0x7e) {
            snprintf(err, err_len, "the header is not text (byte %u)", i);
            goto out;
        }
    const char *descr = header_value(header, "descr");
    const char *fortran = header_value(header, "fortran_order");
    const char *shape = header_value(header, "shape");
    if (!descr || !fortran || !shape) {
        snprintf(err, err_len, "the header lacks %s",
                 !descr     ? "'descr'"
                 : !fortran ? "'fortran_order'"
                            : "'shape'");
        goto out;
    }
    if (strncmp(fortran, "False", 5) != 0) {
        snprintf(err, err_len, "a Fortran-order array: save it in C order (np.ascontiguousarray)");
        goto out;
    }
    if (parse_descr(descr, &out->dtype, err, err_len) || parse_shape(shape, out, err, err_len))
        goto out;
    uint64_t n = 1;
    for (int d = 0; d < out->ndim; d++) {
        if (out->shape[d] == 0) {
            snprintf(err, err_len, "an empty array (dimension %d is 0)", d);
            goto out;
        }
        if ((uint64_t)out->shape[d] > (UINT64_MAX >> 4) / n) {
            snprintf(err, err_len, "the shape overflows");
            goto out;
        }
        n *= (uint64_t)out->shape[d];
    }
    uint64_t bytes = n * sp_dtype_size(out->dtype);
    if (bytes > SIZE_MAX / 2 || !(out->data = malloc((size_t)bytes))) {
        errno = ENOMEM;
        rc = -1;
        goto out;
    }
    out->bytes = (size_t)bytes;
    if (fread(out->data, 1, out->bytes, f) != out->bytes) {
        snprintf(err, err_len, "truncated data: the header's shape needs %llu bytes",
                 (unsigned long long)bytes);
        goto out;
    }
    rc = 0;
out:
    if (rc == NPY_EFORMAT && ferror(f)) {
        rc = -1;
        errno = EIO;
    }
    if (rc) {
        int e = errno;
        free(out->data);
        out->data = NULL;
        errno = e;
    }
    free(header);
    fclose(f);
    return rc;
}
