/* The sim chip's internals, shared by its three files:
 *   chip.c    create and destroy: the core and AICPU threads
 *   cores.c   the core loop and the device-side chip.h calls (the handshake)
 *   launch.c  the AICPU thread pool and sp_device_launch / poll / wait
 *
 * Handshake registers, one set per core, each on its own cache line:
 *   dispatch line  doorbell (the ticket of the last payload rung) + a
 *                  ring of payloads, ticket n in slot n % SIM_QUEUE_MAX;
 *                  written only by the scheduler that owns the core
 *   status line    ACK|n while ticket n runs, FIN|n once tickets up to n
 *                  have finished, + each slot's fault; written only by the
 *                  core (its timestamps follow on the next lines)
 *   posted line    the ticket of the last payload written (sp_chip_post),
 *                  rung or not: the scheduler's own, never read by the core
 * A scheduler that posts several payloads rings each core once
 * (sp_chip_ring): one fenced doorbell store per core and pass, not one per
 * payload.
 * A core works through its ring in ticket order without waiting for the
 * scheduler between payloads: a scheduler that keeps a core's queue topped
 * up hides its own latency (and its time off the CPU) behind the kernels.
 * Tickets are 30 bits (SP_CHIP_TICKET_MASK); the top bits mark ACK/FIN in
 * the status word and STOP in the doorbell. Only differences are used, so
 * wrap-around is harmless.
 *
 * A core whose kernel does not answer the interrupt (it blocks signals, or
 * sits in a system call) is abandoned: the scheduler claims its ticket,
 * and a fresh thread takes over the core; the old thread, if its kernel
 * ever returns, finds its claim lost and exits without touching anything.
 * A kernel that calls pthread_exit is noticed by a cleanup handler, which
 * finishes its ticket and starts the successor before the thread ends. */
#ifndef SP_PLATFORM_SIM_CHIP_H
#define SP_PLATFORM_SIM_CHIP_H

#include <pthread.h>
#include <stdalign.h>

#include "common/fault.h"
#include "common/wait.h"
#include "platform/chip.h"
#include "platform/sim/sim_device.h"

#define SIM_SEQ_MASK SP_CHIP_TICKET_MASK
#define SIM_STATUS_ACK 0x40000000u
#define SIM_STATUS_FIN 0x80000000u
/* ACK|FIN: ticket n is being finished by whoever claimed it (the core
 * thread whose kernel returned, or a scheduler abandoning it): only the
 * claimer, by a CAS from ACK|n, writes its result and FIN|n. */
#define SIM_STATUS_CLAIM (SIM_STATUS_ACK | SIM_STATUS_FIN)
#define SIM_DOORBELL_STOP 0x80000000u /* never a sequence number */

/* Payload slots per core (a power of two); the chip's queue depth, at
 * most this, is how many of them a scheduler may fill. */
#define SIM_QUEUE_MAX 64

/* When the core ran a timed ticket; plain fields published by FIN. */
typedef struct sim_result {
    uint64_t start_ns, end_ns; /* sp__ticks() of a timed payload */
} sim_result;

typedef struct sim_core {
    /* Dispatch line: doorbell first, then the ring (plain fields: ordered by
     * the doorbell's release and by the FIN of the slot's previous ticket). */
    alignas(SP_CACHE_LINE) sp__waitword doorbell;
    sp_chip_payload payload[SIM_QUEUE_MAX];

    /* Status line: the core's answer. */
    alignas(SP_CACHE_LINE) _Atomic uint32_t status;
    /* The ticket a scheduler asked to abandon (sp_chip_core_interrupt): the
     * interrupt signal ends the running kernel only if it is that one. */
    _Atomic uint32_t interrupt;
    /* Per slot, the signal that ended its last ticket's kernel, 0 if none
     * (plain, published by FIN): right after the status word, so a reap
     * of a few tickets reads both with one transfer (of a whole queue of
     * 64, five lines in a row). */
    int fault[SIM_QUEUE_MAX];
    sim_result result[SIM_QUEUE_MAX];

    /* Posted line: the scheduler's, never touched by the core. */
    alignas(SP_CACHE_LINE) uint32_t posted;

    /* Placement line: the CPU the core's thread found itself on at its last
     * look, SIM_SPREAD_IDLE if it was not busy then (spread.h); written by
     * the core every SIM_SPREAD_EVERY payloads, read by the chip's other
     * cores then. */
    alignas(SP_CACHE_LINE) _Atomic int32_t cpu;
    _Atomic uint32_t parked; /* raised while its doorbell wait sleeps */

    /* Constant after create. */
    alignas(SP_CACHE_LINE) struct sp_chip *chip;
    uint32_t id;
    uint32_t type; /* sp_core_type */
    uint32_t cluster;
    /* The thread serving the core now: replaced when one is abandoned or
     * exits (by a scheduler or by the dying thread), read by the interrupt
     * and by teardown. */
    _Atomic pthread_t thread;
    bool started;
} sim_core;

/* One core thread's own state, owned (and freed) by that thread: a thread
 * that was abandoned may outlive its core's next thread. */
typedef struct sim_core_thread {
    sim_core *core;
    uint32_t done;                /* the ticket finished when this thread took over */
    bool announce;                /* a replacement: bump the chip event once FIN|done is out */
    sp__fault_thread fault;       /* its guard registration and alternate stack */
    sp__wait_adapt doorbell_wait; /* what its doorbell waits learned (issue 18) */
    /* Spreading (spread.h): whether it may move (off after a failed
     * move), payloads since its last look, the times it waited for work
     * meanwhile, when it last looked and last moved. */
    bool spread;
    bool busy; /* at its last look */
    uint32_t since_look;
    uint32_t dry;
    uint64_t look_ns;
    uint64_t moved_ns;
} sim_core_thread;

/* The device-side view: what launched code gets as its sp_chip. */
struct sp_chip {
    sim_core *cores; /* core_count entries, cache-line aligned */
    uint32_t core_count;
    uint32_t clusters;
    sp_geometry geometry; /* the device's, copied: constant after create */
    /* How chip threads wait: spin while the threads not parked fit on the
     * CPUs, yield at once when they do not (a spinner would only keep the
     * thread it waits for off the CPU). */
    sp__wait_policy wait; /* .awake points at `awake` below */
    /* The same for a scheduler whose cores all have work queued
     * (sp_chip_event_wait_batched): a finish wakes it only when a queue
     * runs low, so it parks once its yields find nobody to hand the CPU
     * to (park_when_lonely), which frees that CPU for the cores. */
    sp__wait_policy batched_wait;
    uint32_t queue_depth; /* payloads a core holds, 1..SIM_QUEUE_MAX */
    uint32_t low_water;   /* a FIN leaving this many or fewer queued always wakes */
    /* Bumped by every FIN (and by notify): what idle schedulers park on. A
     * FIN wakes parked waiters only when its core's queue ran low or when
     * a waiter asked for every finish (`hungry` > 0): a scheduler whose
     * cores are all busy sleeps through the FINs that leave work queued. */
    alignas(SP_CACHE_LINE) sp__waitword event;
    _Atomic uint32_t hungry;
    /* Chip threads not parked (sp__wait_policy.awake): each wait spins only
     * while these fit on the chip's CPUs. */
    alignas(SP_CACHE_LINE) _Atomic uint32_t awake;
    /* What the schedulers' waits on `event` learned (sp__wait_adapt): one
     * history for the chip's scheduler threads, which wait on the same
     * cores; written at the end of a wait, so on its own line. */
    alignas(SP_CACHE_LINE) sp__wait_adapt event_wait;
    /* The CPUs the chip's threads may use (sim.cpus, else those of the
     * thread that opened the device) and their count: constant after
     * create, where a busy core may move to (spread.h). */
    cpu_set_t cpus;
    int cpu_count;
};

/* sim_aicpu.claim: the launch seq the thread runs; with this bit, the
 * thread has claimed its own finish (sp_chip_thread_claim). 0: given up. */
#define SIM_AICPU_CLAIMED 0x80000000u

typedef struct sim_aicpu {
    alignas(SP_CACHE_LINE) sp__waitword go; /* launch sequence, or SIM_DOORBELL_STOP */
    /* Who finishes the current launch's part on this thread: the thread
     * when its function returns, or sp_chip_abandon_thread. */
    _Atomic uint32_t claim;
    struct sim_chip *chip;
    uint32_t index;
    uint32_t start_seq; /* the launch a replacement thread starts after */
    /* The thread serving this index now; replaced when it is abandoned
     * (during a launch; teardown reads it after the launch is done). */
    _Atomic pthread_t thread;
    bool started;
} sim_aicpu;

struct sim_chip {
    struct sp_chip view; /* first: the device side sees only this */
    sp_device *dev;
    /* How the host waits for a launch: it competes with the chip's threads
     * for the CPUs, so it spins only while they leave it one, and parks
     * soon after (the launch's end wakes it). */
    sp__wait_policy host_wait;
    sim_aicpu *aicpu; /* geometry.aicpu_threads, kept parked between launches */
    uint32_t aicpu_count;

    /* The current launch: written by the launcher while no launch runs,
     * read by the pool threads after they see their go word change. */
    sp_launch_fn fn;
    void *dev_ctx;
    sp_launch_record *rec; /* where its outcome goes too; NULL: only `result` */
    uint32_t threads;
    uint32_t seq; /* launcher-only: sequence of the last launch started */

    alignas(SP_CACHE_LINE) _Atomic uint32_t busy; /* 1 from launch until it finished */
    _Atomic uint32_t launched;                    /* seq of the last launch started */
    _Atomic uint32_t remaining;                   /* threads still running fn */
    _Atomic int result;                           /* first non-zero return of fn */
    /* Seq of the last launch finished: what the host waits on. */
    alignas(SP_CACHE_LINE) sp__waitword done;

    /* Degraded: core threads abandoned to kernels that never answered the
     * interrupt (each may still hold a CPU). Teardown keeps the core table
     * and the crash guard alive for them. `broken`: a core could not get a
     * new thread; launches are refused. */
    _Atomic uint32_t abandoned;
    _Atomic uint32_t broken;
    uint32_t abandoned_warned;  /* launcher-only: count last reported */
    struct sim_chip *next_kept; /* the list of chips kept at teardown (chip.c) */
};

/* cores.c */
void *sim_core_main(void *arg);

/* chip.c: start a thread for `core` that carries on after ticket `done`
 * (a replacement waits until its predecessor's FIN|done is published).
 * Returns 0 or SP_ESYS / SP_ENOMEM. */
int sim_core_start(sim_core *core, uint32_t done, bool replacement);
/* Wait until every core has finished its last dispatch. */
void sim_chip_wait_cores_idle(struct sp_chip *chip);

/* launch.c */
void *sim_aicpu_main(void *arg);
/* chip.c: start the thread of AICPU index `t` (start_seq set). */
int sim_aicpu_start(sim_aicpu *t, bool replacement);

#endif
