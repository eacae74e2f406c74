/* Allocation-failure injection (LD_PRELOAD), SQLite-style: count every
 * malloc / calloc / realloc / aligned allocation of the process and fail the
 * Nth (or the Nth and every later one), so a driver (tests/oom/oom_sweep.py)
 * can walk N over a whole run and check that each failure ends in a named
 * status. glibc routes its own internal allocations (strdup, fopen, dlopen,
 * thread-local storage) through these symbols too, so they are counted.
 *
 * Settings (read once, at the first allocation; getenv does not allocate):
 *   SP_OOM_FAIL=N        1-based index of the call to fail; 0 or unset: none
 *   SP_OOM_MODE=after    fail call N and every call after it (default: only N)
 *   SP_OOM_REPORT=PATH   at exit, write "calls=C injected=K" to PATH
 * On the first injected failure one line goes to stderr (with write(2)):
 *   sp_oom_shim: injected failure of call N (malloc 64 B) from OBJECT+0xOFF
 *
 * The real allocators are glibc's __libc_* entry points: dlsym(RTLD_NEXT)
 * would allocate (dlerror state) and recurse into this file. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_uint_fast64_t calls;    /* relaxed: a counter, ordered by nothing */
static atomic_uint_fast64_t injected; /* relaxed: likewise */
static atomic_int ready;              /* 0 unread, 1 reading, 2 read */
static uint64_t fail_at;
static int fail_after;
static const char *report_path;

static uint64_t parse_u64(const char *s)
{
    uint64_t v = 0;
    while (s && *s >= '0' && *s <= '9')
        v = v * 10 + (uint64_t)(*s++ - '0');
    return v;
}

static void read_settings(void)
{
    int expect = 0;
    if (atomic_compare_exchange_strong(&ready, &expect, 1)) {
        fail_at = parse_u64(getenv("SP_OOM_FAIL"));
        const char *mode = getenv("SP_OOM_MODE");
        fail_after = mode && strcmp(mode, "after") == 0;
        report_path = getenv("SP_OOM_REPORT");
        atomic_store(&ready, 2);
    }
    while (atomic_load(&ready) != 2) /* another thread is reading: a few loads */
        ;
}

static size_t put_str(char *b, size_t at, size_t cap, const char *s)
{
    while (s && *s && at + 1 < cap)
        b[at++] = *s++;
    return at;
}

static size_t put_num(char *b, size_t at, size_t cap, uint64_t v, unsigned base)
{
    char d[24];
    int n = 0;
    do
        d[n++] = "0123456789abcdef"[v % base];
    while ((v /= base) && n < (int)sizeof d);
    while (n > 0 && at + 1 < cap)
        b[at++] = d[--n];
    return at;
}

/* The caller is named by object and offset (dladdr allocates nothing), so a
 * finding can be traced with addr2line without a core file. */
static void say_injected(uint64_t n, const char *fn, size_t bytes, const void *caller)
{
    char b[512];
    size_t at = put_str(b, 0, sizeof b, "sp_oom_shim: injected failure of call ");
    at = put_num(b, at, sizeof b, n, 10);
    at = put_str(b, at, sizeof b, " (");
    at = put_str(b, at, sizeof b, fn);
    at = put_str(b, at, sizeof b, " ");
    at = put_num(b, at, sizeof b, bytes, 10);
    at = put_str(b, at, sizeof b, " B) from ");
    Dl_info info;
    if (dladdr(caller, &info) && info.dli_fname) {
        at = put_str(b, at, sizeof b, info.dli_fname);
        at = put_str(b, at, sizeof b, "+0x");
        at =
            put_num(b, at, sizeof b, (uint64_t)((uintptr_t)caller - (uintptr_t)info.dli_fbase), 16);
    } else {
        at = put_str(b, at, sizeof b, "0x");
        at = put_num(b, at, sizeof b, (uint64_t)(uintptr_t)caller, 16);
    }
    b[at++] = '\n';
    ssize_t w = write(STDERR_FILENO, b, at);
    (void)w;
}

/* True when this call is to fail. */
static int should_fail(const char *fn, size_t bytes, const void *caller)
{
    if (atomic_load(&ready) != 2)
        read_settings();
    /* relaxed: the index only has to be unique per call */
    uint64_t n = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) + 1;
    if (fail_at == 0 || n < fail_at || (n > fail_at && !fail_after))
        return 0;
    if (atomic_fetch_add_explicit(&injected, 1, memory_order_relaxed) == 0)
        say_injected(n, fn, bytes, caller);
    return 1;
}

__attribute__((visibility("default"))) void *malloc(size_t bytes)
{
    if (should_fail("malloc", bytes, __builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(bytes);
}

__attribute__((visibility("default"))) void *calloc(size_t n, size_t size)
{
    if (should_fail("calloc", n * size, __builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t bytes)
{
    if (should_fail("realloc", bytes, __builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, bytes);
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t bytes)
{
    if (should_fail("aligned_alloc", bytes, __builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, bytes);
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t bytes)
{
    if (should_fail("memalign", bytes, __builtin_return_address(0))) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, bytes);
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t bytes)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    if (should_fail("posix_memalign", bytes, __builtin_return_address(0)))
        return ENOMEM;
    void *p = __libc_memalign(align, bytes);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* The count the driver sweeps over; written with open/write, no stdio. */
__attribute__((destructor)) static void write_report(void)
{
    if (!report_path)
        return;
    int fd = open(report_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char b[96];
    size_t at = put_str(b, 0, sizeof b, "calls=");
    at = put_num(b, at, sizeof b, atomic_load(&calls), 10);
    at = put_str(b, at, sizeof b, " injected=");
    at = put_num(b, at, sizeof b, atomic_load(&injected), 10);
    b[at++] = '\n';
    ssize_t w = write(fd, b, at);
    (void)w;
    close(fd);
}
