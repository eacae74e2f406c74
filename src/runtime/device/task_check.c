/* Task validation shared by host_build_graph and tensormap_and_ringbuffer. */
#include "runtime/device/task_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

static int fail(const rt_task_check *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(const rt_task_check *c, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, c->msg_len, fmt, ap);
    va_end(ap);
    return status;
}

bool rt_range_holds(const rt_range *r, uint64_t addr, uint64_t bytes)
{
    return addr >= r->dev && bytes <= r->bytes && addr - r->dev <= r->bytes - bytes;
}

/* The core type each lane of an AIC / AIV task needs, and each lane of a
 * MIX task on the a2a3 cluster (when the check names no geometry). */
static const uint32_t lane_core[SP_LANES] = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV};

/* True if the geometry has a lane of core kind `type` to run a task on. */
static bool has_lane(const rt_task_check *c, uint32_t type)
{
    if (!c->lanes)
        return true;
    for (uint32_t l = 0; l < c->lanes; l++)
        if (c->lane_type[l] == type)
            return true;
    return false;
}

static int resolve_kernels(const rt_task_check *c, uint64_t id, const sp_task *t, int32_t kernel[3])
{
    kernel[0] = kernel[1] = kernel[2] = -1;
    bool allowed[SP_LANES] = {false, false, false};
    switch (t->shape) {
    case SP_SHAPE_DUMMY:
        break;
    case SP_SHAPE_AIC:
    case SP_SHAPE_AIV: {
        uint32_t type = t->shape == SP_SHAPE_AIC ? SP_CORE_AIC : SP_CORE_AIV;
        if (!has_lane(c, type))
            return fail(c, SP_ETASK_ARGS,
                        "task %llu: an %s task, and the device's clusters have "
                        "no %s core",
                        (unsigned long long)id, t->shape == SP_SHAPE_AIC ? "AIC" : "AIV",
                        t->shape == SP_SHAPE_AIC ? "AIC" : "AIV");
        allowed[t->shape == SP_SHAPE_AIC ? SP_LANE_AIC : SP_LANE_AIV0] = true;
        break;
    }
    case SP_SHAPE_MIX:
        /* A MIX block runs lane l's kernel on lane l of one cluster. */
        for (uint32_t l = 0; l < SP_LANES; l++)
            allowed[l] = !c->lanes || l < c->lanes;
        break;
    default:
        return fail(c, SP_ETASK_ARGS, "task %llu: unknown shape %u", (unsigned long long)id,
                    t->shape);
    }
    int lanes = 0;
    for (int l = 0; l < SP_LANES; l++) {
        if (t->func_id[l] == SP_FUNC_NONE)
            continue;
        if (!allowed[l])
            return fail(c, SP_ETASK_ARGS, "task %llu: shape %u has no lane %d (func_id %d given)",
                        (unsigned long long)id, t->shape, l, t->func_id[l]);
        int k = rt_dev_callable_kernel(c->callable, t->func_id[l]);
        if (k < 0)
            return fail(c, SP_EFUNC_ID, "task %llu: callable %u has no kernel func_id %d",
                        (unsigned long long)id, c->callable->id, t->func_id[l]);
        const rt_dev_kernel *lk = &c->callable->kernels[k];
        uint32_t want = t->shape == SP_SHAPE_MIX && c->lanes ? c->lane_type[l] : lane_core[l];
        if (lk->core_type != want)
            return fail(c, SP_ETASK_ARGS,
                        "task %llu: func_id %d ('%s') is a %s kernel, lane %d needs %s",
                        (unsigned long long)id, lk->func_id, lk->entry,
                        lk->core_type == SP_CORE_AIC ? "AIC" : "AIV", l,
                        want == SP_CORE_AIC ? "AIC" : "AIV");
        kernel[l] = k;
        lanes++;
    }
    if (t->shape != SP_SHAPE_DUMMY && lanes == 0)
        return fail(c, SP_EFUNC_ID, "task %llu: shape %u names no kernel", (unsigned long long)id,
                    t->shape);
    return SP_OK;
}

/* Compare the task's arguments with a kernel's declared signature. */
static int check_signature(const rt_task_check *c, uint64_t id, const sp_task *t, int kernel)
{
    static const char dir_char[] = {'?', 'i', 'o', 'x', 'e', 'n'};
    const rt_dev_kernel *k = &c->callable->kernels[kernel];
    const char *sig = k->signature;
    if (!sig[0])
        return SP_OK;
    size_t want = strlen(sig);
    if (want != (size_t)t->tensor_count + t->scalar_count)
        return fail(c, SP_ETASK_ARGS,
                    "task %llu: kernel '%s' (func_id %d) takes %zu arguments ('%s'), task "
                    "passes %u tensors + %u scalars",
                    (unsigned long long)id, k->entry, k->func_id, want, sig, t->tensor_count,
                    t->scalar_count);
    for (int i = 0; i < t->tensor_count; i++) {
        char d = dir_char[t->dirs[i] <= SP_NO_DEP ? t->dirs[i] : 0];
        /* A fresh output may feed a kernel declared to write an existing one. */
        bool ok = sig[i] == d || (sig[i] == 'e' && d == 'o') || (sig[i] == 'o' && d == 'e');
        if (!ok)
            return fail(c, SP_ETASK_ARGS,
                        "task %llu: kernel '%s' argument %d is '%c', task "
                        "passes '%c'",
                        (unsigned long long)id, k->entry, i, sig[i], d);
    }
    for (int i = t->tensor_count; i < t->tensor_count + t->scalar_count; i++)
        if (sig[i] != 's')
            return fail(c, SP_ETASK_ARGS,
                        "task %llu: kernel '%s' argument %d is '%c', task passes a scalar",
                        (unsigned long long)id, k->entry, i, sig[i]);
    return SP_OK;
}

static int check_tensor(const rt_task_check *c, uint64_t id, int i, const sp_tensor *x, int dir,
                        rt_range *home)
{
    *home = (rt_range){0, 0};
    unsigned long long tid = (unsigned long long)id;
    if (!x)
        return fail(c, SP_ETASK_ARGS, "task %llu: tensor argument %d is NULL", tid, i);
    if (dir < SP_IN || dir > SP_NO_DEP)
        return fail(c, SP_ETASK_ARGS, "task %llu: tensor argument %d has direction %d", tid, i,
                    dir);
    if (!sp_dtype_size(x->dtype))
        return fail(c, SP_EDTYPE, "task %llu: tensor argument %d has dtype %u", tid, i, x->dtype);
    if (dir == SP_OUT) {
        if (sp_tensor_numel(x) == 0)
            return fail(c, SP_ESHAPE, "task %llu: output %d has an empty or bad shape", tid, i);
        return SP_OK;
    }
    if (!sp_tensor_is_valid(x))
        return fail(c, SP_ESHAPE,
                    "task %llu: tensor argument %d: view (offset %lld) leaves its %llu-byte buffer",
                    tid, i, (long long)x->offset, (unsigned long long)x->buf_bytes);
    if (rt_range_holds(&c->heap, x->addr, x->buf_bytes))
        return SP_OK;
    for (uint32_t r = 0; r < c->range_count; r++) {
        if (!rt_range_holds(&c->ranges[r], x->addr, x->buf_bytes))
            continue;
        /* A view starting inside the buffer is rehomed to its base: only
         * whole elements can be counted from there. */
        uint64_t into = x->addr - c->ranges[r].dev;
        if (into % sp_dtype_size(x->dtype) != 0)
            return fail(c, SP_ETASK_ARGS,
                        "task %llu: tensor argument %d starts %llu bytes into run argument %u's "
                        "buffer, not a whole number of %zu-byte elements; pass the buffer's "
                        "address and reach the elements through offset",
                        tid, i, (unsigned long long)into, r, sp_dtype_size(x->dtype));
        *home = c->ranges[r];
        return SP_OK;
    }
    return fail(c, SP_EBOUNDS,
                "task %llu: tensor argument %d (0x%llx, %llu bytes) is in no device buffer of "
                "this run",
                tid, i, (unsigned long long)x->addr, (unsigned long long)x->buf_bytes);
}

/* Tensor `x` read or written in place is of the memo's class and inside its
 * buffer: check_tensor's verdict, by comparison. */
static bool view_known(const rt_view_memo *v, const sp_tensor *x, int dir)
{
    if (!v->valid || !x || dir < SP_IN || dir > SP_NO_DEP || dir == SP_OUT || x->addr != v->addr ||
        x->buf_bytes != v->buf_bytes || x->dtype != v->dtype || x->ndim != v->ndim ||
        x->offset < 0 || (uint64_t)x->offset > v->max_offset)
        return false;
    for (int d = 0; d < v->ndim; d++)
        if (x->shape[d] != v->shape[d] || x->strides[d] != v->strides[d])
            return false;
    return true;
}

/* Remember the class of `x`, a view check_tensor accepted, when its
 * strides are >= 0 (the other classes are rare enough to check in full). */
static void view_learn(rt_view_memo *v, const sp_tensor *x, const rt_range *home)
{
    uint64_t es = sp_dtype_size(x->dtype), span = 0, term;
    v->valid = 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->strides[d] < 0 ||
            __builtin_mul_overflow((uint64_t)x->strides[d], (uint64_t)(x->shape[d] - 1), &term) ||
            __builtin_add_overflow(span, term, &span))
            return;
    /* Inside iff (offset + span + 1) * es <= buf_bytes; x itself is. */
    uint64_t elems = x->buf_bytes / es;
    if (elems < span + 1)
        return;
    *v = (rt_view_memo){.addr = x->addr,
                        .buf_bytes = x->buf_bytes,
                        .max_offset = elems - span - 1,
                        .home = *home,
                        .dtype = x->dtype,
                        .ndim = x->ndim,
                        .valid = 1};
    memcpy(v->shape, x->shape, sizeof v->shape);
    memcpy(v->strides, x->strides, sizeof v->strides);
}

static unsigned memo_slot(const sp_task *t)
{
    uint32_t h = (uint32_t)t->func_id[0] * 7u + (uint32_t)t->func_id[1] * 5u +
                 (uint32_t)t->func_id[2] * 3u + t->shape;
    return h & (SP_LANE_MEMO_SLOTS - 1);
}

/* Resolve the task's lanes (resolve_kernels, which names any fault) and
 * measure their signatures into `m`. */
static int lanes_resolve(const rt_task_check *c, uint64_t id, const sp_task *t, rt_lane_memo *m)
{
    int rc = resolve_kernels(c, id, t, m->kernel);
    if (rc)
        return rc;
    m->sig_lanes = 0;
    for (int l = 0; l < SP_LANES; l++) {
        m->func_id[l] = t->func_id[l];
        m->sig[l] = NULL;
        m->sig_len[l] = m->sig_scalars_from[l] = 0;
        if (m->kernel[l] < 0)
            continue;
        const char *sig = c->callable->kernels[m->kernel[l]].signature;
        size_t len = strlen(sig), from = len;
        while (from > 0 && sig[from - 1] == 's')
            from--;
        /* A signature too long to measure here fails the length test
         * below, and check_signature decides. */
        m->sig[l] = sig;
        m->sig_lanes |= (uint8_t)(len ? 1u << l : 0);
        m->sig_len[l] = (uint16_t)(len > UINT16_MAX ? UINT16_MAX : len);
        m->sig_scalars_from[l] = (uint16_t)(from > UINT16_MAX ? UINT16_MAX : from);
    }
    m->shape = t->shape;
    m->valid = 1;
    return SP_OK;
}

/* The task's arguments match the lane's signature as check_signature
 * compares them; false sends the lane to check_signature. */
static bool signature_fast_ok(const rt_lane_memo *m, int l, const sp_task *t)
{
    static const char dir_char[] = {'?', 'i', 'o', 'x', 'e', 'n'};
    const char *sig = m->sig[l];
    if (m->sig_len[l] != (unsigned)t->tensor_count + t->scalar_count ||
        t->tensor_count < m->sig_scalars_from[l])
        return false;
    for (int i = 0; i < t->tensor_count; i++) {
        char d = dir_char[t->dirs[i] <= SP_NO_DEP ? t->dirs[i] : 0];
        if (!(sig[i] == d || (sig[i] == 'e' && d == 'o') || (sig[i] == 'o' && d == 'e')))
            return false;
    }
    return true;
}

static bool dtype_is_integer(int dtype)
{
    switch (dtype) {
    case SP_DTYPE_I8:
    case SP_DTYPE_U8:
    case SP_DTYPE_I16:
    case SP_DTYPE_U16:
    case SP_DTYPE_I32:
    case SP_DTYPE_U32:
    case SP_DTYPE_I64:
    case SP_DTYPE_U64:
    case SP_DTYPE_BOOL:
        return true;
    default:
        return false;
    }
}

/* The task's predicate (ABI 2): a known op, an integer tensor in a buffer
 * of the run, an element inside its view, and no fresh output (a skip
 * would leave it unset). Resolves the element's address into *p. */
static int check_predicate(const rt_task_check *c, uint64_t id, const sp_task *t, rt_task_pred *p)
{
    unsigned long long tid = (unsigned long long)id;
    if (!rt_task_has_predicate(t))
        return SP_OK;
    if (t->pred_op > SP_PRED_GE)
        return fail(c, SP_EPREDICATE,
                    "task %llu: predicate op %u is not one of SP_PRED_EQ..SP_PRED_GE (1..6)", tid,
                    t->pred_op);
    const sp_tensor *x = t->pred_tensor;
    if (!x)
        return fail(c, SP_EPREDICATE, "task %llu: predicate tensor is NULL", tid);
    if (!dtype_is_integer(x->dtype))
        return fail(c, SP_EPREDICATE,
                    "task %llu: predicate tensor has dtype %s; a predicate compares an integer "
                    "element (i8..u64, bool)",
                    tid, sp_dtype_name(x->dtype));
    int64_t n = sp_tensor_numel(x);
    if (t->pred_index < 0 || t->pred_index >= n)
        return fail(c, SP_EPREDICATE,
                    "task %llu: predicate element %lld is outside its tensor's %lld elements", tid,
                    (long long)t->pred_index, (long long)n);
    if (!sp_tensor_is_valid(x))
        return fail(c, SP_EPREDICATE,
                    "task %llu: predicate tensor's view (offset %lld) leaves its %llu-byte buffer",
                    tid, (long long)x->offset, (unsigned long long)x->buf_bytes);
    rt_range home = {0, 0};
    if (!rt_range_holds(&c->heap, x->addr, x->buf_bytes)) {
        uint32_t r = 0;
        while (r < c->range_count && !rt_range_holds(&c->ranges[r], x->addr, x->buf_bytes))
            r++;
        if (r == c->range_count)
            return fail(c, SP_EPREDICATE,
                        "task %llu: predicate tensor (0x%llx, %llu bytes) is in no device buffer "
                        "of this run",
                        tid, (unsigned long long)x->addr, (unsigned long long)x->buf_bytes);
        if ((x->addr - c->ranges[r].dev) % sp_dtype_size(x->dtype) != 0)
            return fail(c, SP_EPREDICATE,
                        "task %llu: predicate tensor starts inside run argument %u's buffer, not "
                        "at a whole element",
                        tid, r);
        home = c->ranges[r];
    }
    for (int i = 0; i < t->tensor_count; i++)
        if (t->dirs[i] == SP_OUT)
            return fail(c, SP_EPREDICATE,
                        "task %llu: predicated, and tensor argument %d is SP_OUT: a skipped task "
                        "would leave it unset; pass an existing buffer as SP_OUT_EXISTING or "
                        "SP_INOUT",
                        tid, i);
    /* Row-major element `pred_index` of the view. */
    int64_t rest = t->pred_index, elem = x->offset;
    for (int d = x->ndim - 1; d >= 0; d--) {
        elem += (rest % x->shape[d]) * x->strides[d];
        rest /= x->shape[d];
    }
    p->op = t->pred_op;
    p->dtype = x->dtype;
    p->value = t->pred_value;
    p->addr = x->addr + (uint64_t)elem * sp_dtype_size(x->dtype);
    p->view = *x;
    rt_tensor_rehome(&p->view, &home);
    return SP_OK;
}

int rt_task_validate(const rt_task_check *c, uint64_t id, const sp_task *t, int32_t kernel[3])
{
    unsigned long long tid = (unsigned long long)id;
    if (!t)
        return fail(c, SP_EINVAL, "task %llu: NULL task", tid);
    if (t->overflow)
        return fail(c, SP_ETASK_ARGS,
                    "task %llu: more than %d tensors, %d scalars or %d "
                    "dependencies",
                    tid, SP_MAX_TASK_TENSORS, SP_MAX_TASK_SCALARS, SP_MAX_EXPLICIT_DEPS);
    if (t->tensor_count > SP_MAX_TASK_TENSORS || t->scalar_count > SP_MAX_TASK_SCALARS ||
        t->dep_count > SP_MAX_EXPLICIT_DEPS)
        return fail(c, SP_ETASK_ARGS, "task %llu: argument counts out of range", tid);
    uint32_t max_blocks = t->shape == SP_SHAPE_DUMMY ? 1 : SP_MAX_BLOCKS;
    if (t->block_num < 1 || t->block_num > max_blocks)
        return fail(c, SP_ETASK_ARGS, "task %llu: block_num %u out of range [1, %u]", tid,
                    t->block_num, max_blocks);
    /* Lanes: from the memo when this (shape, func_ids) resolved before. */
    rt_lane_memo local, *m = c->memo ? &c->memo[memo_slot(t)] : &local;
    if (!(c->memo && m->valid && m->shape == t->shape && m->func_id[0] == t->func_id[0] &&
          m->func_id[1] == t->func_id[1] && m->func_id[2] == t->func_id[2])) {
        int rc = lanes_resolve(c, id, t, m);
        if (rc) {
            m->valid = 0;
            return rc;
        }
    }
    int rc = SP_OK;
    memcpy(kernel, m->kernel, sizeof m->kernel);
    for (unsigned lanes = m->sig_lanes; lanes && rc == SP_OK; lanes &= lanes - 1) {
        int l = __builtin_ctz(lanes);
        if (!signature_fast_ok(m, l, t))
            rc = check_signature(c, id, t, kernel[l]);
    }
    for (int i = 0; rc == SP_OK && i < t->tensor_count; i++) {
        const sp_tensor *x = t->tensors[i];
        rt_range local_home, *home = c->home ? &c->home[i] : &local_home;
        if (c->view && view_known(c->view, x, t->dirs[i])) {
            *home = c->view->home;
            continue;
        }
        rc = check_tensor(c, id, i, x, t->dirs[i], home);
        if (rc == SP_OK && c->view && t->dirs[i] != SP_OUT)
            view_learn(c->view, x, home);
    }
    if (rc)
        return rc;
    rt_task_pred local_pred;
    if (rt_task_has_predicate(t) &&
        (rc = check_predicate(c, id, t, c->pred ? c->pred : &local_pred)) != SP_OK)
        return rc;
    for (int i = 0; i < t->dep_count; i++)
        if (t->deps[i] < 0 || (uint64_t)t->deps[i] >= id)
            return fail(c, SP_EDEP, "task %llu: explicit dependency %lld is not an earlier task",
                        tid, (long long)t->deps[i]);
    return SP_OK;
}
