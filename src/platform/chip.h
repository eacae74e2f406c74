/* The chip as device-side code sees it: the scheduler's interface to the
 * compute cores. A launched sp_launch_fn (simpler/host_api.h) gets an
 * sp_chip and drives cores through these calls only; every backend
 * implements them. Device-side code includes this header, never device.h.
 *
 * Rules of the handshake:
 *   - A core runs one payload at a time, in dispatch order, from a queue of
 *     sp_chip_core_queue_depth payloads: it starts the next queued payload
 *     as soon as one finishes, without a round trip to the scheduler.
 *     Dispatch only to a core with room (sp_chip_core_pending below the
 *     depth); several payloads may be posted and then rung at once
 *     (sp_chip_post, sp_chip_ring); each core is driven by one scheduler thread at a time
 *     (schedulers partition the cores between them).
 *   - Each dispatch gets a ticket: the core's dispatch counter modulo 2^30
 *     (SP_CHIP_TICKET_MASK). sp_chip_core_finished says up to which ticket
 *     a core has finished; results (fault, times) are read per ticket, after
 *     it finished and before the core's queue wraps onto its slot (i.e.
 *     before dispatching `depth` more payloads to that core).
 *   - Everything the payload points to (arguments, tensors) is device
 *     memory. A kernel's stores are visible to the scheduler once
 *     sp_chip_core_idle has returned true for that core.
 *   - The launched function waits for every core it dispatched to before it
 *     returns; the launch also waits for them before it completes.
 *
 * Busy path: a dispatch and a completion check are a few loads and stores on
 * the core's own cache lines, with no lock, allocation or syscall. An idle
 * scheduler waits on the chip event (every finished payload bumps it), which
 * spins, yields and then parks, so an idle chip costs no CPU. */
#ifndef SP_PLATFORM_CHIP_H
#define SP_PLATFORM_CHIP_H

#include <stdbool.h>
#include <stdint.h>

#include "simpler/device_info.h"
#include "simpler/host_api.h" /* sp_chip, sp_launch_fn */
#include "simpler/kernel.h"

/* What a core runs: the kernel, its argument vector and the per-task part
 * of sp_kernel_ctx. The core fills in its own core_type, core_id and
 * cluster_id. fn NULL runs nothing but still acknowledges and finishes. */
typedef struct sp_chip_payload {
    sp_kernel_fn fn;
    const uint64_t *args; /* device memory, read by the kernel */
    uint64_t task_id;
    uint32_t block_idx;
    uint32_t block_num;
    uint32_t sub_block; /* lane within a MIX task (the geometry's lane index) */
    uint32_t flags;     /* SP_PAYLOAD_* */
} sp_chip_payload;

/* The core stamps when it starts and ends this payload (sp_chip_core_times);
 * set only when tracing, since reading the clock costs the core time. */
#define SP_PAYLOAD_TIMED 0x1u
/* The payload depends on the one queued just before it on this core (a
 * consumer queued behind its producer, as a stream orders its work): if
 * that ticket ended with a fault, this one does not run and finishes with
 * SP_FAULT_UPSTREAM, so a consumer never reads a crashed producer's output. */
#define SP_PAYLOAD_CHAINED 0x2u

/* Tickets wrap at 30 bits: the next ticket is (t + 1) & SP_CHIP_TICKET_MASK. */
#define SP_CHIP_TICKET_MASK 0x3fffffffu

/* Where a core stands with its last dispatch. */
typedef enum sp_core_state {
    SP_CORE_IDLE = 0,    /* everything dispatched has finished (or nothing was) */
    SP_CORE_PENDING = 1, /* payloads queued, the core has not started the next yet */
    SP_CORE_RUNNING = 2, /* a kernel is running */
} sp_core_state;

/* Geometry: the chip's shape as data (clusters, lanes and their core kinds,
 * AICPU threads); cores are numbered as simpler/device_info.h says (lane 0
 * of every cluster first, then the other lanes cluster by cluster). */
const sp_geometry *sp_chip_geometry(const sp_chip *chip);
/* The core that is lane `lane` (< geometry.lanes) of cluster `cluster`. */
uint32_t sp_chip_cluster_core(const sp_chip *chip, uint32_t cluster, uint32_t lane);
uint32_t sp_chip_core_count(const sp_chip *chip);
uint32_t sp_chip_cluster_count(const sp_chip *chip);
sp_core_type sp_chip_core_type(const sp_chip *chip, uint32_t core);
uint32_t sp_chip_core_cluster(const sp_chip *chip, uint32_t core);

/* How many payloads a core holds at once (the running one included), >= 1. */
uint32_t sp_chip_core_queue_depth(const sp_chip *chip);
/* Queue `payload` on `core` (copied; the caller may reuse it) and return its
 * ticket. The core must have room and be owned by the calling scheduler.
 * The same as sp_chip_post, then sp_chip_ring. */
uint32_t sp_chip_dispatch(sp_chip *chip, uint32_t core, const sp_chip_payload *payload);
/* Write `payload` into `core`'s queue behind what is there, without telling
 * the core (it may or may not start it before the next sp_chip_ring):
 * returns its ticket. Room and ownership as for sp_chip_dispatch; the
 * payloads posted and not rung count against the room. A hardware queue's
 * descriptor write before its doorbell. */
uint32_t sp_chip_post(sp_chip *chip, uint32_t core, const sp_chip_payload *payload);
/* Start everything posted to `core` (the doorbell: one fenced store, and a
 * wake only if the core sleeps); nothing to do if nothing was posted since
 * the last ring. Until it is rung, a posted payload may wait forever. */
void sp_chip_ring(sp_chip *chip, uint32_t core);
/* Non-blocking: the ticket up to which `core` has finished (acquire: those
 * kernels' stores are visible to the caller); the initial ticket is 0. */
uint32_t sp_chip_core_finished(sp_chip *chip, uint32_t core);
/* Non-blocking: payloads dispatched (or posted) to `core` and not finished
 * yet. Only the owning scheduler may ask. */
uint32_t sp_chip_core_pending(sp_chip *chip, uint32_t core);
/* Non-blocking: true when `core` has finished everything rung on it. */
bool sp_chip_core_idle(sp_chip *chip, uint32_t core);
/* After `ticket` finished, for a SP_PAYLOAD_TIMED dispatch: when the core
 * started and ended its kernel (sp__ticks() values). */
void sp_chip_core_times(sp_chip *chip, uint32_t core, uint32_t ticket, uint64_t *start_ns,
                        uint64_t *end_ns);
/* After `ticket` finished: the signal that ended its kernel (a crash, or
 * the interrupt below), 0 if it returned normally. */
int sp_chip_core_fault(sp_chip *chip, uint32_t core, uint32_t ticket);
/* Ask `core` to abandon `ticket` if that kernel is still running: it then
 * finishes with a fault (sp__fault_name: "timeout"). Harmless if it returned;
 * never touches the payloads queued behind it. */
void sp_chip_core_interrupt(sp_chip *chip, uint32_t core, uint32_t ticket);
/* CPU time the core's thread has used so far (ns), for a timeout that
 * must not count time the core spent waiting for a host CPU; 0 if the
 * backend cannot tell. A system call: only for kernels already past the
 * timeout. */
uint64_t sp_chip_core_cpu_ns(sp_chip *chip, uint32_t core);
/* Give up on `ticket` if its kernel is still running (it did not answer
 * the interrupt): the ticket finishes at once with SP_FAULT_ABANDONED, the
 * core gets a fresh thread for what is queued behind it, and the device
 * counts itself degraded. False if the ticket finished meanwhile. */
bool sp_chip_core_abandon(sp_chip *chip, uint32_t core, uint32_t ticket);
/* Launched threads (the AICPU threads running one sp_launch_fn each).
 * A launched function whose thread may have been given up (an
 * orchestration that ran past its watchdog) claims its own finish before
 * it touches the run again: false means it was abandoned and must return
 * at once without touching anything. */
bool sp_chip_thread_claim(sp_chip *chip, uint32_t thread_index);
/* Give up on launched thread `thread_index` (it did not answer the
 * interrupt): its part of the launch counts as finished, with no result of
 * its own, the index gets a fresh thread for later launches, and the
 * device counts itself degraded. False if it returned or claimed its own
 * finish meanwhile. Call from another launched thread. */
bool sp_chip_abandon_thread(sp_chip *chip, uint32_t thread_index);
/* Non-blocking, for diagnostics: the core's handshake state. */
sp_core_state sp_chip_core_state(sp_chip *chip, uint32_t core);

/* The chip event: a counter bumped each time a core finishes a payload and
 * by sp_chip_event_notify. An idle scheduler takes a snapshot BEFORE it scans
 * its cores (and its ready work), and if the scan found nothing to do, waits
 * for the event to move past the snapshot: no completion can be missed. */
uint32_t sp_chip_event_snapshot(sp_chip *chip);
/* Wait (spin, yield, park) until the event differs from `snapshot`: any
 * finished payload or notify ends the wait. deadline_ns is an sp_now_ns()
 * time, 0 for none. 0, or SP_ETIMEOUT. */
int sp_chip_event_wait(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns);
/* The same wait for a scheduler: a parked caller is woken only by a notify,
 * or by a finish that leaves its core's queue low (at most half full) — not
 * by every finish. */
int sp_chip_event_wait_batched(sp_chip *chip, uint32_t snapshot, uint64_t deadline_ns);
/* Bump the event without a completion: wakes schedulers waiting in
 * sp_chip_event_wait (e.g. new ready work, or a stop request). */
void sp_chip_event_notify(sp_chip *chip);

#endif
