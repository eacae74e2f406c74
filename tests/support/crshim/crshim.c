/* The runner and assertion back end of the Criterion shim (TSan builds
 * only; see criterion/criterion.h). main() runs every registered test, in
 * suite then name order as Criterion does, each in a forked child: a test
 * may setenv, install signal handlers or leave global state behind, and
 * crash on purpose (.signal). The parent stays single-threaded, so fork is
 * safe under ThreadSanitizer; a TSan report in a child (halt_on_error=1)
 * makes it exit non-zero, which fails that test.
 *
 * Flags: --filter=GLOB (on "suite/name", extglob as in Criterion) and
 * --list; any other Criterion flag (ctest passes --jobs=1) is accepted and
 * ignored. Every test prints a [PASS]/[FAIL] line, then a Synthesis line. */
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "criterion/criterion.h"

static struct crs_test *tests;
static struct crs_suite *suites;

void crs_register_test(struct crs_test *t)
{
    t->next = tests;
    tests = t;
}

void crs_register_suite(struct crs_suite *s)
{
    s->next = suites;
    suites = s;
}

void *cr_malloc(size_t size)
{
    return malloc(size);
}

void cr_free(void *ptr)
{
    free(ptr);
}

/* Child state. `failures` lives in a shared page so the parent reads it
 * after the child exits; the child's threads may fail expectations at once. */
static atomic_int *failures;
static bool in_child;
static pthread_t test_thread;
static jmp_buf abort_jmp;

void crs_log(const char *level, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[%s] %s\n", level, msg);
}

static void report_failure(const char *file, int line, const char *expr, const char *fmt,
                           va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "[----] %s:%d: Assertion Failed\n", file, line);
    if (msg[0])
        fprintf(stderr, "[----]   %s\n", msg);
    fprintf(stderr, "[----]   (%s)\n", expr);
    atomic_fetch_add(failures, 1);
}

void crs_fail_expect(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_failure(file, line, expr, fmt, ap);
    va_end(ap);
}

void crs_fail_assert(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_failure(file, line, expr, fmt, ap);
    va_end(ap);
    /* Outside a test (a parameter generator in the runner) nothing can be
     * judged: stop the whole run as failed. */
    if (!in_child) {
        fflush(NULL);
        exit(1);
    }
    /* The jump target is on the test's own thread; another thread ends the
     * child outright (the failure is already counted). */
    if (pthread_equal(pthread_self(), test_thread))
        longjmp(abort_jmp, 1);
    fflush(NULL);
    _exit(0);
}

static const struct crs_suite *suite_of(const struct crs_test *t)
{
    for (const struct crs_suite *s = suites; s; s = s->next)
        if (strcmp(s->name, t->suite) == 0)
            return s;
    return NULL;
}

/* Set before fork, read in the child after the setjmps (so no local can be
 * clobbered by a longjmp). */
static const struct crs_test *cur_test;
static const struct crs_suite *cur_suite;
static void *cur_param;

static void child_main(void)
{
    in_child = true;
    test_thread = pthread_self();
    const struct crs_test_data *sd = cur_suite ? &cur_suite->data : NULL;
    const struct crs_test_data *td = &cur_test->data;
    /* A failed assertion in an init ends the child: Criterion aborts there. */
    if (setjmp(abort_jmp) != 0)
        exit(0);
    if (sd && sd->init)
        sd->init();
    if (td->init)
        td->init();
    if (setjmp(abort_jmp) == 0) {
        if (cur_test->params)
            ((void (*)(void *))cur_test->fn)(cur_param);
        else
            cur_test->fn();
    }
    if (setjmp(abort_jmp) == 0) {
        if (td->fini)
            td->fini();
        if (sd && sd->fini)
            sd->fini();
    }
    exit(0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum outcome { PASSED, FAILED, CRASHED };

/* Runs one test (one parameter of a parameterized test) in a child and
 * judges how the child ended. */
static enum outcome run_one(const struct crs_test *t, const struct crs_suite *s, void *param,
                            const char *label)
{
    double timeout = t->data.timeout > 0 ? t->data.timeout : (s ? s->data.timeout : 0);
    cur_test = t;
    cur_suite = s;
    cur_param = param;
    atomic_store(failures, 0);
    fflush(NULL);
    double start = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "[FAIL] %s: fork: %s\n", label, strerror(errno));
        return CRASHED;
    }
    if (pid == 0)
        child_main();

    /* Wait with a deadline: poll, backing off from 1 ms to 20 ms. */
    int status = 0;
    bool timed_out = false;
    long nap_us = 1000;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "[FAIL] %s: waitpid: %s\n", label, strerror(errno));
            return CRASHED;
        }
        if (timeout > 0 && now_s() - start > timeout) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            timed_out = true;
            break;
        }
        struct timespec nap = {0, nap_us * 1000};
        nanosleep(&nap, NULL);
        if (nap_us < 20000)
            nap_us *= 2;
    }
    double took = now_s() - start;
    int fails = atomic_load(failures);

    if (timed_out) {
        fprintf(stderr, "[FAIL] %s: Timed out. (%.2fs)\n", label, took);
        return FAILED;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == t->data.signal && fails == 0) {
            fprintf(stderr, "[PASS] %s: (%.2fs, died of %s as expected)\n", label, took,
                    strsignal(sig));
            return PASSED;
        }
        fprintf(stderr, "[FAIL] %s: CRASH! killed by signal %d (%s) (%.2fs)\n", label, sig,
                strsignal(sig), took);
        return CRASHED;
    }
    int code = WEXITSTATUS(status);
    if (fails > 0) {
        fprintf(stderr, "[FAIL] %s: %d assertion(s) failed (%.2fs)\n", label, fails, took);
        return FAILED;
    }
    if (t->data.signal != 0) {
        fprintf(stderr, "[FAIL] %s: exited with status %d, expected signal %d (%s)\n", label, code,
                t->data.signal, strsignal(t->data.signal));
        return FAILED;
    }
    if (code != t->data.exit_code) {
        fprintf(stderr, "[FAIL] %s: exited with status %d, expected %d%s (%.2fs)\n", label, code,
                t->data.exit_code, code == 66 ? " (66: a sanitizer report above)" : "", took);
        return FAILED;
    }
    fprintf(stderr, "[PASS] %s: (%.2fs)\n", label, took);
    return PASSED;
}

static int by_suite_then_name(const void *a, const void *b)
{
    const struct crs_test *x = *(const struct crs_test *const *)a;
    const struct crs_test *y = *(const struct crs_test *const *)b;
    int c = strcmp(x->suite, y->suite);
    return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv)
{
    const char *filter = NULL;
    bool list = false;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--filter=", 9) == 0)
            filter = argv[i] + 9;
        else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else if (strcmp(argv[i], "--list") == 0 || strcmp(argv[i], "-l") == 0)
            list = true;
    }

    failures =
        mmap(NULL, sizeof *failures, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (failures == MAP_FAILED) {
        perror("crshim: mmap");
        return 2;
    }
    size_t n = 0;
    for (struct crs_test *t = tests; t; t = t->next)
        n++;
    struct crs_test **order = calloc(n ? n : 1, sizeof *order);
    if (!order)
        return 2;
    n = 0;
    for (struct crs_test *t = tests; t; t = t->next)
        order[n++] = t;
    qsort(order, n, sizeof *order, by_suite_then_name);

    int tested = 0, passing = 0, failing = 0, crashing = 0;
    for (size_t i = 0; i < n; i++) {
        const struct crs_test *t = order[i];
        const struct crs_suite *s = suite_of(t);
        char id[512];
        snprintf(id, sizeof id, "%s/%s", t->suite, t->name);
        if (filter && fnmatch(filter, id, FNM_EXTMATCH) != 0)
            continue;
        if (list) {
            printf("%s::%s\n", t->suite, t->name);
            continue;
        }
        if (t->data.disabled || (s && s->data.disabled)) {
            fprintf(stderr, "[SKIP] %s::%s: disabled\n", t->suite, t->name);
            continue;
        }
        struct criterion_test_params p = {.length = 1};
        if (t->params)
            p = t->params();
        for (size_t k = 0; k < p.length; k++) {
            char label[600];
            if (t->params)
                snprintf(label, sizeof label, "%s::%s[%zu]", t->suite, t->name, k);
            else
                snprintf(label, sizeof label, "%s::%s", t->suite, t->name);
            void *param = t->params ? (char *)p.params + k * p.size : NULL;
            enum outcome o = run_one(t, s, param, label);
            tested++;
            passing += o == PASSED;
            failing += o == FAILED;
            crashing += o == CRASHED;
        }
        if (t->params && p.cleanup)
            p.cleanup(&p);
    }
    free(order);
    if (list)
        return 0;
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d\n",
            tested, passing, failing, crashing);
    return failing || crashing ? 1 : 0;
}
