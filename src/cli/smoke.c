/* `simpler smoke`: exercise a device end to end through the public API
 * and say what happened: open a worker (which opens the device), pack and
 * register a callable whose kernel marks the core it runs on, run it until
 * every core of the device has reported its id and its type, and check
 * each report against the geometry the device describes. Exit 0 only if
 * all checks hold. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "common/paths.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define SMOKE_MAX_RUNS 20 /* runs until every core has reported */
#define SMOKE_TASKS_PER_CORE 4

/* A check of what the device did: "smoke: FAIL: ..." on stdout (the result
 * line, as "smoke: PASS" is). */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("smoke: FAIL: " __VA_ARGS__);                                                   \
            printf("\n");                                                                          \
            failed = CLI_EXIT_FAIL;                                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)
/* A call that failed with a status: printed once on stderr (cli_fail). */
#define CHECK_RC(rc, ...)                                                                          \
    do {                                                                                           \
        if ((rc) != SP_OK) {                                                                       \
            failed = cli_fail((rc), __VA_ARGS__);                                                  \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* The kind of core `c` (numbering in simpler/device_info.h). */
static uint32_t core_type(const sp_geometry *g, uint32_t c)
{
    if (c < g->clusters || g->lanes < 2)
        return g->lane_type[0];
    return g->lane_type[1 + (c - g->clusters) % (g->lanes - 1)];
}

static const char smoke_help[] =
    "usage: simpler smoke [--runtime NAME] [--a2a3]\n"
    "Open device 0, pack and register a callable whose kernel marks the core it runs on, run it\n"
    "until every core has reported its id and type, and check each report against the geometry.\n"
    "  --runtime NAME   runtime module: hbg (default) or tmr\n"
    "  --a2a3           the a2a3 chip's geometry: 24 clusters, 3 scheduler threads\n"
    "  -h, --help       this text\n";

int cli_smoke(int argc, char **argv)
{
    const char *runtime = "hbg";
    sp_worker_options wo = {0};
    static const struct option longopts[] = {{"runtime", required_argument, NULL, 'r'},
                                             {"a2a3", no_argument, NULL, 'a'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            runtime = optarg;
            break;
        case 'a':
            cli_a2a3_prewarm(&wo.prewarm);
            break;
        case 'h':
            fputs(smoke_help, stdout);
            return CLI_EXIT_OK;
        default:
            return cli_option_error("smoke", c, argv, longopts);
        }
    }
    if (optind < argc)
        return cli_usage_error("smoke", "unexpected argument '%s'", argv[optind]);
    int failed = 0, rc;
    sp_worker *w = NULL;
    void *blob = NULL;
    uint32_t *marks = NULL;
    uint8_t *seen = NULL;
    char err[640] = "";

    rc = sp_worker_open_runtime(runtime, NULL, &wo, &w, err, sizeof err);
    CHECK_RC(rc, "open the '%s' module on device 0: %s", runtime, err);
    sp_device_info d;
    rc = sp_worker_device_info(w, &d);
    CHECK_RC(rc, "describe device 0: %s", sp_worker_last_error(w));
    const sp_geometry *g = &d.geometry;
    printf("device %d: %s, %u clusters (%u cores), %u AICPU threads, %llu MiB device memory\n",
           d.device_id, d.platform, g->clusters, d.core_count, g->aicpu_threads,
           (unsigned long long)(d.memory_bytes >> 20));
    CHECK(d.core_count >= 1 && d.core_count <= (1u << 14), "the device reports %u cores",
          d.core_count);

    /* The callable: the smoke orchestration and kernel, built beside this
     * command (src/cli/CMakeLists.txt), packed here. */
    char kpath[4096], opath[4096];
    CHECK(sp__data_path(kpath, sizeof kpath, "smoke/sp_smoke_kernel.so") == 0 &&
              sp__data_path(opath, sizeof opath, "smoke/sp_smoke_orch.so") == 0,
          "cannot find smoke/sp_smoke_kernel.so and sp_smoke_orch.so under <prefix>/share/simpler "
          "or in the build tree");
    sp_callable_kernel_spec ks[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIC, .path = kpath, .entry = "smoke_mark"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = kpath, .entry = "smoke_mark"},
    };
    sp_callable_spec spec = {.orch_path = opath,
                             .orch_entry = "smoke_orch",
                             .orch_config = "smoke_config",
                             .kernels = ks,
                             .kernel_count = 2};
    size_t size = 0;
    rc = sp_callable_build(&spec, &blob, &size, err, sizeof err);
    CHECK_RC(rc, "pack the smoke callable: %s", err);
    rc = sp_worker_register_callable(w, 0, blob, size);
    CHECK_RC(rc, "register the smoke callable: %s", sp_worker_last_error(w));
    printf("callable: orchestration 'smoke_orch' and kernel 'smoke_mark' packed into %zu bytes "
           "and registered (%s runtime)\n",
           size, runtime);

    uint32_t cores = d.core_count, aic_cores = 0;
    for (uint32_t c = 0; c < cores; c++)
        aic_cores += core_type(g, c) == SP_CORE_AIC;
    marks = calloc(cores, sizeof *marks);
    seen = calloc(cores, 1);
    CHECK_RC(marks && seen ? SP_OK : SP_ENOMEM, "no host memory for %u cores' marks", cores);
    uint32_t reached = 0;
    int runs = 0;
    uint64_t tasks = 0;
    while (reached < cores && runs < SMOKE_MAX_RUNS) {
        memset(marks, 0, cores * sizeof *marks);
        sp_args a;
        memset(&a, 0, sizeof a);
        const int64_t shape = cores;
        sp_tensor_init(&a.tensors[0], (uint64_t)(uintptr_t)marks, SP_DTYPE_U32, 1, &shape);
        a.dirs[0] = SP_INOUT;
        a.tensor_count = 1;
        a.scalars[0] = (uint64_t)aic_cores * SMOKE_TASKS_PER_CORE;
        a.scalars[1] = (uint64_t)(cores - aic_cores) * SMOKE_TASKS_PER_CORE;
        a.scalar_count = 2;
        sp_run_stats st;
        rc = sp_worker_run(w, 0, &a, NULL, &st);
        CHECK_RC(rc, "run %d: %s", runs + 1, sp_worker_last_error(w));
        runs++;
        tasks += st.tasks;
        for (uint32_t c = 0; c < cores; c++) {
            if (!marks[c])
                continue;
            uint32_t type = core_type(g, c);
            CHECK((marks[c] & 0xffffu) == c + 1 && ((marks[c] >> 16) & 0xffu) == type,
                  "core %u reported %#x: want id %u and type %u", c, marks[c], c + 1, type);
            CHECK(!(marks[c] >> 31), "core %u (type %u) ran a task submitted for the other type", c,
                  type);
            if (!seen[c]++)
                reached++;
        }
    }
    CHECK(reached == cores, "after %d runs only %u of %u cores ran the kernel", runs, reached,
          cores);
    printf("run: %d run(s), %llu tasks; the kernel ran on all %u cores (%u AIC, %u AIV), each "
           "reporting its id and type; the marks came back from device memory\n",
           runs, (unsigned long long)tasks, cores, aic_cores, cores - aic_cores);
    printf("smoke: PASS\n");
out:
    free(seen);
    free(marks);
    free(blob);
    sp_worker_close(w);
    return failed;
}
