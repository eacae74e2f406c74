/* `simpler info`: the device a runtime module opens in this process, as the
 * module describes it (through the worker: the CLI links no platform). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "simpler/status.h"
#include "simpler/worker.h"

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "simpler info: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nusage: simpler info [--runtime NAME] [--platform NAME] [--a2a3]\n");
    return 2;
}

int cli_info(int argc, char **argv)
{
    const char *runtime = "hbg", *platform = NULL;
    sp_worker_options wo = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--a2a3") == 0) {
            /* The a2a3 chip: 24 clusters, 3 scheduler threads + the orchestrator's. */
            wo.prewarm.clusters = 24;
            wo.prewarm.sched_threads = 3;
        } else if (strcmp(a, "--runtime") == 0 || strcmp(a, "--platform") == 0) {
            if (!v)
                return usage_error("option '%s' needs a value", a);
            *(a[2] == 'r' ? &runtime : &platform) = v;
            i++;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    sp_worker *w = NULL;
    char err[640] = "";
    int rc = sp_worker_open_runtime(runtime, platform, &wo, &w, err, sizeof err);
    sp_device_info d;
    if (rc == SP_OK && (rc = sp_worker_device_info(w, &d)) != SP_OK)
        snprintf(err, sizeof err, "%s", sp_worker_last_error(w));
    if (rc) {
        fprintf(stderr, "simpler info: cannot open device 0 with runtime '%s': %s (%s): %s\n",
                runtime, sp_status_name(rc), sp_status_hint(rc), err);
        sp_worker_close(w);
        return 1;
    }
    const sp_geometry *g = &d.geometry;
    uint32_t kinds[2] = {0, 0}; /* cores per cluster of each sp_core_type */
    for (uint32_t l = 0; l < g->lanes && l < SP_GEOMETRY_MAX_LANES; l++)
        if (g->lane_type[l] < 2)
            kinds[g->lane_type[l]]++;
    printf("platform: %s\n", d.platform);
    printf("device: %d (runtime module: %s)\n", d.device_id, runtime);
    printf("geometry: %u clusters (%u AIC + %u AIV cores), %u AICPU threads\n", g->clusters,
           kinds[0] * g->clusters, kinds[1] * g->clusters, g->aicpu_threads);
    printf("device memory: %llu bytes (%.1f MiB), %llu bytes committed\n",
           (unsigned long long)d.memory_bytes, (double)d.memory_bytes / (1024.0 * 1024.0),
           (unsigned long long)d.committed_bytes);
    printf("host-map: %s; a core holds %u payloads at once\n", d.host_map ? "yes" : "no (copies)",
           d.core_queue);
    if (d.abandoned_cores)
        printf("health: degraded (%u chip thread(s) abandoned to kernels or orchestrations "
               "that did not answer the interrupt)\n",
               d.abandoned_cores);
    else
        printf("health: ok (no chip thread abandoned)\n");
    sp_worker_close(w);
    return 0;
}
