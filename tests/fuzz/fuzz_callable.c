/* Fuzz target for the callable blob validator: the input bytes are the
 * untrusted blob. Every refusal must be a named status with a reason; every
 * accepted blob must satisfy, re-checked here independently of the
 * validator, what simpler/callable.h promises (sections inside the blob,
 * disjoint and non-empty; every string inside the table, terminated, well
 * formed), and must survive a rebuild with sp_callable_build unchanged.
 * A broken promise calls abort(): this is a test harness, not library code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/elf_check.h"
#include "simpler/callable.h"
#include "simpler/status.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_callable: invariant broken at line %d: %s\n", __LINE__, #cond);  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* [off, off+size) inside [0, total), written so that nothing wraps. */
static int inside(uint64_t off, uint64_t size, uint64_t total)
{
    return off <= total && size <= total - off;
}

static int disjoint(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return a + an <= b || b + bn <= a;
}

/* The string at `off`: inside the table, NUL-terminated there. */
static const char *table_string(const sp_callable_view *v, uint32_t off)
{
    const sp_callable_section *t = &v->header->strings;
    CHECK(off < t->size);
    const char *s = (const char *)v->base + t->offset + off;
    CHECK(memchr(s, '\0', t->size - off) != NULL);
    return s;
}

static void check_identifier(const char *s)
{
    size_t n = strlen(s);
    CHECK(n >= 1 && n <= 255);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        CHECK(alpha || (i > 0 && c >= '0' && c <= '9'));
    }
}

static void check_signature(const char *s)
{
    int tensors = 0, scalars = 0;
    for (; *s; s++) {
        CHECK(strchr("ioxens", *s) != NULL);
        if (*s == 's')
            scalars++;
        else
            tensors++;
    }
    CHECK(tensors <= 32 && scalars <= 16);
}

/* What an accepted blob promises, checked without the validator's code. */
static void check_accepted(const uint8_t *blob, size_t size, const sp_callable_view *v)
{
    const sp_callable_header *h = v->header;
    CHECK(v->base == blob && v->size == size && (const uint8_t *)h == blob);
    CHECK(h->magic == SP_CALLABLE_MAGIC &&
          (h->version == SP_CALLABLE_VERSION || h->version == SP_CALLABLE_VERSION_MIN));
    /* Version 2's header is 72 bytes, version 3's 80 (with orch_args). */
    uint32_t header = h->version == 2 ? SP_CALLABLE_HEADER_V2_BYTES : (uint32_t)sizeof *h;
    CHECK(h->header_bytes == header && h->total_bytes == size &&
          h->checksum == sp_callable_checksum(blob, size));
    CHECK(h->kernel_count <= SP_CALLABLE_MAX_KERNELS);
    uint64_t table_end = header + (uint64_t)h->kernel_count * sizeof(sp_callable_kernel);
    CHECK(table_end <= size);
    CHECK((const uint8_t *)v->kernels == blob + header);
    if (v->orch_args) {
        CHECK(h->version >= 3 && *v->orch_args);
        CHECK(v->orch_args == table_string(v, h->orch_args));
        static sp_callable_signature sig;
        CHECK(sp_callable_parse_signature(v->orch_args, &sig, NULL, 0) == SP_OK);
    }

    /* Sections: [0] header + table, [1] orchestration, [2] strings, [3..] kernels. */
    size_t n = 3 + h->kernel_count;
    uint64_t *off = malloc(n * sizeof *off), *len = malloc(n * sizeof *len);
    CHECK(off && len);
    off[0] = 0, len[0] = table_end;
    off[1] = h->orch.offset, len[1] = h->orch.size;
    off[2] = h->strings.offset, len[2] = h->strings.size;
    for (uint32_t i = 0; i < h->kernel_count; i++)
        off[3 + i] = v->kernels[i].binary.offset, len[3 + i] = v->kernels[i].binary.size;
    for (size_t i = 0; i < n; i++) {
        CHECK(len[i] > 0 && inside(off[i], len[i], size));
        for (size_t j = 0; j < i; j++)
            CHECK(disjoint(off[i], len[i], off[j], len[j]));
    }
    free(off);
    free(len);

    CHECK(v->orch_entry == table_string(v, h->orch_entry));
    check_identifier(v->orch_entry);
    if (h->orch_config == SP_CALLABLE_NO_STRING) {
        CHECK(v->orch_config == NULL);
    } else {
        CHECK(v->orch_config == table_string(v, h->orch_config));
        check_identifier(v->orch_config);
    }
    for (uint32_t i = 0; i < h->kernel_count; i++) {
        const sp_callable_kernel *k = &v->kernels[i];
        CHECK(k->func_id >= 0 && (k->core_type == 0 || k->core_type == 1));
        CHECK(sp_callable_find_kernel(v, k->func_id) == (int)i);
        const char *entry = sp_callable_string(v, k->entry);
        CHECK(entry && entry == table_string(v, k->entry));
        check_identifier(entry);
        const char *sig = sp_callable_string(v, k->signature);
        CHECK(sig && sig == table_string(v, k->signature));
        check_signature(sig);
    }
}

/* Any offset: sp_callable_string answers NULL or a string inside the table. */
static void check_any_string(const sp_callable_view *v, uint32_t off)
{
    const char *s = sp_callable_string(v, off);
    if (s)
        CHECK(s == table_string(v, off));
    else
        CHECK(off >= v->header->strings.size || !memchr(v->base + v->header->strings.offset + off,
                                                        '\0', v->header->strings.size - off));
}

/* Pack the accepted blob's parts again: the builder takes what the validator
 * accepts, and the new blob reads back the same. */
static void check_rebuild(const sp_callable_view *v)
{
    const sp_callable_header *h = v->header;
    sp_callable_kernel_spec *ks = calloc(h->kernel_count + 1, sizeof *ks);
    CHECK(ks);
    for (uint32_t i = 0; i < h->kernel_count; i++) {
        const sp_callable_kernel *k = &v->kernels[i];
        ks[i] = (sp_callable_kernel_spec){
            .func_id = k->func_id,
            .core_type = k->core_type,
            .bytes = v->base + k->binary.offset,
            .size = k->binary.size,
            .entry = sp_callable_string(v, k->entry),
            .signature = sp_callable_string(v, k->signature),
        };
    }
    sp_callable_spec spec = {
        .orch_bytes = v->base + h->orch.offset,
        .orch_size = h->orch.size,
        .orch_entry = v->orch_entry,
        .orch_config = v->orch_config,
        .orch_args = v->orch_args,
        .kernels = ks,
        .kernel_count = h->kernel_count,
    };
    void *blob = NULL;
    size_t size = 0;
    char err[256];
    /* The builder also checks each binary's ELF structure and that it
     * exports the names given, which the format validator does not: it
     * refuses exactly when one fails that. */
    int elf_ok = sp__elf_check(spec.orch_bytes, spec.orch_size, NULL, 0) == SP_OK;
    for (uint32_t i = 0; i < h->kernel_count; i++)
        elf_ok = elf_ok && sp__elf_check(ks[i].bytes, ks[i].size, NULL, 0) == SP_OK;
    int exports_ok = elf_ok && sp__elf_find_export(spec.orch_bytes, spec.orch_size, spec.orch_entry,
                                                   NULL, 0) == SP_OK;
    if (exports_ok && spec.orch_config)
        exports_ok = sp__elf_find_export(spec.orch_bytes, spec.orch_size, spec.orch_config, NULL,
                                         0) == SP_OK;
    for (uint32_t i = 0; exports_ok && i < h->kernel_count; i++)
        exports_ok = sp__elf_find_export(ks[i].bytes, ks[i].size, ks[i].entry, NULL, 0) == SP_OK;
    int rc = sp_callable_build(&spec, &blob, &size, err, sizeof err);
    if (!elf_ok) {
        CHECK(rc == SP_EKERNEL_LOAD && blob == NULL && err[0]);
        free(ks);
        return;
    }
    if (!exports_ok) {
        CHECK((rc == SP_EMODULE_SYMBOL || rc == SP_EKERNEL_LOAD) && blob == NULL && err[0]);
        free(ks);
        return;
    }
    if (rc)
        fprintf(stderr, "fuzz_callable: rebuild refused: %s\n", err);
    CHECK(rc == SP_OK);
    sp_callable_view w;
    CHECK(sp_callable_validate(blob, size, &w, err, sizeof err) == SP_OK);
    CHECK(w.header->kernel_count == h->kernel_count);
    CHECK(strcmp(w.orch_entry, v->orch_entry) == 0);
    CHECK((w.orch_config == NULL) == (v->orch_config == NULL));
    CHECK((w.orch_args == NULL) == (v->orch_args == NULL));
    CHECK(!w.orch_args || strcmp(w.orch_args, v->orch_args) == 0);
    CHECK(!w.orch_config || strcmp(w.orch_config, v->orch_config) == 0);
    CHECK(w.header->orch.size == h->orch.size &&
          memcmp(w.base + w.header->orch.offset, spec.orch_bytes, h->orch.size) == 0);
    for (uint32_t i = 0; i < h->kernel_count; i++) {
        const sp_callable_kernel *a = &w.kernels[i];
        CHECK(a->func_id == ks[i].func_id && a->core_type == ks[i].core_type);
        CHECK(strcmp(sp_callable_string(&w, a->entry), ks[i].entry) == 0);
        CHECK(strcmp(sp_callable_string(&w, a->signature), ks[i].signature) == 0);
        CHECK(a->binary.size == ks[i].size &&
              memcmp(w.base + a->binary.offset, ks[i].bytes, ks[i].size) == 0);
    }
    free(blob);
    free(ks);
}

static void one_blob(const uint8_t *data, size_t size);

/* The bytes as they are (a corrupted blob: the checksum refuses nearly all),
 * and again with the checksum recomputed, so the structural checks behind
 * it are reached by every input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one_blob(data, size);
    if (size >= SP_CALLABLE_HEADER_V2_BYTES) {
        uint8_t *sealed = malloc(size);
        CHECK(sealed);
        memcpy(sealed, data, size);
        ((sp_callable_header *)(void *)sealed)->checksum = sp_callable_checksum(sealed, size);
        one_blob(sealed, size);
        free(sealed);
    }
    return 0;
}

static void one_blob(const uint8_t *data, size_t size)
{
    /* An exact-size malloc'd copy: aligned as the validator requires, and
     * any read past the end is an out-of-bounds access under ASan. */
    uint8_t *blob = malloc(size ? size : 1);
    CHECK(blob);
    if (size)
        memcpy(blob, data, size);

    sp_callable_view v;
    memset(&v, 0, sizeof v);
    char err[512];
    int rc = sp_callable_validate(blob, size, &v, err, sizeof err);
    CHECK(rc == SP_OK || rc == SP_EBLOB);
    CHECK(memchr(err, '\0', sizeof err) != NULL);
    CHECK(rc == SP_OK || err[0] != '\0');

    /* A reason buffer of any small length is written within its bounds, and
     * the verdict does not depend on it. */
    size_t tiny_len = size % 9;
    char *tiny = malloc(tiny_len ? tiny_len : 1);
    CHECK(tiny);
    CHECK(sp_callable_validate(blob, size, NULL, tiny, tiny_len) == rc);
    CHECK(tiny_len == 0 || memchr(tiny, '\0', tiny_len) != NULL);
    CHECK(sp_callable_validate(blob, size, NULL, NULL, 0) == rc);
    free(tiny);

    /* NULL and misaligned blobs are refused before any byte is read. */
    CHECK(sp_callable_validate(NULL, size, &v, err, sizeof err) == SP_EINVAL && err[0]);
    uint8_t *shifted = malloc(size + 1);
    CHECK(shifted);
    if (size)
        memcpy(shifted + 1, data, size);
    CHECK(sp_callable_validate(shifted + 1, size, NULL, err, sizeof err) == SP_EINVAL && err[0]);
    free(shifted);
    if (rc == SP_OK) /* the calls above reused v */
        CHECK(sp_callable_validate(blob, size, &v, err, sizeof err) == SP_OK);

    if (rc == SP_OK) {
        check_accepted(blob, size, &v);
        uint32_t probe = 0;
        memcpy(&probe, blob + size - (size >= 4 ? 4 : 0), size >= 4 ? 4 : 0);
        check_any_string(&v, probe);
        check_any_string(&v, (uint32_t)size);
        check_rebuild(&v);
    }
    free(blob);
}
