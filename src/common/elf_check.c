/* sp__elf_check: refuse, by name, the ELF files the dynamic loader would
 * crash on. Every field is read through bounds that were checked first, and
 * no end is computed where it could wrap. */
#include "common/elf_check.h"

#include <elf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "simpler/status.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_NONE /* not checked */
#endif

/* Limits no real kernel or orchestration comes near; a damaged field that
 * passes them still cannot make the loader map past the file. */
#define MAX_PHDRS 256u
#define MAX_SEGMENT_BYTES (1ull << 32)
#define MAX_VADDR (1ull << 47)

typedef struct elf {
    const uint8_t *b;
    size_t size;
    const Elf64_Phdr *ph;
    unsigned phnum;
    /* From the dynamic section, for the symbol lookup (addresses; 0: absent). */
    uint64_t symtab, strtab, strsz, hash, gnu_hash;
    char *why;
    size_t why_len;
} elf;

static int bad(elf *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(elf *e, const char *fmt, ...)
{
    if (e->why && e->why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->why, e->why_len, fmt, ap);
        va_end(ap);
    }
    return SP_EKERNEL_LOAD;
}

/* [off, off + len) inside [0, total), without computing off + len. */
static bool inside(uint64_t off, uint64_t len, uint64_t total)
{
    return off <= total && len <= total - off;
}

static int check_ehdr(elf *e, const Elf64_Ehdr *h)
{
    if (e->size < sizeof *h)
        return bad(e, "%zu bytes is shorter than an ELF header (64 bytes)", e->size);
    if (memcmp(h->e_ident, ELFMAG, SELFMAG) != 0)
        return bad(e, "not an ELF file (no \\177ELF magic)");
    if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB)
        return bad(e, "ELF class %u / data %u: expected 64-bit little-endian", h->e_ident[EI_CLASS],
                   h->e_ident[EI_DATA]);
    if (h->e_ident[EI_VERSION] != EV_CURRENT || h->e_version != EV_CURRENT)
        return bad(e, "ELF version %u/%" PRIu32 ", expected 1", h->e_ident[EI_VERSION],
                   h->e_version);
    if (h->e_type != ET_DYN)
        return bad(e, "ELF type %u is not a shared object (ET_DYN)", h->e_type);
    if (HOST_MACHINE != EM_NONE && h->e_machine != HOST_MACHINE)
        return bad(e, "ELF machine %u is not this host's (%u)", h->e_machine, HOST_MACHINE);
    if (h->e_ehsize != sizeof(Elf64_Ehdr) || h->e_phentsize != sizeof(Elf64_Phdr))
        return bad(e, "ELF header size %u / program header size %u, expected 64 / 56", h->e_ehsize,
                   h->e_phentsize);
    if (h->e_phnum == 0 || h->e_phnum > MAX_PHDRS)
        return bad(e, "%u program headers (expected 1..%u)", h->e_phnum, MAX_PHDRS);
    if (h->e_phoff % 8 || !inside(h->e_phoff, (uint64_t)h->e_phnum * sizeof(Elf64_Phdr), e->size))
        return bad(e,
                   "program header table (offset %" PRIu64 ", %u entries) lies outside the "
                   "%zu-byte file (truncated?)",
                   h->e_phoff, h->e_phnum, e->size);
    e->ph = (const Elf64_Phdr *)(e->b + h->e_phoff);
    e->phnum = h->e_phnum;
    return SP_OK;
}

/* The section table is not used by the loader, but a file whose table lies
 * outside it was cut or damaged: refuse it while the cause is still clear. */
static int check_sections(elf *e, const Elf64_Ehdr *h)
{
    if (h->e_shoff == 0 && h->e_shnum == 0)
        return SP_OK;
    if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0)
        return bad(e, "section header size %u / count %u (expected 64 / at least 1)",
                   h->e_shentsize, h->e_shnum);
    if (h->e_shoff % 8 || !inside(h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr), e->size))
        return bad(e,
                   "section table (offset %" PRIu64 ", %u entries) lies outside the %zu-byte "
                   "file (truncated?)",
                   h->e_shoff, h->e_shnum, e->size);
    if (h->e_shstrndx != SHN_UNDEF && h->e_shstrndx >= h->e_shnum)
        return bad(e, "section name table index %u is not below the %u sections", h->e_shstrndx,
                   h->e_shnum);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(e->b + h->e_shoff);
    for (unsigned i = 0; i < h->e_shnum; i++) {
        if (sh[i].sh_type == SHT_NULL || sh[i].sh_type == SHT_NOBITS)
            continue;
        if (!inside(sh[i].sh_offset, sh[i].sh_size, e->size))
            return bad(e,
                       "section %u (offset %" PRIu64 ", %" PRIu64 " bytes) lies outside the "
                       "%zu-byte file (truncated?)",
                       i, sh[i].sh_offset, sh[i].sh_size, e->size);
    }
    return SP_OK;
}

static int check_loads(elf *e)
{
    unsigned loads = 0, dynamics = 0;
    uint64_t last_end = 0;
    for (unsigned i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type == PT_DYNAMIC)
            dynamics++;
        if (p->p_type != PT_LOAD && p->p_type != PT_DYNAMIC)
            continue;
        const char *what = p->p_type == PT_LOAD ? "PT_LOAD" : "PT_DYNAMIC";
        if (!inside(p->p_offset, p->p_filesz, e->size))
            return bad(e,
                       "program header %u (%s: offset %" PRIu64 ", %" PRIu64 " bytes) runs past "
                       "the end of the %zu-byte file (truncated?)",
                       i, what, p->p_offset, p->p_filesz, e->size);
        if (p->p_filesz > p->p_memsz || p->p_memsz > MAX_SEGMENT_BYTES ||
            !inside(p->p_vaddr, p->p_memsz, MAX_VADDR))
            return bad(e,
                       "program header %u (%s): %" PRIu64 " bytes in the file, %" PRIu64
                       " in memory at 0x%" PRIx64 " is not a sane segment",
                       i, what, p->p_filesz, p->p_memsz, p->p_vaddr);
        if (p->p_type != PT_LOAD)
            continue;
        if (p->p_align > 1 &&
            ((p->p_align & (p->p_align - 1)) || (p->p_vaddr - p->p_offset) % p->p_align))
            return bad(e,
                       "program header %u (PT_LOAD): alignment %" PRIu64 " is not a power of "
                       "two that offset and address agree on",
                       i, p->p_align);
        if (loads && p->p_vaddr < last_end)
            return bad(e,
                       "program header %u (PT_LOAD at 0x%" PRIx64 ") is out of order or "
                       "overlaps the one before",
                       i, p->p_vaddr);
        last_end = p->p_vaddr + p->p_memsz;
        loads++;
    }
    if (!loads)
        return bad(e, "no PT_LOAD segment");
    if (dynamics != 1)
        return bad(e, "%u PT_DYNAMIC segments (a shared object has exactly one)", dynamics);
    return SP_OK;
}

/* File offset of the `len` bytes at address `vaddr`, if one PT_LOAD maps
 * them from the file; false if they are not all file-backed. */
static bool file_range(const elf *e, uint64_t vaddr, uint64_t len, uint64_t *off)
{
    for (unsigned i = 0; i < e->phnum; i++) {
        const Elf64_Phdr *p = &e->ph[i];
        if (p->p_type != PT_LOAD || vaddr < p->p_vaddr)
            continue;
        uint64_t rel = vaddr - p->p_vaddr;
        if (inside(rel, len, p->p_filesz)) {
            *off = p->p_offset + rel;
            return true;
        }
    }
    return false;
}

/* Dynamic tags that hold an address, and the size tag of those that are
 * tables (0: only the start is checked). */
static const struct {
    int64_t tag, size_tag;
    const char *name;
} address_tags[] = {
    {DT_STRTAB, DT_STRSZ, "DT_STRTAB"},
    {DT_SYMTAB, 0, "DT_SYMTAB"},
    {DT_HASH, 0, "DT_HASH"},
    {DT_GNU_HASH, 0, "DT_GNU_HASH"},
    {DT_RELA, DT_RELASZ, "DT_RELA"},
    {DT_REL, DT_RELSZ, "DT_REL"},
    {DT_JMPREL, DT_PLTRELSZ, "DT_JMPREL"},
    {DT_INIT_ARRAY, DT_INIT_ARRAYSZ, "DT_INIT_ARRAY"},
    {DT_FINI_ARRAY, DT_FINI_ARRAYSZ, "DT_FINI_ARRAY"},
    {DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, "DT_PREINIT_ARRAY"},
    {DT_VERSYM, 0, "DT_VERSYM"},
    {DT_VERDEF, 0, "DT_VERDEF"},
    {DT_VERNEED, 0, "DT_VERNEED"},
    {DT_INIT, 0, "DT_INIT"},
    {DT_FINI, 0, "DT_FINI"},
};
#define N_ADDRESS_TAGS (sizeof address_tags / sizeof address_tags[0])

static int check_dynamic(elf *e)
{
    const Elf64_Phdr *d = NULL;
    for (unsigned i = 0; i < e->phnum; i++)
        if (e->ph[i].p_type == PT_DYNAMIC)
            d = &e->ph[i];
    /* The loader reads the dynamic array at its address, not its offset. */
    uint64_t off;
    if (d->p_filesz < sizeof(Elf64_Dyn) || !file_range(e, d->p_vaddr, d->p_filesz, &off) || off % 8)
        return bad(e,
                   "the dynamic section (0x%" PRIx64 ", %" PRIu64 " bytes) is not inside a "
                   "loaded part of the file",
                   d->p_vaddr, d->p_filesz);
    const Elf64_Dyn *dyn = (const Elf64_Dyn *)(e->b + off);
    size_t n = d->p_filesz / sizeof *dyn;
    uint64_t value[N_ADDRESS_TAGS] = {0}, size_of[N_ADDRESS_TAGS] = {0};
    bool seen[N_ADDRESS_TAGS] = {false};
    uint64_t strsz = 0;
    size_t end = n;
    for (size_t i = 0; i < n; i++) {
        int64_t tag = dyn[i].d_tag;
        uint64_t v = dyn[i].d_un.d_val;
        if (tag == DT_NULL) {
            end = i;
            break;
        }
        if ((tag == DT_RELAENT && v != sizeof(Elf64_Rela)) ||
            (tag == DT_RELENT && v != sizeof(Elf64_Rel)) ||
            (tag == DT_SYMENT && v != sizeof(Elf64_Sym)))
            return bad(e,
                       "dynamic entry %zu: entry size %" PRIu64 " for tag %" PRId64
                       " is not the ELF64 one",
                       i, v, tag);
        for (size_t t = 0; t < N_ADDRESS_TAGS; t++) {
            if (tag == address_tags[t].tag) {
                value[t] = v;
                seen[t] = true;
            }
            if (address_tags[t].size_tag && tag == address_tags[t].size_tag)
                size_of[t] = v;
        }
        if (tag == DT_STRSZ)
            strsz = v;
    }
    if (end == n)
        return bad(e, "the dynamic section has no DT_NULL terminator");
    if (!seen[0] || !seen[1])
        return bad(e, "the dynamic section has no %s", seen[0] ? "DT_SYMTAB" : "DT_STRTAB");
    for (size_t t = 0; t < N_ADDRESS_TAGS; t++) {
        uint64_t at;
        if (seen[t] && !file_range(e, value[t], size_of[t] ? size_of[t] : 1, &at))
            return bad(e,
                       "%s (0x%" PRIx64 ", %" PRIu64 " bytes) is not inside a loaded part of "
                       "the file",
                       address_tags[t].name, value[t], size_of[t]);
    }
    e->strtab = value[0];
    e->symtab = value[1];
    e->hash = seen[2] ? value[2] : 0;
    e->gnu_hash = seen[3] ? value[3] : 0;
    e->strsz = strsz;
    /* Names the loader reads from the string table. */
    for (size_t i = 0; i < end; i++) {
        int64_t tag = dyn[i].d_tag;
        if ((tag == DT_NEEDED || tag == DT_SONAME || tag == DT_RPATH || tag == DT_RUNPATH) &&
            dyn[i].d_un.d_val >= strsz)
            return bad(e,
                       "dynamic entry %zu names string %" PRIu64 ", past the %" PRIu64
                       "-byte string table",
                       i, dyn[i].d_un.d_val, strsz);
    }
    return SP_OK;
}

/* Every structural check; on success `e` holds the tables' addresses. */
static int elf_open(elf *e, const void *bytes, size_t size, char *why, size_t why_len)
{
    *e = (elf){.b = bytes, .size = size, .why = why, .why_len = why_len};
    if (why && why_len)
        why[0] = '\0';
    if (!bytes)
        return bad(e, "no bytes");
    /* The header is read through a copy: the bytes need not be aligned. */
    Elf64_Ehdr h;
    memset(&h, 0, sizeof h);
    memcpy(&h, bytes, size < sizeof h ? size : sizeof h);
    int rc = check_ehdr(e, &h);
    if (!rc && ((uintptr_t)bytes % 8))
        rc = bad(e, "ELF bytes at %p are not 8-byte aligned", bytes);
    if (!rc)
        rc = check_sections(e, &h);
    if (!rc)
        rc = check_loads(e);
    if (!rc)
        rc = check_dynamic(e);
    return rc;
}

int sp__elf_check(const void *bytes, size_t size, char *why, size_t why_len)
{
    elf e;
    return elf_open(&e, bytes, size, why, why_len);
}

/* ---- exported symbols ---------------------------------------------------- */

/* `len` bytes at address `vaddr` as a pointer into the file, or NULL when
 * they are not all file-backed: every table read below goes through this. */
static const uint8_t *at_vaddr(const elf *e, uint64_t vaddr, uint64_t len)
{
    uint64_t off;
    return file_range(e, vaddr, len, &off) ? e->b + off : NULL;
}

static uint32_t read_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Symbol i of the dynamic symbol table (copied: alignment is not trusted). */
static bool symbol_at(const elf *e, uint64_t i, Elf64_Sym *out)
{
    if (i > MAX_SEGMENT_BYTES / sizeof *out)
        return false;
    const uint8_t *p = at_vaddr(e, e->symtab + i * sizeof *out, sizeof *out);
    if (!p)
        return false;
    memcpy(out, p, sizeof *out);
    return true;
}

/* Whether symbol `sym`'s name is `name` (len bytes + NUL), inside DT_STRSZ. */
static bool symbol_named(const elf *e, const Elf64_Sym *sym, const char *name, size_t len)
{
    if (sym->st_name >= e->strsz || len + 1 > e->strsz - sym->st_name)
        return false;
    const uint8_t *p = at_vaddr(e, e->strtab + sym->st_name, len + 1);
    return p && memcmp(p, name, len) == 0 && p[len] == '\0';
}

static uint32_t gnu_hash_of(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33u + (uint8_t)*s;
    return h;
}

/* The symbol named `name` as the loader's hash table finds it: GNU hash
 * when present (what dlsym uses), else the SysV table's chain count bounds
 * a linear scan. Returns 1 found (*out), 0 not there, -1 a table that
 * points outside the file (named in why). */
static int find_symbol(elf *e, const char *name, Elf64_Sym *out)
{
    size_t len = strlen(name);
    if (e->gnu_hash) {
        const uint8_t *hdr = at_vaddr(e, e->gnu_hash, 16);
        if (!hdr)
            return bad(e, "DT_GNU_HASH header is not inside the file"), -1;
        uint32_t nbuckets = read_u32(hdr), symoffset = read_u32(hdr + 4);
        uint32_t bloom_words = read_u32(hdr + 8);
        if (nbuckets == 0)
            return 0;
        uint64_t buckets = e->gnu_hash + 16 + (uint64_t)bloom_words * 8;
        uint64_t chains = buckets + (uint64_t)nbuckets * 4;
        uint32_t h = gnu_hash_of(name);
        const uint8_t *b = at_vaddr(e, buckets + (uint64_t)(h % nbuckets) * 4, 4);
        if (!b)
            return bad(e, "DT_GNU_HASH buckets are not inside the file"), -1;
        uint32_t i = read_u32(b);
        if (i < symoffset)
            return 0;
        /* A chain ends at an entry with its low bit set; the bound stops a
         * damaged table that never sets it. */
        for (uint64_t steps = 0; steps < e->size / 4; steps++, i++) {
            const uint8_t *c = at_vaddr(e, chains + (uint64_t)(i - symoffset) * 4, 4);
            if (!c)
                return bad(e, "DT_GNU_HASH chain runs outside the file"), -1;
            uint32_t ch = read_u32(c);
            if ((ch | 1u) == (h | 1u)) {
                if (!symbol_at(e, i, out))
                    return bad(e, "dynamic symbol %" PRIu32 " is not inside the file", i), -1;
                if (symbol_named(e, out, name, len))
                    return 1;
            }
            if (ch & 1u)
                return 0;
        }
        return 0;
    }
    if (e->hash) {
        const uint8_t *hdr = at_vaddr(e, e->hash, 8);
        if (!hdr)
            return bad(e, "DT_HASH header is not inside the file"), -1;
        uint32_t nchain = read_u32(hdr + 4);
        for (uint32_t i = 1; i < nchain; i++) {
            if (!symbol_at(e, i, out))
                return bad(e, "dynamic symbol %" PRIu32 " of %" PRIu32 " is not inside the file", i,
                           nchain),
                       -1;
            if (symbol_named(e, out, name, len))
                return 1;
        }
        return 0;
    }
    bad(e, "the dynamic section has neither DT_GNU_HASH nor DT_HASH, so nothing is exported");
    return -1;
}

int sp__elf_find_export(const void *bytes, size_t size, const char *name, char *why, size_t why_len)
{
    if (!name || !*name) {
        elf e = {.why = why, .why_len = why_len};
        return bad(&e, "no symbol name");
    }
    elf e;
    int rc = elf_open(&e, bytes, size, why, why_len);
    if (rc)
        return rc;
    Elf64_Sym sym;
    int found = find_symbol(&e, name, &sym);
    if (found < 0)
        return SP_EKERNEL_LOAD;
    if (!found)
        goto missing;
    if (sym.st_shndx == SHN_UNDEF)
        goto missing; /* imported from another object, not defined here */
    unsigned bind = ELF64_ST_BIND(sym.st_info), type = ELF64_ST_TYPE(sym.st_info);
    unsigned vis = ELF64_ST_VISIBILITY(sym.st_other);
    if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE)
        goto missing;
    if (vis != STV_DEFAULT && vis != STV_PROTECTED) {
        if (why && why_len)
            snprintf(why, why_len,
                     "'%s' is defined but hidden (visibility %u); mark it SP_EXPORT or build with "
                     "default visibility",
                     name, vis);
        return SP_EMODULE_SYMBOL;
    }
    if (type != STT_FUNC && type != STT_GNU_IFUNC) {
        if (why && why_len)
            snprintf(why, why_len, "'%s' is exported but is not a function (symbol type %u)", name,
                     type);
        return SP_EMODULE_SYMBOL;
    }
    return SP_OK;
missing:
    if (why && why_len)
        snprintf(why, why_len,
                 "does not export '%s' (not a defined, visible symbol of its .dynsym)", name);
    return SP_EMODULE_SYMBOL;
}
