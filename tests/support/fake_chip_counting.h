/* A fake chip on which a dispatch only counts and a wait returns at once,
 * counting which wait the scheduler chose (every finish, or batched): the
 * chip of the scheduler-pass tests that drive the queue bound and the idle
 * wait. Defines `struct sp_chip` and includes fake_chip_common.h; include
 * it after sched_pass.h and criterion.h. */
#ifndef SP_TESTS_FAKE_CHIP_COUNTING_H
#define SP_TESTS_FAKE_CHIP_COUNTING_H

#include "simpler/status.h"

struct sp_chip {
    sp_geometry geo;
    uint32_t sent[RT_SCHED_MAX_CORES];     /* tickets dispatched */
    uint32_t finished[RT_SCHED_MAX_CORES]; /* tickets finished (the test moves it) */
    uint32_t waits_every, waits_batched;
    uint32_t depth; /* the chip's queue depth; 0: 4 */
};

#include "fake_chip_common.h"

uint32_t sp_chip_core_queue_depth(const sp_chip *chip)
{
    return chip->depth ? chip->depth : 4;
}
uint32_t sp_chip_post(sp_chip *chip, uint32_t core, const sp_chip_payload *p)
{
    (void)p;
    return chip->sent[core] = (chip->sent[core] + 1) & SP_CHIP_TICKET_MASK;
}
void sp_chip_ring(sp_chip *chip, uint32_t core)
{
    (void)chip, (void)core;
}
int sp_chip_event_wait(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns)
{
    (void)snapshot, (void)deadline_ns;
    chip->waits_every++;
    return SP_OK;
}
int sp_chip_event_wait_batched(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns)
{
    (void)snapshot, (void)deadline_ns;
    chip->waits_batched++;
    return SP_OK;
}

#endif
