/* Shared objects loaded from bytes in memory, without temp files: the bytes
 * go into an anonymous memory file (memfd) that the dynamic loader opens by
 * its /proc/self/fd path, closed again as soon as dlopen returns (the
 * mapping keeps the pages). Used for kernels and for orchestrations. */
#ifndef SP_COMMON_SHARED_OBJECT_H
#define SP_COMMON_SHARED_OBJECT_H

#include <stddef.h>

typedef struct sp__shared_object sp__shared_object;

/* Check the bytes' ELF structure (common/elf_check.h), then load them as a
 * shared object (RTLD_NOW|RTLD_LOCAL). Holds no descriptor afterwards.
 * Returns 0, SP_EKERNEL_LOAD (malformed or not loadable), SP_ESYS (memfd,
 * write or open failed: the errno text is in `err`) or SP_ENOMEM. */
int sp__shared_object_open(const void *bytes, size_t size, sp__shared_object **out, char *err,
                           size_t err_len);
/* Address of symbol `name`, or NULL if the object has none. */
void *sp__shared_object_symbol(sp__shared_object *so, const char *name);
/* Address of the function `name` that this object itself defines: a name
 * that resolves only in a library it links (dlsym searches those too: libc's
 * exit, abort, free, system) is refused, as is a data symbol. Returns 0 or
 * SP_EKERNEL_ENTRY with the reason (and where the name resolved) in `err`. */
int sp__shared_object_entry(sp__shared_object *so, const char *name, void **out, char *err,
                            size_t err_len);
void sp__shared_object_close(sp__shared_object *so);

#endif
