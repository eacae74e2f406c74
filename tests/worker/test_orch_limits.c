/* What an orchestration can make a run end with, through the worker, on
 * both runtimes (tests/kernels/orch_faults.c, one mode each):
 *
 * - sp_orch_fatal with a code that is not a failure status (-1000, 7) ends
 *   the run with SP_EORCH_FATAL, never with a code sp_status_name cannot
 *   name; a named status passes through as itself.
 * - hbg: an orchestration that submits until a submit fails ends at the
 *   graph limit (sp_call_config.graph_tasks / graph_bytes) with
 *   SP_EGRAPH_LIMIT naming the limit, gives back the host memory the failed
 *   build grew (resident memory drops back), and the next run passes. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

#define GOOD_VALUE 0x5eedull

enum {
    MODE_GOOD = 0,
    MODE_FATAL_UNKNOWN_CODE = 13,
    MODE_FATAL_POSITIVE_CODE = 14,
    MODE_FATAL_NAMED_CODE = 15,
    MODE_SUBMIT_FOREVER = 16,
};

static const char *const modules[] = {SP_MODULE_DIR "/libsimpler_hbg_sim.so",
                                      SP_MODULE_DIR "/libsimpler_tmr_sim.so"};

static sp_worker *w;
static uint64_t x[8];
static sp_args args;

static void open_worker(const char *module)
{
    char err[1024] = "";
    cr_assert_eq(sp_worker_open(module, NULL, &w, err, sizeof err), SP_OK, "%s", err);
    const char *kernels = SP_TEST_KERNEL_DIR "/callable_kernels.so";
    sp_callable_kernel_spec k[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = kernels, .entry = "callable_fill"},
        {.func_id = 1, .core_type = SP_CORE_AIC, .path = kernels, .entry = "callable_fill"},
    };
    sp_callable_spec spec = {
        .orch_path = SP_TEST_KERNEL_DIR "/orch_faults.so",
        .orch_entry = "orch_faults",
        .orch_config = "orch_faults_config",
        .kernels = k,
        .kernel_count = 2,
    };
    void *blob;
    size_t size;
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    int rc = sp_worker_register_callable(w, 0, blob, size);
    free(blob);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    memset(&args, 0, sizeof args);
    const int64_t n = 8;
    cr_assert_eq(sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)x, SP_DTYPE_U64, 1, &n),
                 SP_OK);
    args.dirs[0] = SP_INOUT;
    args.tensor_count = 1;
    args.scalar_count = 1;
}

static void close_worker(void)
{
    sp_worker_close(w);
    w = NULL;
}

static int run_mode(uint64_t mode, const sp_call_config *cfg)
{
    memset(x, 0, sizeof x);
    args.scalars[0] = mode;
    return sp_worker_run(w, 0, &args, cfg, NULL);
}

static void expect_good_run(void)
{
    int rc = run_mode(MODE_GOOD, NULL);
    cr_assert_eq(rc, SP_OK, "good run: %s: %s", sp_status_name(rc), sp_worker_last_error(w));
    cr_assert_eq(x[0], GOOD_VALUE, "the good run's kernel did not write x[0]");
}

ParameterizedTestParameters(orch_limits, fatal_codes_reach_the_caller_named)
{
    static int which[] = {0, 1};
    return cr_make_param_array(int, which, 2);
}

ParameterizedTest(int *mod, orch_limits, fatal_codes_reach_the_caller_named, .fini = close_worker,
                  .timeout = 120)
{
    open_worker(modules[*mod]);
    static const struct {
        uint64_t mode;
        int status;
        const char *what;
    } cases[] = {
        {MODE_FATAL_UNKNOWN_CODE, SP_EORCH_FATAL, "a code no status has"},
        {MODE_FATAL_POSITIVE_CODE, SP_EORCH_FATAL, "a positive code"},
        {MODE_FATAL_NAMED_CODE, SP_EDEVMEM, "a named status"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_mode(cases[i].mode, NULL);
        const char *msg = sp_worker_last_error(w);
        cr_assert_eq(rc, cases[i].status, "%s: mode %llu ended %d (%s): %s", modules[*mod],
                     (unsigned long long)cases[i].mode, rc, sp_status_name(rc), msg);
        cr_assert_neq(strcmp(sp_status_name(rc), "SP_E?"), 0);
        cr_assert_not_null(strstr(msg, cases[i].what), "'%s' does not say '%s'", msg,
                           cases[i].what);
        expect_good_run();
    }
}

/* ASan's allocator keeps freed memory in its quarantine (resident by
 * design), so there the memory is given back but cannot be seen in RSS. */
#ifdef __SANITIZE_ADDRESS__
#define RSS_SHOWS_FREES 0
#else
#define RSS_SHOWS_FREES 1
#endif

/* Resident set size of this process, in bytes. */
static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    unsigned long long size = 0, resident = 0;
    cr_assert_eq(fscanf(f, "%llu %llu", &size, &resident), 2);
    fclose(f);
    return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

TestSuite(orch_limits, .fini = close_worker, .timeout = 240);

Test(orch_limits, a_graph_past_its_task_limit_is_named)
{
    open_worker(modules[0]);
    expect_good_run();
    sp_call_config cfg = {.graph_tasks = 5000};
    int rc = run_mode(MODE_SUBMIT_FOREVER, &cfg);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_EGRAPH_LIMIT, "ended %s: %s", sp_status_name(rc), msg);
    cr_assert_not_null(strstr(msg, "task 5000: the graph exceeds 5000 tasks"), "%s", msg);
    cr_assert_not_null(strstr(msg, "graph_tasks"), "%s", msg);
    cr_assert_eq(x[0], 0, "a failed run wrote its output");
    expect_good_run();
}

Test(orch_limits, a_runaway_graph_stops_at_its_byte_limit_and_gives_its_memory_back)
{
    open_worker(modules[0]);
    expect_good_run();
    expect_good_run();
    const uint64_t limit = 192ull << 20;
    uint64_t before = rss_bytes();
    sp_call_config cfg = {.graph_bytes = limit};
    int rc = run_mode(MODE_SUBMIT_FOREVER, &cfg);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_EGRAPH_LIMIT, "ended %s: %s", sp_status_name(rc), msg);
    cr_assert_not_null(strstr(msg, "would grow past 201326592 bytes"), "%s", msg);
    cr_assert_not_null(strstr(msg, "graph_bytes"), "%s", msg);
    /* The build held most of the limit (every page of it written); after
     * the failure the store has given it back. */
    uint64_t after = rss_bytes();
    if (RSS_SHOWS_FREES)
        cr_assert_lt(after, before + (48ull << 20),
                     "resident memory %llu MiB after the failed build, %llu MiB before: the "
                     "graph's memory was kept",
                     (unsigned long long)(after >> 20), (unsigned long long)(before >> 20));
    expect_good_run();
    /* The same again: nothing accumulates from one failed build to the next. */
    rc = run_mode(MODE_SUBMIT_FOREVER, &cfg);
    cr_assert_eq(rc, SP_EGRAPH_LIMIT, "%s", sp_worker_last_error(w));
    if (RSS_SHOWS_FREES)
        cr_assert_lt(rss_bytes(), before + (48ull << 20));
    expect_good_run();
}
