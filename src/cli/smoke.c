/* `simpler smoke`: exercise a device end to end through the public API
 * and say what happened: open a worker (which opens the device), pack and
 * register a callable whose kernel marks the core it runs on, run it until
 * every core of the device has reported its id and its type, and check
 * each report against the geometry the device describes. Exit 0 only if
 * all checks hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/paths.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define SMOKE_MAX_RUNS 20 /* runs until every core has reported */
#define SMOKE_TASKS_PER_CORE 4

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "smoke: FAIL: " __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                                 \
            failed = 1;                                                                            \
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

int cli_smoke(int argc, char **argv)
{
    const char *runtime = "hbg";
    sp_worker_options wo = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--a2a3") == 0) {
            wo.prewarm.clusters = 24;
            wo.prewarm.sched_threads = 3;
        } else if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc) {
            runtime = argv[++i];
        } else {
            fprintf(stderr, "simpler smoke: unknown option '%s' (known: --a2a3, --runtime NAME)\n",
                    argv[i]);
            return 2;
        }
    }
    int failed = 0, rc;
    sp_worker *w = NULL;
    void *blob = NULL;
    uint32_t *marks = NULL;
    uint8_t *seen = NULL;
    char err[640] = "";

    rc = sp_worker_open_runtime(runtime, NULL, &wo, &w, err, sizeof err);
    CHECK(rc == SP_OK, "open the '%s' module on device 0: %s: %s", runtime, sp_status_name(rc),
          err);
    sp_device_info d;
    rc = sp_worker_device_info(w, &d);
    CHECK(rc == SP_OK, "describe device 0: %s: %s", sp_status_name(rc), sp_worker_last_error(w));
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
    CHECK(rc == SP_OK, "pack the smoke callable: %s: %s", sp_status_name(rc), err);
    rc = sp_worker_register_callable(w, 0, blob, size);
    CHECK(rc == SP_OK, "register the smoke callable: %s: %s", sp_status_name(rc),
          sp_worker_last_error(w));
    printf("callable: orchestration 'smoke_orch' and kernel 'smoke_mark' packed into %zu bytes "
           "and registered (%s runtime)\n",
           size, runtime);

    uint32_t cores = d.core_count, aic_cores = 0;
    for (uint32_t c = 0; c < cores; c++)
        aic_cores += core_type(g, c) == SP_CORE_AIC;
    marks = calloc(cores, sizeof *marks);
    seen = calloc(cores, 1);
    CHECK(marks && seen, "%s: no host memory for %u cores' marks", sp_status_name(SP_ENOMEM),
          cores);
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
        CHECK(rc == SP_OK, "run %d: %s: %s", runs + 1, sp_status_name(rc), sp_worker_last_error(w));
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
