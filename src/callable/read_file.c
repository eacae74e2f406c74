/* Whole-file reads for the builder: a binary named by path becomes bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callable/callable_internal.h"
#include "simpler/status.h"

int callable_read_file(const char *path, const char *what, void **out, size_t *size, char *err,
                       size_t err_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return callable_fail(err, err_len, SP_ESYS, "cannot open %s '%s': %s", what, path,
                             strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return callable_fail(err, err_len, SP_ESYS, "cannot stat %s '%s': %s", what, path,
                             strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return callable_fail(err, err_len, SP_ESYS, "cannot read %s '%s': %s", what, path,
                             S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        close(fd);
        return callable_fail(err, err_len, SP_ENOMEM, "cannot read %s '%s': %zu bytes: %s", what,
                             path, len, strerror(ENOMEM));
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            /* r == 0: the file shrank under us; report it rather than pack garbage. */
            int e = r < 0 ? errno : EIO;
            free(buf);
            close(fd);
            return callable_fail(err, err_len, SP_ESYS, "cannot read %s '%s': %s", what, path,
                                 strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *size = len;
    return SP_OK;
}
