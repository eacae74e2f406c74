/* tensormap_and_ringbuffer's device-memory layout: one control block, the
 * task ring (window slots, addressed by id & mask), the argument ring (each
 * task's descriptors, kernel arguments, holds and fan-out edge nodes, carved
 * by its real counts), the ready queues, the TensorMap's block, and the
 * callable's validation tables, all in the run bank's shared-memory arena;
 * outputs come from the bank's heap, used as a ring. The orchestrator
 * thread and the scheduler threads share it. */
#ifndef SP_RUNTIME_TMR_LAYOUT_H
#define SP_RUNTIME_TMR_LAYOUT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/wait.h"
#include "runtime/device/fault_claim.h"
#include "runtime/device/redzone_check.h"
#include "runtime/device/sched_pass.h"
#include "runtime/device/subgraph.h"
#include "runtime/device/task_check.h"
#include "runtime/device/tensormap.h"
#include "runtime/device/trace_write.h"
#include "runtime/tensormap_and_ringbuffer/device/heap_ring.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_record.h"
#include "simpler/orchestration.h"

#define TMR_MAGIC 0x52465542474e4952ull /* "RINGBUFR" */
#define TMR_MAX_HOLDS 128               /* producers one task may depend on */
#define TMR_MAX_SCOPES 64
#define TMR_DEFAULT_WINDOW 1024u
#define TMR_DEFAULT_HEAP (64ull << 20)
#define TMR_DEFAULT_BACKSTOP_NS (30ull * 1000 * 1000 * 1000)
/* The argument ring's bytes per window slot (plus two largest extents): a
 * task with 8 tensors and 16 producers fits its share, so a window of such
 * tasks is bounded by its slots, not by this ring. Only the bytes tasks
 * really use are ever touched (issue 18: a 6.6 KB slot was a page per slot
 * per run). */
#define TMR_ARG_BYTES_PER_SLOT 2048u

enum { TMR_SLOT_FREE = 0, TMR_SLOT_PENDING = 1, TMR_SLOT_COMPLETE = 2 };

/* fanout_head: ((edge node + 1) << 1) | closed. Edge node n is the hold
 * at byte n * 8 of the argument ring (tmr_hold_at). */
#define TMR_FANOUT_CLOSED 1ull

/* In fanin_left: the task was queued on a core behind its last producer
 * (sched_pass.h, follow) and that producer's completion must not queue it
 * again; the count below it still runs down to 0. */
#define TMR_FANIN_CHAINED 0x80000000u
/* Fan-out nodes a follow looks at (the newest, linked last): a bound on
 * what an open list costs each pass while its task sits at a core's tail. */
#define TMR_FOLLOW_SCAN 4
/* One producer a task holds (kept from retiring until the task completes)
 * and, for a dependency, its edge node: the link in the producer's fan-out
 * list, and who to count down. */
typedef struct tmr_hold {
    int64_t producer;
    uint64_t next;    /* the fan-out head this node replaced (same encoding) */
    int64_t consumer; /* the holding task */
} tmr_hold;

typedef struct tmr_task {
    _Alignas(64) _Atomic uint64_t fanout_head;
    _Atomic uint32_t fanin_left;  /* producers not complete, +1 while submitting; | CHAINED */
    _Atomic uint32_t blocks_left; /* blocks not yet finished */
    _Atomic uint32_t next_block;  /* next block to hand out */
    _Atomic uint32_t refs;        /* scope + holders + its own completion */
    _Atomic uint32_t state;       /* TMR_SLOT_* */
    uint32_t block_num;
    int64_t id;
    int32_t kernel[3];
    uint8_t shape;
    uint8_t scope_depth; /* 0: not held by a scope */
    uint16_t hold_count; /* producers this task holds (released on completion) */
    uint8_t tensor_count;
    uint8_t scalar_count;
    uint64_t heap_end;   /* heap ring offset after this task's outputs */
    uint64_t heap_need;  /* bytes its outputs took from the heap ring */
    uint64_t submit_ns;  /* sp__ticks() at publication (traces) */
    uint32_t check_mask; /* checking mode: arguments whose red zones completion verifies */
    /* The predicate (sp_pred_op, SP_PRED_NONE: none) and its element's
     * device address, resolved at submit; the first pop decides. */
    uint8_t pred_op;
    uint8_t pred_dtype;
    uint64_t pred_addr;
    int64_t pred_value;
    int64_t pred_owner; /* a runtime-owned predicate tensor's creator, else SP_NO_TASK */
    /* The task's extent in the argument ring (tmr_extent_place), sized by
     * its own counts: tensor_count descriptors, tensor_count + scalar_count
     * kernel arguments, tensor_count directions, and hold_count holds (one
     * per dependency, each with its edge node, plus one that keeps the
     * creators of runtime-owned inputs alive). */
    sp_tensor *tensors;
    uint64_t *args;
    uint8_t *dirs;
    tmr_hold *holds;
} tmr_task;

/* Multi-producer multi-consumer ring of task ids (bounded, sequence-tagged
 * cells). A task sits in at most one queue at a time, so window cells suffice. */
typedef struct tmr_cell {
    _Atomic uint64_t seq;
    uint64_t value;
} tmr_cell;

typedef struct tmr_queue {
    _Alignas(64) _Atomic uint64_t head;
    _Alignas(64) _Atomic uint64_t tail;
    _Alignas(64) tmr_cell *cells;
    uint64_t mask;
} tmr_queue;

typedef struct tmr_scope {
    int64_t first_task; /* first task id submitted inside it */
    uint8_t mode;       /* SP_SCOPE_AUTO / SP_SCOPE_MANUAL */
} tmr_scope;

struct tmr_ctl;

/* The orchestrator's state: private to the orchestrator thread. */
typedef struct tmr_orch {
    sp_orch orch; /* first: the orchestration's sp_orch * is a tmr_orch * */
    struct tmr_ctl *ctl;
    sp_chip *chip;
    rt_tensormap map;
    rt_dep_list deps;
    rt_task_check check;
    rt_lane_memo lane_memo[SP_LANE_MEMO_SLOTS]; /* the check's memos, zeroed at boot */
    rt_view_memo view_memo;
    rt_range ranges[SP_MAX_RUN_TENSORS];
    rt_range home[SP_MAX_TASK_TENSORS]; /* the check's verdict: each argument's buffer */
    rt_task_pred pred;                  /* the check's verdict: the task's predicate */
    tmr_heap_ring heap;                 /* outputs; size is the heap less static allocations */
    tmr_heap_ring argring;              /* task extents (c->arg_base), the same discipline */
    uint64_t arg_at;                    /* the extent carved for the task being submitted */
    uint64_t static_top;                /* sp_alloc_tensor carves downward from the heap's end */
    tmr_scope scopes[TMR_MAX_SCOPES];
    uint32_t scope_depth;
    rt_subgraph subgraph; /* graph tasks recorded in this run (region: the heap's far end) */
    bool subgraph_tried;  /* the region was carved, or could not be */
    char msg[256];
    rt_trace_writer trace; /* the orchestrator's records (level >= 3) */
    tmr_recorder recorder;
    tmr_recorder *rec; /* &recorder while recording, else NULL */
    pthread_t thread;  /* the one thread sp_orch may be called from */
} tmr_orch;

typedef struct tmr_ctl {
    uint64_t magic;
    uint32_t window;
    uint32_t mask;
    uint32_t sched_threads;
    uint32_t kernel_count;
    tmr_task *slots;
    char *arg_base; /* the argument ring */
    uint64_t arg_bytes;
    uint64_t heap_base;
    uint64_t heap_bytes;
    const sp_kernel_fn *ktab;
    sp_orch_entry_fn entry;
    const rt_dev_callable *callable; /* the device callable table, for validating submits */
    tmr_cell *cells;                 /* SP_QUEUES * window cells */
    void *map_mem;                   /* the TensorMap's block */
    uint64_t map_bytes;
    uint32_t map_entries;
    uint64_t backstop_ns;       /* the orchestrator's waits give up after this */
    uint64_t kernel_timeout_ns; /* a kernel running longer is stopped */
    uint64_t orch_timeout_ns;   /* the orchestration's watchdog */
    uint32_t redzones;          /* checking mode: outputs between red zones, verified */
    uint64_t launch_ns;
    uint64_t orch_end_ns;
    uint64_t orch_begin_ns;
    rt_trace_buf *trace; /* NULL: not traced */
    /* Replay across runs: a recorded stream's buffer (tmr_record.h), 0:
     * none. replay 0: record into it while the orchestration runs; 1:
     * replay it instead of calling the orchestration. */
    tmr_rec_header *rec;
    uint32_t replay;
    _Atomic uint64_t first_complete_ns;

    _Alignas(64) _Atomic int64_t submitted; /* tasks ids below this exist */
    _Alignas(64) _Atomic int64_t completed;
    _Atomic uint64_t skipped;             /* of them, predicated off (sp_run_stats.skipped) */
    _Atomic uint64_t chained;             /* of them, queued behind a producer (stats) */
    _Alignas(64) _Atomic int64_t retired; /* watermark: slots below are free */
    _Alignas(64) _Atomic uint32_t booted; /* the orchestrator has laid out the rings */
    _Atomic uint32_t orch_done;
    /* The orchestrator waits for room on its own word, not the chip event,
     * so that it sleeps through a batch of completions instead of waking
     * at every finish: a completer bumps orch_word once `completed`
     * reaches orch_wake_at (0: nobody waits). */
    _Alignas(64) _Atomic int64_t orch_wake_at;
    sp__waitword orch_word;
    _Alignas(64) _Atomic int32_t error;
    rt_fault_report fault;     /* the first kernel fault, if any */
    rt_overrun_report overrun; /* checking mode: the first red zone damaged */
    uint64_t edges;
    char message[256];

    tmr_queue queues[SP_QUEUES];
    sp_args args; /* the run's arguments as device tensors */
    tmr_orch orch;
} tmr_ctl;

/* A task's extent in the argument ring: descriptors, kernel arguments,
 * directions (padded to 8 bytes), then `holds` holds; 64-byte aligned. */
static inline uint64_t tmr_extent_bytes(uint32_t tensors, uint32_t scalars, uint32_t holds)
{
    uint64_t b = (uint64_t)tensors * sizeof(sp_tensor) + 8ull * (tensors + scalars) +
                 ((tensors + 7ull) & ~7ull) + (uint64_t)holds * sizeof(tmr_hold);
    return (b + 63) & ~63ull;
}

/* The most one task may take: what the ring must hold besides its share. */
#define TMR_EXTENT_MAX tmr_extent_bytes(SP_MAX_TASK_TENSORS, SP_MAX_TASK_SCALARS, TMR_MAX_HOLDS + 1)

/* Point t's arrays into the extent at ring offset `off`. */
static inline void tmr_extent_place(const struct tmr_ctl *c, tmr_task *t, uint64_t off,
                                    uint32_t tensors, uint32_t scalars)
{
    char *p = c->arg_base + off;
    t->tensors = (sp_tensor *)(void *)p;
    p += (uint64_t)tensors * sizeof(sp_tensor);
    t->args = (uint64_t *)(void *)p;
    p += 8ull * (tensors + scalars);
    t->dirs = (uint8_t *)p;
    p += (tensors + 7ull) & ~7ull;
    t->holds = (tmr_hold *)(void *)p;
}

/* The ring offset where t's extent ends with its final hold count. */
static inline uint64_t tmr_extent_end(const struct tmr_ctl *c, const tmr_task *t)
{
    return ((uint64_t)((const char *)(t->holds + t->hold_count) - c->arg_base) + 63) & ~63ull;
}

/* Edge node `n` (fanout_head's encoding less one), and back. */
static inline tmr_hold *tmr_hold_at(const struct tmr_ctl *c, uint64_t n)
{
    return (tmr_hold *)(void *)(c->arg_base + 8 * n);
}

static inline uint64_t tmr_hold_node(const struct tmr_ctl *c, const tmr_hold *h)
{
    return (uint64_t)((const char *)h - c->arg_base) / 8;
}

/* The slot of task `id`. */
static inline tmr_task *tmr_slot(tmr_ctl *c, int64_t id)
{
    return &c->slots[(uint64_t)id & c->mask];
}

#endif
