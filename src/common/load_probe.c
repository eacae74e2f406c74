/* sp__load_probe: a fresh process, the helper SP_LOAD_PROBE_HELPER
 * (src/probe), loads, checks and unloads each object and writes one byte
 * per step to a pipe ('L' load, 'C' check, 'U' unload, 'D' done, 'F' +
 * status + reason, 'T' thread); the caller reads until EOF or until no byte
 * came for the stall time, then reaps the helper and names how it ended.
 * The objects and what to resolve in them travel in a memfd (pack, unpack
 * below). One helper per registration, never on a run's path. */

#include "common/load_probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/paths.h"
#include "common/shared_object.h"
#include "simpler/status.h"

extern char **environ;

static void put(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(3);
        c += w;
        n -= (size_t)w;
    }
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void refuse(int fd, int status, const char *why)
{
    uint16_t len = (uint16_t)strnlen(why, 255);
    int32_t st = status;
    put(fd, "F", 1);
    put(fd, &st, sizeof st);
    put(fd, &len, sizeof len);
    put(fd, why, len);
    _exit(0);
}

/* What the caller will do in-process: resolve the entry, then resolve and
 * call the config function on a page of room (overruns are the in-process
 * check's job; here a page keeps one from hiding an exit, abort or endless
 * loop). */
static int check(const sp__load_probe_item *it, sp__shared_object *so, char *why, size_t why_len)
{
    void *fn;
    int rc;
    if (it->entry && (rc = sp__shared_object_entry(so, it->entry, &fn, why, why_len)) != SP_OK)
        return rc;
    if (it->config) {
        if ((rc = sp__shared_object_entry(so, it->config, &fn, why, why_len)) != SP_OK)
            return rc;
        static _Alignas(64) uint8_t page[4096];
        memset(page, 0, sizeof page);
        memcpy(page, &it->config_abi, sizeof it->config_abi);
        ((void (*)(void *))(uintptr_t)fn)(page);
    }
    return SP_OK;
}

__attribute__((noreturn)) static void serve_items(int fd, const sp__load_probe_item *items,
                                                  size_t count)
{
    int threads = thread_count();
    char why[256];
    for (size_t i = 0; i < count; i++) {
        sp__shared_object *so = NULL;
        put(fd, "L", 1);
        why[0] = '\0';
        int rc = sp__shared_object_open(items[i].bytes, items[i].size, &so, why, sizeof why);
        if (rc)
            refuse(fd, rc, why);
        if (threads > 0 && thread_count() > threads)
            put(fd, "T", 1), _exit(0);
        put(fd, "C", 1);
        if ((rc = check(&items[i], so, why, sizeof why)) != SP_OK)
            refuse(fd, rc, why);
        if (threads > 0 && thread_count() > threads)
            put(fd, "T", 1), _exit(0);
        put(fd, "U", 1);
        sp__shared_object_close(so);
    }
    put(fd, "D", 1);
    _exit(0);
}

/* ---- the items in a memfd: "SPPROBE1", u64 count, then per item u64
 * size, u32 entry length, u32 config length (each with its NUL, 0 for
 * none), u32 config_abi, u32 0, the names, the object's bytes; every part
 * starts 8-aligned. ---- */

#define PACK_MAGIC "SPPROBE1"
#define ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

typedef struct pack_item {
    uint64_t size;
    uint32_t entry_len, config_len, config_abi, zero;
} pack_item;

static int put_all(int fd, const void *p, size_t n)
{
    static const char pad[8];
    const char *c = p;
    size_t left = n, tail = ALIGN8(n) - n;
    while (left || tail) {
        ssize_t w = left ? write(fd, c, left) : write(fd, pad, tail);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        if (left) {
            c += w;
            left -= (size_t)w;
        } else {
            tail -= (size_t)w;
        }
    }
    return 0;
}

static uint32_t name_len(const char *s)
{
    return s ? (uint32_t)strlen(s) + 1 : 0;
}

static int pack(const sp__load_probe_item *items, size_t count, char *why, size_t why_len)
{
    int fd = memfd_create("sp-probe-items", MFD_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "memfd_create failed: %s", strerror(errno));
        return -1;
    }
    uint64_t n = count;
    int bad = put_all(fd, PACK_MAGIC, 8) || put_all(fd, &n, sizeof n);
    for (size_t i = 0; i < count && !bad; i++) {
        const sp__load_probe_item *it = &items[i];
        pack_item h = {it->size, name_len(it->entry), name_len(it->config), it->config_abi, 0};
        bad = put_all(fd, &h, sizeof h) || (h.entry_len && put_all(fd, it->entry, h.entry_len)) ||
              (h.config_len && put_all(fd, it->config, h.config_len)) ||
              put_all(fd, it->bytes, it->size);
    }
    if (bad) {
        snprintf(why, why_len, "writing the probe's items failed: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* A name of `len` bytes (its NUL last) at *at, or NULL for 0 bytes. */
static int take_name(const char *base, size_t end, size_t *at, uint32_t len, const char **out)
{
    *out = NULL;
    if (!len)
        return 0;
    if (len > end - *at || base[*at + len - 1] != '\0')
        return -1;
    *out = base + *at;
    *at += ALIGN8(len);
    return *at <= end ? 0 : -1;
}

static int unpack(int fd, sp__load_probe_item **out, size_t *count)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 16)
        return -1;
    size_t end = (size_t)st.st_size;
    const char *base = mmap(NULL, end, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED)
        return -1;
    uint64_t n;
    memcpy(&n, base + 8, sizeof n);
    if (memcmp(base, PACK_MAGIC, 8) != 0 || n > end / sizeof(pack_item))
        return -1;
    sp__load_probe_item *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return -1;
    size_t at = 16;
    for (uint64_t i = 0; i < n; i++) {
        pack_item h;
        if (end - at < sizeof h)
            return -1;
        memcpy(&h, base + at, sizeof h);
        at += sizeof h;
        sp__load_probe_item *it = &items[i];
        if (take_name(base, end, &at, h.entry_len, &it->entry) ||
            take_name(base, end, &at, h.config_len, &it->config) || h.size > end - at)
            return -1;
        it->bytes = base + at;
        it->size = (size_t)h.size;
        it->config_abi = h.config_abi;
        at += ALIGN8((size_t)h.size);
        if (at > end)
            return -1;
    }
    *out = items;
    *count = (size_t)n;
    return 0;
}

void sp__load_probe_serve(int in, int out)
{
    /* A fault in an object must end this process by its signal, for the
     * caller to name: not caught by what a sanitizer runtime installed at
     * start, not ignored or blocked as the host may have had them. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGUSR2, SIGTERM};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        signal(sigs[i], SIG_DFL);
        sigaddset(&set, sigs[i]);
    }
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    sp__load_probe_item *items = NULL;
    size_t count = 0;
    if (unpack(in, &items, &count) != 0)
        refuse(out, SP_EINVAL, "the load probe's item list is malformed");
    close(in);
    serve_items(out, items, count);
}

/* Start the helper beside this library with `items_fd` as its descriptor 3
 * and `out_fd` as its 4, and nothing else open. */
static int spawn_helper(int items_fd, int out_fd, pid_t *pid, char *why, size_t why_len)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    if (sp__object_dir((const void *)(uintptr_t)spawn_helper, dir, sizeof dir) != 0) {
        snprintf(why, why_len, "the directory of the library holding the load probe is unknown");
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, SP_LOAD_PROBE_HELPER);
    /* Above 4 first, so that neither dup2 below overwrites the other's source. */
    int a = fcntl(items_fd, F_DUPFD_CLOEXEC, 5), b = fcntl(out_fd, F_DUPFD_CLOEXEC, 5);
    posix_spawn_file_actions_t fa;
    int rc = a < 0 || b < 0 ? errno : 0;
    if (!rc && !(rc = posix_spawn_file_actions_init(&fa))) {
        char *argv[] = {path, "3", "4", NULL};
        if (!(rc = posix_spawn_file_actions_adddup2(&fa, a, 3)) &&
            !(rc = posix_spawn_file_actions_adddup2(&fa, b, 4)) &&
            !(rc = posix_spawn_file_actions_addclosefrom_np(&fa, 5)))
            rc = posix_spawn(pid, path, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    if (rc) {
        snprintf(why, why_len, "cannot start the load probe %s: %s", path, strerror(rc));
        return -1;
    }
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Parse what the child wrote: `buf[0..n)`. */
static void parse(const char *buf, size_t n, sp__load_probe_verdict *v, int *done)
{
    size_t loads = 0;
    for (size_t i = 0; i < n; i++) {
        switch (buf[i]) {
        case 'L':
            loads++;
            v->phase = SP_PROBE_LOADING;
            break;
        case 'C':
            v->phase = SP_PROBE_CHECKING;
            break;
        case 'U':
            v->phase = SP_PROBE_UNLOADING;
            break;
        case 'D':
            *done = 1;
            break;
        case 'T':
            v->kind = SP_PROBE_THREAD;
            break;
        case 'F': {
            int32_t st = 0;
            uint16_t len = 0;
            if (n - i - 1 >= sizeof st + sizeof len) {
                memcpy(&st, buf + i + 1, sizeof st);
                memcpy(&len, buf + i + 1 + sizeof st, sizeof len);
                size_t avail = n - i - 1 - sizeof st - sizeof len;
                if (len > avail)
                    len = (uint16_t)avail;
                snprintf(v->why, sizeof v->why, "%.*s", (int)len,
                         buf + i + 1 + sizeof st + sizeof len);
            }
            v->kind = SP_PROBE_REFUSED;
            v->status = st ? st : SP_EKERNEL_LOAD;
            i = n; /* the record is the last thing written */
            break;
        }
        default:
            break;
        }
    }
    v->index = loads ? loads - 1 : 0;
}

int sp__load_probe(const sp__load_probe_item *items, size_t count, unsigned stall_ms,
                   sp__load_probe_verdict *v)
{
    memset(v, 0, sizeof *v);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        v->kind = SP_PROBE_NO_CHILD;
        v->status = SP_ESYS;
        snprintf(v->why, sizeof v->why, "pipe failed: %s", strerror(errno));
        return -1;
    }
    pid_t pid = -1;
    int in = pack(items, count, v->why, sizeof v->why);
    int started = in >= 0 && spawn_helper(in, fds[1], &pid, v->why, sizeof v->why) == 0;
    if (in >= 0)
        close(in);
    if (!started) {
        v->kind = SP_PROBE_NO_CHILD;
        v->status = SP_ESYS;
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    close(fds[1]);
    /* Steps are one byte, a refusal under 300: 4 per object bounds it. */
    char buf[4 * 1024 + 4 + 512];
    size_t n = 0;
    int stalled = 0;
    int64_t deadline = now_ms() + stall_ms;
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            stalled = 1;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            stalled = r == 0;
            break;
        }
        char tmp[512];
        ssize_t got = read(fds[0], tmp, sizeof tmp);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* EOF: the child is gone */
        /* Keep the first steps and the tail: the last step and any record. */
        for (ssize_t i = 0; i < got; i++) {
            if (n == sizeof buf)
                break;
            buf[n++] = tmp[i];
        }
        deadline = now_ms() + stall_ms; /* progress */
    }
    close(fds[0]);
    if (stalled)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    int done = 0;
    parse(buf, n, v, &done);
    if (v->kind == SP_PROBE_REFUSED || v->kind == SP_PROBE_THREAD)
        return -1;
    if (stalled) {
        v->kind = SP_PROBE_STALLED;
        return -1;
    }
    if (WIFSIGNALED(st)) {
        v->kind = SP_PROBE_SIGNAL;
        v->code = WTERMSIG(st);
        return -1;
    }
    /* After 'D' the child only calls _exit(0): every constructor, check and
     * destructor has run, and nothing of the callable's runs at _exit. A
     * status other than 0 then is the host's tooling (valgrind's
     * --error-exitcode over the child's copy of the host's threads), not
     * the callable: judge by the marker. */
    if (!done) {
        v->kind = SP_PROBE_EXITED;
        v->code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        return -1;
    }
    return 0;
}

const char *sp__load_probe_phase_name(sp__load_probe_phase phase)
{
    switch (phase) {
    case SP_PROBE_CHECKING:
        return "while its entry points were checked";
    case SP_PROBE_UNLOADING:
        return "while it was unloaded (in a destructor)";
    default:
        return "while it was loaded (in a constructor or the dynamic loader)";
    }
}
