/* The per-core handshake: the loop each simulated core runs, and the
 * device-side chip.h calls a scheduler uses to drive it. Busy path per task:
 * the scheduler writes the dispatch line (payload, then doorbell with
 * release), the core reads it (acquire), stores ACK|seq, runs the kernel,
 * stores FIN|seq (release) and bumps the chip event; the scheduler sees
 * FIN|seq with an acquire load. No lock, allocation or syscall unless a
 * waiter is parked. */
#include <assert.h>

#include "common/fault.h"
#include "common/ticks.h"
#include "platform/sim/sim_chip.h"
#include "simpler/status.h"

/* Call the kernel under a crash guard: a kernel that crashes (or is
 * interrupted for running too long) ends its dispatch with a fault, not the
 * process. Its own frame keeps the caller's locals out of the longjmp's way.
 * Returns the signal, or 0. */
__attribute__((noinline)) static int run_kernel(const sp_chip_payload *p, const sp_kernel_ctx *ctx)
{
    sp_fault_guard g;
    if (SP_FAULT_TRY(&g)) {
        p->fn(p->args, ctx);
        sp_fault_end(&g);
        return 0;
    }
    return g.sig;
}

void *sim_core_main(void *arg)
{
    sim_core *core = arg;
    struct sp_chip *chip = core->chip;
    sp_kernel_ctx ctx = {.core_type = core->type, .core_id = core->id, .cluster_id = core->cluster};
    uint32_t last = 0;
    sp_fault_install(); /* this thread's alternate signal stack */
    for (;;) {
        uint32_t seq = sp_waitword_wait_ne(&core->doorbell, last, &chip->wait, 0, NULL);
        if (seq & SIM_DOORBELL_STOP) {
            sp_fault_release();
            return NULL;
        }
        last = seq;
        /* The acquire load of the doorbell ordered the scheduler's payload
         * stores before these reads; the scheduler rewrites the payload only
         * after it sees our FIN, which we store after these reads. */
        const sp_chip_payload p = core->payload;
        atomic_store_explicit(&core->status, SIM_STATUS_ACK | seq, memory_order_release);
        uint64_t t0 = p.flags & SP_PAYLOAD_TIMED ? sp_ticks() : 0;
        int fault = 0;
        if (p.fn) {
            ctx.block_idx = p.block_idx;
            ctx.block_num = p.block_num;
            ctx.sub_block = p.sub_block;
            ctx.task_id = p.task_id;
            fault = run_kernel(&p, &ctx);
        }
        core->fault = fault;              /* plain: the FIN release publishes it */
        if (p.flags & SP_PAYLOAD_TIMED) { /* plain stores: the FIN release publishes them */
            core->start_ns = t0;
            core->end_ns = sp_ticks();
        }
        atomic_store_explicit(&core->status, SIM_STATUS_FIN | seq, memory_order_release);
        sp_waitword_add(&chip->event, 1);
    }
}

uint32_t sp_chip_core_count(const sp_chip *chip)
{
    return chip->core_count;
}

uint32_t sp_chip_cluster_count(const sp_chip *chip)
{
    return chip->clusters;
}

sp_core_type sp_chip_core_type(const sp_chip *chip, uint32_t core)
{
    assert(core < chip->core_count);
    return (sp_core_type)chip->cores[core].type;
}

uint32_t sp_chip_core_cluster(const sp_chip *chip, uint32_t core)
{
    assert(core < chip->core_count);
    return chip->cores[core].cluster;
}

/* The sequence last rung on `core`. Only the owning scheduler writes the
 * doorbell, so for it a relaxed load returns its own last store. */
static inline uint32_t doorbell_seq(sim_core *core)
{
    return atomic_load_explicit(&core->doorbell.value, memory_order_relaxed);
}

void sp_chip_dispatch(sp_chip *chip, uint32_t core_id, const sp_chip_payload *payload)
{
    assert(core_id < chip->core_count);
    sim_core *core = &chip->cores[core_id];
    assert(sp_chip_core_idle(chip, core_id) && "dispatch to a busy core");
    core->payload = *payload;
    uint32_t seq = (doorbell_seq(core) + 1) & SIM_SEQ_MASK;
    sp_waitword_store(&core->doorbell, seq);
}

bool sp_chip_core_idle(sp_chip *chip, uint32_t core_id)
{
    sim_core *core = &chip->cores[core_id];
    uint32_t status = atomic_load_explicit(&core->status, memory_order_acquire);
    return status == (SIM_STATUS_FIN | doorbell_seq(core));
}

void sp_chip_core_times(sp_chip *chip, uint32_t core_id, uint64_t *start_ns, uint64_t *end_ns)
{
    const sim_core *core = &chip->cores[core_id];
    *start_ns = core->start_ns;
    *end_ns = core->end_ns;
}

sp_core_state sp_chip_core_state(sp_chip *chip, uint32_t core_id)
{
    sim_core *core = &chip->cores[core_id];
    uint32_t seq = doorbell_seq(core);
    uint32_t status = atomic_load_explicit(&core->status, memory_order_acquire);
    if (status == (SIM_STATUS_FIN | seq))
        return SP_CORE_IDLE;
    if (status == (SIM_STATUS_ACK | seq))
        return SP_CORE_RUNNING;
    return SP_CORE_PENDING;
}

uint32_t sp_chip_event_snapshot(sp_chip *chip)
{
    return sp_waitword_load(&chip->event);
}

int sp_chip_event_wait(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns)
{
    int timed_out = 0;
    sp_waitword_wait_ne(&chip->event, snapshot, &chip->wait, deadline_ns, &timed_out);
    return timed_out ? SP_ETIMEOUT : SP_OK;
}

void sp_chip_event_notify(sp_chip *chip)
{
    sp_waitword_add(&chip->event, 1);
}

void sim_chip_wait_cores_idle(struct sp_chip *chip)
{
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        uint32_t c = 0;
        while (c < chip->core_count && sp_chip_core_idle(chip, c))
            c++;
        if (c == chip->core_count)
            return;
        sp_chip_event_wait(chip, snap, 0);
    }
}

int sp_chip_core_fault(sp_chip *chip, uint32_t core)
{
    assert(core < chip->core_count);
    return chip->cores[core].fault;
}

void sp_chip_core_interrupt(sp_chip *chip, uint32_t core)
{
    assert(core < chip->core_count);
    sim_core *c = &chip->cores[core];
    /* A kernel that returned meanwhile ignores the interrupt (no guard armed). */
    if ((atomic_load_explicit(&c->status, memory_order_acquire) & SIM_STATUS_FIN) == 0)
        pthread_kill(c->thread, SP_FAULT_INTERRUPT);
}
