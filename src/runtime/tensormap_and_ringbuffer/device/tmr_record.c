/* The recorder of tensormap_and_ringbuffer's submit stream (tmr_record.h):
 * the orchestrator appends each published task, scope event and static
 * allocation in the form a replay resolves. Runs on the orchestrator
 * thread only, only in a recorded run: it costs a fresh run nothing. */
#include <string.h>

#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_record.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

void tmr_record_begin(tmr_recorder *r, tmr_rec_header *h, uint32_t run_tensors)
{
    r->h = h;
    r->run_tensors = run_tensors;
    h->stream_bytes = 0;
    h->task_count = h->read_count = 0;
    h->abandoned = TMR_REC_OK;
    h->uid = 0;
    memset(h->written, 0, sizeof h->written);
}

void tmr_record_abandon(tmr_recorder *r, uint32_t why)
{
    if (r->h->abandoned == TMR_REC_OK)
        r->h->abandoned = why;
}

/* Room for `bytes` more, or NULL (the recording is abandoned). */
static char *take(tmr_recorder *r, uint64_t bytes)
{
    tmr_rec_header *h = r->h;
    if (h->abandoned)
        return NULL;
    if (bytes > h->stream_cap - h->stream_bytes) {
        tmr_record_abandon(r, TMR_REC_FULL);
        return NULL;
    }
    char *p = tmr_rec_stream(h) + h->stream_bytes;
    h->stream_bytes += bytes;
    return p;
}

void tmr_record_op(tmr_recorder *r, uint32_t kind, uint64_t a, uint64_t b)
{
    tmr_rec_op *op = (tmr_rec_op *)take(r, sizeof *op);
    if (op)
        *op = (tmr_rec_op){.kind = kind, .bytes = sizeof *op, .a = a, .b = b};
}

static bool dir_writes(uint8_t kind_dir)
{
    return kind_dir == SP_INOUT || kind_dir == SP_OUT_EXISTING || kind_dir == SP_OUT;
}

/* The symbolic form of argument i of task `t`: its kind, index and the
 * address relative to what the kind names. False: none. */
static bool classify(tmr_recorder *r, tmr_orch *o, const tmr_task *t, int i, tmr_rec_arg *a)
{
    const sp_tensor *d = &t->tensors[i];
    tmr_ctl *c = o->ctl;
    a->index = 0;
    a->addr = d->addr;
    if (d->flags & SP_TENSOR_RUNTIME_OWNED) {
        if (d->owner_task == t->id) {
            a->kind = TMR_ARG_OWN_OUT;
            a->addr = 0;
            return true;
        }
        if (d->owner_task == SP_NO_TASK) {
            a->kind = TMR_ARG_STATIC;
            a->addr = d->addr - c->heap_base;
            return d->addr >= c->heap_base && d->addr < c->heap_base + c->heap_bytes;
        }
        /* An output of an earlier task, pinned so still in its slot. */
        const tmr_task *p = tmr_slot(c, d->owner_task);
        if (p->id != d->owner_task)
            return false;
        for (int k = 0; k < p->tensor_count; k++) {
            const sp_tensor *x = &p->tensors[k];
            if (x->owner_task == p->id && (x->flags & SP_TENSOR_RUNTIME_OWNED) &&
                d->addr >= x->addr && d->addr < x->addr + x->buf_bytes) {
                a->kind = TMR_ARG_PRODUCED;
                a->index = (uint16_t)k;
                a->addr = d->addr - x->addr;
                return true;
            }
        }
        return false;
    }
    for (uint32_t j = 0; j < r->run_tensors; j++)
        if (rt_range_holds(&o->ranges[j], d->addr, d->buf_bytes)) {
            a->kind = TMR_ARG_RUN;
            a->index = (uint16_t)j;
            a->addr = d->addr - o->ranges[j].dev;
            return true;
        }
    if (rt_range_holds(&o->check.heap, d->addr, d->buf_bytes))
        return false; /* heap memory with no owner: nothing to resolve it by */
    a->kind = TMR_ARG_ABS;
    return true;
}

/* The symbolic form of task `t`'s predicate element (t->pred_addr, which
 * validation placed in a staged argument or the heap): a runtime-owned
 * creator's output (the creator is pinned, so still in its slot), an
 * sp_alloc_tensor buffer (the heap's static end), or a staged argument.
 * False: none (heap memory no task or allocation owns). */
static bool classify_pred(tmr_recorder *r, tmr_orch *o, const tmr_task *t, tmr_rec_pred *p)
{
    tmr_ctl *c = o->ctl;
    uint64_t x = t->pred_addr, es = sp_dtype_size(t->pred_dtype);
    *p = (tmr_rec_pred){.op = t->pred_op,
                        .dtype = t->pred_dtype,
                        .owner = t->pred_owner,
                        .addr = x,
                        .value = t->pred_value};
    if (t->pred_owner != SP_NO_TASK) {
        const tmr_task *q = tmr_slot(c, t->pred_owner);
        if (q->id != t->pred_owner)
            return false;
        for (int k = 0; k < q->tensor_count; k++) {
            const sp_tensor *y = &q->tensors[k];
            if (y->owner_task == q->id && (y->flags & SP_TENSOR_RUNTIME_OWNED) && x >= y->addr &&
                x + es <= y->addr + y->buf_bytes) {
                p->kind = TMR_ARG_PRODUCED;
                p->index = (uint16_t)k;
                p->addr = x - y->addr;
                return true;
            }
        }
        return false;
    }
    if (x >= c->heap_base && x + es <= c->heap_base + c->heap_bytes) {
        /* No creator: an sp_alloc_tensor buffer, carved below the heap's end. */
        p->kind = TMR_ARG_STATIC;
        p->addr = x - c->heap_base;
        return p->addr >= o->static_top;
    }
    for (uint32_t j = 0; j < r->run_tensors; j++)
        if (rt_range_holds(&o->ranges[j], x, es)) {
            p->kind = TMR_ARG_RUN;
            p->index = (uint16_t)j;
            p->addr = x - o->ranges[j].dev;
            return true;
        }
    p->kind = TMR_ARG_ABS;
    return true;
}

void tmr_record_task(tmr_recorder *r, tmr_orch *o, const tmr_task *t, const rt_dep_list *deps,
                     const uint16_t *scalar_src)
{
    uint64_t arg_bytes = 0;
    for (int i = 0; i < t->tensor_count; i++)
        arg_bytes += tmr_rec_arg_bytes(t->tensors[i].ndim);
    bool pred = t->pred_op != SP_PRED_NONE;
    uint64_t bytes = tmr_rec_task_bytes(arg_bytes, t->scalar_count, deps->count, pred);
    char *p = take(r, bytes);
    if (!p)
        return;
    tmr_rec_task *e = (tmr_rec_task *)p;
    *e = (tmr_rec_task){
        .kind = TMR_OP_TASK,
        .bytes = (uint32_t)bytes,
        .shape = t->shape,
        .tensor_count = t->tensor_count,
        .scalar_count = t->scalar_count,
        .pred = pred,
        .block_num = t->block_num,
        .dep_count = deps->count,
        .check_mask = t->check_mask,
        .heap_need = t->heap_need,
    };
    memcpy(e->kernel, t->kernel, sizeof e->kernel);
    char *at = (char *)(e + 1);
    for (int i = 0; i < t->tensor_count; i++) {
        const sp_tensor *d = &t->tensors[i];
        tmr_rec_arg *a = (tmr_rec_arg *)at;
        *a = (tmr_rec_arg){
            .dir = t->dirs[i],
            .ndim = d->ndim,
            .dtype = d->dtype,
            .flags = d->flags,
            .owner_task = d->owner_task,
            .buf_bytes = d->buf_bytes,
            .offset = d->offset,
            .version = d->version,
            .reserved = d->reserved,
        };
        if (!classify(r, o, t, i, a)) {
            tmr_record_abandon(r, TMR_REC_UNRESOLVED);
            return;
        }
        int64_t *dims = (int64_t *)(a + 1);
        memcpy(dims, d->shape, 8u * d->ndim);
        memcpy(dims + d->ndim, d->strides, 8u * d->ndim);
        at += tmr_rec_arg_bytes(d->ndim);
        /* A task that writes a staged argument: later control reads of
         * it see this run's data, which no replay check could vouch for. */
        if (a->kind == TMR_ARG_RUN && a->index < SP_MAX_RUN_TENSORS && dir_writes(t->dirs[i]))
            r->h->written[a->index / 64] |= 1ull << (a->index % 64);
    }
    uint64_t *vals = (uint64_t *)at;
    uint16_t *src = (uint16_t *)(vals + t->scalar_count);
    for (int i = 0; i < t->scalar_count; i++) {
        vals[i] = t->args[t->tensor_count + i];
        src[i] = scalar_src ? scalar_src[i] : SP_SCALAR_LITERAL;
        /* A graph task resolves its graph scalars before they get here: one
         * that arrives may be a run scalar passed on, unpatchable. */
        if ((src[i] & 0xff00) == 0x200) {
            tmr_record_abandon(r, TMR_REC_GRAPH_SCALAR);
            return;
        }
    }
    uint64_t *dp = (uint64_t *)((char *)src + ((2ull * t->scalar_count + 7) & ~7ull));
    for (uint32_t i = 0; i < deps->count; i++)
        dp[i] = ((uint64_t)deps->producer[i] << 8) | deps->kind[i];
    if (pred && !classify_pred(r, o, t, (tmr_rec_pred *)(dp + deps->count))) {
        tmr_record_abandon(r, TMR_REC_UNRESOLVED);
        return;
    }
    r->h->task_count++;
}

void tmr_record_read(tmr_recorder *r, int arg, uint64_t off, uint32_t bytes, const void *v)
{
    tmr_rec_header *h = r->h;
    if (h->abandoned)
        return;
    if (arg < 0 || (h->written[arg / 64] >> (arg % 64)) & 1) {
        tmr_record_abandon(r, TMR_REC_READ_PRODUCED);
        return;
    }
    if (h->read_count >= TMR_REC_MAX_READS) {
        tmr_record_abandon(r, TMR_REC_READS_FULL);
        return;
    }
    tmr_rec_read *rd = &tmr_rec_reads(h)[h->read_count++];
    rd->arg = (uint32_t)arg;
    rd->bytes = bytes;
    rd->byte_off = off;
    rd->value = 0;
    memcpy(&rd->value, v, bytes <= 8 ? bytes : 8);
}
