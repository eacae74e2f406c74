/* The orchestration API: what a program that submits tasks sees.
 *
 * An orchestration is a shared object exporting
 *     void ENTRY(sp_orch *o, const sp_args *args);
 * and optionally a config function (SP_ORCH_CONFIG) stating the arguments it
 * expects. It links against nothing of the runtime: sp_orch starts with a
 * pointer to an ops table, and every call below is an inline wrapper over
 * it, so one source runs unchanged on host_build_graph and
 * tensormap_and_ringbuffer. Tensors in `args` are device tensors (staged by
 * the runtime); their elements are read and written with sp_tensor_read /
 * sp_tensor_write, never by dereferencing `addr`. */
#ifndef SIMPLER_ORCHESTRATION_H
#define SIMPLER_ORCHESTRATION_H

#include <stdarg.h>
#include <stdio.h>

#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/types.h"

/* 2: sp_task carries scalar sources and a predicate; sp_orch_ops gains
 * submit_graph; sp_orch_config gains the replay fields. Configs of ABI 1
 * are still accepted (no replay declarations: every scalar shapes). */
#define SP_ORCH_ABI_VERSION 2

/* What a task runs on. MIX runs its lanes together on one cluster. */
typedef enum sp_task_shape {
    SP_SHAPE_DUMMY = 0, /* no kernel: a pure synchronisation point */
    SP_SHAPE_AIC = 1,   /* one AIC core per block */
    SP_SHAPE_AIV = 2,   /* one AIV core per block */
    SP_SHAPE_MIX = 3,   /* one cluster per block: AIC, AIV0, AIV1 lanes */
} sp_task_shape;

enum { SP_LANE_AIC = 0, SP_LANE_AIV0 = 1, SP_LANE_AIV1 = 2, SP_LANES = 3 };

#define SP_FUNC_NONE (-1)
#define SP_MAX_EXPLICIT_DEPS 16

/* Scope modes: AUTO derives dependencies from tensor accesses; MANUAL uses
 * only the explicit dependencies given with sp_task_dep. */
typedef enum sp_scope_mode { SP_SCOPE_AUTO = 0, SP_SCOPE_MANUAL = 1 } sp_scope_mode;

/* A predicate on one element of an integer tensor (sp_task_predicate): the
 * task runs only if `element OP value` holds when it is ready. */
typedef enum sp_pred_op {
    SP_PRED_NONE = 0, /* no predicate: the task always runs */
    SP_PRED_EQ = 1,
    SP_PRED_NE = 2,
    SP_PRED_LT = 3,
    SP_PRED_LE = 4,
    SP_PRED_GT = 5,
    SP_PRED_GE = 6,
} sp_pred_op;

/* Where a task scalar comes from, for replay (sp_task.scalar_src): a
 * literal, or a scalar of the run's arguments / of a graph task's
 * arguments, which a replay or a graph instance substitutes. */
#define SP_SCALAR_LITERAL 0
#define SP_SCALAR_RUN(i) (0x100 | (i))   /* args->scalars[i] of the run, i < 128 */
#define SP_SCALAR_GRAPH(i) (0x200 | (i)) /* a->scalars[i] of the graph task, i < 16 */

/* One task to submit: built on the stack with the sp_task_* helpers. */
typedef struct sp_task {
    uint8_t shape;
    uint8_t tensor_count;
    uint8_t scalar_count;
    uint8_t dep_count;
    uint8_t overflow; /* an sp_task_* helper ran past a limit: submit fails */
    /* SP_ORCH_ABI_VERSION the task was made with (sp_task_make): below 2
     * (an orchestration built before them) the fields after `deps` do not
     * exist and the runtime reads none of them. */
    uint8_t abi;
    uint8_t pad[2];
    uint32_t block_num;
    int32_t func_id[SP_LANES];
    uint8_t dirs[SP_MAX_TASK_TENSORS];
    sp_tensor *tensors[SP_MAX_TASK_TENSORS];
    uint64_t scalars[SP_MAX_TASK_SCALARS];
    int64_t deps[SP_MAX_EXPLICIT_DEPS];
    /* Per scalar, where its value comes from (SP_SCALAR_*): read up to
     * scalar_count. A recorded graph patches RUN and GRAPH scalars. */
    uint16_t scalar_src[SP_MAX_TASK_SCALARS];
    /* The predicate (sp_task_predicate): pred_op SP_PRED_NONE for none. */
    uint8_t pred_op;
    uint8_t pred_pad[7];
    int64_t pred_index; /* element, row-major over pred_tensor's view */
    int64_t pred_value; /* compared as int64 against the element */
    sp_tensor *pred_tensor;
} sp_task;

typedef struct sp_orch sp_orch;

/* The arguments of a graph task (sp_submit_graph): its boundary. The
 * tensors are views the sub-DAG's tasks use (or views of them); the
 * scalars reach its tasks through sp_task_graph_scalar. */
#define SP_MAX_GRAPH_TENSORS 32
#define SP_MAX_GRAPH_SCALARS 16
typedef struct sp_graph_args {
    uint32_t tensor_count;
    uint32_t scalar_count;
    sp_tensor tensors[SP_MAX_GRAPH_TENSORS];
    uint64_t scalars[SP_MAX_GRAPH_SCALARS];
    uint16_t scalar_src[SP_MAX_GRAPH_SCALARS]; /* SP_SCALAR_*: a run scalar passed on */
} sp_graph_args;

/* The body of a graph task: submits the sub-DAG over `a`. Called once per
 * key (and geometry) and recorded; it must depend on nothing but `a` and
 * the key (no globals, no captured state: later instances do not call it). */
typedef void (*sp_graph_fn)(sp_orch *o, const sp_graph_args *a);

typedef struct sp_orch_ops {
    uint32_t abi_version;
    /* Returns the task id (>= 0) or a negative status. Fills the tensors of
     * OUT arguments (runtime-allocated) with their buffers and owner. */
    int64_t (*submit)(sp_orch *o, sp_task *task);
    /* Allocate a runtime-owned tensor of t->dtype / ndim / shape. */
    int (*alloc_tensor)(sp_orch *o, sp_tensor *t);
    int (*scope_begin)(sp_orch *o, int mode);
    int (*scope_end)(sp_orch *o);
    /* Element `index` (row-major over the view's shape) of a control tensor. */
    int (*tensor_read)(sp_orch *o, const sp_tensor *t, int64_t index, void *elem_out);
    int (*tensor_write)(sp_orch *o, const sp_tensor *t, int64_t index, const void *elem);
    void (*log)(sp_orch *o, int level, const char *msg);
    /* Fail the run with `status` (negative; SP_EORCH_FATAL if not). */
    void (*fatal)(sp_orch *o, int status, const char *msg);
    /* First error recorded so far (0 if none): lets a program stop early. */
    int (*error)(sp_orch *o);
    /* Instantiate the sub-DAG `fn` submits over `a`, recorded the first
     * time `key` is seen with a's geometry (ABI 2). Returns the number of
     * tasks it submitted (>= 0) or a negative status. */
    int64_t (*submit_graph)(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a, uint64_t key);
} sp_orch_ops;

struct sp_orch {
    const sp_orch_ops *ops;
};

/* What a config function reports (SP_ORCH_CONFIG). */
typedef struct sp_orch_config {
    uint32_t abi_version;
    uint32_t tensor_count; /* tensors the entry reads from args */
    uint32_t scalar_count; /* scalars the entry reads from args */
    uint32_t replay;       /* SP_ORCH_REPLAY_* (ABI 2) */
    /* With SP_ORCH_REPLAY_DECLARED: bit i (of word i / 64) set = run scalar
     * i shapes the graph (part of the replay key); the others are data,
     * which reach tasks only through sp_task_scalar_arg and are patched
     * on replay. Without it every scalar shapes the graph. */
    uint64_t shaping_scalars[2];
} sp_orch_config;

/* sp_orch_config.replay. */
#define SP_ORCH_REPLAY_DECLARED 0x1u /* shaping_scalars says which scalars shape */
#define SP_ORCH_REPLAY_NEVER 0x2u    /* never keep this orchestration's graph */

#define SP_ORCH_EXPORT __attribute__((visibility("default")))
/* Define an orchestration entry: SP_ORCHESTRATION(my_entry) { ... } */
#define SP_ORCHESTRATION(name) SP_ORCH_EXPORT void name(sp_orch *o, const sp_args *args)
/* Define its config function: SP_ORCH_CONFIG(my_config) { cfg->tensor_count = 3; } */
#define SP_ORCH_CONFIG(name) SP_ORCH_EXPORT void name(sp_orch_config *cfg)

typedef void (*sp_orch_entry_fn)(sp_orch *o, const sp_args *args);
typedef void (*sp_orch_config_fn)(sp_orch_config *cfg);

/* ---- building a task ---------------------------------------------------- */

/* A task of `shape` with no kernels, arguments or dependencies yet. */
static inline sp_task sp_task_make(sp_task_shape shape)
{
    /* Only the header is set: the argument arrays are read up to their
     * counts, so zeroing their ~550 bytes on every submit would be waste
     * (a fifth of a submit's instructions, measured). */
    sp_task t;
    t.shape = (uint8_t)shape;
    t.tensor_count = t.scalar_count = t.dep_count = t.overflow = 0;
    t.abi = SP_ORCH_ABI_VERSION;
    t.pad[0] = t.pad[1] = 0;
    t.block_num = 1;
    t.func_id[0] = t.func_id[1] = t.func_id[2] = SP_FUNC_NONE;
    t.pred_op = SP_PRED_NONE;
    t.pred_tensor = NULL;
    return t;
}
/* A task running kernel `func_id` on one AIC core. */
static inline sp_task sp_task_aic(int32_t func_id)
{
    sp_task t = sp_task_make(SP_SHAPE_AIC);
    t.func_id[SP_LANE_AIC] = func_id;
    return t;
}
/* A task running kernel `func_id` on one AIV core. */
static inline sp_task sp_task_aiv(int32_t func_id)
{
    sp_task t = sp_task_make(SP_SHAPE_AIV);
    t.func_id[SP_LANE_AIV0] = func_id;
    return t;
}
/* A task running its lanes together on one cluster (SP_FUNC_NONE: lane idle). */
static inline sp_task sp_task_mix(int32_t aic, int32_t aiv0, int32_t aiv1)
{
    sp_task t = sp_task_make(SP_SHAPE_MIX);
    t.func_id[SP_LANE_AIC] = aic;
    t.func_id[SP_LANE_AIV0] = aiv0;
    t.func_id[SP_LANE_AIV1] = aiv1;
    return t;
}
/* Add a tensor argument with direction `dir`; past the limit, submit fails. */
static inline void sp_task_arg(sp_task *t, sp_tensor *tensor, sp_dir dir)
{
    if (t->tensor_count >= SP_MAX_TASK_TENSORS) {
        t->overflow = 1;
        return;
    }
    t->tensors[t->tensor_count] = tensor;
    t->dirs[t->tensor_count++] = (uint8_t)dir;
}
static inline void sp_task_in(sp_task *t, sp_tensor *x)
{
    sp_task_arg(t, x, SP_IN);
}
/* A fresh output: `x` holds dtype/ndim/shape; submit allocates and fills it. */
static inline void sp_task_out(sp_task *t, sp_tensor *x)
{
    sp_task_arg(t, x, SP_OUT);
}
static inline void sp_task_inout(sp_task *t, sp_tensor *x)
{
    sp_task_arg(t, x, SP_INOUT);
}
/* Add a u64 scalar argument; past the limit, submit fails. */
static inline void sp_task_scalar(sp_task *t, uint64_t v)
{
    if (t->scalar_count >= SP_MAX_TASK_SCALARS) {
        t->overflow = 1;
        return;
    }
    t->scalar_src[t->scalar_count] = SP_SCALAR_LITERAL;
    t->scalars[t->scalar_count++] = v;
}
/* Add run scalar `i` (args->scalars[i]) as a scalar argument, marked as
 * coming from the run: a replay of the recorded graph substitutes the new
 * run's value. Scalars a config declares data must reach tasks this way. */
static inline void sp_task_scalar_arg(sp_task *t, const sp_args *args, uint32_t i)
{
    if (i >= args->scalar_count || i >= SP_MAX_RUN_SCALARS) {
        t->overflow = 1;
        return;
    }
    sp_task_scalar(t, args->scalars[i]);
    if (t->scalar_count && !t->overflow)
        t->scalar_src[t->scalar_count - 1] = (uint16_t)SP_SCALAR_RUN(i);
}
/* Add graph-task scalar `i` (a->scalars[i]): later instances of the graph
 * substitute their own value (a run scalar passed on stays marked). */
static inline void sp_task_graph_scalar(sp_task *t, const sp_graph_args *a, uint32_t i)
{
    if (i >= a->scalar_count || i >= SP_MAX_GRAPH_SCALARS) {
        t->overflow = 1;
        return;
    }
    sp_task_scalar(t, a->scalars[i]);
    if (t->scalar_count && !t->overflow)
        t->scalar_src[t->scalar_count - 1] = (uint16_t)SP_SCALAR_GRAPH(i);
}
/* Run the task only if element `index` of the integer tensor `x` (written
 * by an earlier task, or staged) compares `op` against `value` when the
 * task is ready; otherwise it is retired without running, its consumers
 * are released and its outputs keep their contents (so its written
 * tensors must be SP_OUT_EXISTING or SP_INOUT). The element is read as a
 * dependency: the task waits for x's writers. */
static inline void sp_task_predicate(sp_task *t, sp_tensor *x, int64_t index, sp_pred_op op,
                                     int64_t value)
{
    t->pred_op = (uint8_t)op;
    t->pred_tensor = x;
    t->pred_index = index;
    t->pred_value = value;
}
/* Add an f32 scalar argument (its bits in the low half of the u64). */
static inline void sp_task_scalar_f32(sp_task *t, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    sp_task_scalar(t, bits);
}
/* Make the task wait for task `id` (a value a submit returned). */
static inline void sp_task_dep(sp_task *t, int64_t id)
{
    if (t->dep_count >= SP_MAX_EXPLICIT_DEPS) {
        t->overflow = 1;
        return;
    }
    t->deps[t->dep_count++] = id;
}
/* Run the task as `n` SPMD blocks (kernels see ctx->block_idx / block_num). */
static inline void sp_task_blocks(sp_task *t, uint32_t n)
{
    t->block_num = n;
}

/* A tensor spec with no buffer yet: for OUT arguments and sp_alloc_tensor. */
static inline sp_tensor sp_tensor_spec(int dtype, int ndim, const int64_t *shape)
{
    sp_tensor t;
    if (sp_tensor_init(&t, 0, dtype, ndim, shape) != SP_OK) {
        memset(&t, 0, sizeof t); /* invalid: submit rejects it by name */
        t.owner_task = SP_NO_TASK;
    }
    return t;
}

/* ---- calling the runtime ------------------------------------------------ */

/* Submit a task; returns its id (>= 0) or a negative status. */
static inline int64_t sp_submit(sp_orch *o, sp_task *t)
{
    return o->ops->submit(o, t);
}
/* Submit a dummy task (no kernel) that waits for `deps`; returns its id. */
static inline int64_t sp_submit_dummy(sp_orch *o, const int64_t *deps, int n)
{
    sp_task t = sp_task_make(SP_SHAPE_DUMMY);
    for (int i = 0; i < n; i++)
        sp_task_dep(&t, deps[i]);
    return o->ops->submit(o, &t);
}
/* A graph task: the first call with `key` (and a's geometry: counts,
 * dtypes, shapes, strides) calls `fn` and records the sub-DAG it submits;
 * later calls instantiate the record with a's tensors and scalars
 * substituted, without calling fn or deriving its inner dependencies. Its
 * edges to the rest of the graph are those one-by-one submission would
 * give. Returns the number of tasks submitted, or a negative status. */
static inline int64_t sp_submit_graph(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a,
                                      uint64_t key)
{
    return o->ops->submit_graph(o, fn, a, key);
}
/* Empty graph-task arguments. */
static inline void sp_graph_args_init(sp_graph_args *a)
{
    a->tensor_count = a->scalar_count = 0;
}
/* Add a boundary tensor; past SP_MAX_GRAPH_TENSORS the submit fails. */
static inline void sp_graph_arg(sp_graph_args *a, const sp_tensor *x)
{
    if (a->tensor_count < SP_MAX_GRAPH_TENSORS)
        a->tensors[a->tensor_count] = *x;
    a->tensor_count++;
}
/* Add a literal scalar (part of what later instances substitute). */
static inline void sp_graph_scalar(sp_graph_args *a, uint64_t v)
{
    if (a->scalar_count < SP_MAX_GRAPH_SCALARS) {
        a->scalars[a->scalar_count] = v;
        a->scalar_src[a->scalar_count] = SP_SCALAR_LITERAL;
    }
    a->scalar_count++;
}
/* Pass run scalar `i` on (a replay substitutes the new run's value). */
static inline void sp_graph_scalar_arg(sp_graph_args *a, const sp_args *args, uint32_t i)
{
    uint64_t v = i < args->scalar_count ? args->scalars[i] : 0;
    uint32_t at = a->scalar_count;
    sp_graph_scalar(a, v);
    if (at < SP_MAX_GRAPH_SCALARS)
        a->scalar_src[at] = i < args->scalar_count ? (uint16_t)SP_SCALAR_RUN(i) : 0xffff;
}
/* Allocate a runtime-owned tensor for `t`'s dtype and shape; 0 or a status. */
static inline int sp_alloc_tensor(sp_orch *o, sp_tensor *t)
{
    return o->ops->alloc_tensor(o, t);
}
/* Open a scope (SP_SCOPE_AUTO or SP_SCOPE_MANUAL); 0 or a status. */
static inline int sp_scope_begin(sp_orch *o, sp_scope_mode mode)
{
    return o->ops->scope_begin(o, (int)mode);
}
/* Close the innermost scope; 0 or a status. */
static inline int sp_scope_end(sp_orch *o)
{
    return o->ops->scope_end(o);
}
/* Read element `index` of tensor `t` into `out` (waits for its producer). */
static inline int sp_tensor_read(sp_orch *o, const sp_tensor *t, int64_t index, void *out)
{
    return o->ops->tensor_read(o, t, index, out);
}
/* Write element `index` of tensor `t` (waits for producer and readers). */
static inline int sp_tensor_write(sp_orch *o, const sp_tensor *t, int64_t index, const void *v)
{
    return o->ops->tensor_write(o, t, index, v);
}
/* Read an integer control element of any integer dtype as int64; 0 on error
 * (the error is recorded and sp_orch_error reports it). */
static inline int64_t sp_tensor_read_int(sp_orch *o, const sp_tensor *t, int64_t index)
{
    union {
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
    } v;
    memset(&v, 0, sizeof v);
    if (sp_tensor_read(o, t, index, &v) != SP_OK)
        return 0;
    switch (t->dtype) {
    case SP_DTYPE_I8:
        return v.i8;
    case SP_DTYPE_I16:
        return v.i16;
    case SP_DTYPE_I32:
        return v.i32;
    case SP_DTYPE_U8:
    case SP_DTYPE_BOOL:
        return v.u8;
    case SP_DTYPE_U16:
        return v.u16;
    case SP_DTYPE_U32:
        return v.u32;
    default:
        return v.i64;
    }
}
/* First error of this run so far, 0 if none. */
static inline int sp_orch_error(sp_orch *o)
{
    return o->ops->error(o);
}
/* Fail the run with `status` and a message naming what went wrong. */
static inline void sp_orch_fatal(sp_orch *o, int status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->ops->fatal(o, status, msg);
}
/* Log a line through the runtime's logger (level as SIMPLER_LOG: 0 debug .. 3 error). */
static inline void sp_orch_log(sp_orch *o, int level, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->ops->log(o, level, msg);
}

#endif
