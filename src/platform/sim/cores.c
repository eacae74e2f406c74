/* The per-core handshake: the loop each simulated core runs, and the
 * device-side chip.h calls a scheduler uses to drive it. Busy path per task:
 * the scheduler writes a payload slot, then the doorbell (release); the core
 * reads it (acquire), stores ACK|n, runs the kernel, stores its result and
 * FIN|n (release), bumps the chip event and goes straight on to the next
 * queued ticket; the scheduler sees FIN|n with an acquire load. No lock,
 * allocation or syscall unless a waiter is parked. */
#include <assert.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "common/fault.h"
#include "common/log.h"
#include "common/ticks.h"
#include "platform/sim/sim_chip.h"
#include "platform/sim/spread.h"
#include "simpler/status.h"

/* Give ticket n's finish to whoever claims it first: the thread whose
 * kernel returned, or one abandoning the ticket. */
static bool claim_ticket(sim_core *core, uint32_t n)
{
    uint32_t want = SIM_STATUS_ACK | n;
    /* acq_rel: the loser learns it lost before it writes anything; the
     * winner's result stores are published by its FIN release. */
    return atomic_compare_exchange_strong_explicit(&core->status, &want, SIM_STATUS_CLAIM | n,
                                                   memory_order_acq_rel, memory_order_relaxed);
}

/* Finish a claimed ticket that no kernel return ended: record `why`, start
 * the core's next thread (before FIN, so a teardown that sees the core
 * idle joins the new thread, not a half-started one), publish FIN. The FIN
 * store is the caller's last touch of the chip (a thread ending itself is
 * not joined: the chip may be gone right after); the successor announces
 * the finish once it sees it. */
static void finish_lost_ticket(sim_core *core, uint32_t n, int why)
{
    sim_result *res = &core->result[n % SIM_QUEUE_MAX];
    core->fault[n % SIM_QUEUE_MAX] = why; /* plain: the FIN release publishes it */
    res->start_ns = res->end_ns = 0;
    if (sim_core_start(core, n, true) != SP_OK) {
        struct sim_chip *chip = (struct sim_chip *)core->chip;
        atomic_store_explicit(&chip->broken, 1, memory_order_release);
        /* Nobody will run what is queued behind: finish it as lost too. */
        uint32_t rung = atomic_load_explicit(&core->doorbell.value, memory_order_acquire);
        while (!(rung & SIM_DOORBELL_STOP) && n != rung) {
            n = (n + 1) & SIM_SEQ_MASK;
            core->fault[n % SIM_QUEUE_MAX] = why;
        }
        /* No successor to announce it: before FIN (a waiter that misses it
         * wakes at its next timeout check). */
        sp__waitword_add(&core->chip->event, 1);
    }
    atomic_store_explicit(&core->status, SIM_STATUS_FIN | n, memory_order_release);
}

/* The kernel of (self, ticket) ended its thread: runs as pthread_exit
 * unwinds the core thread's stack. */
typedef struct exit_note {
    sim_core_thread *self;
    uint32_t ticket;
    sp__fault_guard *g;
} exit_note;

static void kernel_exited(void *arg)
{
    exit_note *x = arg;
    sim_core_thread *self = x->self;
    sim_core *core = self->core;
    sp__fault_end(x->g);
    sp__fault_thread_leave(&self->fault);
    /* Relaxed: a count of running threads, a hint for the wait policy. */
    atomic_fetch_sub_explicit(&core->chip->awake, 1, memory_order_relaxed);
    if (claim_ticket(core, x->ticket)) {
        /* Nobody joins this thread: the core gets another. */
        pthread_detach(pthread_self());
        finish_lost_ticket(core, x->ticket, SP_FAULT_EXITED); /* the last touch */
    }
    /* Else a scheduler abandoned it first (and detached it): the chip is
     * kept for such threads. */
    free(self);
}

/* Call the kernel under a crash guard: a kernel that crashes (or is
 * interrupted for running too long) ends its dispatch with a fault, not the
 * process; one that calls pthread_exit is caught by the cleanup handler.
 * The interrupt counts only while it names this ticket. Its own frame
 * keeps the caller's locals out of the longjmp's way (the cleanup buffer
 * is pushed outside the jump's reach). Returns the signal, or 0. */
__attribute__((noinline)) static int run_kernel(sim_core_thread *self, uint32_t ticket,
                                                const sp_chip_payload *p, const sp_kernel_ctx *ctx)
{
    sp__fault_guard g;
    exit_note note = {.self = self, .ticket = ticket, .g = &g};
    pthread_cleanup_push(kernel_exited, &note);
    if (SP_FAULT_TRY_ON(&self->fault, &g, &self->core->interrupt, ticket))
        p->fn(p->args, ctx);
    sp__fault_end(&g);
    pthread_cleanup_pop(0);
    return g.sig;
}

/* Run ticket n, the oldest queued one. False: the ticket was abandoned
 * while its kernel ran, and this thread no longer serves the core. */
static bool run_ticket(sim_core_thread *self, sp_kernel_ctx *ctx, uint32_t n)
{
    sim_core *core = self->core;
    /* The acquire load of the doorbell ordered the scheduler's payload
     * stores before these reads; the scheduler rewrites this slot only
     * after it sees FIN of this ticket, which we store after these reads. */
    const sp_chip_payload p = core->payload[n % SIM_QUEUE_MAX];
    sim_result *res = &core->result[n % SIM_QUEUE_MAX];
    atomic_store_explicit(&core->status, SIM_STATUS_ACK | n, memory_order_release);
    uint64_t t0 = p.flags & SP_PAYLOAD_TIMED ? sp__ticks() : 0;
    int fault = 0;
    /* A chained payload follows the ticket before it only if that one ran
     * clean. Its result was written by this thread, or by the one that
     * abandoned it before starting this thread; the queue wraps onto its
     * slot only after this ticket. */
    if ((p.flags & SP_PAYLOAD_CHAINED) && core->fault[((n - 1) & SIM_SEQ_MASK) % SIM_QUEUE_MAX])
        fault = SP_FAULT_UPSTREAM;
    else if (p.fn) {
        ctx->block_idx = p.block_idx;
        ctx->block_num = p.block_num;
        ctx->sub_block = p.sub_block;
        ctx->task_id = p.task_id;
        fault = run_kernel(self, n, &p, ctx);
    }
    if (!claim_ticket(core, n))
        return false;
    core->fault[n % SIM_QUEUE_MAX] = fault; /* plain: the FIN release publishes it */
    if (p.flags & SP_PAYLOAD_TIMED) {       /* plain stores: the FIN release publishes them */
        res->start_ns = t0;
        res->end_ns = sp__ticks();
    }
    atomic_store_explicit(&core->status, SIM_STATUS_FIN | n, memory_order_release);
    return true;
}

/* Tell waiters a ticket finished with `left` tickets still queued. Every
 * finish moves the event (a scan after a snapshot sees it); a parked waiter
 * is woken when the queue ran low or when one asked for every finish.
 * Dekker pair with sp_chip_event_wait: it raises `hungry`, then parks and
 * re-reads the event, all seq_cst; this adds to the event, then reads
 * `hungry` seq_cst: one of the two sees the other. */
static void announce_finish(struct sp_chip *chip, uint32_t left)
{
    sp__waitword_add_quiet(&chip->event, 1);
    if (left <= chip->low_water || atomic_load_explicit(&chip->hungry, memory_order_seq_cst))
        sp__waitword_wake(&chip->event);
}

/* Where this core runs, published; and if a lower-numbered busy core of
 * the chip shares its CPU while one it may use holds none, a move there
 * (spread.h). Every SIM_SPREAD_EVERY payloads: a load or two and the
 * chip's placement lines, two system calls only on a move. */
static void spread_look(sim_core_thread *self)
{
    sim_core *core = self->core;
    struct sp_chip *chip = core->chip;
    /* A core that ran dry after more than a quarter of its last
     * SIM_SPREAD_EVERY payloads waits for its scheduler more than for a
     * CPU, and one whose payloads took under SIM_SPREAD_MIN_RUN_NS each on
     * average spends its CPU on handshakes, which a CPU of its own does
     * not speed up (it would take the CPU of whoever feeds it): either
     * counts as idle. */
    uint64_t now = sp_now_ns();
    bool busy = self->dry <= SIM_SPREAD_EVERY / 4 && self->look_ns &&
                now - self->look_ns >= (uint64_t)SIM_SPREAD_EVERY * SIM_SPREAD_MIN_RUN_NS;
    self->look_ns = now;
    /* Twice in a row: one interval that spans a wait between runs is not
     * a busy core. */
    bool was = self->busy;
    self->busy = busy;
    busy &= was;
    int cpu = busy ? sched_getcpu() : SIM_SPREAD_IDLE;
    self->dry = 0;
    if (cpu < 0)
        cpu = SIM_SPREAD_IDLE;
    if (atomic_load_explicit(&core->cpu, memory_order_relaxed) != cpu)
        atomic_store_explicit(&core->cpu, cpu, memory_order_relaxed);
    if (cpu < 0 || !self->spread || chip->core_count > SIM_SPREAD_MAX_CORES)
        return;
    int32_t cpus[SIM_SPREAD_MAX_CORES];
    /* Relaxed: hints; a stale one costs a move the next look undoes. */
    for (uint32_t k = 0; k < chip->core_count; k++)
        cpus[k] = atomic_load_explicit(&chip->cores[k].parked, memory_order_relaxed)
                      ? SIM_SPREAD_IDLE
                      : atomic_load_explicit(&chip->cores[k].cpu, memory_order_relaxed);
    cpus[core->id] = cpu;
    int to = sim_spread_target(core->id, cpus, chip->core_count, &chip->cpus, chip->cpu_count);
    if (to < 0)
        return;
    if (self->moved_ns && now - self->moved_ns < SIM_SPREAD_PAUSE_NS)
        return;
    self->moved_ns = now;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(to, &one);
    /* The kernel moves the thread before the first call returns; the second
     * frees it again without moving it. A failure ends spreading for it. */
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        self->spread = false;
        return;
    }
    if (sched_setaffinity(0, sizeof chip->cpus, &chip->cpus) != 0) {
        SP_WARN("sim core %u: cannot restore its CPU mask after moving to CPU %d", core->id, to);
        self->spread = false;
    }
    atomic_store_explicit(&core->cpu, to, memory_order_relaxed);
}

void *sim_core_main(void *arg)
{
    sim_core_thread *self = arg;
    sim_core *core = self->core;
    struct sp_chip *chip = core->chip;
    sp_kernel_ctx ctx = {.core_type = core->type, .core_id = core->id, .cluster_id = core->cluster};
    uint32_t done = self->done; /* last ticket finished */
    /* A replacement is started just before its predecessor's last FIN is
     * published (a few instructions later): wait for it. */
    while (atomic_load_explicit(&core->status, memory_order_acquire) != (SIM_STATUS_FIN | done))
        sched_yield();
    if (self->announce) /* the predecessor's last finish, for the scheduler */
        sp__waitword_add(&chip->event, 1);
    sp__fault_thread_enter(&self->fault); /* the guard's registration, an alternate stack */
    sp__wait_adapt_init(&self->doorbell_wait, &chip->wait);
    self->spread = chip->cpu_count > 1;
    for (;;) {
        self->dry++;
        uint32_t rung = sp__waitword_wait_adaptive(&core->doorbell, done, &chip->wait,
                                                   &self->doorbell_wait, 0, NULL, &core->parked);
        while (!(rung & SIM_DOORBELL_STOP) && rung != done) {
            done = (done + 1) & SIM_SEQ_MASK;
            if (!run_ticket(self, &ctx, done)) {
                /* Abandoned: the core has another thread; touch nothing of it. */
                sp__fault_thread_leave(&self->fault);
                atomic_fetch_sub_explicit(&chip->awake, 1, memory_order_relaxed);
                free(self);
                return NULL;
            }
            rung = atomic_load_explicit(&core->doorbell.value, memory_order_acquire);
            announce_finish(chip, rung & SIM_DOORBELL_STOP ? 0 : (rung - done) & SIM_SEQ_MASK);
            if (++self->since_look == SIM_SPREAD_EVERY) {
                self->since_look = 0;
                spread_look(self);
            }
        }
        if (rung & SIM_DOORBELL_STOP) {
            sp__fault_thread_leave(&self->fault);
            free(self);
            return NULL;
        }
    }
}

const sp_geometry *sp_chip_geometry(const sp_chip *chip)
{
    return &chip->geometry;
}

uint32_t sp_chip_cluster_core(const sp_chip *chip, uint32_t cluster, uint32_t lane)
{
    const sp_geometry *g = &chip->geometry;
    assert(cluster < g->clusters && lane < g->lanes);
    return lane == 0 ? cluster : g->clusters + (g->lanes - 1) * cluster + (lane - 1);
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

uint32_t sp_chip_core_queue_depth(const sp_chip *chip)
{
    return chip->queue_depth;
}

/* The ticket last rung on `core`. Only the owning scheduler writes the
 * doorbell, so for it a relaxed load returns its own last store. */
static inline uint32_t doorbell_seq(sim_core *core)
{
    return atomic_load_explicit(&core->doorbell.value, memory_order_relaxed);
}

/* Tickets up to which the core has finished, from its status word. */
static inline uint32_t finished_of(uint32_t status)
{
    uint32_t n = status & SIM_SEQ_MASK;
    return (status & SIM_STATUS_CLAIM) == SIM_STATUS_FIN ? n : (n - 1) & SIM_SEQ_MASK;
}

uint32_t sp_chip_core_finished(sp_chip *chip, uint32_t core_id)
{
    return finished_of(atomic_load_explicit(&chip->cores[core_id].status, memory_order_acquire));
}

uint32_t sp_chip_core_pending(sp_chip *chip, uint32_t core_id)
{
    /* Posted ones count: they hold their slots. */
    sim_core *core = &chip->cores[core_id];
    return (core->posted - sp_chip_core_finished(chip, core_id)) & SIM_SEQ_MASK;
}

uint32_t sp_chip_post(sp_chip *chip, uint32_t core_id, const sp_chip_payload *payload)
{
    assert(core_id < chip->core_count);
    sim_core *core = &chip->cores[core_id];
    uint32_t n = (core->posted + 1) & SIM_SEQ_MASK;
    assert(((n - sp_chip_core_finished(chip, core_id)) & SIM_SEQ_MASK) <= chip->queue_depth &&
           "post to a full core");
    core->payload[n % SIM_QUEUE_MAX] = *payload;
    core->posted = n;
    return n;
}

void sp_chip_ring(sp_chip *chip, uint32_t core_id)
{
    assert(core_id < chip->core_count);
    sim_core *core = &chip->cores[core_id];
    /* One fenced store covers every payload posted since the last ring. */
    if (core->posted != doorbell_seq(core))
        sp__waitword_store(&core->doorbell, core->posted);
}

uint32_t sp_chip_dispatch(sp_chip *chip, uint32_t core_id, const sp_chip_payload *payload)
{
    uint32_t n = sp_chip_post(chip, core_id, payload);
    sp_chip_ring(chip, core_id);
    return n;
}

bool sp_chip_core_idle(sp_chip *chip, uint32_t core_id)
{
    sim_core *core = &chip->cores[core_id];
    uint32_t status = atomic_load_explicit(&core->status, memory_order_acquire);
    return status == (SIM_STATUS_FIN | doorbell_seq(core));
}

void sp_chip_core_times(sp_chip *chip, uint32_t core_id, uint32_t ticket, uint64_t *start_ns,
                        uint64_t *end_ns)
{
    const sim_result *r = &chip->cores[core_id].result[ticket % SIM_QUEUE_MAX];
    *start_ns = r->start_ns;
    *end_ns = r->end_ns;
}

sp_core_state sp_chip_core_state(sp_chip *chip, uint32_t core_id)
{
    sim_core *core = &chip->cores[core_id];
    uint32_t seq = doorbell_seq(core);
    uint32_t status = atomic_load_explicit(&core->status, memory_order_acquire);
    if (status == (SIM_STATUS_FIN | seq))
        return SP_CORE_IDLE;
    if (status & SIM_STATUS_ACK)
        return SP_CORE_RUNNING;
    return SP_CORE_PENDING;
}

uint32_t sp_chip_event_snapshot(sp_chip *chip)
{
    return sp__waitword_load(&chip->event);
}

int sp_chip_event_wait_batched(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns)
{
    int timed_out = 0;
    sp__waitword_wait_adaptive(&chip->event, snapshot, &chip->batched_wait, &chip->event_wait,
                               deadline_ns, &timed_out, NULL);
    return timed_out ? SP_ETIMEOUT : SP_OK;
}

int sp_chip_event_wait(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns)
{
    /* `hungry` is raised only while parked: a waiter still spinning sees
     * every finish by itself, and the busy path stays free of its writes. */
    int timed_out = 0;
    sp__waitword_wait_adaptive(&chip->event, snapshot, &chip->wait, &chip->event_wait, deadline_ns,
                               &timed_out, &chip->hungry);
    return timed_out ? SP_ETIMEOUT : SP_OK;
}

void sp_chip_event_notify(sp_chip *chip)
{
    sp__waitword_add(&chip->event, 1);
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

int sp_chip_core_fault(sp_chip *chip, uint32_t core, uint32_t ticket)
{
    assert(core < chip->core_count);
    return chip->cores[core].fault[ticket % SIM_QUEUE_MAX];
}

void sp_chip_core_interrupt(sp_chip *chip, uint32_t core, uint32_t ticket)
{
    assert(core < chip->core_count);
    sim_core *c = &chip->cores[core];
    /* Name the ticket first: the core's guard honours the signal only while
     * it runs that ticket, so one that finished meanwhile (and moved on to
     * the next) is left alone. */
    atomic_store_explicit(&c->interrupt, ticket, memory_order_seq_cst);
    if (atomic_load_explicit(&c->status, memory_order_acquire) == (SIM_STATUS_ACK | ticket))
        sp__fault_interrupt(atomic_load_explicit(&c->thread, memory_order_acquire), ticket);
}

/* Keep the object a kernel lives in mapped for the process's life: the
 * abandoned thread may still be executing it when its callable is
 * unregistered. dlopen of an object already loaded, by its own name, with
 * RTLD_NOLOAD | RTLD_NODELETE marks it never to be unloaded. */
static void keep_kernel_mapped(sp_kernel_fn fn)
{
    Dl_info info;
    if (!fn || !dladdr((void *)(uintptr_t)fn, &info) || !info.dli_fname)
        return;
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (!h)
        SP_WARN("cannot pin the code of an abandoned kernel (%s): unregistering its callable "
                "may crash the process",
                info.dli_fname);
}

bool sp_chip_core_abandon(sp_chip *chip, uint32_t core, uint32_t ticket)
{
    assert(core < chip->core_count);
    sim_core *c = &chip->cores[core];
    if (!claim_ticket(c, ticket))
        return false; /* it finished (or never started) meanwhile */
    struct sim_chip *sc = (struct sim_chip *)chip;
    pthread_t old = atomic_load_explicit(&c->thread, memory_order_acquire);
    keep_kernel_mapped(c->payload[ticket % SIM_QUEUE_MAX].fn);
    atomic_fetch_add_explicit(&sc->abandoned, 1, memory_order_relaxed); /* a statistic */
    SP_WARN("device %d: core %u did not answer the interrupt of ticket %u; its thread is "
            "abandoned and replaced (device degraded: %u core thread(s) abandoned)",
            sc->dev->id, core, ticket, atomic_load_explicit(&sc->abandoned, memory_order_relaxed));
    finish_lost_ticket(c, ticket, SP_FAULT_ABANDONED);
    pthread_detach(old);
    return true;
}

uint64_t sp_chip_core_cpu_ns(sp_chip *chip, uint32_t core)
{
    assert(core < chip->core_count);
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(chip->cores[core].thread, &id) != 0 || clock_gettime(id, &ts) != 0)
        return 0;
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return ns ? ns : 1; /* 0 means "cannot tell" */
}
