/* Shared objects loaded from bytes in memory, without temp files: the bytes
 * go into an anonymous memory file (memfd) that the dynamic loader opens by
 * its /proc/self/fd path. Used for kernels and for orchestrations. */
#ifndef SP_COMMON_SHARED_OBJECT_H
#define SP_COMMON_SHARED_OBJECT_H

#include <stddef.h>

typedef struct sp_shared_object sp_shared_object;

/* Load `size` bytes as a shared object (RTLD_NOW|RTLD_LOCAL). Returns 0,
 * SP_ESYS (memfd failed) or SP_EKERNEL_LOAD (not loadable); the loader's
 * reason is written to `err`. */
int sp_shared_object_open(const void *bytes, size_t size, sp_shared_object **out, char *err,
                          size_t err_len);
/* Address of symbol `name`, or NULL if the object has none. */
void *sp_shared_object_symbol(sp_shared_object *so, const char *name);
void sp_shared_object_close(sp_shared_object *so);

#endif
