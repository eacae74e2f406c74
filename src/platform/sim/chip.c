/* The sim chip's life cycle: one host thread per core and per AICPU thread,
 * started with the device and parked on their doorbells / go words until
 * work arrives, stopped and joined at teardown. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "platform/sim/sim_chip.h"
#include "platform/sim/spread.h"
#include "simpler/status.h"

/* Core `id`'s cluster and kind, numbered as simpler/device_info.h says. */
static void core_identity(sim_core *core, uint32_t id, const sp_geometry *g)
{
    core->id = id;
    uint32_t lane = 0;
    if (id < g->clusters) {
        core->cluster = id;
    } else {
        core->cluster = (id - g->clusters) / (g->lanes - 1);
        lane = 1 + (id - g->clusters) % (g->lanes - 1);
    }
    core->type = g->lane_type[lane];
}

#define SIM_SPIN_NS 2000

/* Payloads a core holds: settings.sim.core_queue, else the default. Four
 * keeps a core busy through a scheduler's trip off the CPU while leaving
 * little work stranded behind a long kernel. */
#define SIM_QUEUE_DEFAULT 64
static uint32_t core_queue_depth(const sp_device *dev)
{
    uint32_t d = dev->options.settings.sim.core_queue;
    if (d >= 1 && d <= SIM_QUEUE_MAX)
        return d;
    if (d)
        SP_WARN("device %d: ignoring core_queue %u (want 1..%u); using %u", dev->id, d,
                SIM_QUEUE_MAX, SIM_QUEUE_DEFAULT);
    return SIM_QUEUE_DEFAULT;
}

/* A wait rung in ns from a setting: 0 the default, SP_SETTING_ZERO none,
 * else at most a second (with a warning naming it otherwise). */
#define SIM_RUNG_MAX_NS 1000000000ull
static uint64_t wait_rung_ns(const sp_device *dev, const char *name, uint64_t v, uint64_t fallback)
{
    if (v == 0)
        return fallback;
    if (v == SP_SETTING_ZERO)
        return 0;
    if (v <= SIM_RUNG_MAX_NS)
        return v;
    SP_WARN("device %d: ignoring %s %llu (want 0..%llu ns); using %llu", dev->id, name,
            (unsigned long long)v, SIM_RUNG_MAX_NS, (unsigned long long)fallback);
    return fallback;
}

/* settings.sim.cpus (bit c: CPU c) as a CPU set. */
static void cpus_of_mask(uint64_t mask, cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int c = 0; c < 64; c++)
        if (mask >> c & 1)
            CPU_SET(c, set);
}

static int start_thread(pthread_t *thread, void *(*main)(void *), void *arg, const char *name,
                        const sp_device *dev)
{
    int err = pthread_create(thread, NULL, main, arg);
    if (err) {
        SP_ERROR("device %d: cannot start chip thread %s: %s", dev->id, name, strerror(err));
        return SP_ESYS;
    }
    uint64_t mask = dev->options.settings.sim.cpus;
    if (mask) {
        cpu_set_t set;
        cpus_of_mask(mask, &set);
        /* Best effort: a CPU the process may not use leaves the thread free. */
        if (pthread_setaffinity_np(*thread, sizeof set, &set) != 0)
            SP_WARN("device %d: cannot pin chip thread %s to CPU mask %#llx", dev->id, name,
                    (unsigned long long)mask);
    }
    char shortname[16]; /* the kernel keeps 15 characters */
    snprintf(shortname, sizeof shortname, "%.15s", name);
    pthread_setname_np(*thread, shortname); /* best effort: only for perf and debuggers */
    return SP_OK;
}

int sim_core_start(sim_core *core, uint32_t done, bool replacement)
{
    struct sim_chip *chip = (struct sim_chip *)core->chip;
    sim_core_thread *t = calloc(1, sizeof *t);
    if (!t)
        return SP_ENOMEM;
    t->core = core;
    t->done = done;
    t->announce = replacement;
    char name[32];
    snprintf(name, sizeof name, "sp%d-%s%u", chip->dev->id,
             core->type == SP_CORE_AIC ? "aic" : "aiv", core->id);
    /* Every thread starts awake (the count at create covers the first
     * ones); relaxed: a hint for the wait policy. */
    if (replacement)
        atomic_fetch_add_explicit(&chip->view.awake, 1, memory_order_relaxed);
    pthread_t th;
    int rc = start_thread(&th, sim_core_main, t, name, chip->dev);
    if (rc) {
        if (replacement)
            atomic_fetch_sub_explicit(&chip->view.awake, 1, memory_order_relaxed);
        free(t);
        return rc;
    }
    atomic_store_explicit(&core->thread, th, memory_order_release);
    return SP_OK;
}

int sim_aicpu_start(sim_aicpu *t, bool replacement)
{
    struct sim_chip *chip = t->chip;
    char name[32];
    snprintf(name, sizeof name, "sp%d-aicpu%u", chip->dev->id, t->index);
    if (replacement) /* relaxed: a hint for the wait policy */
        atomic_fetch_add_explicit(&chip->view.awake, 1, memory_order_relaxed);
    pthread_t th;
    int rc = start_thread(&th, sim_aicpu_main, t, name, chip->dev);
    if (rc) {
        if (replacement)
            atomic_fetch_sub_explicit(&chip->view.awake, 1, memory_order_relaxed);
        return rc;
    }
    atomic_store_explicit(&t->thread, th, memory_order_release);
    return SP_OK;
}

static void stop_threads(struct sim_chip *chip)
{
    for (uint32_t i = 0; i < chip->aicpu_count; i++)
        if (chip->aicpu[i].started)
            sp__waitword_store(&chip->aicpu[i].go, SIM_DOORBELL_STOP);
    for (uint32_t i = 0; i < chip->view.core_count; i++)
        if (chip->view.cores[i].started)
            sp__waitword_store(&chip->view.cores[i].doorbell, SIM_DOORBELL_STOP);
    for (uint32_t i = 0; i < chip->aicpu_count; i++)
        if (chip->aicpu[i].started)
            pthread_join(atomic_load_explicit(&chip->aicpu[i].thread, memory_order_acquire), NULL);
    for (uint32_t i = 0; i < chip->view.core_count; i++)
        if (chip->view.cores[i].started)
            pthread_join(atomic_load_explicit(&chip->view.cores[i].thread, memory_order_acquire),
                         NULL);
}

static void chip_free(struct sim_chip *chip)
{
    free(chip->view.cores);
    free(chip->aicpu);
    free(chip);
}

static void *alloc_lines(size_t count, size_t size)
{
    /* aligned_alloc wants a size that is a multiple of the alignment; the
     * element types are cache-line aligned, so their sizes already are. */
    void *p = aligned_alloc(SP_CACHE_LINE, count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

int sim_chip_create(sp_device *dev, struct sim_chip **out)
{
    *out = NULL;
    const sp_geometry *g = &dev->geometry;
    struct sim_chip *chip = alloc_lines(1, sizeof *chip);
    if (!chip)
        return SP_ENOMEM;
    chip->dev = dev;
    /* The crash guards' handlers, held while this chip's threads live. */
    if (sp__fault_install() != SP_OK) {
        SP_ERROR("device %d: cannot install the crash guard's signal handlers", dev->id);
        chip_free(chip);
        return SP_ESYS;
    }
    chip->view.geometry = *g;
    chip->view.clusters = g->clusters;
    chip->view.core_count = g->clusters * g->lanes;
    chip->aicpu_count = g->aicpu_threads;
    chip->view.cores = alloc_lines(chip->view.core_count, sizeof(sim_core));
    chip->aicpu = alloc_lines(chip->aicpu_count, sizeof(sim_aicpu));
    if (!chip->view.cores || !chip->aicpu) {
        chip_free(chip);
        sp__fault_uninstall();
        return SP_ENOMEM;
    }

    /* Chip threads spin only while the awake ones fit on the CPUs, and
     * count themselves out while parked (settings.sim.spin_ns and yield_ns
     * override the rungs, for experiments). */
    cpu_set_t *allowed = &chip->view.cpus;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (dev->options.settings.sim.cpus) {
        cpus_of_mask(dev->options.settings.sim.cpus, allowed);
        cpus = CPU_COUNT(allowed);
    } else if (sched_getaffinity(0, sizeof *allowed, allowed) != 0) {
        CPU_ZERO(allowed); /* unknown: the cores do not spread */
    }
    chip->view.cpu_count = CPU_COUNT(allowed);
    chip->view.wait = sp__wait_default;
    /* A short spin: a handoff between two running chip threads takes well
     * under a microsecond, and a spinner whose partner lost its CPU to
     * another process burns the whole rung at every handoff (chain 10^5 on
     * a loaded 2-CPU VM: ~48 us/task with 20 us of spin, ~10 with 2 us). */
    const sp_sim_settings *sim = &dev->options.settings.sim;
    chip->view.wait.spin_ns = (uint32_t)wait_rung_ns(dev, "spin_ns", sim->spin_ns, SIM_SPIN_NS);
    chip->view.wait.yield_ns =
        (uint32_t)wait_rung_ns(dev, "yield_ns", sim->yield_ns, sp__wait_default.yield_ns);
    chip->view.wait.awake = &chip->view.awake;
    chip->view.wait.counted = true;
    chip->view.wait.cpus = (uint32_t)cpus;
    sp__wait_adapt_init(&chip->view.event_wait, &chip->view.wait);
    chip->view.batched_wait = chip->view.wait;
    chip->view.batched_wait.park_when_lonely = true;
    chip->host_wait = chip->view.wait;
    chip->host_wait.cpus = cpus > 1 ? (uint32_t)cpus - 1 : 1;
    chip->host_wait.yield_ns = 20000;
    chip->host_wait.counted = false;
    /* Every thread starts awake and counts itself out when it parks. */
    atomic_store_explicit(&chip->view.awake, chip->view.core_count + chip->aicpu_count,
                          memory_order_relaxed);
    chip->view.queue_depth = core_queue_depth(dev);
    chip->view.low_water = chip->view.queue_depth / 2;

    int rc = SP_OK;
    for (uint32_t i = 0; i < chip->view.core_count && rc == SP_OK; i++) {
        sim_core *core = &chip->view.cores[i];
        core->chip = &chip->view;
        core_identity(core, i, g);
        /* Idle from the start: FIN for sequence 0, the doorbell's initial value. */
        atomic_store_explicit(&core->status, SIM_STATUS_FIN | 0, memory_order_relaxed);
        /* No ticket has this value: no interrupt is pending. */
        atomic_store_explicit(&core->interrupt, ~0u, memory_order_relaxed);
        atomic_store_explicit(&core->cpu, SIM_SPREAD_IDLE, memory_order_relaxed);
        rc = sim_core_start(core, 0, false);
        core->started = rc == SP_OK;
    }
    for (uint32_t i = 0; i < chip->aicpu_count && rc == SP_OK; i++) {
        sim_aicpu *t = &chip->aicpu[i];
        t->chip = chip;
        t->index = i;
        rc = sim_aicpu_start(t, false);
        t->started = rc == SP_OK;
    }
    if (rc) {
        stop_threads(chip);
        chip_free(chip);
        sp__fault_uninstall();
        return rc;
    }
    *out = chip;
    return SP_OK;
}

/* Chips torn down while abandoned threads may still look at them: kept,
 * and reachable from here, for the process's life (what a leak checker
 * should see: memory deliberately kept, not lost). */
static _Atomic(struct sim_chip *) kept_chips;

static void keep_chip(struct sim_chip *chip)
{
    struct sim_chip *head = atomic_load_explicit(&kept_chips, memory_order_relaxed);
    do
        chip->next_kept = head;
    while (!atomic_compare_exchange_weak_explicit(&kept_chips, &head, chip, memory_order_release,
                                                  memory_order_relaxed));
}

void sim_chip_destroy(struct sim_chip *chip)
{
    if (!chip)
        return;
    if (atomic_load_explicit(&chip->busy, memory_order_acquire)) {
        SP_WARN("device %d: closed while a launch runs; waiting for it to finish", chip->dev->id);
        sp_device_wait(chip->dev, 0);
    }
    stop_threads(chip);
    if (atomic_load_explicit(&chip->abandoned, memory_order_acquire)) {
        /* An abandoned core thread may still come back from its kernel and
         * look at its core (to find it lost the claim) under the crash
         * guard: both stay for the process's life (a few KiB). */
        SP_WARN("device %d: closed with %u abandoned chip thread(s); their state is kept",
                chip->dev->id, atomic_load_explicit(&chip->abandoned, memory_order_relaxed));
        keep_chip(chip);
        return;
    }
    chip_free(chip);
    sp__fault_uninstall();
}
