/* The replay driver (tmr_replay.h). The same back-pressure, holds,
 * retirement and scope release as a submit, through the shared publish
 * half (tmr_orch.h); what a submit derives is read from the record. */
#include <string.h>

#include "common/wait.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_device.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_orch.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_replay.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

/* What a recorded address of `kind` (not TMR_ARG_OWN_OUT) is an offset
 * from in this run: a staged argument's base, a producer's output (its
 * creator pinned, so still in its slot), the heap, or nothing (ABS). */
static uint64_t resolve_base(tmr_ctl *c, uint8_t kind, uint16_t index, int64_t owner)
{
    switch (kind) {
    case TMR_ARG_RUN:
        return c->args.tensors[index].addr;
    case TMR_ARG_PRODUCED:
        return tmr_slot(c, owner)->tensors[index].addr;
    case TMR_ARG_STATIC:
        return c->heap_base;
    default: /* TMR_ARG_ABS: as recorded */
        return 0;
    }
}

static int replay_task(tmr_orch *o, const tmr_rec_task *e, uint64_t rz, bool traced)
{
    tmr_ctl *c = o->ctl;
    uint64_t t0 = traced ? sp__ticks() : 0;
    int64_t id = atomic_load_explicit(&c->submitted, memory_order_relaxed);
    const char *args = (const char *)(e + 1), *at = args;
    tmr_pins pins = {.n = 0};
    int rc;
    for (int i = 0; i < e->tensor_count; i++) {
        const tmr_rec_arg *a = (const tmr_rec_arg *)at;
        if (a->kind == TMR_ARG_PRODUCED && (rc = tmr_pin(o, &pins, id, i, a->owner_task)) != SP_OK)
            return rc;
        at += tmr_rec_arg_bytes(a->ndim);
    }
    const uint64_t *vals = (const uint64_t *)at;
    const uint16_t *src = (const uint16_t *)(vals + e->scalar_count);
    const uint64_t *dp =
        (const uint64_t *)((const char *)src + ((2ull * e->scalar_count + 7) & ~7ull));
    const tmr_rec_pred *pr = e->pred ? (const tmr_rec_pred *)(dp + e->dep_count) : NULL;
    /* The predicate's creator is read at pop: pinned as op_submit's pred_pin does. */
    if (pr && pr->owner != SP_NO_TASK &&
        (rc = tmr_pin(o, &pins, id, e->tensor_count, pr->owner)) != SP_OK)
        return rc;
    uint64_t heap_at;
    if ((rc = tmr_reserve(o, &pins, e->heap_need, 0, e->tensor_count, e->scalar_count, &heap_at)) !=
        SP_OK)
        return rc;
    tmr_task *t = tmr_slot(c, id);
    t->id = id;
    t->shape = e->shape;
    t->block_num = e->block_num;
    t->tensor_count = e->tensor_count;
    t->scalar_count = e->scalar_count;
    memcpy(t->kernel, e->kernel, sizeof t->kernel);
    t->check_mask = e->check_mask;
    t->pred_op = SP_PRED_NONE; /* a slot is reused: no stale predicate */
    t->pred_owner = SP_NO_TASK;
    if (pr) {
        t->pred_op = pr->op;
        t->pred_dtype = pr->dtype;
        t->pred_value = pr->value;
        t->pred_owner = pr->owner;
        t->pred_addr = pr->addr + resolve_base(c, pr->kind, pr->index, pr->owner);
    }
    t->heap_end = o->heap.head;
    t->heap_need = e->heap_need;
    uint64_t off = heap_at + rz;
    at = args;
    for (int i = 0; i < e->tensor_count; i++) {
        const tmr_rec_arg *a = (const tmr_rec_arg *)at;
        const int64_t *dims = (const int64_t *)(a + 1);
        sp_tensor *d = &t->tensors[i];
        memset(d, 0, sizeof *d);
        d->addr = a->addr;
        d->buf_bytes = a->buf_bytes;
        d->offset = a->offset;
        d->owner_task = a->owner_task;
        memcpy(d->shape, dims, 8u * a->ndim);
        memcpy(d->strides, dims + a->ndim, 8u * a->ndim);
        d->version = a->version;
        d->dtype = a->dtype;
        d->ndim = a->ndim;
        d->flags = a->flags;
        d->reserved = a->reserved;
        t->dirs[i] = a->dir;
        if (a->kind == TMR_ARG_OWN_OUT) {
            d->addr = c->heap_base + off;
            off += ALIGN64(d->buf_bytes) + rz;
            if (rz)
                rt_redzone_fill(d->addr, d->buf_bytes);
        } else {
            d->addr += resolve_base(c, a->kind, a->index, a->owner_task);
        }
        t->args[i] = (uint64_t)(uintptr_t)d;
        at += tmr_rec_arg_bytes(a->ndim);
    }
    for (int i = 0; i < e->scalar_count; i++) {
        uint32_t run = src[i] & 0xff;
        /* A run scalar is patched; shaping ones are equal by the key anyway. */
        t->args[e->tensor_count + i] = (src[i] & 0xff00) == 0x100 && run < c->args.scalar_count
                                           ? c->args.scalars[run]
                                           : vals[i];
    }
    rt_dep_list *deps = &o->deps;
    deps->count = e->dep_count;
    for (uint32_t i = 0; i < e->dep_count; i++) {
        deps->producer[i] = (int64_t)(dp[i] >> 8);
        deps->kind[i] = (uint8_t)(dp[i] & 0xff);
    }
    tmr_publish(o, t, deps, &pins, NULL);
    if (traced)
        rt_trace_phase(&o->trace, SP_TRACE_SUBMIT, (uint64_t)id, t0, sp__ticks());
    return SP_OK;
}

void tmr_replay_run(tmr_orch *o, const tmr_rec_header *h)
{
    tmr_ctl *c = o->ctl;
    const uint64_t rz = c->redzones ? SP_REDZONE_BYTES : 0;
    bool traced = o->trace.level >= SP_TRACE_SUBMITS;
    const char *p = (const char *)(h + 1), *end = p + h->stream_bytes;
    while (p < end && !tmr_orch_error(o)) {
        const tmr_rec_op *op = (const tmr_rec_op *)p;
        if (op->bytes < sizeof(uint64_t) || op->bytes > (uint64_t)(end - p)) {
            char msg[128];
            snprintf(msg, sizeof msg, "replay: the recorded stream is damaged at byte %llu",
                     (unsigned long long)(p - (const char *)(h + 1)));
            tmr_fail(c, SP_EBLOB, msg);
            return;
        }
        uint64_t top = 0;
        switch (op->kind) {
        case TMR_OP_TASK:
            if (replay_task(o, (const tmr_rec_task *)p, rz, traced) != SP_OK)
                return;
            break;
        case TMR_OP_SCOPE_BEGIN:
            if (tmr_scope_open(o, (int)op->a) != SP_OK)
                return;
            break;
        case TMR_OP_SCOPE_END:
            if (o->scope_depth)
                tmr_scope_close(o);
            break;
        case TMR_OP_REGION: /* its content is the recording's: only its room matters */
            if (tmr_static_carve(o, op->a, &top) != SP_OK)
                return;
            break;
        case TMR_OP_ALLOC:
            if (tmr_static_carve(o, op->a, &top) != SP_OK)
                return;
            if (rz)
                rt_redzone_fill(c->heap_base + top + rz, op->b);
            break;
        default:
            tmr_fail(c, SP_EBLOB, "replay: the recorded stream holds an unknown entry");
            return;
        }
        p += op->bytes;
    }
}
