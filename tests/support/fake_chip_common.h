/* The parts of a fake sp_chip that the scheduler-pass tests share: the
 * a2a3 core numbering, the geometry, finished tickets the test moves, a
 * chip event that moves with them, and a chip on which nothing faults,
 * times out or is timed, with the runtime hooks that go with it (describe,
 * fault, failed). Include it after sched_pass.h and criterion.h, and after
 * defining `struct sp_chip` with a `geo` (sp_geometry) and a
 * `finished[RT_SCHED_MAX_CORES]` member; the including test defines the
 * rest (queue depth, dispatch, the event waits) as its scenario needs. */
#ifndef SP_TESTS_FAKE_CHIP_COMMON_H
#define SP_TESTS_FAKE_CHIP_COMMON_H

#include "platform/chip.h"

/* The numbering of simpler/device_info.h: lane 0 of every cluster first,
 * then the other lanes cluster by cluster. */
uint32_t sp_chip_cluster_core(const sp_chip *chip, uint32_t cluster, uint32_t lane)
{
    const sp_geometry *g = &chip->geo;
    return lane == 0 ? cluster : g->clusters + (g->lanes - 1) * cluster + (lane - 1);
}
const sp_geometry *sp_chip_geometry(const sp_chip *chip)
{
    return &chip->geo;
}
uint32_t sp_chip_core_finished(sp_chip *chip, uint32_t core)
{
    return chip->finished[core];
}
/* The chip event: moves with every finish (the sum of the finished tickets). */
uint32_t sp_chip_event_snapshot(sp_chip *chip)
{
    uint32_t sum = 0;
    for (uint32_t k = 0; k < RT_SCHED_MAX_CORES; k++)
        sum += chip->finished[k];
    return sum;
}
int sp_chip_core_fault(sp_chip *chip, uint32_t core, uint32_t ticket)
{
    (void)chip, (void)core, (void)ticket;
    return 0;
}
void sp_chip_core_times(sp_chip *chip, uint32_t core, uint32_t ticket, uint64_t *s, uint64_t *e)
{
    (void)chip, (void)core, (void)ticket;
    *s = *e = 0;
}
uint64_t sp_chip_core_cpu_ns(sp_chip *chip, uint32_t core)
{
    (void)chip, (void)core;
    return 0;
}
void sp_chip_core_interrupt(sp_chip *chip, uint32_t core, uint32_t ticket)
{
    (void)chip, (void)core, (void)ticket;
}
bool sp_chip_core_abandon(sp_chip *chip, uint32_t core, uint32_t ticket)
{
    (void)chip, (void)core, (void)ticket;
    return false;
}

/* rt_sched_init with the scheduler's clock frozen, so the queue bound
 * (rt_sched_cap) never measures a run and every core keeps the whole
 * depth, however fast this machine runs the test (a sanitizer build is
 * slow enough to look like 40 us kernels). test_sched_queue_cap drives a
 * clock of its own. */
static inline uint64_t fake_clock_frozen(void)
{
    return 1000000;
}
static inline void fake_sched_init(rt_sched *s, sp_chip *chip, uint32_t ti, uint32_t tn)
{
    rt_sched_init(s, chip, ti, tn);
    s->clock_ns = fake_clock_frozen;
}

/* The pass hooks that are the same for every fake runtime on this chip:
 * nothing traced, nothing faults, the run never fails. */
static void hook_describe(void *rt, uint64_t task, int lane, sp_trace_record *r)
{
    (void)rt, (void)task, (void)lane, (void)r;
}
static void hook_fault(void *rt, uint64_t task, int lane, uint32_t core, int sig, uint64_t ran)
{
    (void)rt, (void)task, (void)lane, (void)core, (void)sig, (void)ran;
    cr_assert_fail("no kernel faults on the fake chip");
}
static bool hook_failed(void *rt)
{
    (void)rt;
    return false;
}

#endif
