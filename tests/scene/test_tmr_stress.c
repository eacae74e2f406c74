/* tensormap_and_ringbuffer under scheduling stress, end to end through the
 * worker: many SPMD tasks on tiny windows with several scheduler threads
 * (every block of every task is handed out, however the ready queues' pops
 * and pushes interleave), random graphs on one scheduler thread with every
 * wait parking at once (no completion wake-up is lost), and a task with as
 * many producers as one task may have still keeps its inputs' buffers. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#include "orch_stress_callable.h"

/* These cases size heaps to the byte: red zones (the checking mode, which
 * `make test-asan` / `test-tsan` turn on with SIMPLER_CHECK=1) would move
 * every limit, so they run with it off. */
#define EXACT SP_CALL_NO_CHECK

#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"
#define Y_LEN 4096

static uint64_t y[Y_LEN];

/* Sanitizer builds run a tenth of the default runs: each run costs them
 * tens of times more, and a tenth still covers every shape. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RUNS(n) ((n) / 10)
#else
#define RUNS(n) (n)
#endif

static sp_worker *open_tmr(uint32_t clusters, uint32_t sched_threads)
{
    char err[1024] = "";
    sp_worker_options opt = {.prewarm = {.clusters = clusters, .sched_threads = sched_threads}};
    sp_worker *w = NULL;
    cr_assert_eq(sp_worker_open(TMR_MODULE, &opt, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(orch_stress_register(w, 0, err, sizeof err), SP_OK, "%s", err);
    return w;
}

static int run(sp_worker *w, uint64_t mode, uint64_t n, uint64_t arg, int64_t y_len,
               const sp_call_config *cfg, sp_run_stats *st)
{
    sp_args args;
    memset(&args, 0, sizeof args);
    sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &y_len);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalars[0] = mode;
    args.scalars[1] = n;
    args.scalars[2] = arg;
    args.scalar_count = 3;
    return sp_worker_run(w, 0, &args, cfg, st);
}

TestSuite(tmr_stress, .timeout = 600);

/* Issue 12, item 10: each block handed out pops its task and pushes it
 * back; a push that met a cell still held by a preempted popper was
 * dropped, and the task's other blocks were never run. SP_STRESS_SPMD_RUNS
 * (default 1000) runs of SP_STRESS_SPMD_TASKS (default 24) tasks of 32
 * blocks, AIC and AIV in turn, on 4 clusters and a 4-slot window, with 2,
 * 3 and 4 scheduler threads in turn (a tenth of the runs under
 * sanitizers); every block must have run. */
Test(tmr_stress, spmd_blocks_all_run_under_several_schedulers)
{
    long runs = stress_count("SP_STRESS_SPMD_RUNS", RUNS(1000));
    long tasks = stress_count("SP_STRESS_SPMD_TASKS", 24);
    cr_assert_leq(tasks * 32, Y_LEN);
    sp_worker *w = open_tmr(4, 4);
    for (long k = 0; k < runs; k++) {
        memset(y, 0, sizeof y);
        sp_call_config cfg = {.task_window = 4, .sched_threads = 2 + (uint32_t)(k % 3)};
        sp_run_stats st;
        int rc = run(w, STRESS_SPMD, (uint64_t)tasks, 32, Y_LEN, &cfg, &st);
        cr_assert_eq(rc, SP_OK, "run %ld (%u schedulers): %s: %s", k, cfg.sched_threads,
                     sp_status_name(rc), sp_worker_last_error(w));
        cr_assert_eq(st.tasks, (uint64_t)tasks);
        for (long i = 0; i < tasks * 32; i++)
            cr_assert_eq(y[i], (uint64_t)(i / 32 + 1), "run %ld: block %ld of task %ld: %llu", k,
                         i % 32, i / 32, (unsigned long long)y[i]);
    }
    sp_worker_close(w);
}

/* Issue 12, item 10b: random graphs (SPMD, MIX, dummy tasks, nested
 * scopes, runtime-owned outputs passed on) on one scheduler thread, a
 * 4-slot window, a 4 KiB heap and 2 clusters, with every chip wait
 * parking at once (SIMPLER_SIM_SPIN_NS=0, SIMPLER_SIM_YIELD_NS=0): none
 * may stall. SP_STRESS_RANDOM_RUNS (default 300, a tenth under
 * sanitizers) graphs of 10 to
 * SP_STRESS_RANDOM_TASKS (default 400) tasks; SP_STRESS_RANDOM_SEED picks
 * the first seed. A stall would end as SP_ESTALL after the 10 s backstop. */
Test(tmr_stress, random_graphs_on_one_scheduler_never_stall)
{
    setenv("SIMPLER_SIM_SPIN_NS", "0", 1);
    setenv("SIMPLER_SIM_YIELD_NS", "0", 1);
    long runs = stress_count("SP_STRESS_RANDOM_RUNS", RUNS(300));
    long max_tasks = stress_count("SP_STRESS_RANDOM_TASKS", 400);
    long seed0 = stress_count("SP_STRESS_RANDOM_SEED", 1);
    sp_worker *w = open_tmr(2, 1);
    for (long k = 0; k < runs; k++) {
        uint64_t seed = (uint64_t)(seed0 + k);
        uint64_t n = 10 + (seed * 2654435761u) % (uint64_t)(max_tasks > 10 ? max_tasks - 9 : 1);
        sp_call_config cfg = {
            .task_window = 4, .heap_bytes = 4096, .timeout_us = 10000000, .flags = EXACT};
        sp_run_stats st;
        int rc = run(w, STRESS_RANDOM, n, seed, Y_LEN, &cfg, &st);
        cr_assert_eq(rc, SP_OK, "seed %llu (%llu tasks): %s: %s", (unsigned long long)seed,
                     (unsigned long long)n, sp_status_name(rc), sp_worker_last_error(w));
        cr_assert_eq(st.tasks, n, "seed %llu", (unsigned long long)seed);
    }
    sp_worker_close(w);
}

/* Issue 12, item 1: T depends on W (which rewrote C's output X2) and on
 * `readers` readers of z; C's buffer must stay until T has read it, even
 * when T has as many producers as a task may (128): two small outputs
 * waiting for heap room must not get C's range while T waits for the slow
 * reader. z ends as X2: 5 + 1 everywhere. */
static void holds_case(sp_worker *w, uint64_t readers)
{
    int64_t len = 128;
    memset(y, 0, sizeof y);
    sp_call_config cfg = {.heap_bytes = 4096, .flags = EXACT};
    sp_run_stats st;
    int rc = run(w, STRESS_HOLDS, readers, 0, len, &cfg, &st);
    cr_assert_eq(rc, SP_OK, "%llu readers: %s: %s", (unsigned long long)readers, sp_status_name(rc),
                 sp_worker_last_error(w));
    for (int64_t i = 0; i < len; i++)
        cr_assert_eq(y[i], 6, "%llu readers: z[%lld] = %llu (C's buffer was reused under T)",
                     (unsigned long long)readers, (long long)i, (unsigned long long)y[i]);
}

Test(tmr_stress, a_task_with_the_most_producers_keeps_its_inputs)
{
    sp_worker *w = open_tmr(0, 0);
    holds_case(w, 126);
    holds_case(w, 127); /* 128 producers: the limit, and the case that read reused memory */
    /* One more producer than a task may have is refused by name. */
    int64_t len = 128;
    sp_call_config cfg = {.heap_bytes = 4096, .flags = EXACT};
    sp_run_stats st;
    int rc = run(w, STRESS_HOLDS, 128, 0, len, &cfg, &st);
    cr_assert_eq(rc, SP_EGRAPH_LIMIT, "got %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    cr_assert(strstr(sp_worker_last_error(w), "128 producers") != NULL, "%s",
              sp_worker_last_error(w));
    holds_case(w, 127); /* and the device is usable after it */
    sp_worker_close(w);
}
