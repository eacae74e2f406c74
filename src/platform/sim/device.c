/* Attach and tear down sim devices. A device is a process resource named by
 * its id: the table below maps ids to live devices so two attaches to one id
 * share one chip, as they would share one piece of hardware. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "platform/sim/sim_chip.h"
#include "platform/sim/sim_device.h"
#include "simpler/status.h"

#define SIM_MAX_DEVICES 64
/* Each device's view sits 1 TiB after the previous one's (memory.c). */
#define SIM_MAX_DEVICE_MEMORY (1ull << 40)

static pthread_mutex_t device_table_lock = PTHREAD_MUTEX_INITIALIZER;
static sp_device *device_table[SIM_MAX_DEVICES];

sp_geometry sp_geometry_default(uint32_t devices)
{
    /* The machine's CPUs are divided among the devices open at once, and
     * each share sized as the whole machine once was: one cluster (three
     * core threads) per two CPUs keeps the spinning threads from
     * outnumbering the CPUs by much. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (devices > 1)
        cpus /= devices;
    if (cpus < 1)
        cpus = 1;
    sp_geometry g = sp_geometry_a2a3();
    g.clusters = (uint32_t)(cpus / 2 > 0 ? cpus / 2 : 1);
    if (g.clusters > SP_A2A3_CLUSTERS)
        g.clusters = SP_A2A3_CLUSTERS;
    g.aicpu_threads = cpus >= 8 ? 3 : 2;
    return g;
}

sp_geometry sp_geometry_a2a3(void)
{
    return (sp_geometry){.clusters = SP_A2A3_CLUSTERS,
                         .lanes = 3,
                         .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                         .aicpu_threads = 4};
}

int sp_geometry_validate(const sp_geometry *g)
{
    /* The sim builds one cluster shape: AIC, AIV, AIV. */
    if (!g || g->clusters < 1 || g->clusters > 256 || g->aicpu_threads < 1 ||
        g->aicpu_threads > 65 || g->lanes != 3 || g->lane_type[0] != SP_CORE_AIC ||
        g->lane_type[1] != SP_CORE_AIV || g->lane_type[2] != SP_CORE_AIV)
        return SP_EGEOMETRY;
    return SP_OK;
}

/* Devices in the table now; the caller holds its lock. */
static uint32_t table_count_locked(void)
{
    uint32_t n = 0;
    for (int i = 0; i < SIM_MAX_DEVICES; i++)
        n += device_table[i] != NULL;
    return n;
}

/* Fields the options leave 0 come from the default for `devices` open. */
static sp_geometry geometry_resolve(const sp_device_options *opt, uint32_t devices)
{
    sp_geometry def = sp_geometry_default(devices);
    if (!opt)
        return def;
    sp_geometry g = opt->geometry;
    if (!g.clusters)
        g.clusters = def.clusters;
    if (!g.aicpu_threads)
        g.aicpu_threads = def.aicpu_threads;
    if (!g.lanes) {
        g.lanes = def.lanes;
        memcpy(g.lane_type, def.lane_type, sizeof g.lane_type);
    }
    return g;
}

static int device_create(int device_id, const sp_device_options *opt, sp_device **out)
{
    sp_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return SP_ENOMEM;
    dev->id = device_id;
    dev->refcount = 1;
    if (opt)
        dev->options = *opt;
    /* The settings arrive filled (the worker read the environment, once);
     * the sim only checks what it cannot work with. */
    uint64_t bytes = dev->options.settings.memory_bytes;
    if (bytes > SIM_MAX_DEVICE_MEMORY) {
        SP_ERROR("device %d: memory_bytes %llu is more than the sim's %llu per device", device_id,
                 (unsigned long long)bytes, (unsigned long long)SIM_MAX_DEVICE_MEMORY);
        free(dev);
        return SP_EINVAL;
    }
    dev->options.settings.memory_bytes = bytes ? bytes : SP_DEFAULT_DEVICE_MEMORY;
    /* Called under the table lock: the new device counts itself in. */
    dev->geometry = geometry_resolve(opt, table_count_locked() + 1);
    int rc = sp_geometry_validate(&dev->geometry);
    if (rc) {
        SP_ERROR("device %d: invalid geometry (clusters=%u lanes=%u aicpu_threads=%u)", device_id,
                 dev->geometry.clusters, dev->geometry.lanes, dev->geometry.aicpu_threads);
        free(dev);
        return rc;
    }
    rc = sim_memory_create(dev, dev->options.settings.memory_bytes,
                           dev->options.settings.sim.no_host_map,
                           dev->options.settings.sim.protect != 0, &dev->mem);
    if (rc == 0)
        rc = sim_chip_create(dev, &dev->chip);
    if (rc) {
        if (dev->mem)
            sim_memory_destroy(dev->mem);
        free(dev);
        return rc;
    }
    *out = dev;
    return SP_OK;
}

int sp_device_open(int device_id, const sp_device_options *opt, sp_device **out)
{
    if (!out || device_id < 0 || device_id >= SIM_MAX_DEVICES)
        return SP_EINVAL;
    *out = NULL;
    pthread_mutex_lock(&device_table_lock);
    sp_device *dev = device_table[device_id];
    int rc = SP_OK;
    if (dev)
        dev->refcount++;
    else if ((rc = device_create(device_id, opt, &dev)) == SP_OK)
        device_table[device_id] = dev;
    pthread_mutex_unlock(&device_table_lock);
    if (rc == SP_OK)
        *out = dev;
    return rc;
}

void sp_device_close(sp_device *dev)
{
    if (!dev)
        return;
    pthread_mutex_lock(&device_table_lock);
    int last = --dev->refcount == 0;
    if (last)
        device_table[dev->id] = NULL;
    pthread_mutex_unlock(&device_table_lock);
    if (!last)
        return;
    sim_chip_destroy(dev->chip);
    sim_memory_destroy(dev->mem);
    free(dev);
}

const sp_geometry *sp_device_geometry(const sp_device *dev)
{
    return &dev->geometry;
}

int sp_device_id(const sp_device *dev)
{
    return dev->id;
}

const char *sp_device_platform_name(const sp_device *dev)
{
    (void)dev;
    return "sim";
}

uint32_t sp_device_core_count(const sp_device *dev)
{
    return dev->geometry.clusters * dev->geometry.lanes;
}

/* Devices open in this process now. */
static uint32_t sim_open_devices(void)
{
    pthread_mutex_lock(&device_table_lock);
    uint32_t n = table_count_locked();
    pthread_mutex_unlock(&device_table_lock);
    return n;
}

int sp_device_describe(const sp_device *dev, sp_device_info *out)
{
    if (!dev || !out)
        return SP_EINVAL;
    memset(out, 0, sizeof *out);
    snprintf(out->platform, sizeof out->platform, "%s", sp_device_platform_name(dev));
    out->device_id = dev->id;
    out->geometry = dev->geometry;
    out->core_count = sp_device_core_count(dev);
    out->core_queue = sp_chip_core_queue_depth((const sp_chip *)dev->chip);
    out->host_map = !dev->options.settings.sim.no_host_map;
    out->abandoned_cores = sp_device_abandoned_cores(dev);
    out->open_devices = sim_open_devices();
    out->memory_bytes = sp_device_memory_bytes(dev);
    out->committed_bytes = sp_device_committed_bytes(dev);
    return SP_OK;
}
