/* Spreading the sim's busy cores over the CPUs (src/platform/sim/spread.h):
 * the rule on given placements, and a chip whose two busy cores were put on
 * one CPU, the higher-numbered of which moves off it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/chip_probe.h"
#include "chip_test_support.h"
#include "platform/chip.h"
#include "platform/sim/spread.h"

static cpu_set_t cpus_upto(int n)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c = 0; c < n; c++)
        CPU_SET(c, &s);
    return s;
}

Test(sim_spread, the_higher_of_two_cores_on_one_cpu_moves_to_a_free_one)
{
    cpu_set_t two = cpus_upto(2);
    int32_t cpus[3] = {SIM_SPREAD_IDLE, 0, 0};
    cr_expect_eq(sim_spread_target(2, cpus, 3, &two, 2), 1);
    cr_expect_eq(sim_spread_target(1, cpus, 3, &two, 2), -1, "the lower one stays");
}

Test(sim_spread, cores_on_cpus_of_their_own_stay)
{
    cpu_set_t four = cpus_upto(4);
    int32_t cpus[4] = {0, 1, 2, 3};
    for (uint32_t k = 0; k < 4; k++)
        cr_expect_eq(sim_spread_target(k, cpus, 4, &four, 4), -1);
}

Test(sim_spread, an_idle_core_holds_no_cpu)
{
    /* Four cores on two CPUs, two of them idle: they neither hold CPU 1
     * nor count towards "more busy cores than CPUs". */
    cpu_set_t two = cpus_upto(2);
    int32_t cpus[4] = {SIM_SPREAD_IDLE, 0, 0, SIM_SPREAD_IDLE};
    cr_expect_eq(sim_spread_target(2, cpus, 4, &two, 2), 1);
    int32_t mine_idle[3] = {0, 0, SIM_SPREAD_IDLE};
    cr_expect_eq(sim_spread_target(2, mine_idle, 3, &two, 2), -1, "an idle core does not move");
}

Test(sim_spread, more_busy_cores_than_cpus_stay)
{
    cpu_set_t two = cpus_upto(2);
    int32_t cpus[3] = {0, 0, 1};
    cr_expect_eq(sim_spread_target(1, cpus, 3, &two, 2), -1);
}

Test(sim_spread, only_a_cpu_the_thread_may_use_and_no_busy_core_holds)
{
    cpu_set_t some;
    CPU_ZERO(&some);
    CPU_SET(2, &some);
    CPU_SET(5, &some);
    CPU_SET(7, &some);
    int32_t cpus[4] = {2, 2, 5, SIM_SPREAD_IDLE};
    cr_expect_eq(sim_spread_target(1, cpus, 4, &some, 3), 7);
    int32_t full[4] = {2, 2, 5, 7};
    cr_expect_eq(sim_spread_target(1, full, 4, &some, 3), -1,
                 "every allowed CPU holds a busy core");
}

/* ---- the chip ---------------------------------------------------------------- */

#define TASKS 1024u     /* per core */
#define SPIN_NS 100000u /* per task: ~0.1 s per core, ~0.2 s on one CPU */
#define FEED 64u        /* payloads queued per core at a time, at most */

typedef struct spin_ctx {
    uint64_t fn;
    uint64_t args;
    uint32_t core[2];
    uint64_t deadline_ns;
} spin_ctx;

/* TASKS spin payloads on each of two cores, kept as deep as the chip
 * allows (FEED at most), so they run dry only if this thread gets no CPU
 * for milliseconds; core i's task t has id i * TASKS + t. */
static int spin_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)count;
    if (index != 0)
        return 0;
    const spin_ctx *sc = dev_ctx;
    uint32_t feed = sp_chip_core_queue_depth(chip) < FEED ? sp_chip_core_queue_depth(chip) : FEED;
    uint32_t sent[2] = {0, 0};
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        bool done = true;
        for (int i = 0; i < 2; i++) {
            uint32_t c = sc->core[i];
            while (sent[i] < TASKS && sp_chip_core_pending(chip, c) < feed) {
                sp_chip_payload p = {.fn = (sp_kernel_fn)(uintptr_t)sc->fn,
                                     .args = (const uint64_t *)(uintptr_t)sc->args,
                                     .task_id = i * TASKS + sent[i]++,
                                     .block_num = 1};
                sp_chip_dispatch(chip, c, &p);
            }
            done &= sent[i] == TASKS && sp_chip_core_idle(chip, c);
        }
        if (done)
            return 0;
        if (sp_chip_event_wait(chip, snap, sc->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
    }
}

/* Put the threads named `name` on CPU `cpu` alone: the placement the
 * kernel's balancer leaves as it is while they stay busy. */
static int pin_threads(const char *name, int cpu)
{
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    int pinned = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        if (strcmp(comm, name) != 0)
            continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        cr_assert_eq(sched_setaffinity((pid_t)atoi(e->d_name), sizeof one, &one), 0);
        pinned++;
    }
    closedir(d);
    return pinned;
}

/* Core `id`'s kind, by the sim's numbering (lane 0 of every cluster first). */
static bool core_is_aic(const sp_geometry *g, uint32_t id)
{
    uint32_t lane = id < g->clusters ? 0 : 1 + (id - g->clusters) % (g->lanes - 1);
    return g->lane_type[lane] == SP_CORE_AIC;
}

Test(sim_spread, of_two_busy_cores_pinned_to_one_cpu_the_higher_moves_off, .timeout = 120)
{
    cpu_set_t mine;
    cr_assert_eq(sched_getaffinity(0, sizeof mine, &mine), 0);
    if (CPU_COUNT(&mine) < 2) {
        /* One CPU: there is nowhere to spread to (the rule's tests above
         * still run). */
        cr_log_info("one CPU: nothing to spread over");
        return;
    }
    int first = 0;
    while (!CPU_ISSET(first, &mine))
        first++;

    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, NULL, &dev), SP_OK);
    uint32_t cores = sp_device_core_count(dev);
    cr_assert_geq(cores, 2);
    /* The two highest-numbered cores; their threads are named sp0-<kind><id>. */
    spin_ctx sc = {.core = {cores - 2, cores - 1}, .deadline_ns = DEADLINE_MS(60000)};
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "sp0-%s%u",
                 core_is_aic(sp_device_geometry(dev), sc.core[i]) ? "aic" : "aiv", sc.core[i]);
        cr_assert_eq(pin_threads(name, first), 1, "one thread named %s", name);
    }

    sp_kernel_binary *kb = load_test_kernel(dev, "chip_probe.so", "chip_spin_cpu");
    uint64_t records = dev_alloc_zeroed(dev, 2 * TASKS * sizeof(int32_t));
    uint64_t a[2] = {records, SPIN_NS};
    uint64_t args = dev_upload(dev, a, sizeof a);
    sc.fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kb);
    sc.args = args;
    uint64_t ctx = dev_upload(dev, &sc, sizeof sc);
    launch_and_wait(dev, spin_main, ctx, sp_device_geometry(dev)->aicpu_threads, 90000);

    int32_t cpu[2 * TASKS];
    dev_download(dev, cpu, records, sizeof cpu);
    /* The test pinned both to `first`; only the core moving itself (and
     * freeing its mask) lets the higher-numbered one run elsewhere. Where
     * it ends is the kernel's business: on a loaded machine the balancer
     * may bring it back. */
    uint32_t away = 0, moved_at = 0;
    for (uint32_t t = 0; t < TASKS; t++)
        if (cpu[TASKS + t] != first && !away++)
            moved_at = t;
    cr_log_info("core %u ran %u of %u tasks off CPU %d, from task %u on; core %u stayed: %d -> %d",
                sc.core[1], away, TASKS, first, moved_at, sc.core[0], cpu[0], cpu[TASKS - 1]);
    cr_expect_gt(away, 0, "two busy cores pinned to CPU %d: the higher-numbered never moved",
                 first);

    sp_device_free(dev, ctx);
    sp_device_free(dev, args);
    sp_device_free(dev, records);
    sp_kernel_binary_unload(kb);
    sp_device_close(dev);
}
