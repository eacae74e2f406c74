/* Validation of a submitted task, shared by both runtimes: argument counts,
 * block_num, shape and lanes against the callable's kernels (core types,
 * signatures), directions, dtypes and views, and that every tensor lies in
 * a buffer of the run. The task is not changed: it either passes whole or
 * fails with a named status and a message naming the task and func_id.
 * Optional memos carry what one task's checks established (its kernels'
 * lanes, its views' class) to the next, so a run's repeated tasks are
 * checked by comparison; every rule still applies to every task. */
#ifndef SP_RUNTIME_TASK_CHECK_H
#define SP_RUNTIME_TASK_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/device/dev_callable.h"
#include "simpler/orchestration.h"
#include "simpler/tensor.h"

#define SP_MAX_BLOCKS 65536u

/* A device range tensors may live in (a staged argument, the heap). */
typedef struct rt_range {
    uint64_t dev;
    uint64_t bytes;
} rt_range;

/* What one (shape, func_id per lane) resolved to: kernel indices and each
 * lane's signature, measured once. A run names few kernel combinations, so
 * its tasks resolve their lanes once each, not once per task. */
typedef struct rt_lane_memo {
    int32_t func_id[SP_LANES];
    int32_t kernel[SP_LANES];
    const char *sig[SP_LANES]; /* each busy lane's kernel signature */
    uint16_t sig_len[SP_LANES];
    uint16_t sig_scalars_from[SP_LANES]; /* sig[i] == 's' for every i from here on */
    uint8_t sig_lanes;                   /* bit per lane whose signature is checked */
    uint8_t shape;
    uint8_t valid;
} rt_lane_memo;

#define SP_LANE_MEMO_SLOTS 16

/* The last view class a task passed in (buffer, dtype, shape, strides >= 0):
 * a view of that class lies in the same device range, and inside its
 * buffer iff its offset is in [0, max_offset]. Tiles of one matrix are one
 * class, so their checks cost a comparison, not an extent. */
typedef struct rt_view_memo {
    uint64_t addr, buf_bytes;
    int64_t shape[SP_MAX_DIMS];
    int64_t strides[SP_MAX_DIMS];
    uint64_t max_offset;
    rt_range home; /* the staged buffer the class lies in ({0, 0}: none) */
    uint8_t dtype, ndim, valid;
} rt_view_memo;

/* A task's predicate as validation resolved it (rt_task_check.pred): the
 * element's device address and dtype, the op and the constant. op
 * SP_PRED_NONE: the task has none. `view` is the predicate tensor as the
 * TensorMap must see it (rehomed to its staged buffer): the task reads it. */
typedef struct rt_task_pred {
    uint64_t addr;
    int64_t value;
    uint8_t op;
    uint8_t dtype;
    sp_tensor view;
} rt_task_pred;

typedef struct rt_task_check {
    const rt_dev_callable *callable;
    const rt_range *ranges; /* staged arguments */
    uint32_t range_count;
    rt_range heap; /* runtime-allocated tensors */
    char *msg;
    size_t msg_len;
    /* SP_LANE_MEMO_SLOTS zeroed entries owned by the caller for the run's
     * length (one callable), or NULL: resolve every task from scratch. */
    rt_lane_memo *memo;
    /* Zeroed, the caller's for the run's length (these ranges), or NULL. */
    rt_view_memo *view;
    /* SP_MAX_TASK_TENSORS entries the caller owns, or NULL: validation sets,
     * per tensor argument, the staged run buffer it lies in ({0, 0} for an
     * output, or a tensor in the heap), for rt_tensor_rehome. */
    rt_range *home;
    /* The caller's, or NULL: validation of a task with a predicate
     * (rt_task_has_predicate) sets it, resolved; otherwise it is untouched. */
    rt_task_pred *pred;
    /* The device's cluster shape (sp_geometry's lanes and lane_type), or
     * lanes 0: the a2a3 cluster (AIC, AIV, AIV). A MIX task may name a
     * kernel on each lane the cluster has, of that lane's core kind; an
     * AIC or AIV task needs a lane of its kind. */
    const uint32_t *lane_type;
    uint32_t lanes;
} rt_task_check;

/* A tensor whose addr points inside a staged run buffer (a view that starts
 * 256 bytes in, say) is the same memory as the buffer reached through its
 * base, so dependencies and red zones must see it there: rewrite `x`, the
 * runtime's copy of a validated argument, to its `home` buffer (addr and
 * buf_bytes the buffer's, offset counted from it; validation checked that
 * the distance is whole elements). The kernel sees the same elements. */
static inline void rt_tensor_rehome(sp_tensor *x, const rt_range *home)
{
    if (!home->bytes || (x->addr == home->dev && x->buf_bytes == home->bytes))
        return;
    x->offset += (int64_t)((x->addr - home->dev) / sp_tensor_elem_size(x));
    x->addr = home->dev;
    x->buf_bytes = home->bytes;
}

/* True if task `t` carries a predicate (made with ABI 2 or later, an op
 * other than SP_PRED_NONE). Only then does validation set rt_task_check.pred. */
static inline bool rt_task_has_predicate(const sp_task *t)
{
    return t->abi >= 2 && t->pred_op != SP_PRED_NONE;
}

/* Check task `id`; on success fill kernel[lane] with kernel indices (-1 for
 * an idle lane). Returns 0 or a status with the reason in c->msg. */
int rt_task_validate(const rt_task_check *c, uint64_t id, const sp_task *t, int32_t kernel[3]);
/* True if [addr, addr + bytes) lies inside `r`. */
bool rt_range_holds(const rt_range *r, uint64_t addr, uint64_t bytes);

#endif
