/* `simpler info`: what chip this process gets. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "platform/device.h"
#include "simpler/status.h"

int cli_info(int argc, char **argv)
{
    sp_device_options opt = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--a2a3") == 0) {
            opt.geometry = sp_geometry_a2a3();
        } else {
            fprintf(stderr, "simpler info: unknown option '%s' (known: --a2a3)\n", argv[i]);
            return 2;
        }
    }
    sp_device *dev;
    int rc = sp_device_open(0, &opt, &dev);
    if (rc) {
        fprintf(stderr, "simpler info: cannot open device 0: %s (%s)\n", sp_status_name(rc),
                sp_status_hint(rc));
        return 1;
    }
    const sp_geometry *g = sp_device_geometry(dev);
    printf("platform: %s\n", sp_device_platform_name(dev));
    printf("device: %d\n", sp_device_id(dev));
    printf("geometry: %u clusters (%u AIC + %u AIV cores), %u AICPU threads\n", g->clusters,
           g->clusters, 2 * g->clusters, g->aicpu_threads);
    printf("device memory: %llu bytes (%.1f MiB)\n",
           (unsigned long long)sp_device_memory_bytes(dev),
           (double)sp_device_memory_bytes(dev) / (1024.0 * 1024.0));
    uint32_t abandoned = sp_device_abandoned_cores(dev);
    if (abandoned)
        printf("health: degraded (%u chip thread(s) abandoned to kernels or orchestrations "
               "that did not answer the interrupt)\n",
               abandoned);
    else
        printf("health: ok (no chip thread abandoned)\n");
    sp_device_close(dev);
    return 0;
}
