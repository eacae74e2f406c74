/* The host_build_graph image: the whole graph of one run, laid out by the
 * host and uploaded with one copy into the run's arena bank, then read (and
 * its counters updated) by the device scheduler. Position-independent: tasks
 * refer to each other by index and to sections by offset from the image
 * start; the only absolute addresses are device buffer addresses (tensor
 * data, the tensor descriptors inside this image, the kernel table).
 *
 *   header | tensors[] | tasks[task_count] | fanout[edge_count] | args[] |
 *   queue slots (per queue)
 *
 * The tensor descriptors come first, at a fixed offset, so the host build
 * writes them straight into the staging of the image as tasks are
 * submitted; the sections after them are sized by the finished graph. */
#ifndef SP_RUNTIME_HBG_IMAGE_H
#define SP_RUNTIME_HBG_IMAGE_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/wait.h"
#include "simpler/types.h"

#define HBG_IMAGE_MAGIC 0x4547414d49474248ull /* "HBGIMAGE" */
#define HBG_IMAGE_VERSION 5u /* 3: predicates; 4: replay's reset; 5: chained count */

/* Ready queues: one per dispatch shape, and one for dummy tasks (completed
 * by whichever scheduler pops them, without a core); indexed by SP_Q_*. */
#include "runtime/device/fault_claim.h"
#include "runtime/device/redzone_check.h"
#include "runtime/device/sched_pass.h"
#define HBG_QUEUES SP_QUEUES

/* A ready queue that never wraps: the host sizes it for every block that
 * can ever be pushed (the sum of block_num over its tasks), so a slot is
 * written once per run. Slot value: task index + 1; 0 = not yet written. */
typedef struct hbg_queue {
    _Alignas(64) _Atomic uint32_t head;
    _Alignas(64) _Atomic uint32_t tail;
    _Alignas(64) uint64_t slots_off; /* offset of uint32 slots[capacity] */
    uint32_t capacity;
} hbg_queue;

typedef struct hbg_task {
    uint32_t fanout_begin; /* index into fanout[] */
    uint32_t fanout_count;
    uint32_t args_begin; /* index into args[] */
    uint32_t block_num;
    int32_t kernel[3]; /* kernel-table index per lane, -1 for none */
    uint8_t shape;     /* sp_task_shape */
    uint8_t pred_op;   /* sp_pred_op: SP_PRED_NONE, or the task runs only if the predicate holds */
    uint8_t pred_dtype;
    /* HBG_PRED_UNDECIDED until the first pop of one of its blocks decides
     * (a CAS: every block follows the one verdict); a replay resets it. */
    _Atomic uint8_t pred_state;
    _Atomic uint32_t fanin_left;  /* producers not yet complete, | HBG_FANIN_CHAINED */
    _Atomic uint32_t blocks_left; /* blocks not yet finished */
    _Atomic uint32_t next_block;  /* next block index to dispatch */
    uint32_t check_mask;          /* checking mode: arguments whose red zones completion verifies */
    uint32_t fanin_init;          /* producers: a replayed image resets fanin_left to it */
} hbg_task;

/* In fanin_left: the task was queued on a core behind its last producer
 * (sched_pass.h, follow) and its producers' completions must not queue it
 * again; the count below it still runs down to 0. */
#define HBG_FANIN_CHAINED 0x80000000u

/* hbg_task.pred_state. */
enum { HBG_PRED_UNDECIDED = 0, HBG_PRED_RUN = 1, HBG_PRED_SKIP = 2, HBG_PRED_DECIDING = 3 };

/* A predicated task's predicate lies in args[], in the HBG_PRED_WORDS
 * words just before its arguments (so a task without one pays nothing):
 * args[args_begin - 2] the element's device address (absolute, a tensor
 * buffer address: a replay that moves tensors relocates it as it does the
 * descriptors' addr fields), args[args_begin - 1] the constant (int64). */
#define HBG_PRED_WORDS 2u
#define HBG_PRED_ADDR_WORD(args_begin) ((args_begin)-2u)
#define HBG_PRED_VALUE_WORD(args_begin) ((args_begin)-1u)

/* One word of a replay's patch (hbg_replay.h): the device stores `value`
 * at byte `off` of the image before it dispatches anything. */
typedef struct hbg_patch {
    uint64_t off;
    uint64_t value;
} hbg_patch;

typedef struct hbg_image {
    uint64_t magic;
    uint32_t version;
    uint32_t task_count;
    uint64_t edge_count;
    uint64_t total_bytes;
    uint64_t tasks_off;
    uint64_t fanout_off;
    uint64_t args_off;
    uint64_t tensors_off;
    uint64_t kernel_table; /* device address of sp_kernel_fn[kernel_count] */
    uint32_t kernel_count;
    uint32_t ready_count; /* tasks ready at launch (already in the queues) */
    uint64_t timeout_ns;  /* per-task scheduler timeout, 0 = none */
    uint64_t trace;       /* device address of an rt_trace_buf, 0 = off */
    /* Replay (hbg_replay.h): which record the image is (0: none), and the
     * launch's patch. With `reset` set the image is one a run already
     * used: every scheduler thread applies its share of the patch and
     * puts its share of the tasks and queue slots back to pristine, then
     * all meet at reset_gate before any dispatch. */
    uint64_t replay_tag;
    uint64_t patch_off; /* hbg_patch[patch_count] at this offset (past total_bytes) */
    uint32_t patch_count;
    uint32_t reset;
    _Alignas(64) sp__waitword reset_gate;    /* threads done with the reset */
    _Alignas(64) _Atomic uint32_t completed; /* tasks complete */
    _Atomic uint32_t skipped;                /* of them, predicated off (sp_run_stats.skipped) */
    _Atomic uint32_t chained;                /* of them, queued behind a producer (stats) */
    _Alignas(64) _Atomic int32_t error;      /* first device-side error */
    rt_fault_report fault;                   /* the first kernel fault, if any */
    rt_overrun_report overrun;               /* checking mode: the first red zone damaged */
    _Alignas(64) hbg_queue queues[HBG_QUEUES];
} hbg_image;

/* Where the tensor descriptors start: right after the header. */
#define HBG_IMAGE_TENSORS_OFF ((sizeof(hbg_image) + 63) & ~(uint64_t)63)

#endif
