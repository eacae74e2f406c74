/* Launching device-side code: a pool of AICPU threads (scheduler plus
 * orchestrator threads) created with the chip and parked between launches.
 * A launch hands the first `threads` of them the function through their own
 * go words; the last one to return waits for the cores to go idle, closes
 * the device view of memory and publishes the launch as done, which is what
 * the host polls or waits on. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/fault.h"
#include "common/log.h"
#include "platform/sim/sim_chip.h"
#include "platform/sim/sim_testing.h"
#include "simpler/status.h"

static int launch_noop(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)chip, (void)dev_ctx, (void)index, (void)count;
    return SP_OK;
}

/* A device side that never finishes (SIMPLER_SIM_FAULT_LAUNCH=stuck): it
 * ignores everything, as a scheduler caught in a bug would. Parked, so it
 * costs no CPU. */
static int launch_stuck(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)chip, (void)dev_ctx, (void)index, (void)count;
    sp__waitword never = {0};
    for (;;)
        sp__waitword_wait_ne(&never, 0, NULL, 0, NULL);
    return SP_OK;
}

static void launch_finish(struct sim_chip *chip, uint32_t seq)
{
    /* A scheduler that returned early (an error) may leave kernels running:
     * they still dereference device memory, so the view stays open for them. */
    sim_chip_wait_cores_idle(&chip->view);
    sim_memory_set_device_access(chip->dev->mem, false);
    /* The launcher's own record first: once busy clears, the next launch
     * (maybe another context's) overwrites `result`. Relaxed load: ordered
     * by the acq_rel countdown that made this thread the finisher. */
    if (chip->rec) {
        chip->rec->result = atomic_load_explicit(&chip->result, memory_order_relaxed);
        atomic_store_explicit(&chip->rec->done, 1, memory_order_release);
    }
    /* busy clears before done is published, so a host that saw the launch
     * done can launch again at once. */
    atomic_store_explicit(&chip->busy, 0, memory_order_release);
    sp__waitword_store(&chip->done, seq);
}

void *sim_aicpu_main(void *arg)
{
    sim_aicpu *self = arg;
    struct sim_chip *chip = self->chip;
    uint32_t last = self->start_seq;
    /* The thread's own registration (an alternate stack for the
     * orchestrations run here, tmr): an abandoned thread keeps its own. */
    sp__fault_thread fault;
    sp__fault_thread_enter(&fault);
    for (;;) {
        uint32_t seq = sp__waitword_wait_ne(&self->go, last, &chip->view.wait, 0, NULL);
        if (seq & SIM_DOORBELL_STOP) {
            sp__fault_thread_leave(&fault);
            return NULL;
        }
        last = seq;
        int rc = chip->fn(&chip->view, chip->dev_ctx, self->index, chip->threads);
        uint32_t mine = seq, kept = seq | SIM_AICPU_CLAIMED;
        if (!atomic_compare_exchange_strong_explicit(&self->claim, &mine, 0, memory_order_acq_rel,
                                                     memory_order_acquire) &&
            !atomic_compare_exchange_strong_explicit(&self->claim, &kept, 0, memory_order_acq_rel,
                                                     memory_order_acquire)) {
            /* Abandoned while fn ran: its part of the launch was finished
             * for it, and another thread serves this index now. */
            sp__fault_thread_leave(&fault);
            atomic_fetch_sub_explicit(&chip->view.awake, 1, memory_order_relaxed);
            return NULL;
        }
        if (rc) {
            int none = 0;
            /* Relaxed is enough: the acq_rel countdown below orders this
             * before the finisher's release of `done`, which the host acquires. */
            atomic_compare_exchange_strong_explicit(&chip->result, &none, rc, memory_order_relaxed,
                                                    memory_order_relaxed);
        }
        if (atomic_fetch_sub_explicit(&chip->remaining, 1, memory_order_acq_rel) == 1)
            launch_finish(chip, seq);
    }
}

bool sp_chip_thread_claim(sp_chip *view, uint32_t index)
{
    struct sim_chip *chip = (struct sim_chip *)view;
    if (index >= chip->aicpu_count)
        return false;
    sim_aicpu *t = &chip->aicpu[index];
    if (!pthread_equal(atomic_load_explicit(&t->thread, memory_order_acquire), pthread_self()))
        return false; /* replaced: this thread was abandoned */
    uint32_t v = atomic_load_explicit(&t->claim, memory_order_acquire);
    if (v == 0 || (v & SIM_AICPU_CLAIMED) ||
        !atomic_compare_exchange_strong_explicit(&t->claim, &v, v | SIM_AICPU_CLAIMED,
                                                 memory_order_acq_rel, memory_order_acquire))
        return false;
    /* Replaced between the two looks (and a later launch already set the
     * claim for the new thread): give the claim back. */
    if (!pthread_equal(atomic_load_explicit(&t->thread, memory_order_acquire), pthread_self())) {
        uint32_t mine = v | SIM_AICPU_CLAIMED;
        atomic_compare_exchange_strong_explicit(&t->claim, &mine, v, memory_order_acq_rel,
                                                memory_order_relaxed);
        return false;
    }
    return true;
}

bool sp_chip_abandon_thread(sp_chip *view, uint32_t index)
{
    struct sim_chip *chip = (struct sim_chip *)view;
    if (index >= chip->aicpu_count)
        return false;
    sim_aicpu *t = &chip->aicpu[index];
    uint32_t seq = atomic_load_explicit(&chip->launched, memory_order_acquire);
    uint32_t want = seq;
    if (!atomic_compare_exchange_strong_explicit(&t->claim, &want, 0, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false; /* it returned, or claimed its own finish, meanwhile */
    pthread_t old = atomic_load_explicit(&t->thread, memory_order_acquire);
    atomic_fetch_add_explicit(&chip->abandoned, 1, memory_order_relaxed); /* a statistic */
    SP_WARN("device %d: AICPU thread %u did not answer the interrupt; it is abandoned and "
            "replaced (device degraded: %u thread(s) abandoned)",
            chip->dev->id, index, atomic_load_explicit(&chip->abandoned, memory_order_relaxed));
    t->start_seq = seq; /* the replacement waits for the next launch */
    if (sim_aicpu_start(t, true) != SP_OK)
        atomic_store_explicit(&chip->broken, 1, memory_order_release);
    pthread_detach(old);
    /* Its part of this launch ends here. The caller is a launched thread
     * still running, so this is never the last part. */
    if (atomic_fetch_sub_explicit(&chip->remaining, 1, memory_order_acq_rel) == 1)
        launch_finish(chip, seq);
    return true;
}

int sp_device_launch(sp_device *dev, sp_launch_fn fn, void *dev_ctx, uint32_t threads)
{
    return sp_device_launch_recorded(dev, fn, dev_ctx, threads, NULL);
}

int sp_device_launch_recorded(sp_device *dev, sp_launch_fn fn, void *dev_ctx, uint32_t threads,
                              sp_launch_record *rec)
{
    if (!dev || !dev->chip || !fn)
        return SP_EINVAL;
    struct sim_chip *chip = dev->chip;
    if (threads == 0 || threads > chip->aicpu_count) {
        SP_ERROR("device %d: launch on %u threads; the chip has %u AICPU threads", dev->id, threads,
                 chip->aicpu_count);
        return SP_EINVAL;
    }
    /* Fault injection (sim_testing.h), for the tests of launch acceptance
     * and of a device left unusable. Relaxed: the test sets it before the
     * launch it is about, on the launcher's thread or before a handoff that
     * orders it. */
    int fault = atomic_load_explicit(&dev->launch_fault, memory_order_relaxed);
    if (fault == SP_SIM_LAUNCH_FAULT_BEFORE) {
        SP_ERROR("device %d: injected launch fault before start", dev->id);
        return SP_ELAUNCH;
    }
    bool halfway = fault == SP_SIM_LAUNCH_FAULT_HALFWAY;
    if (atomic_load_explicit(&chip->broken, memory_order_acquire)) {
        SP_ERROR("device %d: a core lost its thread and none could be started; re-create the "
                 "device",
                 dev->id);
        return SP_EUNUSABLE;
    }
    uint32_t idle = 0;
    /* Acquire pairs with launch_finish's release: the previous launch's
     * threads are done with the fields written below. */
    if (!atomic_compare_exchange_strong_explicit(&chip->busy, &idle, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return SP_EBUSY;

    /* Relaxed: a statistic, read by the one launcher. */
    uint32_t abandoned = atomic_load_explicit(&chip->abandoned, memory_order_relaxed);
    if (abandoned != chip->abandoned_warned) {
        SP_WARN("device %d is degraded: %u chip thread(s) were abandoned to kernels or "
                "orchestrations that did not answer the interrupt (each may still use a CPU); "
                "their places run on fresh threads",
                dev->id, abandoned);
        chip->abandoned_warned = abandoned;
    }
    if (fault == SP_SIM_LAUNCH_FAULT_STUCK)
        fn = launch_stuck;
    if (halfway) {
        /* Start half of the threads on nothing, then report the failure.
         * Nobody waits for it: its outcome goes to no record (the run that
         * owned it may be freed before it ends). */
        fn = launch_noop;
        threads = threads > 1 ? threads / 2 : 1;
        rec = NULL;
    }
    chip->fn = fn;
    chip->dev_ctx = dev_ctx;
    chip->threads = threads;
    chip->rec = rec;
    if (rec) /* relaxed: published by the go words' release, like fn */
        atomic_store_explicit(&rec->done, 0, memory_order_relaxed);
    chip->seq = (chip->seq + 1) & SIM_SEQ_MASK;
    if (chip->seq == 0)
        chip->seq = 1; /* 0 means "never launched" */
    /* Relaxed: published to the pool threads by the release of their go
     * words below, and to the host by the release of `launched`. */
    atomic_store_explicit(&chip->result, 0, memory_order_relaxed);
    atomic_store_explicit(&chip->remaining, threads, memory_order_relaxed);
    atomic_store_explicit(&chip->launched, chip->seq, memory_order_release);

    sim_memory_set_device_access(dev->mem, true);
    for (uint32_t i = 0; i < threads; i++) {
        /* Relaxed: published by the release of the go word. */
        atomic_store_explicit(&chip->aicpu[i].claim, chip->seq, memory_order_relaxed);
        sp__waitword_store(&chip->aicpu[i].go, chip->seq);
    }
    if (halfway) {
        SP_ERROR("device %d: injected launch fault after %u thread(s) started", dev->id, threads);
        return SP_ELAUNCH_PARTIAL;
    }
    return SP_OK;
}

int sp_device_poll(sp_device *dev, int *result)
{
    if (!dev || !dev->chip)
        return SP_EINVAL;
    struct sim_chip *chip = dev->chip;
    uint32_t launched = atomic_load_explicit(&chip->launched, memory_order_acquire);
    if (launched == 0)
        return SP_ESTATE;
    if (sp__waitword_load(&chip->done) != launched)
        return SP_EBUSY;
    if (result) /* relaxed: ordered by the acquire load of `done` */
        *result = atomic_load_explicit(&chip->result, memory_order_relaxed);
    return SP_OK;
}

int sp_device_wait(sp_device *dev, uint64_t deadline_ns)
{
    if (!dev || !dev->chip)
        return SP_EINVAL;
    struct sim_chip *chip = dev->chip;
    uint32_t launched = atomic_load_explicit(&chip->launched, memory_order_acquire);
    if (launched == 0)
        return SP_ESTATE;
    uint32_t done = sp__waitword_load(&chip->done);
    while (done != launched) {
        int timed_out = 0;
        done = sp__waitword_wait_ne(&chip->done, done, &chip->host_wait, deadline_ns, &timed_out);
        if (timed_out)
            return SP_ETIMEOUT;
    }
    /* relaxed: ordered by the acquire load of `done` */
    return atomic_load_explicit(&chip->result, memory_order_relaxed);
}

int sp_device_poll_recorded(sp_device *dev, sp_launch_record *rec, int *result)
{
    if (!dev || !dev->chip || !rec)
        return SP_EINVAL;
    if (!atomic_load_explicit(&rec->done, memory_order_acquire))
        return SP_EBUSY;
    if (result)
        *result = rec->result;
    return SP_OK;
}

int sp_device_wait_recorded(sp_device *dev, sp_launch_record *rec, uint64_t deadline_ns)
{
    if (!dev || !dev->chip || !rec)
        return SP_EINVAL;
    struct sim_chip *chip = dev->chip;
    /* The snapshot of `done` comes before the look at the record: the
     * finisher writes the record before it bumps `done`, so a finish after
     * the look moves `done` past the snapshot and wakes the wait. */
    for (;;) {
        uint32_t snap = sp__waitword_load(&chip->done);
        if (atomic_load_explicit(&rec->done, memory_order_acquire))
            return rec->result;
        int timed_out = 0;
        sp__waitword_wait_ne(&chip->done, snap, &chip->host_wait, deadline_ns, &timed_out);
        if (timed_out && !atomic_load_explicit(&rec->done, memory_order_acquire))
            return SP_ETIMEOUT;
    }
}

int sp_device_wait_idle(sp_device *dev, uint64_t deadline_ns)
{
    if (!dev || !dev->chip)
        return SP_EINVAL;
    struct sim_chip *chip = dev->chip;
    /* busy clears before `done` moves (launch_finish): same order as above. */
    for (;;) {
        uint32_t snap = sp__waitword_load(&chip->done);
        if (!atomic_load_explicit(&chip->busy, memory_order_acquire))
            return SP_OK;
        int timed_out = 0;
        sp__waitword_wait_ne(&chip->done, snap, &chip->host_wait, deadline_ns, &timed_out);
        if (timed_out && atomic_load_explicit(&chip->busy, memory_order_acquire))
            return SP_EBUSY;
    }
}

uint32_t sp_device_abandoned_cores(const sp_device *dev)
{
    if (!dev || !dev->chip)
        return 0;
    return atomic_load_explicit(&dev->chip->abandoned, memory_order_relaxed);
}

int sp_sim_set_launch_fault(sp_device *dev, int mode)
{
    if (!dev || mode < SP_SIM_LAUNCH_FAULT_NONE || mode > SP_SIM_LAUNCH_FAULT_STUCK)
        return SP_EINVAL;
    /* Relaxed: see the load in sp_device_launch_recorded. */
    atomic_store_explicit(&dev->launch_fault, mode, memory_order_relaxed);
    return SP_OK;
}
