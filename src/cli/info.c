/* `simpler info`: the device a runtime module opens in this process, as the
 * module describes it (through the worker: the CLI links no platform). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "simpler/status.h"
#include "simpler/worker.h"

static const char info_help[] =
    "usage: simpler info [--runtime NAME] [--platform NAME] [--a2a3]\n"
    "Open device 0 through the runtime module NAME and describe it.\n"
    "  --runtime NAME   runtime module to open: hbg (default) or tmr\n"
    "  --platform NAME  platform of the module (default: sim)\n"
    "  --a2a3           the a2a3 chip's geometry: 24 clusters, 3 scheduler threads\n"
    "  -h, --help       this text\n";

int cli_info(int argc, char **argv)
{
    const char *runtime = "hbg", *platform = NULL;
    sp_worker_options wo = {0};
    static const struct option longopts[] = {{"runtime", required_argument, NULL, 'r'},
                                             {"platform", required_argument, NULL, 'p'},
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
        case 'p':
            platform = optarg;
            break;
        case 'a':
            cli_a2a3_prewarm(&wo.prewarm);
            break;
        case 'h':
            fputs(info_help, stdout);
            return CLI_EXIT_OK;
        default:
            return cli_option_error("info", c, argv, longopts);
        }
    }
    if (optind < argc)
        return cli_usage_error("info", "unexpected argument '%s'", argv[optind]);
    sp_worker *w = NULL;
    char err[640] = "";
    int rc = sp_worker_open_runtime(runtime, platform, &wo, &w, err, sizeof err);
    sp_device_info d;
    if (rc == SP_OK && (rc = sp_worker_device_info(w, &d)) != SP_OK)
        snprintf(err, sizeof err, "%s", sp_worker_last_error(w));
    if (rc) {
        sp_worker_close(w);
        return cli_fail(rc, "cannot open device 0 with runtime '%s': %s", runtime, err);
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
    return CLI_EXIT_OK;
}
