/* Shared by the callable tests: known-good blobs to mutate, file reading,
 * and the invariant every validated view must satisfy. */
#ifndef SP_TEST_CALLABLE_SUPPORT_H
#define SP_TEST_CALLABLE_SUPPORT_H

#include <criterion/criterion.h>
#include <elf.h>
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

/* In-memory "binary" bytes: a pattern behind the smallest ELF header the
 * builder's structure check accepts (ET_DYN for this machine; one PT_LOAD
 * over the whole file, a PT_DYNAMIC naming a string and symbol table at 0).
 * It is not loadable; the format tests never load it. n >= FAKE_ELF_MIN. */
#define FAKE_ELF_MIN 224u
static inline void fill_pattern(uint8_t *p, size_t n, uint8_t seed)
{
    cr_assert_geq(n, FAKE_ELF_MIN);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 31u);
    Elf64_Ehdr h = {
        .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT},
        .e_type = ET_DYN,
#if defined(__aarch64__)
        .e_machine = EM_AARCH64,
#else
        .e_machine = EM_X86_64,
#endif
        .e_version = EV_CURRENT,
        .e_phoff = sizeof(Elf64_Ehdr),
        .e_ehsize = sizeof(Elf64_Ehdr),
        .e_phentsize = sizeof(Elf64_Phdr),
        .e_phnum = 2,
    };
    Elf64_Phdr ph[2] = {
        {.p_type = PT_LOAD, .p_filesz = n, .p_memsz = n, .p_align = 4096},
        {.p_type = PT_DYNAMIC, .p_offset = 176, .p_vaddr = 176, .p_filesz = 48, .p_memsz = 48},
    };
    Elf64_Dyn dyn[3] = {{.d_tag = DT_STRTAB}, {.d_tag = DT_SYMTAB}, {.d_tag = DT_NULL}};
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, ph, sizeof ph);
    memcpy(p + 176, dyn, sizeof dyn);
}

/* Recompute the checksum after a test edited a field on purpose, so the
 * validator reaches the check the test is about (a blob shorter than the
 * header has no checksum field to set). */
static inline void reseal(uint8_t *blob, size_t size)
{
    if (size >= sizeof(sp_callable_header))
        ((sp_callable_header *)blob)->checksum = sp_callable_checksum(blob, size);
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
