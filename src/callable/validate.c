/* sp_callable_validate: decide whether untrusted bytes are a well-formed
 * callable. Every read is bounds-checked against `size` before it happens;
 * every refusal is SP_EBLOB with a reason naming the field and the limit. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callable/callable_internal.h"
#include "simpler/callable.h"
#include "simpler/status.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the callable format is little-endian; this reader assumes a little-endian host"
#endif

/* One byte range the blob claims, for the range and overlap checks. */
typedef struct region {
    uint64_t offset;
    uint64_t size;
    int kernel; /* index into the kernel table, or -1 */
    const char *what;
} region;

typedef struct checker {
    const uint8_t *base;
    size_t size;
    const sp_callable_header *h;
    const sp_callable_kernel *k;
    char *err;
    size_t err_len;
} checker;

#define BAD(c, ...) callable_fail((c)->err, (c)->err_len, SP_EBLOB, "callable blob: " __VA_ARGS__)

/* "the string table" / "kernel[3] (func_id 7) binary", for messages. */
static const char *region_name(const checker *c, const region *r, char *buf, size_t len)
{
    if (r->kernel < 0)
        return r->what;
    snprintf(buf, len, "kernel[%d] (func_id %" PRId32 ") %s", r->kernel, c->k[r->kernel].func_id,
             r->what);
    return buf;
}

static int check_header(checker *c)
{
    const sp_callable_header *h = c->h;
    if (h->magic != SP_CALLABLE_MAGIC)
        return BAD(c,
                   "bad magic 0x%016" PRIx64 " (expected 0x%016llx, \"SMPRCALL\"); not a callable",
                   h->magic, SP_CALLABLE_MAGIC);
    if (h->version < SP_CALLABLE_VERSION_MIN || h->version > SP_CALLABLE_VERSION)
        return BAD(
            c, "format version %" PRIu32 " is not supported (this simpler reads versions %u to %u)",
            h->version, SP_CALLABLE_VERSION_MIN, SP_CALLABLE_VERSION);
    /* Version 2 ends before orch_args: its header is 8 bytes shorter. */
    uint32_t want = h->version == 2 ? SP_CALLABLE_HEADER_V2_BYTES : sizeof(sp_callable_header);
    if (h->header_bytes != want)
        return BAD(c, "header_bytes is %" PRIu32 ", expected %" PRIu32 " for version %" PRIu32,
                   h->header_bytes, want, h->version);
    if (c->size < want)
        return BAD(c, "%zu bytes is shorter than the %" PRIu32 "-byte version %" PRIu32 " header",
                   c->size, want, h->version);
    if (h->total_bytes != c->size)
        return BAD(c,
                   "header says the blob is %" PRIu64 " bytes but it is %zu (truncated or padded)",
                   h->total_bytes, c->size);
    /* Before any other field is trusted: a corrupted blob is reported as
     * corrupted, not by whatever its damaged fields happen to say. */
    uint32_t sum = sp_callable_checksum(c->base, c->size);
    if (h->checksum != sum)
        return BAD(c,
                   "checksum 0x%08" PRIx32 " does not match the contents (CRC32C 0x%08" PRIx32
                   "): the blob is corrupted or was edited after packing",
                   h->checksum, sum);
    if (h->version >= 3 && h->reserved != 0)
        return BAD(c, "reserved header word is 0x%08" PRIx32 ", expected 0", h->reserved);
    c->k = (const sp_callable_kernel *)(c->base + h->header_bytes);
    if (h->kernel_count > SP_CALLABLE_MAX_KERNELS)
        return BAD(c, "kernel_count %" PRIu32 " exceeds the maximum %u", h->kernel_count,
                   SP_CALLABLE_MAX_KERNELS);
    /* Both terms are small (checked above), so the sum cannot overflow. */
    uint64_t table_end =
        (uint64_t)h->header_bytes + (uint64_t)h->kernel_count * sizeof(sp_callable_kernel);
    if (table_end > c->size)
        return BAD(c,
                   "kernel table (%" PRIu32 " entries) ends at byte %" PRIu64
                   ", past the blob end (%zu bytes)",
                   h->kernel_count, table_end, c->size);
    return SP_OK;
}

static int check_kernel_fields(checker *c)
{
    for (uint32_t i = 0; i < c->h->kernel_count; i++) {
        const sp_callable_kernel *k = &c->k[i];
        if (k->func_id < 0)
            return BAD(c, "kernel[%" PRIu32 "] has negative func_id %" PRId32, i, k->func_id);
        if (!callable_core_type_valid(k->core_type))
            return BAD(c,
                       "kernel[%" PRIu32 "] (func_id %" PRId32 ") has core_type %" PRIu32
                       ", expected 0 (aic) or 1 (aiv)",
                       i, k->func_id, k->core_type);
        /* Pairwise: at most 1024 kernels, checked once at registration. */
        for (uint32_t j = 0; j < i; j++)
            if (c->k[j].func_id == k->func_id)
                return BAD(c,
                           "func_id %" PRId32 " appears twice (kernel[%" PRIu32
                           "] and kernel[%" PRIu32 "])",
                           k->func_id, j, i);
    }
    return SP_OK;
}

/* Region i: 0 is the header + kernel table, 1 the orchestration binary,
 * 2 the string table, 3.. the kernel binaries. */
static region region_at(const checker *c, size_t i)
{
    const sp_callable_header *h = c->h;
    if (i == 0)
        return (region){
            0, (uint64_t)h->header_bytes + (uint64_t)h->kernel_count * sizeof(sp_callable_kernel),
            -1, "the header and kernel table"};
    if (i == 1)
        return (region){h->orch.offset, h->orch.size, -1, "the orchestration binary"};
    if (i == 2)
        return (region){h->strings.offset, h->strings.size, -1, "the string table"};
    const sp_callable_kernel *k = &c->k[i - 3];
    return (region){k->binary.offset, k->binary.size, (int)(i - 3), "binary"};
}

/* Every section inside the blob, non-empty, and disjoint from the others
 * and from the header + kernel table. */
static int check_sections(checker *c)
{
    size_t n = 3 + (size_t)c->h->kernel_count;
    char a[96], b[96];
    for (size_t i = 1; i < n; i++) {
        region r = region_at(c, i);
        /* Written so that offset + size is never computed: it may wrap. */
        if (r.offset > c->size || r.size > c->size - r.offset)
            return BAD(
                c, "%s (offset %" PRIu64 ", %" PRIu64 " bytes) lies outside the blob (%zu bytes)",
                region_name(c, &r, a, sizeof a), r.offset, r.size, c->size);
        if (r.size == 0)
            return BAD(c, "%s is empty", region_name(c, &r, a, sizeof a));
    }
    /* Pairwise: at most 1027 regions, checked once per registration; all
     * ends are now <= size, so the sums below cannot wrap. */
    for (size_t i = 0; i < n; i++) {
        region r = region_at(c, i);
        for (size_t j = i + 1; j < n; j++) {
            region s = region_at(c, j);
            if (r.offset < s.offset + s.size && s.offset < r.offset + r.size)
                return BAD(c,
                           "%s [%" PRIu64 ", %" PRIu64 ") overlaps %s [%" PRIu64 ", %" PRIu64 ")",
                           region_name(c, &s, a, sizeof a), s.offset, s.offset + s.size,
                           region_name(c, &r, b, sizeof b), r.offset, r.offset + r.size);
        }
    }
    return SP_OK;
}

/* The NUL-terminated string at `off` of the string table, or NULL with the
 * reason in *why. Needs check_sections to have passed. */
static const char *table_string(const checker *c, uint32_t off, const char **why)
{
    const sp_callable_section *t = &c->h->strings;
    if (off >= t->size) {
        *why = "points outside the string table";
        return NULL;
    }
    const char *s = (const char *)c->base + t->offset + off;
    if (!memchr(s, '\0', t->size - off)) {
        *why = "is not NUL-terminated inside the string table";
        return NULL;
    }
    return s;
}

/* A symbol-name string field: present, terminated, a valid identifier. */
static int check_name(checker *c, uint32_t off, const char *field, const char **out)
{
    const char *why = NULL;
    const char *s = table_string(c, off, &why);
    if (!s)
        return BAD(c, "%s (string offset %" PRIu32 ") %s", field, off, why);
    char shown[72];
    why = callable_name_problem(s, strlen(s));
    if (why)
        return BAD(c, "%s \"%s\" %s", field, callable_printable(s, shown, sizeof shown), why);
    *out = s;
    return SP_OK;
}

/* Version 3's argument signature: absent, or text that parses. The
 * parsed form is large (~40 KiB), so it lives on the heap, not the stack
 * of whatever thread validates. */
static int check_orch_args(checker *c, const char **out)
{
    *out = NULL;
    if (c->h->version < 3 || c->h->orch_args == SP_CALLABLE_NO_STRING)
        return SP_OK;
    const char *why = NULL;
    const char *s = table_string(c, c->h->orch_args, &why);
    if (!s)
        return BAD(c, "orchestration argument signature (string offset %" PRIu32 ") %s",
                   c->h->orch_args, why);
    if (!*s)
        return SP_OK; /* "" is "not declared", as the builder writes NO_STRING */
    sp_callable_signature *sig = malloc(sizeof *sig);
    if (!sig)
        return callable_fail(c->err, c->err_len, SP_ENOMEM,
                             "cannot allocate %zu bytes to check the argument signature",
                             sizeof *sig);
    char reason[256];
    int rc = sp_callable_parse_signature(s, sig, reason, sizeof reason);
    free(sig);
    if (rc)
        return BAD(c, "orchestration argument signature does not parse: %s", reason);
    *out = s;
    return SP_OK;
}

static int check_strings(checker *c, const char **orch_entry, const char **orch_config,
                         const char **orch_args)
{
    const sp_callable_header *h = c->h;
    int rc = check_name(c, h->orch_entry, "orchestration entry", orch_entry);
    if (rc)
        return rc;
    *orch_config = NULL;
    if (h->orch_config != SP_CALLABLE_NO_STRING) {
        rc = check_name(c, h->orch_config, "orchestration config", orch_config);
        if (rc)
            return rc;
    }
    rc = check_orch_args(c, orch_args);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < h->kernel_count; i++) {
        const sp_callable_kernel *k = &c->k[i];
        char field[64];
        const char *entry;
        snprintf(field, sizeof field, "kernel[%" PRIu32 "] (func_id %" PRId32 ") entry", i,
                 k->func_id);
        rc = check_name(c, k->entry, field, &entry);
        if (rc)
            return rc;
        const char *why = NULL;
        const char *sig = table_string(c, k->signature, &why);
        if (!sig)
            return BAD(c,
                       "kernel[%" PRIu32 "] (func_id %" PRId32 ") signature (string offset %" PRIu32
                       ") %s",
                       i, k->func_id, k->signature, why);
        size_t bad = 0;
        why = callable_signature_problem(sig, strlen(sig), &bad);
        if (why)
            return BAD(c, "kernel[%" PRIu32 "] (func_id %" PRId32 ") signature %s (at index %zu)",
                       i, k->func_id, why, bad);
    }
    return SP_OK;
}

SP_EXPORT int sp_callable_validate(const void *blob, size_t size, sp_callable_view *view, char *err,
                                   size_t err_len)
{
    if (err && err_len > 0)
        err[0] = '\0';
    if (!blob)
        return callable_fail(err, err_len, SP_EINVAL, "callable blob pointer is NULL");
    /* The view hands out typed pointers into the bytes; they must be aligned
     * for that to be defined. malloc'd and mmap'd buffers always are. */
    if ((uintptr_t)blob % _Alignof(sp_callable_header) != 0)
        return callable_fail(err, err_len, SP_EINVAL,
                             "callable blob at %p is not %zu-byte aligned; copy it to malloc'd "
                             "memory",
                             blob, _Alignof(sp_callable_header));
    if (size < SP_CALLABLE_HEADER_V2_BYTES)
        return callable_fail(err, err_len, SP_EBLOB,
                             "callable blob: %zu bytes is shorter than the %u-byte header", size,
                             SP_CALLABLE_HEADER_V2_BYTES);

    checker c = {
        .base = blob,
        .size = size,
        .h = blob,
        .k = NULL, /* at header_bytes, once check_header has read it */
        .err = err,
        .err_len = err_len,
    };
    const char *orch_entry = NULL, *orch_config = NULL, *orch_args = NULL;
    int rc = check_header(&c);
    if (!rc)
        rc = check_kernel_fields(&c);
    if (!rc)
        rc = check_sections(&c);
    if (!rc)
        rc = check_strings(&c, &orch_entry, &orch_config, &orch_args);
    if (rc)
        return rc;
    if (view) {
        *view = (sp_callable_view){
            .base = c.base,
            .size = size,
            .header = c.h,
            .kernels = c.k,
            .orch_entry = orch_entry,
            .orch_config = orch_config,
            .orch_args = orch_args,
        };
    }
    return SP_OK;
}
