/* Shared objects from bytes: memfd + dlopen("/proc/self/fd/N"). Each load is
 * its own copy (own statics): the loader tells objects apart by file
 * identity and every memfd is a new file. */
#include "common/shared_object.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simpler/status.h"

struct sp_shared_object {
    void *handle;
    int fd;
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

int sp_shared_object_open(const void *bytes, size_t size, sp_shared_object **out, char *err,
                          size_t err_len)
{
    if (!out || !bytes || !size) {
        snprintf(err, err_len, "no bytes to load");
        return SP_EINVAL;
    }
    *out = NULL;
    sp_shared_object *so = calloc(1, sizeof *so);
    if (!so)
        return SP_ENOMEM;
    so->fd = memfd_create("sp-object", MFD_CLOEXEC);
    if (so->fd < 0) {
        snprintf(err, err_len, "memfd_create failed: %s", strerror(errno));
        free(so);
        return SP_ESYS;
    }
    if (write_all(so->fd, bytes, size)) {
        snprintf(err, err_len, "writing %zu bytes to a memfd failed: %s", size, strerror(errno));
        close(so->fd);
        free(so);
        return SP_ESYS;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", so->fd);
    so->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so->handle) {
        const char *why = dlerror();
        snprintf(err, err_len, "%zu bytes are not a loadable shared object: %s", size,
                 why ? why : "unknown dlopen error");
        close(so->fd);
        free(so);
        return SP_EKERNEL_LOAD;
    }
    *out = so;
    return SP_OK;
}

void *sp_shared_object_symbol(sp_shared_object *so, const char *name)
{
    if (!so || !name)
        return NULL;
    dlerror(); /* clear, so a stale error is not mistaken for this lookup's */
    void *sym = dlsym(so->handle, name);
    return dlerror() ? NULL : sym;
}

void sp_shared_object_close(sp_shared_object *so)
{
    if (!so)
        return;
    dlclose(so->handle);
    close(so->fd);
    free(so);
}
