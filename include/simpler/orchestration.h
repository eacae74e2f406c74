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

#define SP_ORCH_ABI_VERSION 1

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

/* One task to submit: built on the stack with the sp_task_* helpers. */
typedef struct sp_task {
    uint8_t shape;
    uint8_t tensor_count;
    uint8_t scalar_count;
    uint8_t dep_count;
    uint8_t overflow; /* an sp_task_* helper ran past a limit: submit fails */
    uint8_t pad[3];
    uint32_t block_num;
    int32_t func_id[SP_LANES];
    uint8_t dirs[SP_MAX_TASK_TENSORS];
    sp_tensor *tensors[SP_MAX_TASK_TENSORS];
    uint64_t scalars[SP_MAX_TASK_SCALARS];
    int64_t deps[SP_MAX_EXPLICIT_DEPS];
} sp_task;

typedef struct sp_orch sp_orch;

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
} sp_orch_ops;

struct sp_orch {
    const sp_orch_ops *ops;
};

/* What a config function reports (SP_ORCH_CONFIG). */
typedef struct sp_orch_config {
    uint32_t abi_version;
    uint32_t tensor_count; /* tensors the entry reads from args */
    uint32_t scalar_count; /* scalars the entry reads from args */
    uint32_t reserved;
} sp_orch_config;

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
    t.pad[0] = t.pad[1] = t.pad[2] = 0;
    t.block_num = 1;
    t.func_id[0] = t.func_id[1] = t.func_id[2] = SP_FUNC_NONE;
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
    t->scalars[t->scalar_count++] = v;
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
