/* Shared objects from bytes: memfd + dlopen of its /proc/self/fd path. Each
 * load is its own copy (own statics): every memfd is a new file under a path
 * no other loaded object has. The memfd is closed once dlopen returns: the
 * mappings keep the pages, so a callable of 1024 kernels holds no
 * descriptor for them. */

#include "common/shared_object.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/elf_check.h"
#include "simpler/status.h"

struct sp__shared_object {
    void *handle;
    struct link_map *map; /* the object's own entry in the loader's list */
};

static int write_all(int fd, const void *bytes, size_t size)
{
    const char *p = bytes;
    while (size) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

/* The dynamic loader knows objects by their path string first: once the
 * memfd is closed and its number reused, "/proc/self/fd/N" would name the
 * object already loaded from it, and dlopen would hand that one back. So
 * the path carries the memfd's inode number (unique among live files, and
 * the mapping keeps the file alive after the close), one bit per detour
 * "/fd/.." or "/fd/./..", each of which resolves back to /proc/self. */
#define UNIQUE_PATH_BYTES (16 + 64 * 8 + 24)
static void unique_path(char *path, int fd, uint64_t ino)
{
    char *p = path + sprintf(path, "/proc/self");
    for (int bit = 0; bit < 64; bit++)
        p += sprintf(p, (ino >> bit) & 1 ? "/fd/./.." : "/fd/..");
    sprintf(p, "/fd/%d", fd);
}

int sp__shared_object_open(const void *bytes, size_t size, sp__shared_object **out, char *err,
                           size_t err_len)
{
    if (!out || !bytes || !size) {
        snprintf(err, err_len, "no bytes to load");
        return SP_EINVAL;
    }
    *out = NULL;
    char why[224];
    if (sp__elf_check(bytes, size, why, sizeof why) != SP_OK) {
        snprintf(err, err_len, "%zu bytes are not a well-formed shared object: %s", size, why);
        return SP_EKERNEL_LOAD;
    }
    sp__shared_object *so = calloc(1, sizeof *so);
    if (!so) {
        snprintf(err, err_len, "out of memory");
        return SP_ENOMEM;
    }
    int fd = memfd_create("sp-object", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_len, "memfd_create failed: %s", strerror(errno));
        free(so);
        return SP_ESYS;
    }
    if (write_all(fd, bytes, size)) {
        snprintf(err, err_len, "writing %zu bytes to a memfd failed: %s", size, strerror(errno));
        close(fd);
        free(so);
        return SP_ESYS;
    }
    char path[UNIQUE_PATH_BYTES];
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, err_len, "fstat of a memfd failed: %s", strerror(errno));
        close(fd);
        free(so);
        return SP_ESYS;
    }
    unique_path(path, fd, (uint64_t)st.st_ino);
    so->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so->handle) {
        const char *dl = dlerror();
        snprintf(why, sizeof why, "%s", dl ? dl : "unknown dlopen error");
        /* dlopen opens the path itself, so a process out of descriptors
         * fails there; its message does not say so reliably. Ask the OS. */
        int probe = open(path, O_RDONLY | O_CLOEXEC);
        int e = errno;
        close(fd);
        free(so);
        if (probe < 0) {
            snprintf(err, err_len, "cannot open the memfd holding the object: %s", strerror(e));
            return SP_ESYS;
        }
        close(probe);
        snprintf(err, err_len, "%zu bytes are not a loadable shared object: %s", size, why);
        return SP_EKERNEL_LOAD;
    }
    close(fd);
    if (dlinfo(so->handle, RTLD_DI_LINKMAP, &so->map) != 0)
        so->map = NULL;
    *out = so;
    return SP_OK;
}

void *sp__shared_object_symbol(sp__shared_object *so, const char *name)
{
    if (!so || !name)
        return NULL;
    dlerror(); /* clear, so a stale error is not mistaken for this lookup's */
    void *sym = dlsym(so->handle, name);
    return dlerror() ? NULL : sym;
}

int sp__shared_object_entry(sp__shared_object *so, const char *name, void **out, char *err,
                            size_t err_len)
{
    *out = NULL;
    void *sym = sp__shared_object_symbol(so, name);
    if (!sym) {
        snprintf(err, err_len, "'%s' is not defined", name ? name : "(null)");
        return SP_EKERNEL_ENTRY;
    }
    Dl_info info;
    struct link_map *owner = NULL;
    const ElfW(Sym) *st = NULL;
    if (!dladdr1(sym, &info, (void **)&owner, RTLD_DL_LINKMAP) || !so->map || owner != so->map) {
        snprintf(err, err_len, "'%s' is not defined by this object (it resolves to %s)", name,
                 owner && info.dli_fname && *info.dli_fname ? info.dli_fname : "another object");
        return SP_EKERNEL_ENTRY;
    }
    if (dladdr1(sym, &info, (void **)&st, RTLD_DL_SYMENT) && st && info.dli_saddr == sym &&
        ELF64_ST_TYPE(st->st_info) != STT_FUNC && ELF64_ST_TYPE(st->st_info) != STT_GNU_IFUNC) {
        snprintf(err, err_len, "'%s' is not a function (ELF symbol type %u)", name,
                 ELF64_ST_TYPE(st->st_info));
        return SP_EKERNEL_ENTRY;
    }
    *out = sym;
    return SP_OK;
}

void sp__shared_object_close(sp__shared_object *so)
{
    if (!so)
        return;
    dlclose(so->handle);
    free(so);
}
