/* sp_callable_build: pack an orchestration and its kernels into one blob.
 * Layout: header | kernel table | orchestration | kernel binaries | strings,
 * every section starting on a 64-byte boundary (padding is zero), so a
 * loader may map or copy sections with aligned accesses. The spec is
 * checked with the same rules the validator applies, the finished blob
 * is validated before it is handed out, every binary in it must pass the
 * ELF structure check registration applies (common/elf_check.h), and every
 * entry and config it names must be a function its object exports. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callable/callable_internal.h"
#include "common/elf_check.h"
#include "simpler/callable.h"
#include "simpler/status.h"

#define SECTION_ALIGN 64u

/* One binary to pack: borrowed from the spec or read from a file (owned). */
typedef struct binary {
    const void *bytes;
    size_t size;
    void *owned;
    size_t offset; /* where it lands in the blob */
} binary;

typedef struct layout {
    size_t offset;
    bool overflow; /* set once any step wrapped */
} layout;

/* Reserve `size` bytes at the next aligned offset; returns its offset. */
static size_t layout_place(layout *l, size_t size)
{
    size_t start;
    if (__builtin_add_overflow(l->offset, (size_t)(SECTION_ALIGN - 1), &start))
        l->overflow = true;
    start &= ~(size_t)(SECTION_ALIGN - 1);
    if (__builtin_add_overflow(start, size, &l->offset))
        l->overflow = true;
    return start;
}

static int check_name(const char *name, const char *field, char *err, size_t err_len)
{
    if (!name)
        return callable_fail(err, err_len, SP_EINVAL, "%s is NULL", field);
    char shown[72];
    const char *why = callable_name_problem(name, strlen(name));
    if (why)
        return callable_fail(err, err_len, SP_EINVAL, "%s \"%s\" %s", field,
                             callable_printable(name, shown, sizeof shown), why);
    return SP_OK;
}

/* The argument signature must parse (sp_callable_parse_signature's reason,
 * SP_EINVAL); its parsed form is ~40 KiB, hence the heap. */
static int check_orch_args(const char *text, char *err, size_t err_len)
{
    sp_callable_signature *sig = malloc(sizeof *sig);
    if (!sig)
        return callable_fail(err, err_len, SP_ENOMEM,
                             "cannot allocate %zu bytes to parse the argument signature",
                             sizeof *sig);
    char why[256];
    int rc = sp_callable_parse_signature(text, sig, why, sizeof why);
    free(sig);
    if (rc)
        return callable_fail(err, err_len, rc, "orchestration argument signature: %s", why);
    return SP_OK;
}

/* Everything the validator would refuse, refused here as a caller error. */
static int check_spec(const sp_callable_spec *spec, char *err, size_t err_len)
{
    if (spec->kernel_count > SP_CALLABLE_MAX_KERNELS)
        return callable_fail(err, err_len, SP_EINVAL, "%" PRIu32 " kernels exceed the maximum %u",
                             spec->kernel_count, SP_CALLABLE_MAX_KERNELS);
    if (spec->kernel_count > 0 && !spec->kernels)
        return callable_fail(err, err_len, SP_EINVAL,
                             "kernel_count is %" PRIu32 " but kernels is NULL", spec->kernel_count);
    if (!spec->orch_path && (!spec->orch_bytes || spec->orch_size == 0))
        return callable_fail(err, err_len, SP_EINVAL,
                             "orchestration binary is missing: give orch_path or non-empty "
                             "orch_bytes");
    int rc = check_name(spec->orch_entry, "orchestration entry", err, err_len);
    if (!rc && spec->orch_config)
        rc = check_name(spec->orch_config, "orchestration config", err, err_len);
    if (!rc && spec->orch_args && *spec->orch_args)
        rc = check_orch_args(spec->orch_args, err, err_len);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < spec->kernel_count; i++) {
        const sp_callable_kernel_spec *k = &spec->kernels[i];
        char field[64], shown[72];
        if (k->func_id < 0)
            return callable_fail(err, err_len, SP_EINVAL,
                                 "kernels[%" PRIu32 "]: func_id %" PRId32 " is negative", i,
                                 k->func_id);
        if (!callable_core_type_valid(k->core_type))
            return callable_fail(err, err_len, SP_EINVAL,
                                 "kernel func_id %" PRId32 ": core_type %" PRIu32
                                 " is not SP_CORE_AIC or SP_CORE_AIV",
                                 k->func_id, k->core_type);
        if (!k->path && (!k->bytes || k->size == 0))
            return callable_fail(err, err_len, SP_EINVAL,
                                 "kernel func_id %" PRId32 ": binary is missing: give path or "
                                 "non-empty bytes",
                                 k->func_id);
        snprintf(field, sizeof field, "kernel func_id %" PRId32 " entry", k->func_id);
        rc = check_name(k->entry, field, err, err_len);
        if (rc)
            return rc;
        if (k->signature) {
            size_t bad = 0;
            const char *why = callable_signature_problem(k->signature, strlen(k->signature), &bad);
            if (why)
                return callable_fail(
                    err, err_len, SP_EINVAL,
                    "kernel func_id %" PRId32 ": signature \"%.64s\" %s (at "
                    "index %zu)",
                    k->func_id, callable_printable(k->signature, shown, sizeof shown), why, bad);
        }
        for (uint32_t j = 0; j < i; j++)
            if (spec->kernels[j].func_id == k->func_id)
                return callable_fail(err, err_len, SP_EBLOB,
                                     "func_id %" PRId32 " appears twice (kernels[%" PRIu32
                                     "] and kernels[%" PRIu32 "])",
                                     k->func_id, j, i);
    }
    return SP_OK;
}

/* Fetch a binary's bytes: read its file, or borrow the spec's buffer. */
static int load_binary(const char *path, const void *bytes, size_t size, const char *what,
                       binary *out, char *err, size_t err_len)
{
    if (!path) {
        *out = (binary){.bytes = bytes, .size = size};
        return SP_OK;
    }
    void *buf;
    size_t len;
    int rc = callable_read_file(path, what, &buf, &len, err, err_len);
    if (rc)
        return rc;
    if (len == 0) {
        free(buf);
        return callable_fail(err, err_len, SP_EINVAL, "%s '%s' is empty", what, path);
    }
    *out = (binary){.bytes = buf, .size = len, .owned = buf};
    return SP_OK;
}

/* Append `s` (may be NULL or "") to the string table; "" shares offset 0. */
static uint32_t put_string(uint8_t *table, size_t *used, const char *s)
{
    if (!s || !*s)
        return 0;
    size_t n = strlen(s) + 1;
    uint32_t off = (uint32_t)*used;
    memcpy(table + *used, s, n);
    *used += n;
    return off;
}

static size_t string_bytes(const char *s)
{
    return s && *s ? strlen(s) + 1 : 0;
}

static int pack(const sp_callable_spec *spec, binary *bins, void **blob_out, size_t *size_out,
                char *err, size_t err_len)
{
    uint32_t n = spec->kernel_count;
    /* Strings are short (names <= 255, kernel signatures <= 48, the
     * argument signature a few KiB at most: 384 entries of bounded fields),
     * so the table cannot approach the 4 GiB a uint32_t offset addresses. */
    size_t strings = 1 + string_bytes(spec->orch_entry) + string_bytes(spec->orch_config) +
                     string_bytes(spec->orch_args);
    for (uint32_t i = 0; i < n; i++)
        strings += string_bytes(spec->kernels[i].entry) + string_bytes(spec->kernels[i].signature);

    layout l = {sizeof(sp_callable_header) + (size_t)n * sizeof(sp_callable_kernel), false};
    for (uint32_t i = 0; i <= n; i++)
        bins[i].offset = layout_place(&l, bins[i].size);
    size_t strings_off = layout_place(&l, strings);
    if (l.overflow)
        return callable_fail(err, err_len, SP_EINVAL, "binaries are too large to pack in one blob");

    uint8_t *blob = calloc(1, l.offset);
    if (!blob)
        return callable_fail(err, err_len, SP_ENOMEM, "cannot allocate a %zu-byte callable blob",
                             l.offset);
    uint8_t *table = blob + strings_off;
    size_t used = 1; /* offset 0 is the empty string */
    sp_callable_header h = {
        .magic = SP_CALLABLE_MAGIC,
        .version = SP_CALLABLE_VERSION,
        .header_bytes = sizeof(sp_callable_header),
        .total_bytes = l.offset,
        .kernel_count = n,
        .orch_entry = put_string(table, &used, spec->orch_entry),
        .orch_config =
            spec->orch_config ? put_string(table, &used, spec->orch_config) : SP_CALLABLE_NO_STRING,
        .checksum = 0, /* set last, over the finished bytes */
        .orch = {bins[0].offset, bins[0].size},
        .strings = {strings_off, strings},
        .orch_args = spec->orch_args && *spec->orch_args ? put_string(table, &used, spec->orch_args)
                                                         : SP_CALLABLE_NO_STRING,
        .reserved = 0,
    };
    memcpy(blob, &h, sizeof h);
    memcpy(blob + bins[0].offset, bins[0].bytes, bins[0].size);
    for (uint32_t i = 0; i < n; i++) {
        const sp_callable_kernel_spec *ks = &spec->kernels[i];
        sp_callable_kernel k = {
            .func_id = ks->func_id,
            .core_type = ks->core_type,
            .entry = put_string(table, &used, ks->entry),
            .signature = put_string(table, &used, ks->signature),
            .binary = {bins[1 + i].offset, bins[1 + i].size},
        };
        memcpy(blob + sizeof h + (size_t)i * sizeof k, &k, sizeof k);
        memcpy(blob + bins[1 + i].offset, bins[1 + i].bytes, bins[1 + i].size);
    }

    ((sp_callable_header *)blob)->checksum = sp_callable_checksum(blob, l.offset);

    /* The builder and the validator share rules, so this only fails on a
     * builder bug; checking keeps such a bug from reaching a device. */
    char why[256];
    int rc = sp_callable_validate(blob, l.offset, NULL, why, sizeof why);
    if (rc) {
        free(blob);
        return callable_fail(err, err_len, SP_EBLOB, "internal error: built blob is invalid: %s",
                             why);
    }
    /* Pack time is where a truncated or damaged binary is cheapest to
     * name: the same check runs again at registration. */
    for (uint32_t i = 0; i <= n; i++) {
        rc = sp__elf_check(blob + bins[i].offset, bins[i].size, why, sizeof why);
        if (rc) {
            free(blob);
            if (i == 0)
                return callable_fail(err, err_len, rc,
                                     "orchestration binary is not a well-formed shared object: %s",
                                     why);
            return callable_fail(err, err_len, rc,
                                 "kernel func_id %" PRId32
                                 " binary is not a well-formed shared object: %s",
                                 spec->kernels[i - 1].func_id, why);
        }
    }
    /* A typo'd entry used to pack and fail only at registration: every
     * named symbol must be a function its object exports. */
    for (uint32_t i = 0; i <= n; i++) {
        const char *path = i == 0 ? spec->orch_path : spec->kernels[i - 1].path;
        const char *names[2] = {i == 0 ? spec->orch_entry : spec->kernels[i - 1].entry,
                                i == 0 ? spec->orch_config : NULL};
        for (int j = 0; j < 2 && !rc; j++) {
            if (!names[j])
                continue;
            rc =
                sp__elf_find_export(blob + bins[i].offset, bins[i].size, names[j], why, sizeof why);
            if (!rc)
                continue;
            free(blob);
            char what[64];
            if (i == 0)
                snprintf(what, sizeof what, "orchestration %s", j ? "config" : "entry");
            else
                snprintf(what, sizeof what, "kernel func_id %" PRId32 " entry",
                         spec->kernels[i - 1].func_id);
            return callable_fail(err, err_len, rc, "%s '%s': %s %s", what, names[j],
                                 path ? path : "the binary given in memory", why);
        }
    }
    *blob_out = blob;
    *size_out = l.offset;
    return SP_OK;
}

SP_EXPORT int sp_callable_build(const sp_callable_spec *spec, void **blob_out, size_t *size_out,
                                char *err, size_t err_len)
{
    if (err && err_len > 0)
        err[0] = '\0';
    if (!spec || !blob_out || !size_out)
        return callable_fail(err, err_len, SP_EINVAL,
                             "sp_callable_build: spec, blob_out and size_out must not be NULL");
    *blob_out = NULL;
    *size_out = 0;
    int rc = check_spec(spec, err, err_len);
    if (rc)
        return rc;

    binary *bins = calloc(1 + (size_t)spec->kernel_count, sizeof *bins);
    if (!bins)
        return callable_fail(err, err_len, SP_ENOMEM, "cannot allocate the binary list");
    rc = load_binary(spec->orch_path, spec->orch_bytes, spec->orch_size, "orchestration binary",
                     &bins[0], err, err_len);
    for (uint32_t i = 0; !rc && i < spec->kernel_count; i++) {
        const sp_callable_kernel_spec *k = &spec->kernels[i];
        char what[64];
        snprintf(what, sizeof what, "kernel func_id %" PRId32 " binary", k->func_id);
        rc = load_binary(k->path, k->bytes, k->size, what, &bins[1 + i], err, err_len);
    }
    if (!rc)
        rc = pack(spec, bins, blob_out, size_out, err, err_len);
    for (uint32_t i = 0; i <= spec->kernel_count; i++)
        free(bins[i].owned);
    free(bins);
    return rc;
}
