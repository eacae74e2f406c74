/* Attach and tear down sim devices. A device is a process resource named by
 * its id: the table below maps ids to live devices so two attaches to one id
 * share one chip, as they would share one piece of hardware. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "platform/sim/sim_device.h"
#include "simpler/status.h"

#define SIM_MAX_DEVICES 64

static pthread_mutex_t device_table_lock = PTHREAD_MUTEX_INITIALIZER;
static sp_device *device_table[SIM_MAX_DEVICES];

sp_geometry sp_geometry_default(void)
{
    /* One cluster (three core threads) and one scheduler per two CPUs keeps
     * the spinning threads from outnumbering the CPUs by much. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
        cpus = 1;
    sp_geometry g = {
        .clusters = (uint32_t)(cpus / 2 > 0 ? cpus / 2 : 1), .sched_threads = 1, .orch_threads = 1};
    if (g.clusters > SP_A2A3_CLUSTERS)
        g.clusters = SP_A2A3_CLUSTERS;
    if (cpus >= 8)
        g.sched_threads = 2;
    return g;
}

sp_geometry sp_geometry_a2a3(void)
{
    return (sp_geometry){.clusters = SP_A2A3_CLUSTERS, .sched_threads = 3, .orch_threads = 1};
}

int sp_geometry_validate(const sp_geometry *g)
{
    if (!g || g->clusters < 1 || g->clusters > 256 || g->sched_threads < 1 ||
        g->sched_threads > 64 || g->orch_threads > 1)
        return SP_EGEOMETRY;
    return SP_OK;
}

/* "1", "2-3", "0,2-3" -> a CPU bit mask (CPUs 0..63); 0 if malformed. */
static uint64_t parse_cpu_list(const char *s)
{
    uint64_t mask = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0 || a > 63)
            return 0;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a || b > 63)
                return 0;
            s = end;
        }
        for (long c = a; c <= b; c++)
            mask |= 1ull << c;
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return mask;
}

static sp_geometry geometry_resolve(const sp_device_options *opt)
{
    sp_geometry def = sp_geometry_default();
    if (!opt)
        return def;
    sp_geometry g = opt->geometry;
    if (!g.clusters)
        g.clusters = def.clusters;
    if (!g.sched_threads)
        g.sched_threads = def.sched_threads;
    if (!g.orch_threads)
        g.orch_threads = def.orch_threads;
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
    /* Runtime switch: behave like a backend without host-map, so callers'
     * copy fallbacks can be exercised on the sim. */
    const char *no_map = getenv("SIMPLER_SIM_NO_HOST_MAP");
    if (no_map && *no_map && strcmp(no_map, "0") != 0)
        dev->options.no_host_map = true;
    /* SIMPLER_SIM_CPUS=1 or 2-3 or 0,2: keep the chip's threads on those host
     * CPUs, leaving the others to the host (e.g. for an overlapped prepare). */
    const char *cpus = getenv("SIMPLER_SIM_CPUS");
    if (cpus && *cpus && !dev->options.chip_cpus)
        dev->options.chip_cpus = parse_cpu_list(cpus);
    /* SIMPLER_SIM_MEMORY_MB=16: a small device, so tests can exhaust its
     * memory without touching gigabytes; an explicit option wins. */
    const char *mem_mb = getenv("SIMPLER_SIM_MEMORY_MB");
    if (mem_mb && *mem_mb && !dev->options.memory_bytes) {
        char *end;
        unsigned long long mb = strtoull(mem_mb, &end, 10);
        if (*end == 0 && mb > 0 && mb <= (1ull << 20))
            dev->options.memory_bytes = mb << 20;
        else
            SP_WARN("device %d: ignoring SIMPLER_SIM_MEMORY_MB='%s' (want 1..1048576)", device_id,
                    mem_mb);
    }
    dev->geometry = geometry_resolve(opt);
    int rc = sp_geometry_validate(&dev->geometry);
    if (rc) {
        SP_ERROR("device %d: invalid geometry (clusters=%u sched_threads=%u orch_threads=%u)",
                 device_id, dev->geometry.clusters, dev->geometry.sched_threads,
                 dev->geometry.orch_threads);
        free(dev);
        return rc;
    }
    uint64_t bytes =
        dev->options.memory_bytes ? dev->options.memory_bytes : SP_DEFAULT_DEVICE_MEMORY;
    dev->options.memory_bytes = bytes;
    rc = sim_memory_create(dev, bytes, dev->options.no_host_map, &dev->mem);
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
    return dev->geometry.clusters * 3;
}
