/* Shared by the callable tests: known-good blobs to mutate, file reading,
 * and the invariant every validated view must satisfy. */
#ifndef SP_TEST_CALLABLE_SUPPORT_H
#define SP_TEST_CALLABLE_SUPPORT_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"

#define ORCH_SO SP_TEST_KERNEL_DIR "/orch_noop.so"
#define KERNELS_SO SP_TEST_KERNEL_DIR "/callable_kernels.so"

static inline void *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    cr_assert_gt(n, 0, "%s is empty", path);
    void *buf = malloc((size_t)n);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* In-memory "binary" bytes: the format does not care what is inside. */
static inline void fill_pattern(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 31u);
}

/* Every section and string a validated view reports lies inside the blob,
 * and sections do not overlap each other or the header + table. */
static inline void assert_view_inside(const sp_callable_view *v, size_t size)
{
    const sp_callable_header *h = v->header;
    cr_assert_eq(v->size, size);
    cr_assert_eq((const uint8_t *)h, v->base);
    uint64_t table_end = sizeof *h + (uint64_t)h->kernel_count * sizeof(sp_callable_kernel);
    cr_assert_leq(table_end, size);
    size_t n = 2 + h->kernel_count;
    for (size_t i = 0; i < n; i++) {
        const sp_callable_section *s = i == 0   ? &h->orch
                                       : i == 1 ? &h->strings
                                                : &v->kernels[i - 2].binary;
        cr_assert_leq(s->offset, size);
        cr_assert_leq(s->size, size - s->offset);
        cr_assert_gt(s->size, 0);
        cr_assert_geq(s->offset, table_end, "section %zu overlaps the header or table", i);
        for (size_t j = i + 1; j < n; j++) {
            const sp_callable_section *t = j == 1 ? &h->strings : &v->kernels[j - 2].binary;
            cr_assert(s->offset + s->size <= t->offset || t->offset + t->size <= s->offset,
                      "sections %zu and %zu overlap", i, j);
        }
    }
    const char *lo = (const char *)v->base + h->strings.offset;
    const char *hi = lo + h->strings.size;
    cr_assert(v->orch_entry >= lo && v->orch_entry + strlen(v->orch_entry) < hi);
    cr_assert_gt(strlen(v->orch_entry), 0);
    if (v->orch_config)
        cr_assert(v->orch_config >= lo && v->orch_config + strlen(v->orch_config) < hi);
    for (uint32_t i = 0; i < h->kernel_count; i++) {
        const sp_callable_kernel *k = &v->kernels[i];
        const char *e = sp_callable_string(v, k->entry);
        const char *s = sp_callable_string(v, k->signature);
        cr_assert_not_null(e);
        cr_assert_not_null(s);
        cr_assert(e >= lo && e + strlen(e) < hi);
        cr_assert(s >= lo && s + strlen(s) < hi);
        cr_assert_geq(k->func_id, 0);
        cr_assert(k->core_type == SP_CORE_AIC || k->core_type == SP_CORE_AIV);
        cr_assert_eq(sp_callable_find_kernel(v, k->func_id), (int)i);
    }
}

#endif
