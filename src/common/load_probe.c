/* sp__load_probe: a forked child loads, checks and unloads each object and
 * writes one byte per step to a pipe ('L' load, 'C' check, 'U' unload, 'D'
 * done, 'F' + status + reason, 'T' thread); the parent reads until EOF or
 * until no byte came for the stall time, then reaps the child and names how
 * it ended. One fork per registration, never on a run's path. */

#include "common/load_probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "simpler/status.h"

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

__attribute__((noreturn)) static void child(int fd, const sp__load_probe_item *items, size_t count,
                                            sp__load_probe_check check, void *ctx)
{
    /* Whatever the parent installed (the crash guard) must not catch the
     * child's faults: they are what the parent wants to see. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGUSR2, SIGTERM};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        signal(sigs[i], SIG_DFL);
        sigaddset(&set, sigs[i]);
    }
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
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
        if (check && (rc = check(ctx, i, so, why, sizeof why)) != SP_OK)
            refuse(fd, rc, why);
        if (threads > 0 && thread_count() > threads)
            put(fd, "T", 1), _exit(0);
        put(fd, "U", 1);
        sp__shared_object_close(so);
    }
    put(fd, "D", 1);
    _exit(0);
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

int sp__load_probe(const sp__load_probe_item *items, size_t count, sp__load_probe_check check,
                   void *ctx, unsigned stall_ms, sp__load_probe_verdict *v)
{
    memset(v, 0, sizeof *v);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        v->kind = SP_PROBE_NO_CHILD;
        v->status = SP_ESYS;
        snprintf(v->why, sizeof v->why, "pipe failed: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        v->kind = SP_PROBE_NO_CHILD;
        v->status = SP_ESYS;
        snprintf(v->why, sizeof v->why, "fork failed: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], items, count, check, ctx);
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
