/* The crash guard and the host program's signals: a host's own handlers
 * survive a worker's open and close and still get their signals, handlers
 * that chain to the guard's stay safe after the module is unloaded, and
 * external SIGUSR2s during runs fail no run (the guard's interrupt is a
 * queued real-time signal a kill cannot fake). Both runtimes. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

static sp_worker *open_on(int runtime)
{
    const char *module =
        runtime ? SP_MODULE_DIR "/libsimpler_tmr_sim.so" : SP_MODULE_DIR "/libsimpler_hbg_sim.so";
    char err[1024] = "";
    sp_worker *w = NULL;
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    const char *k = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    sp_callable_kernel_spec ks[1] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_mark"}};
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_many_orch.so",
                             .orch_entry = "fault_many_orch",
                             .kernels = ks,
                             .kernel_count = 1};
    cr_assert_eq(sp_test_register_spec(w, 0, &spec, err, sizeof err), SP_OK, "%s", err);
    return w;
}

/* One good run of `tasks` + 1 tasks (y[0] = 11, y[1] = 22). */
static int good_run_of(sp_worker *w, uint64_t tasks)
{
    uint64_t y[4] = {0};
    sp_args args;
    memset(&args, 0, sizeof args);
    int64_t n = 4;
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &n);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = tasks;
    args.scalar_count = 1;
    int rc = sp_worker_run(w, 0, &args, NULL, NULL);
    if (rc == SP_OK && (y[0] != 11 || y[1] != 22))
        return SP_EINVAL;
    return rc;
}

static int good_run(sp_worker *w)
{
    return good_run_of(w, 1);
}

/* Atomic, not volatile sig_atomic_t: the handler may run on any thread of
 * the process (a core's, the test's), and TSan rightly calls a plain
 * increment from two threads a race. Lock-free, so signal-safe. */
static atomic_int usr2_count, segv_count;

static void count_usr2(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&usr2_count, 1, memory_order_relaxed);
}

static void count_segv(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&segv_count, 1, memory_order_relaxed);
}

static void set_handler(int sig, void (*fn)(int), struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(sig, &sa, old), 0);
}

ParameterizedTestParameters(signals, a_host_handler_survives_open_and_close)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, signals, a_host_handler_survives_open_and_close, .timeout = 60)
{
    set_handler(SIGUSR2, count_usr2, NULL);
    for (int round = 0; round < 2; round++) {
        sp_worker *w = open_on(*rt);
        cr_assert_eq(good_run(w), SP_OK, "%s", sp_worker_last_error(w));
        sp_worker_close(w);
    }
    struct sigaction cur;
    cr_assert_eq(sigaction(SIGUSR2, NULL, &cur), 0);
    cr_assert(cur.sa_handler == count_usr2, "the host's SIGUSR2 handler was replaced");
    usr2_count = 0;
    raise(SIGUSR2); /* a closed worker's module is gone: this must reach the host */
    cr_assert_eq(usr2_count, 1);
}

/* A handler the host installs after open saves the guard's as its previous
 * one and chains to it: after close that code must still be there. */
static struct sigaction chained_previous;
static volatile sig_atomic_t chained_count;

static void chain_segv(int sig, siginfo_t *info, void *uctx)
{
    chained_count++;
    if (chained_previous.sa_flags & SA_SIGINFO)
        chained_previous.sa_sigaction(sig, info, uctx);
    else if (chained_previous.sa_handler != SIG_DFL && chained_previous.sa_handler != SIG_IGN)
        chained_previous.sa_handler(sig);
}

ParameterizedTestParameters(signals, a_handler_chained_to_the_guard_is_safe_after_close)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, signals, a_handler_chained_to_the_guard_is_safe_after_close,
                  .timeout = 60)
{
    set_handler(SIGSEGV, count_segv, NULL);
    sp_worker *w = open_on(*rt);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = chain_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGSEGV, &sa, &chained_previous), 0);
    cr_assert_eq(good_run(w), SP_OK, "%s", sp_worker_last_error(w));
    sp_worker_close(w);
    segv_count = chained_count = 0;
    /* The host's chain: its handler, then the guard's (no guard armed on
     * this thread: not ours), then the host's first handler. */
    raise(SIGSEGV);
    cr_assert_eq(chained_count, 1);
    cr_assert_eq(segv_count, 1);
}

static _Atomic int sender_done;
static _Atomic int runs_done;

/* 300 process-directed SIGUSR2s, spread over the runs: a few per run. */
static void *send_usr2(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++) {
        kill(getpid(), SIGUSR2);
        int seen = atomic_load(&runs_done);
        while (i % 10 == 9 && atomic_load(&runs_done) == seen) /* pace by runs, not time */
            sched_yield();
        sched_yield();
    }
    atomic_store(&sender_done, 1);
    return NULL;
}

ParameterizedTestParameters(signals, external_sigusr2_during_runs_fails_no_run)
{
    static int runtimes[] = {0, 1};
    return cr_make_param_array(int, runtimes, 2);
}

ParameterizedTest(int *rt, signals, external_sigusr2_during_runs_fails_no_run, .timeout = 240)
{
    set_handler(SIGUSR2, count_usr2, NULL);
    sp_worker *w = open_on(*rt);
    usr2_count = 0;
    atomic_store(&sender_done, 0);
    atomic_store(&runs_done, 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, send_usr2, NULL), 0);
    int runs = 0;
    while (!atomic_load(&sender_done)) {
        int rc = good_run_of(w, 2000); /* long orchestrations: the old guard's window */
        cr_assert_eq(rc, SP_OK, "run %d with SIGUSR2s arriving: %s: %s", runs, sp_status_name(rc),
                     sp_worker_last_error(w));
        runs++;
        atomic_store(&runs_done, runs);
    }
    pthread_join(t, NULL);
    cr_assert_eq(good_run(w), SP_OK, "%s", sp_worker_last_error(w));
    cr_assert_gt(usr2_count, 0, "the host's handler got the signals");
    sp_worker_close(w);
}
