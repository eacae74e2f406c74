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
 * builder's checks accept (ET_DYN for this machine; one PT_LOAD over the
 * whole file, a PT_DYNAMIC naming a SysV hash table, a symbol table and a
 * string table that export each of `names` (NULL-terminated) as a global
 * function). It is not loadable; the format tests never load it.
 * n >= FAKE_ELF_MIN; names fit in FAKE_ELF_NAMES bytes. */
#define FAKE_ELF_MIN 520u
#define FAKE_ELF_NAMES 96u
static inline void fill_elf(uint8_t *p, size_t n, uint8_t seed, const char *const *names)
{
    cr_assert_geq(n, FAKE_ELF_MIN);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 31u);
    size_t count = 0, text = 1;
    while (names && names[count])
        text += strlen(names[count++]) + 1;
    cr_assert_leq(count, 4);
    cr_assert_leq(text, FAKE_ELF_NAMES);
    /* header 64 | 2 phdrs 112 | dynamic 96 @176 | hash @272 | syms @304 | strings @424 */
    const uint64_t dyn_at = 176, hash_at = 272, sym_at = 304, str_at = 424;
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
        {.p_type = PT_DYNAMIC,
         .p_offset = dyn_at,
         .p_vaddr = dyn_at,
         .p_filesz = 96,
         .p_memsz = 96},
    };
    Elf64_Dyn dyn[6] = {{.d_tag = DT_STRTAB, .d_un.d_ptr = str_at},
                        {.d_tag = DT_STRSZ, .d_un.d_val = text},
                        {.d_tag = DT_SYMTAB, .d_un.d_ptr = sym_at},
                        {.d_tag = DT_SYMENT, .d_un.d_val = sizeof(Elf64_Sym)},
                        {.d_tag = DT_HASH, .d_un.d_ptr = hash_at},
                        {.d_tag = DT_NULL}};
    /* SysV hash: one bucket; the lookup only needs nchain (the symbol count). */
    uint32_t hash[8] = {1, (uint32_t)(1 + count)};
    Elf64_Sym syms[5] = {{0}};
    char strings[FAKE_ELF_NAMES] = "";
    size_t used = 1;
    for (size_t i = 0; i < count; i++) {
        syms[1 + i] = (Elf64_Sym){.st_name = (uint32_t)used,
                                  .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
                                  .st_shndx = 1,
                                  .st_value = 64,
                                  .st_size = 4};
        memcpy(strings + used, names[i], strlen(names[i]) + 1);
        used += strlen(names[i]) + 1;
    }
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, ph, sizeof ph);
    memcpy(p + dyn_at, dyn, sizeof dyn);
    memcpy(p + hash_at, hash, sizeof hash);
    memcpy(p + sym_at, syms, sizeof syms);
    memcpy(p + str_at, strings, text);
}

/* fill_elf exporting the one or two names given. */
#define fill_pattern(p, n, seed, ...) fill_elf(p, n, seed, (const char *const[]){__VA_ARGS__, NULL})

/* Recompute the checksum after a test edited a field on purpose, so the
 * validator reaches the check the test is about (a blob shorter than the
 * header has no checksum field to set). */
static inline void reseal(uint8_t *blob, size_t size)
{
    if (size >= SP_CALLABLE_HEADER_V2_BYTES)
        ((sp_callable_header *)blob)->checksum = sp_callable_checksum(blob, size);
}

/* Every section and string a validated view reports lies inside the blob,
 * and sections do not overlap each other or the header + table. */
static inline void assert_view_inside(const sp_callable_view *v, size_t size)
{
    const sp_callable_header *h = v->header;
    cr_assert_eq(v->size, size);
    cr_assert_eq((const uint8_t *)h, v->base);
    uint64_t table_end =
        (uint64_t)h->header_bytes + (uint64_t)h->kernel_count * sizeof(sp_callable_kernel);
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
    if (v->orch_args) {
        cr_assert_geq(h->version, 3, "a v2 blob has no argument signature");
        cr_assert(v->orch_args >= lo && v->orch_args + strlen(v->orch_args) < hi);
        cr_assert_gt(strlen(v->orch_args), 0);
    }
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
