/* The sim chip's internals, shared by its three files:
 *   chip.c    create and destroy: the core and AICPU threads
 *   cores.c   the core loop and the device-side chip.h calls (the handshake)
 *   launch.c  the AICPU thread pool and sp_device_launch / poll / wait
 *
 * Handshake registers, one set per core, each on its own cache line:
 *   dispatch line  doorbell (a dispatch sequence number) + the payload;
 *                  written only by the scheduler that owns the core
 *   status line    ACK|seq then FIN|seq; written only by the core
 * Sequence numbers are 30 bits; the top bits mark ACK/FIN in the status word
 * and STOP in the doorbell. Only equality is ever tested, so wrap-around is
 * harmless. */
#ifndef SP_PLATFORM_SIM_CHIP_H
#define SP_PLATFORM_SIM_CHIP_H

#include <pthread.h>
#include <stdalign.h>

#include "common/wait.h"
#include "platform/chip.h"
#include "platform/sim/sim_device.h"

#define SIM_SEQ_MASK 0x3fffffffu
#define SIM_STATUS_ACK 0x40000000u
#define SIM_STATUS_FIN 0x80000000u
#define SIM_DOORBELL_STOP 0x80000000u /* never a sequence number */

typedef struct sim_core {
    /* Dispatch line: doorbell first so one line carries the whole dispatch. */
    alignas(SP_CACHE_LINE) sp_waitword doorbell;
    sp_chip_payload payload; /* plain fields: ordered by doorbell / status */

    /* Status line: the core's answer. */
    alignas(SP_CACHE_LINE) _Atomic uint32_t status;
    uint64_t start_ns, end_ns; /* sp_ticks() of a timed payload; published by FIN */
    int fault;                 /* signal that ended the last kernel, 0 if none; by FIN */

    /* Constant after create. */
    alignas(SP_CACHE_LINE) struct sp_chip *chip;
    uint32_t id;
    uint32_t type; /* sp_core_type */
    uint32_t cluster;
    pthread_t thread;
    bool started;
} sim_core;

/* The device-side view: what launched code gets as its sp_chip. */
struct sp_chip {
    sim_core *cores; /* core_count entries, cache-line aligned */
    uint32_t core_count;
    uint32_t clusters;
    /* How chip threads wait: spin long when each has a CPU, hardly at all
     * when they share fewer CPUs than there are threads (the spinner would
     * only keep the thread it waits for off the CPU). */
    sp_wait_policy wait;
    /* Bumped by every FIN (and by notify): what idle schedulers park on. */
    alignas(SP_CACHE_LINE) sp_waitword event;
};

typedef struct sim_aicpu {
    alignas(SP_CACHE_LINE) sp_waitword go; /* launch sequence, or SIM_DOORBELL_STOP */
    struct sim_chip *chip;
    uint32_t index;
    pthread_t thread;
    bool started;
} sim_aicpu;

struct sim_chip {
    struct sp_chip view; /* first: the device side sees only this */
    sp_device *dev;
    sim_aicpu *aicpu; /* sched_threads + orch_threads, kept parked between launches */
    uint32_t aicpu_count;

    /* The current launch: written by the launcher while no launch runs,
     * read by the pool threads after they see their go word change. */
    sp_device_main fn;
    void *dev_ctx;
    uint32_t threads;
    uint32_t seq; /* launcher-only: sequence of the last launch started */

    alignas(SP_CACHE_LINE) _Atomic uint32_t busy; /* 1 from launch until it finished */
    _Atomic uint32_t launched;                    /* seq of the last launch started */
    _Atomic uint32_t remaining;                   /* threads still running fn */
    _Atomic int result;                           /* first non-zero return of fn */
    /* Seq of the last launch finished: what the host waits on. */
    alignas(SP_CACHE_LINE) sp_waitword done;
};

/* cores.c */
void *sim_core_main(void *arg);
/* Wait until every core has finished its last dispatch. */
void sim_chip_wait_cores_idle(struct sp_chip *chip);

/* launch.c */
void *sim_aicpu_main(void *arg);

#endif
