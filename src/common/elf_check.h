/* A structural check of an ELF shared object held in memory, run before its
 * bytes reach the dynamic loader: the loader trusts what the headers say
 * and, given a truncated or damaged file, reads past the mapping (SIGBUS,
 * SIGSEGV) instead of returning an error. */
#ifndef SP_COMMON_ELF_CHECK_H
#define SP_COMMON_ELF_CHECK_H

#include <stddef.h>

/* Check that `size` bytes are a 64-bit little-endian ELF shared object
 * (ET_DYN) for this machine whose ELF header, program headers (every
 * PT_LOAD and the PT_DYNAMIC inside the file, sane sizes and alignment,
 * loads in order), dynamic section (every table it names inside a loaded
 * part of the file) and section table lie inside the bytes. Returns 0, or
 * SP_EKERNEL_LOAD with the defect named in `why`. Structure only: a file
 * that passes may still fail to load (missing library, bad relocation). */
int sp__elf_check(const void *bytes, size_t size, char *why, size_t why_len);

/* Check that the shared object at `bytes` (which must pass sp__elf_check;
 * it is checked again here) exports a function `name` the way dlsym finds
 * it: in its dynamic symbol table through the hash table the loader uses,
 * defined there (not imported), global or weak, default or protected
 * visibility, of function type. Returns 0, SP_EMODULE_SYMBOL with the
 * reason ("does not export 'x' ...", "'x' is defined but hidden", "'x' ...
 * is not a function") in `why`, or SP_EKERNEL_LOAD for a damaged table. */
int sp__elf_find_export(const void *bytes, size_t size, const char *name, char *why,
                        size_t why_len);

#endif
