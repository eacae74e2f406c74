/* sp_callable_validate on untrusted bytes: a good blob round-trips field for
 * field; each kind of malformation is refused with SP_EBLOB and a reason
 * naming it; truncations and ~20000 seeded random mutations never crash and
 * never yield a view that points outside the blob. Every blob under test is
 * copied into an exact-size heap buffer so ASan catches any over-read.
 * Version 3's argument signature round-trips and is checked; a version 2
 * blob (72-byte header) still validates. */
#include <inttypes.h>
#include <stddef.h>

#include "callable_test_support.h"

#define MEM_KERNEL_BYTES 777

static uint8_t mem_kernel[MEM_KERNEL_BYTES];

/* orch_noop.so + two kernels from callable_kernels.so + one from memory. */
static uint8_t *good_blob(size_t *size)
{
    fill_pattern(mem_kernel, sizeof mem_kernel, 7, "mem_kernel");
    sp_callable_kernel_spec k[] = {
        {.func_id = 3,
         .core_type = SP_CORE_AIV,
         .path = KERNELS_SO,
         .entry = "callable_fill",
         .signature = "xs"},
        {.func_id = 0,
         .core_type = SP_CORE_AIC,
         .path = KERNELS_SO,
         .entry = "callable_copy",
         .signature = "io"},
        {.func_id = 9,
         .core_type = SP_CORE_AIV,
         .bytes = mem_kernel,
         .size = sizeof mem_kernel,
         .entry = "mem_kernel"},
    };
    sp_callable_spec spec = {.orch_path = ORCH_SO,
                             .orch_entry = "orch_noop",
                             .orch_config = "orch_noop_config",
                             .kernels = k,
                             .kernel_count = 3};
    void *blob;
    char err[512];
    int rc = sp_callable_build(&spec, &blob, size, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "build: %s", err);
    return blob;
}

/* A small all-in-memory blob (about 1 KiB): mutations hit structure often. */
static uint8_t *small_blob(size_t *size)
{
    static uint8_t orch[560], k0[540], k1[532];
    fill_pattern(orch, sizeof orch, 1, "main_orch", "main_config");
    fill_pattern(k0, sizeof k0, 2, "k_a");
    fill_pattern(k1, sizeof k1, 3, "k_b");
    sp_callable_kernel_spec k[] = {
        {.func_id = 1,
         .core_type = SP_CORE_AIC,
         .bytes = k0,
         .size = sizeof k0,
         .entry = "k_a",
         .signature = "iox"},
        {.func_id = 4,
         .core_type = SP_CORE_AIV,
         .bytes = k1,
         .size = sizeof k1,
         .entry = "k_b",
         .signature = "ens"},
    };
    sp_callable_spec spec = {.orch_bytes = orch,
                             .orch_size = sizeof orch,
                             .orch_entry = "main_orch",
                             .orch_config = "main_config",
                             .kernels = k,
                             .kernel_count = 2};
    void *blob;
    char err[512];
    cr_assert_eq(sp_callable_build(&spec, &blob, size, err, sizeof err), SP_OK, "build: %s", err);
    return blob;
}

static sp_callable_header *hdr(uint8_t *blob)
{
    return (sp_callable_header *)blob;
}

static sp_callable_kernel *kern(uint8_t *blob, int i)
{
    return (sp_callable_kernel *)(blob + sizeof(sp_callable_header)) + i;
}

/* Validate an exact-size copy of blob[0..size); returns the status. */
static int validate_copy(const uint8_t *blob, size_t size, char *err, size_t err_len)
{
    uint8_t *copy = malloc(size ? size : 1);
    cr_assert_not_null(copy);
    memcpy(copy, blob, size);
    sp_callable_view v;
    int rc = sp_callable_validate(copy, size, &v, err, err_len);
    if (rc == SP_OK)
        assert_view_inside(&v, size);
    free(copy);
    return rc;
}

/* The field edit under test is resealed (checksum recomputed), so the
 * refusal comes from the check that field is about. */
static void expect_bad(const uint8_t *blob, size_t size, const char *needle)
{
    char err[512] = "";
    uint8_t *sealed = malloc(size ? size : 1);
    cr_assert_not_null(sealed);
    memcpy(sealed, blob, size);
    reseal(sealed, size);
    int rc = validate_copy(sealed, size, err, sizeof err);
    free(sealed);
    cr_assert_eq(rc, SP_EBLOB, "expected SP_EBLOB for '%s', got %s (%s)", needle,
                 sp_status_name(rc), err);
    cr_assert_not_null(strstr(err, needle), "error \"%s\" does not mention \"%s\"", err, needle);
}

Test(callable_validate, good_blob_round_trips_every_field)
{
    size_t size, orch_size, ks_size;
    uint8_t *blob = good_blob(&size);
    uint8_t *orch = read_whole(ORCH_SO, &orch_size);
    uint8_t *ks = read_whole(KERNELS_SO, &ks_size);

    sp_callable_view v;
    char err[512];
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    assert_view_inside(&v, size);
    const sp_callable_header *h = v.header;
    cr_assert_eq(h->magic, SP_CALLABLE_MAGIC);
    cr_assert_eq(memcmp(blob, "SMPRCALL", 8), 0, "magic reads SMPRCALL on disk");
    cr_assert_eq(h->version, SP_CALLABLE_VERSION);
    cr_assert_eq(h->header_bytes, sizeof(sp_callable_header));
    cr_assert_eq(h->total_bytes, size);
    cr_assert_eq(h->kernel_count, 3);
    cr_assert_eq(h->checksum, sp_callable_checksum(blob, size));
    cr_assert_str_eq(v.orch_entry, "orch_noop");
    cr_assert_str_eq(v.orch_config, "orch_noop_config");
    cr_assert_str_eq(sp_callable_string(&v, h->orch_entry), "orch_noop");
    cr_assert_eq(h->orch.size, orch_size);
    cr_assert_eq(memcmp(blob + h->orch.offset, orch, orch_size), 0);

    static const struct {
        int32_t func_id;
        uint32_t core;
        const char *entry, *sig;
    } want[] = {{3, SP_CORE_AIV, "callable_fill", "xs"},
                {0, SP_CORE_AIC, "callable_copy", "io"},
                {9, SP_CORE_AIV, "mem_kernel", ""}};
    for (int i = 0; i < 3; i++) {
        const sp_callable_kernel *k = &v.kernels[i];
        cr_assert_eq(k->func_id, want[i].func_id);
        cr_assert_eq(k->core_type, want[i].core);
        cr_assert_str_eq(sp_callable_string(&v, k->entry), want[i].entry);
        cr_assert_str_eq(sp_callable_string(&v, k->signature), want[i].sig);
        cr_assert_eq(sp_callable_find_kernel(&v, want[i].func_id), i);
    }
    cr_assert_eq(v.kernels[0].binary.size, ks_size);
    cr_assert_eq(memcmp(blob + v.kernels[0].binary.offset, ks, ks_size), 0);
    cr_assert_eq(memcmp(blob + v.kernels[1].binary.offset, ks, ks_size), 0);
    cr_assert_eq(v.kernels[2].binary.size, MEM_KERNEL_BYTES);
    cr_assert_eq(memcmp(blob + v.kernels[2].binary.offset, mem_kernel, MEM_KERNEL_BYTES), 0);

    /* The builder's promise: 64-byte aligned sections, zero padding. */
    cr_assert_eq(h->orch.offset % 64, 0);
    cr_assert_eq(h->strings.offset % 64, 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(v.kernels[i].binary.offset % 64, 0);
    for (size_t i = sizeof *h + 3 * sizeof(sp_callable_kernel); i < h->orch.offset; i++)
        cr_assert_eq(blob[i], 0, "padding byte %zu is not zero", i);

    free(orch);
    free(ks);
    free(blob);
}

Test(callable_validate, lookups_refuse_what_is_not_there)
{
    size_t size;
    uint8_t *blob = good_blob(&size);
    sp_callable_view v;
    cr_assert_eq(sp_callable_validate(blob, size, &v, NULL, 0), SP_OK);
    cr_assert_eq(sp_callable_find_kernel(&v, 4), -1);
    cr_assert_eq(sp_callable_find_kernel(&v, -1), -1);
    cr_assert_eq(sp_callable_find_kernel(NULL, 3), -1);
    cr_assert_null(sp_callable_string(&v, (uint32_t)v.header->strings.size));
    cr_assert_null(sp_callable_string(&v, SP_CALLABLE_NO_STRING));
    cr_assert_null(sp_callable_string(NULL, 0));
    cr_assert_str_eq(sp_callable_string(&v, 0), "", "offset 0 is the shared empty string");
    /* Any offset inside a terminated string resolves to its tail. */
    cr_assert_str_eq(sp_callable_string(&v, v.header->orch_entry + 5), "noop");
    free(blob);
}

Test(callable_validate, null_and_misaligned_buffers_are_einval)
{
    size_t size;
    uint8_t *blob = good_blob(&size);
    char err[256];
    sp_callable_view v;
    cr_assert_eq(sp_callable_validate(NULL, size, &v, err, sizeof err), SP_EINVAL);
    cr_assert_not_null(strstr(err, "NULL"));
    uint8_t *shifted = malloc(size + 8);
    memcpy(shifted + 1, blob, size);
    cr_assert_eq(sp_callable_validate(shifted + 1, size, &v, err, sizeof err), SP_EINVAL);
    cr_assert_not_null(strstr(err, "aligned"), "%s", err);
    /* A NULL view and a NULL / zero-length err buffer are allowed. */
    cr_assert_eq(sp_callable_validate(blob, size, NULL, NULL, 0), SP_OK);
    cr_assert_eq(sp_callable_validate(blob, size - 1, NULL, NULL, 0), SP_EBLOB);
    err[0] = 'Q';
    cr_assert_eq(sp_callable_validate(blob, size - 1, NULL, err, 1), SP_EBLOB);
    cr_assert_eq(err[0], '\0', "a 1-byte err buffer gets only the terminator");
    free(shifted);
    free(blob);
}

Test(callable_validate, truncation_at_every_length_is_refused)
{
    size_t size;
    uint8_t *blob = good_blob(&size);
    char err[512];
    for (size_t len = 0; len < size; len++) {
        int rc = validate_copy(blob, len, err, sizeof err);
        cr_assert_eq(rc, SP_EBLOB, "truncated to %zu of %zu bytes: %s", len, size,
                     sp_status_name(rc));
        cr_assert_gt(strlen(err), 0);
    }
    free(blob);
}

Test(callable_validate, truncation_with_a_matching_total_is_refused)
{
    /* Rewriting total_bytes makes the validator look past the header: the
     * string table (the last section) now runs past the end. */
    size_t size;
    uint8_t *blob = small_blob(&size);
    char err[512];
    for (size_t len = sizeof(sp_callable_header); len < size; len++) {
        uint64_t total = hdr(blob)->total_bytes;
        uint32_t sum = hdr(blob)->checksum;
        hdr(blob)->total_bytes = len;
        reseal(blob, len); /* past the checksum, to the section checks */
        cr_assert_eq(validate_copy(blob, len, err, sizeof err), SP_EBLOB, "len %zu", len);
        hdr(blob)->total_bytes = total;
        hdr(blob)->checksum = sum;
    }
    free(blob);
}

Test(callable_validate, shorter_than_header)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    expect_bad(blob, 71, "shorter than the 72-byte header");
    /* 72 bytes is a whole v2 header but not the v3 one this blob has. */
    hdr(blob)->total_bytes = 79;
    expect_bad(blob, 79, "79 bytes is shorter than the 80-byte version 3 header");
    expect_bad(blob, 0, "shorter");
    free(blob);
}

Test(callable_validate, bad_magic)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    blob[7] ^= 0x20;
    expect_bad(blob, size, "bad magic");
    free(blob);
}

Test(callable_validate, unknown_version)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->version = 1;
    expect_bad(blob, size, "version 1 is not supported");
    hdr(blob)->version = 4;
    expect_bad(blob, size, "version 4 is not supported (this simpler reads versions 2 to 3)");
    /* A v3 blob relabelled v2 keeps its 80-byte header_bytes: refused. */
    hdr(blob)->version = 2;
    expect_bad(blob, size, "header_bytes is 80, expected 72 for version 2");
    hdr(blob)->version = 0;
    expect_bad(blob, size, "version 0 is not supported");
    free(blob);
}

Test(callable_validate, header_bytes_mismatch)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->header_bytes = 64;
    expect_bad(blob, size, "header_bytes is 64");
    hdr(blob)->header_bytes = 72;
    expect_bad(blob, size, "header_bytes is 72, expected 80 for version 3");
    free(blob);
}

Test(callable_validate, total_bytes_differs_from_size)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->total_bytes = size + 1;
    expect_bad(blob, size, "truncated or padded");
    hdr(blob)->total_bytes = size;
    uint8_t *padded = calloc(1, size + 64);
    memcpy(padded, blob, size);
    expect_bad(padded, size + 64, "truncated or padded");
    free(padded);
    free(blob);
}

Test(callable_validate, checksum_mismatch)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    char err[512] = "";
    hdr(blob)->checksum ^= 1;
    cr_assert_eq(validate_copy(blob, size, err, sizeof err), SP_EBLOB);
    cr_assert_not_null(strstr(err, "checksum"), "%s", err);
    cr_assert_not_null(strstr(err, "corrupted"), "%s", err);
    hdr(blob)->checksum ^= 1;
    cr_assert_eq(validate_copy(blob, size, err, sizeof err), SP_OK, "%s", err);
    /* The field itself is outside the sum: the builder's value is the sum of
     * the other bytes. */
    uint32_t stored = hdr(blob)->checksum;
    hdr(blob)->checksum = 0;
    cr_assert_eq(sp_callable_checksum(blob, size), stored);
    free(blob);
}

/* Issue 12 item 3: 6 of 5000 random bit flips of a real blob used to
 * register and run to SP_OK with wrong results. Every bit of the header,
 * kernel table and the first 4 KiB, and 20000 seeded random bits of the
 * rest (orchestration, kernels, strings, padding), flipped one at a time:
 * each is SP_EBLOB, and the blob validates again once it is flipped back. */
Test(callable_validate, every_flipped_bit_is_refused, .timeout = 240)
{
    size_t size;
    uint8_t *blob = good_blob(&size);
    char err[512];
    cr_assert_gt(size, 4096u);
    uint64_t rng = 0xb17f11b5ull;
    uint64_t flips = 0;
    for (uint64_t n = 0; n < 4096 * 8 + 20000; n++) {
        uint64_t bit =
            n < 4096 * 8
                ? n
                : 4096 * 8 + (rng = rng * 6364136223846793005ull + 1442695040888963407ull) %
                                 ((size - 4096) * 8);
        blob[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int rc = sp_callable_validate(blob, size, NULL, err, sizeof err);
        cr_assert_eq(rc, SP_EBLOB, "bit %" PRIu64 " (byte %" PRIu64 ") flipped: %s", bit, bit / 8,
                     sp_status_name(rc));
        blob[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        flips++;
    }
    cr_assert_eq(sp_callable_validate(blob, size, NULL, err, sizeof err), SP_OK, "%s", err);
    cr_log_info("%" PRIu64 " single-bit flips refused", flips);
    free(blob);
}

Test(callable_validate, kernel_count_over_maximum)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->kernel_count = SP_CALLABLE_MAX_KERNELS + 1;
    expect_bad(blob, size, "exceeds the maximum 1024");
    hdr(blob)->kernel_count = UINT32_MAX;
    expect_bad(blob, size, "exceeds the maximum");
    free(blob);
}

Test(callable_validate, kernel_table_past_the_end)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->kernel_count = 100; /* 72 + 3200 bytes > ~1 KiB */
    expect_bad(blob, size, "kernel table (100 entries)");
    free(blob);
}

Test(callable_validate, sections_out_of_range)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    sp_callable_header *h = hdr(blob);
    sp_callable_header keep = *h;
    h->orch.offset = size;
    expect_bad(blob, size, "orchestration binary (offset");
    *h = keep;
    h->orch.size = size;
    expect_bad(blob, size, "lies outside the blob");
    *h = keep;
    /* offset + size wraps to a small number: must still be caught. */
    h->orch.offset = UINT64_MAX - 15;
    h->orch.size = 32;
    expect_bad(blob, size, "orchestration binary");
    *h = keep;
    h->orch.size = UINT64_MAX;
    expect_bad(blob, size, "lies outside");
    *h = keep;
    h->strings.offset = size - 4;
    expect_bad(blob, size, "the string table (offset");
    *h = keep;
    h->strings.size = (1ull << 63) + 8;
    expect_bad(blob, size, "the string table");
    *h = keep;
    kern(blob, 1)->binary.offset = UINT64_MAX;
    kern(blob, 1)->binary.size = 2;
    expect_bad(blob, size, "kernel[1] (func_id 4) binary (offset");
    free(blob);
}

Test(callable_validate, empty_sections)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->orch.size = 0;
    expect_bad(blob, size, "the orchestration binary is empty");
    free(blob);
    blob = small_blob(&size);
    kern(blob, 0)->binary.size = 0;
    expect_bad(blob, size, "kernel[0] (func_id 1) binary is empty");
    free(blob);
}

Test(callable_validate, overlapping_sections)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    sp_callable_header *h = hdr(blob);
    sp_callable_kernel k0 = *kern(blob, 0), k1 = *kern(blob, 1);
    sp_callable_header keep = *h;

    kern(blob, 0)->binary = h->orch; /* the same bytes twice */
    expect_bad(blob, size, "overlaps the orchestration binary");
    *kern(blob, 0) = k0;

    kern(blob, 1)->binary.offset = k0.binary.offset + k0.binary.size - 1; /* one byte */
    expect_bad(blob, size, "kernel[1] (func_id 4) binary");
    *kern(blob, 1) = k1;

    h->orch.offset = 0; /* on top of the header */
    expect_bad(blob, size, "overlaps the header and kernel table");
    *h = keep;

    h->strings.offset = sizeof *h + 8; /* inside the kernel table */
    h->strings.size = 16;
    expect_bad(blob, size, "the string table [88, 104) overlaps the header and kernel table");
    *h = keep;

    h->orch.size = k0.binary.offset - h->orch.offset + 1; /* runs into kernel 0 */
    expect_bad(blob, size, "overlaps the orchestration binary");
    *h = keep;
    free(blob);
}

Test(callable_validate, string_offsets_outside_the_table)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    sp_callable_header *h = hdr(blob);
    sp_callable_header keep = *h;
    h->orch_entry = (uint32_t)h->strings.size;
    expect_bad(blob, size, "orchestration entry (string offset");
    *h = keep;
    h->orch_config = UINT32_MAX - 1;
    expect_bad(blob, size, "orchestration config (string offset 4294967294) points outside");
    *h = keep;
    kern(blob, 1)->entry = 100000;
    expect_bad(blob, size, "kernel[1] (func_id 4) entry (string offset 100000) points outside");
    free(blob);
    blob = small_blob(&size);
    kern(blob, 0)->signature = SP_CALLABLE_NO_STRING;
    expect_bad(blob, size, "kernel[0] (func_id 1) signature (string offset");
    free(blob);
}

Test(callable_validate, string_not_terminated_inside_the_table)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    sp_callable_header *h = hdr(blob);
    /* The table ends with the last string's NUL: remove it. */
    uint8_t *last = blob + h->strings.offset + h->strings.size - 1;
    cr_assert_eq(*last, 0);
    *last = 'z';
    expect_bad(blob, size, "not NUL-terminated inside the string table");
    free(blob);
}

Test(callable_validate, empty_and_malformed_names)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    sp_callable_header *h = hdr(blob);
    sp_callable_header keep = *h;
    h->orch_entry = 0; /* the empty string */
    expect_bad(blob, size, "orchestration entry \"\" is empty");
    *h = keep;
    h->orch_config = 0;
    expect_bad(blob, size, "orchestration config \"\" is empty");
    *h = keep;
    kern(blob, 0)->entry = 0;
    expect_bad(blob, size, "kernel[0] (func_id 1) entry \"\" is empty");
    free(blob);

    blob = small_blob(&size);
    h = hdr(blob);
    blob[h->strings.offset + h->orch_entry] = '9';
    expect_bad(blob, size, "does not start with a letter");
    blob[h->strings.offset + h->orch_entry] = 'm';
    blob[h->strings.offset + h->orch_entry + 2] = '\n';
    expect_bad(blob, size, "\"ma?n_orch\"");
    expect_bad(blob, size, "not a letter, digit or '_'");
    free(blob);
}

Test(callable_validate, no_config_is_allowed)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    hdr(blob)->orch_config = SP_CALLABLE_NO_STRING;
    reseal(blob, size);
    sp_callable_view v;
    char err[256];
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    cr_assert_null(v.orch_config);
    free(blob);
}

Test(callable_validate, bad_core_type)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    kern(blob, 1)->core_type = 2;
    expect_bad(blob, size, "kernel[1] (func_id 4) has core_type 2");
    kern(blob, 1)->core_type = UINT32_MAX;
    expect_bad(blob, size, "core_type 4294967295");
    free(blob);
}

Test(callable_validate, negative_func_id)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    kern(blob, 0)->func_id = -1;
    expect_bad(blob, size, "kernel[0] has negative func_id -1");
    kern(blob, 0)->func_id = INT32_MIN;
    expect_bad(blob, size, "negative func_id");
    free(blob);
}

Test(callable_validate, duplicate_func_id)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    kern(blob, 1)->func_id = 1;
    expect_bad(blob, size, "func_id 1 appears twice (kernel[0] and kernel[1])");
    free(blob);
}

Test(callable_validate, invalid_signature_characters)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    sp_callable_header *h = hdr(blob);
    char *sig = (char *)blob + h->strings.offset + kern(blob, 1)->signature;
    cr_assert_str_eq(sig, "ens");
    sig[1] = 'I';
    expect_bad(blob, size, "kernel[1] (func_id 4) signature has a character other than");
    sig[1] = 'n';
    sig[2] = ' ';
    expect_bad(blob, size, "(at index 2)");
    free(blob);
}

/* ---- fuzz --------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: deterministic, so a failure reproduces from its seed. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static const size_t u64_fields[] = {
    offsetof(sp_callable_header, total_bytes),
    offsetof(sp_callable_header, orch.offset),
    offsetof(sp_callable_header, orch.size),
    offsetof(sp_callable_header, strings.offset),
    offsetof(sp_callable_header, strings.size),
    80 + offsetof(sp_callable_kernel, binary.offset),
    80 + offsetof(sp_callable_kernel, binary.size),
    112 + offsetof(sp_callable_kernel, binary.offset),
    112 + offsetof(sp_callable_kernel, binary.size),
};
static const size_t u32_fields[] = {
    offsetof(sp_callable_header, version),
    offsetof(sp_callable_header, header_bytes),
    offsetof(sp_callable_header, kernel_count),
    offsetof(sp_callable_header, orch_entry),
    offsetof(sp_callable_header, orch_config),
    offsetof(sp_callable_header, checksum),
    offsetof(sp_callable_header, orch_args),
    80 + 0,
    80 + 4,
    80 + 8,
    80 + 12, /* kernel 0: func_id, core_type, entry, signature */
    112 + 0,
    112 + 4,
    112 + 8,
    112 + 12,
};

static uint64_t interesting(uint64_t *rng, size_t size, const uint8_t *blob)
{
    uint64_t other;
    switch (rng_next(rng) % 10) {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
        return size;
    case 3:
        return size - 1 - rng_next(rng) % 8;
    case 4:
        return size + 1;
    case 5:
        return UINT64_MAX - rng_next(rng) % 64;
    case 6:
        return 1ull << (rng_next(rng) % 64);
    case 7: /* another field's value: offsets that line up with sections */
        memcpy(&other, blob + u64_fields[rng_next(rng) % 9], 8);
        return other + rng_next(rng) % 3 - 1;
    default:
        return rng_next(rng) % (size + 1);
    }
}

static size_t mutate(uint64_t *rng, uint8_t *b, size_t size)
{
    int rounds = 1 + (int)(rng_next(rng) % 4);
    for (int r = 0; r < rounds && size > 0; r++) {
        uint64_t v;
        switch (rng_next(rng) % 8) {
        case 0: /* bit flip anywhere */
            b[rng_next(rng) % size] ^= (uint8_t)(1u << (rng_next(rng) % 8));
            break;
        case 1: /* byte set anywhere */
            b[rng_next(rng) % size] = (uint8_t)rng_next(rng);
            break;
        case 2: /* byte set in the header and kernel table */
            b[rng_next(rng) % (size < 144 ? size : 144)] = (uint8_t)rng_next(rng);
            break;
        case 3: { /* truncate, often keeping total_bytes consistent */
            size = rng_next(rng) % size;
            if (size >= 24 && rng_next(rng) % 2) {
                v = size;
                memcpy(b + offsetof(sp_callable_header, total_bytes), &v, 8);
            }
            break;
        }
        case 4:
        case 5: { /* rewrite a 64-bit offset or size */
            size_t at = u64_fields[rng_next(rng) % 9];
            if (at + 8 <= size) {
                v = interesting(rng, size, b);
                memcpy(b + at, &v, 8);
            }
            break;
        }
        case 6: { /* rewrite a 32-bit field: counts, string offsets, ids */
            size_t at = u32_fields[rng_next(rng) % 15];
            if (at + 4 <= size) {
                uint32_t w = (uint32_t)interesting(rng, 200, b);
                if (rng_next(rng) % 3 == 0)
                    w = (uint32_t)(rng_next(rng) % 64);
                memcpy(b + at, &w, 4);
            }
            break;
        }
        default: { /* scribble on the string table */
            uint64_t off;
            memcpy(&off, b + offsetof(sp_callable_header, strings.offset), 8);
            if (off < size)
                b[off + rng_next(rng) % (size - off)] =
                    (uint8_t) "\0_aZ9-ioxens\377"[rng_next(rng) % 13];
            break;
        }
        }
    }
    return size;
}

Test(callable_validate, random_mutations_never_crash_or_escape, .timeout = 240)
{
    size_t size;
    uint8_t *good = small_blob(&size);
    uint8_t *work = malloc(size);
    uint64_t rng = 0x5eed5eed12345678ull;
    int valid = 0, refused = 0;
    char err[512];
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(work, good, size);
        size_t len = mutate(&rng, work, size);
        /* Resealed: unsealed, every mutation would stop at the checksum and
         * none would reach the structural checks this exercises. */
        reseal(work, len);
        err[0] = '\0';
        int rc = validate_copy(work, len, err, sizeof err); /* checks any view it yields */
        if (rc == SP_OK) {
            valid++;
        } else {
            cr_assert_eq(rc, SP_EBLOB, "iteration %d: %s (%s)", iter, sp_status_name(rc), err);
            cr_assert_gt(strlen(err), 0, "iteration %d: refusal without a reason", iter);
            refused++;
        }
    }
    cr_log_info("fuzz: %d validated, %d refused", valid, refused);
    /* Both outcomes must be common, or the fuzz is not exercising anything. */
    cr_assert_gt(valid, 500, "only %d mutations validated", valid);
    cr_assert_gt(refused, 5000, "only %d mutations were refused", refused);
    free(work);
    free(good);
}

/* ---- version 3: the argument signature; version 2 still read ------------- */

#define ARGS_TEXT "x:in:f32[n],y:in:f32[n],z:out:f32[n],tile:scalar"

/* small_blob with an argument signature. */
static uint8_t *v3_blob(size_t *size, const char *args)
{
    static uint8_t orch[560], k0[540];
    fill_pattern(orch, sizeof orch, 1, "main_orch");
    fill_pattern(k0, sizeof k0, 2, "k_a");
    sp_callable_kernel_spec k = {
        .func_id = 1, .core_type = SP_CORE_AIC, .bytes = k0, .size = sizeof k0, .entry = "k_a"};
    sp_callable_spec spec = {.orch_bytes = orch,
                             .orch_size = sizeof orch,
                             .orch_entry = "main_orch",
                             .orch_args = args,
                             .kernels = &k,
                             .kernel_count = 1};
    void *blob;
    char err[512];
    cr_assert_eq(sp_callable_build(&spec, &blob, size, err, sizeof err), SP_OK, "build: %s", err);
    return blob;
}

Test(callable_validate, v3_round_trips_the_argument_signature)
{
    size_t size;
    uint8_t *blob = v3_blob(&size, ARGS_TEXT);
    sp_callable_view v;
    char err[512];
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    assert_view_inside(&v, size);
    cr_assert_eq(v.header->version, 3);
    cr_assert_eq(v.header->header_bytes, 80);
    cr_assert_str_eq(v.orch_args, ARGS_TEXT);
    cr_assert_str_eq(sp_callable_string(&v, v.header->orch_args), ARGS_TEXT);
    free(blob);

    /* None given (NULL or ""): NO_STRING, and the view says NULL. */
    blob = v3_blob(&size, "");
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(v.header->orch_args, SP_CALLABLE_NO_STRING);
    cr_assert_null(v.orch_args);
    free(blob);
}

/* A v2 blob, made by hand from a v3 one: the kernel table moves up over
 * orch_args (the sections stay where they are), version and header_bytes
 * say 2 / 72. It validates, with the same fields and no signature. */
Test(callable_validate, v2_blob_still_validates)
{
    size_t size;
    uint8_t *blob = small_blob(&size);
    cr_assert_eq(sp_callable_validate(blob, size, NULL, NULL, 0), SP_OK);
    uint32_t n = hdr(blob)->kernel_count;
    uint8_t *old = malloc(size);
    memcpy(old, blob, size);
    memmove(blob + 72, blob + 80, n * sizeof(sp_callable_kernel));
    memset(blob + 72 + n * sizeof(sp_callable_kernel), 0, 8);
    hdr(blob)->version = 2;
    hdr(blob)->header_bytes = SP_CALLABLE_HEADER_V2_BYTES;
    reseal(blob, size);

    sp_callable_view v;
    char err[512];
    cr_assert_eq(validate_copy(blob, size, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(v.header->version, 2);
    cr_assert_null(v.orch_args, "a v2 blob has no signature");
    cr_assert_eq((const uint8_t *)v.kernels, blob + 72, "v2's kernel table follows its header");
    cr_assert_str_eq(v.orch_entry, "main_orch");
    cr_assert_str_eq(v.orch_config, "main_config");
    const sp_callable_kernel *was = (const sp_callable_kernel *)(old + 80);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(v.kernels[i].func_id, was[i].func_id);
        cr_assert_eq(v.kernels[i].binary.offset, was[i].binary.offset);
        cr_assert_str_eq(sp_callable_string(&v, v.kernels[i].entry),
                         (const char *)old + hdr(old)->strings.offset + was[i].entry);
    }
    /* The same blob with v3's header_bytes is refused. */
    hdr(blob)->header_bytes = 80;
    expect_bad(blob, size, "header_bytes is 80, expected 72 for version 2");
    free(old);
    free(blob);
}

Test(callable_validate, malformed_argument_signatures_are_refused)
{
    size_t size;
    uint8_t *blob = v3_blob(&size, ARGS_TEXT);
    sp_callable_header *h = hdr(blob);
    sp_callable_header keep = *h;
    h->orch_args = (uint32_t)h->strings.size;
    expect_bad(blob, size, "orchestration argument signature (string offset");
    *h = keep;
    h->orch_args = UINT32_MAX - 1;
    expect_bad(blob, size, "points outside the string table");
    *h = keep;
    h->reserved = 1;
    expect_bad(blob, size, "reserved header word is 0x00000001");
    *h = keep;
    /* Text that does not parse: the parser's reason, behind SP_EBLOB. */
    char *text = (char *)blob + h->strings.offset + h->orch_args;
    cr_assert_str_eq(text, ARGS_TEXT);
    text[5] = 'q'; /* "x:in:q32[n]" */
    expect_bad(blob, size, "argument signature does not parse");
    expect_bad(blob, size, "DTYPE \"q32\"");
    text[5] = 'f';
    text[0] = 'y'; /* "y" twice */
    expect_bad(blob, size, "name 'y' is used twice");
    text[0] = 'x';
    /* The table ends with its last string's NUL: remove it. */
    uint8_t *last = blob + h->strings.offset + h->strings.size - 1;
    cr_assert_eq(*last, 0);
    *last = 'z';
    expect_bad(blob, size, "not NUL-terminated");
    free(blob);
}
