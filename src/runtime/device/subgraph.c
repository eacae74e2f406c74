/* Graph tasks: the recording proxy, the records and their instantiation
 * (subgraph.h). A record is one block of the region: a header, the
 * boundary geometry it was made for, the op stream (tasks, scopes, inner
 * allocations, in submission order) and the instance's inner tensors
 * (filled as an instance runs). While the body runs, the inner tensors
 * found so far sit at the region's top, growing down. */
#include "runtime/device/subgraph.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define ALIGN8(x) (((x) + 7) & ~(uint64_t)7)

enum { SG_READY = 1, SG_FALLBACK = 2 };
enum { OP_TASK = 1, OP_SCOPE_BEGIN = 2, OP_SCOPE_END = 3, OP_ALLOC = 4 };
/* Where a template argument comes from. */
enum {
    ARG_ABS = 0,   /* kept as it is */
    ARG_BOUND = 1, /* a view of boundary tensor `index`'s buffer; view.offset is the delta */
    ARG_SLOT = 2,  /* a view of inner tensor `index`; view.offset is the delta */
    ARG_FRESH = 3, /* an output the runtime allocates, kept as inner tensor `index` */
};

typedef struct sg_geom {
    int64_t shape[SP_MAX_DIMS];
    int64_t strides[SP_MAX_DIMS];
    uint64_t buf_bytes;
    /* Boundary views of one buffer that overlap: the first such earlier
     * one, + 1 (0: none), and how far apart they start. An argument lying
     * in both is then recorded against one of them, which stays right
     * only while they keep that distance. */
    int64_t overlap_delta;
    uint8_t dtype, ndim, alias; /* alias: the first boundary tensor on the same buffer */
    uint8_t overlap;
    uint8_t pad[4];
} sg_geom;

typedef struct sg_record {
    uint64_t key;
    uint32_t next; /* next record of the bucket, offset + 1 */
    uint32_t bytes;
    uint8_t state, scope_mode;
    uint16_t tensor_count, scalar_count, pad;
    uint32_t task_count, slot_count;
    uint64_t ops_off, ops_bytes, slots_off; /* from the record's start */
    /* sg_geom geom[tensor_count] follows */
} sg_record;

typedef struct sg_op {
    uint16_t kind;
    uint16_t arg; /* OP_SCOPE_BEGIN: the mode; OP_ALLOC: the inner tensor */
    uint32_t bytes;
} sg_op;

typedef struct sg_arg {
    uint8_t dir, kind;
    uint16_t pad;
    uint32_t index;
    sp_tensor view;
} sg_arg;

typedef struct sg_task {
    sg_op h;
    uint8_t shape, tensor_count, scalar_count, outer_deps, inner_deps, abi, pred_op, pad;
    uint32_t block_num;
    int32_t func_id[SP_LANES];
    int64_t pred_index, pred_value;
    sg_arg pred;
    /* sg_arg args[tensor_count]; uint64_t scalars[scalar_count];
     * int64_t outer[outer_deps]; uint32_t inner[inner_deps] (relative);
     * uint16_t scalar_src[scalar_count] */
} sg_task;

typedef struct sg_alloc {
    sg_op h;
    sp_tensor spec;
} sg_alloc;

/* An inner tensor found while recording (at the region's top). */
typedef struct sg_slot {
    uint64_t addr, buf_bytes;
    int64_t creator;      /* the inner task that made it, SP_NO_TASK: sp_alloc_tensor */
    int64_t first_access; /* first task after its creator to access it, -1: none yet */
} sg_slot;

/* The recording proxy: o->ops points at `ops` while the body runs. */
typedef struct sg_recorder {
    sp_orch_ops ops; /* first */
    const sp_orch_ops *prev;
    rt_subgraph *sg;
    const sp_graph_args *a;
    uint64_t rec_off; /* the record being written */
    uint64_t end;     /* its op stream ends here */
    uint64_t top;     /* inner tensors below mem + bytes */
    uint32_t slot_count, task_count;
    int64_t first;        /* the id the first inner task gets */
    bool full;            /* the region is full: the record is given up */
    const char *fallback; /* why the key runs its body every time, NULL: recordable */
} sg_recorder;

static uint32_t bucket_of(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (uint32_t)(key % RT_SUBGRAPH_BUCKETS);
}

void rt_subgraph_init(rt_subgraph *sg, const rt_subgraph_hooks *hooks, void *mem, uint64_t bytes)
{
    memset(sg, 0, sizeof *sg);
    sg->hooks = hooks;
    /* Records hold int64 fields: the region starts 8-aligned. */
    uintptr_t p = (uintptr_t)mem, q = (p + 7) & ~(uintptr_t)7;
    sg->mem = mem ? (unsigned char *)q : NULL;
    sg->bytes = mem && bytes > q - p ? (bytes - (q - p)) & ~(uint64_t)7 : 0;
    sg->inner_first = -1;
}

void rt_subgraph_note(const rt_subgraph *sg, char *msg, size_t len)
{
    if (!sg || !sg->depth || !msg || !len)
        return;
    size_t n = strnlen(msg, len);
    if (n + 1 < len)
        snprintf(msg + n, len - n, " (in graph task key %llu)", (unsigned long long)sg->key);
}

static int sg_fail(rt_subgraph *sg, sp_orch *o, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int sg_fail(rt_subgraph *sg, sp_orch *o, int status, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sg->hooks->fail(o, status, msg);
}

/* ---- geometry ------------------------------------------------------------ */

static void geom_of(const sp_graph_args *a, uint32_t b, sg_geom *g)
{
    const sp_tensor *t = &a->tensors[b];
    memset(g, 0, sizeof *g);
    for (int d = 0; d < t->ndim && d < SP_MAX_DIMS; d++) {
        g->shape[d] = t->shape[d];
        g->strides[d] = t->strides[d];
    }
    g->buf_bytes = t->buf_bytes;
    g->dtype = t->dtype;
    g->ndim = t->ndim;
    g->alias = (uint8_t)b;
    for (uint32_t k = 0; k < b; k++)
        if (a->tensors[k].addr == t->addr) {
            g->alias = (uint8_t)k;
            break;
        }
    uint64_t lo, hi, klo, khi;
    if (g->alias == b || sp_tensor_byte_extent(t, &lo, &hi) != SP_OK)
        return;
    for (uint32_t k = g->alias; k < b; k++) {
        const sp_tensor *u = &a->tensors[k];
        if (u->addr == t->addr && sp_tensor_byte_extent(u, &klo, &khi) == SP_OK && klo < hi &&
            lo < khi) {
            g->overlap = (uint8_t)(k + 1);
            g->overlap_delta = t->offset - u->offset;
            return;
        }
    }
}

static const sg_geom *geoms(const sg_record *r)
{
    return (const sg_geom *)(const void *)(r + 1);
}

static bool record_matches(const sg_record *r, uint64_t key, int mode, const sp_graph_args *a)
{
    if (r->key != key || r->scope_mode != mode || r->tensor_count != a->tensor_count ||
        r->scalar_count != a->scalar_count)
        return false;
    const sg_geom *g = geoms(r);
    for (uint32_t b = 0; b < a->tensor_count; b++) {
        sg_geom now;
        geom_of(a, b, &now);
        if (memcmp(&now, &g[b], sizeof now) != 0)
            return false;
    }
    return true;
}

static sg_record *find_record(rt_subgraph *sg, uint64_t key, int mode, const sp_graph_args *a)
{
    for (uint32_t at = sg->buckets[bucket_of(key)]; at;) {
        sg_record *r = (sg_record *)(void *)(sg->mem + at - 1);
        if (record_matches(r, key, mode, a))
            return r;
        at = r->next;
    }
    return NULL;
}

/* Check a's counts, tensors and scalar sources; 0 or SP_EGRAPH_TASK (failed). */
static int check_args(rt_subgraph *sg, sp_orch *o, sp_graph_fn fn, const sp_graph_args *a,
                      uint64_t key)
{
    if (!fn)
        return sg_fail(sg, o, SP_EGRAPH_TASK, "graph task key %llu: NULL body",
                       (unsigned long long)key);
    if (!a)
        return sg_fail(sg, o, SP_EGRAPH_TASK, "graph task key %llu: NULL arguments",
                       (unsigned long long)key);
    if (a->tensor_count > SP_MAX_GRAPH_TENSORS)
        return sg_fail(sg, o, SP_EGRAPH_TASK,
                       "graph task key %llu: %u boundary tensors, the limit is %d",
                       (unsigned long long)key, a->tensor_count, SP_MAX_GRAPH_TENSORS);
    if (a->scalar_count > SP_MAX_GRAPH_SCALARS)
        return sg_fail(sg, o, SP_EGRAPH_TASK, "graph task key %llu: %u scalars, the limit is %d",
                       (unsigned long long)key, a->scalar_count, SP_MAX_GRAPH_SCALARS);
    for (uint32_t b = 0; b < a->tensor_count; b++)
        if (!sp_tensor_is_valid(&a->tensors[b]))
            return sg_fail(sg, o, SP_EGRAPH_TASK,
                           "graph task key %llu: boundary tensor %u is malformed (dtype, shape, "
                           "strides or offset outside its %llu-byte buffer)",
                           (unsigned long long)key, b, (unsigned long long)a->tensors[b].buf_bytes);
    for (uint32_t i = 0; i < a->scalar_count; i++) {
        uint16_t s = a->scalar_src[i];
        if (s != SP_SCALAR_LITERAL && !((s & 0xff00) == 0x100 && (s & 0xff) < SP_MAX_RUN_SCALARS))
            return sg_fail(sg, o, SP_EGRAPH_TASK,
                           "graph task key %llu: scalar %u has source 0x%x (a literal or "
                           "SP_SCALAR_RUN(i) of an existing run scalar expected)",
                           (unsigned long long)key, i, s);
    }
    return SP_OK;
}

/* ---- recording ------------------------------------------------------------- */

static sg_recorder *rec_of(sp_orch *o)
{
    return (sg_recorder *)(uintptr_t)o->ops;
}

/* Room for `n` more bytes of op stream; false (and the record given up) if not. */
static void *rec_take(sg_recorder *r, uint64_t n)
{
    if (r->full || n > r->top || r->end > r->top - n) {
        r->full = true;
        return NULL;
    }
    void *p = r->sg->mem + r->end;
    memset(p, 0, n);
    r->end += n;
    return p;
}

static sg_slot *slot_at(const sg_recorder *r, uint32_t s)
{
    return (sg_slot *)(void *)(r->sg->mem + r->sg->bytes - (uint64_t)(s + 1) * sizeof(sg_slot));
}

static int64_t rec_add_slot(sg_recorder *r, const sp_tensor *t, int64_t creator)
{
    if (r->full || r->top < r->end + sizeof(sg_slot)) {
        r->full = true;
        return -1;
    }
    r->top -= sizeof(sg_slot);
    sg_slot *s = slot_at(r, r->slot_count);
    *s = (sg_slot){
        .addr = t->addr, .buf_bytes = t->buf_bytes, .creator = creator, .first_access = -1};
    return r->slot_count++;
}

/* Where a task's (non-fresh) tensor comes from: boundary (the first
 * boundary view of its buffer that holds it), inner or absolute. */
static void classify(sg_recorder *r, const sp_tensor *x, sg_arg *out)
{
    out->view = *x;
    out->kind = ARG_ABS;
    out->index = 0;
    const sp_graph_args *a = r->a;
    uint64_t lo = 0, hi = 0, blo, bhi;
    bool on_boundary = false, ext = sp_tensor_byte_extent(x, &lo, &hi) == SP_OK;
    for (uint32_t b = 0; b < a->tensor_count; b++)
        if (a->tensors[b].addr == x->addr && a->tensors[b].buf_bytes == x->buf_bytes) {
            if (!ext || sp_tensor_byte_extent(&a->tensors[b], &blo, &bhi) != SP_OK || lo < blo ||
                hi > bhi)
                continue;
            out->kind = ARG_BOUND;
            out->index = b;
            out->view.offset = x->offset - a->tensors[b].offset;
            return;
        }
    /* Anything else that reaches into a boundary's buffer, or an inner
     * one, would name this call's memory in every later instance. */
    for (uint32_t b = 0; b < a->tensor_count && !on_boundary; b++)
        on_boundary =
            x->addr >= a->tensors[b].addr && x->addr - a->tensors[b].addr < a->tensors[b].buf_bytes;
    if (on_boundary && !r->fallback)
        r->fallback = "a task's view of a boundary buffer lies outside every boundary view";
    for (uint32_t s = 0; s < r->slot_count; s++) {
        const sg_slot *sl = slot_at(r, s);
        if (sl->addr == x->addr && sl->buf_bytes == x->buf_bytes) {
            out->kind = ARG_SLOT;
            out->index = s;
            return; /* inner tensors start at offset 0: the offset is the delta */
        }
        if (x->addr >= sl->addr && x->addr - sl->addr < sl->buf_bytes && !r->fallback)
            r->fallback = "a task's view reaches into an inner tensor other than as its view";
    }
}

static bool dir_writes(uint8_t dir)
{
    return dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
}

static sg_arg *task_args(sg_task *t)
{
    return (sg_arg *)(void *)(t + 1);
}

static uint64_t *task_scalars(sg_task *t)
{
    return (uint64_t *)(void *)(task_args(t) + t->tensor_count);
}

static int64_t *task_outer(sg_task *t)
{
    return (int64_t *)(void *)(task_scalars(t) + t->scalar_count);
}

static uint32_t *task_inner(sg_task *t)
{
    return (uint32_t *)(void *)(task_outer(t) + t->outer_deps);
}

static uint16_t *task_src(sg_task *t)
{
    return (uint16_t *)(void *)(task_inner(t) + t->inner_deps);
}

static uint64_t task_bytes(uint32_t tensors, uint32_t scalars, uint32_t outer, uint32_t inner)
{
    return ALIGN8(sizeof(sg_task) + tensors * sizeof(sg_arg) + scalars * 8 + outer * 8 + inner * 4 +
                  scalars * 2);
}

/* Template `j` of the stream [ops, ops + bytes), or NULL. */
static sg_task *template_at(unsigned char *ops, uint64_t bytes, uint32_t j)
{
    for (uint64_t at = 0; at < bytes;) {
        sg_op *h = (sg_op *)(void *)(ops + at);
        if (h->kind == OP_TASK && j-- == 0)
            return (sg_task *)h;
        at += h->bytes;
    }
    return NULL;
}

/* The inner tensor a template argument names, or -1. */
static int64_t arg_slot(const sg_arg *g)
{
    return g->kind == ARG_SLOT || g->kind == ARG_FRESH ? (int64_t)g->index : -1;
}

/* Do templates p and (args, n) touch one inner tensor, one of them writing?
 * Then an edge between them can come from it and must be kept; any other
 * edge between them came from boundary or absolute tensors, which an
 * instance derives again (their views may overlap differently then). */
static bool share_inner(sg_task *p, const sg_arg *args, uint32_t n)
{
    const sg_arg *pa = task_args(p);
    for (uint32_t i = 0; i < p->tensor_count; i++) {
        int64_t s = arg_slot(&pa[i]);
        if (s < 0)
            continue;
        for (uint32_t k = 0; k < n; k++)
            if (arg_slot(&args[k]) == s && (dir_writes(pa[i].dir) || dir_writes(args[k].dir)))
                return true;
    }
    /* p's predicate reads an inner tensor that (args, n) writes. */
    if (p->pred_op != SP_PRED_NONE && p->pred.kind == ARG_SLOT)
        for (uint32_t k = 0; k < n; k++)
            if (arg_slot(&args[k]) == (int64_t)p->pred.index && dir_writes(args[k].dir))
                return true;
    return false;
}

static int64_t r_submit(sp_orch *o, sp_task *t)
{
    sg_recorder *r = rec_of(o);
    rt_subgraph *sg = r->sg;
    const sp_graph_args *a = r->a;
    /* An ABI-1 task ends at `deps`: copy no more than it has. */
    sp_task fw;
    bool v2 = t->abi >= 2;
    memcpy(&fw, t, v2 ? sizeof fw : offsetof(sp_task, scalar_src));
    if (!v2) {
        fw.pred_op = SP_PRED_NONE;
        fw.pred_tensor = NULL;
        for (int i = 0; i < SP_MAX_TASK_SCALARS; i++)
            fw.scalar_src[i] = SP_SCALAR_LITERAL;
    }
    /* A graph scalar reaches the runtime as what it is in a: a literal or
     * a run scalar passed on. */
    for (uint32_t i = 0; v2 && i < fw.scalar_count && i < SP_MAX_TASK_SCALARS; i++)
        if ((fw.scalar_src[i] & 0xff00) == 0x200) {
            uint32_t g = fw.scalar_src[i] & 0xff;
            if (g >= a->scalar_count) {
                o->ops = r->prev;
                sg_fail(sg, o, SP_EGRAPH_TASK,
                        "task scalar %u: SP_SCALAR_GRAPH(%u) past the graph task's %u scalars", i,
                        g, a->scalar_count);
                o->ops = &r->ops;
                return SP_EGRAPH_TASK;
            }
            fw.scalar_src[i] = a->scalar_src[g];
        }
    /* Classify before the submit: it fills the fresh outputs. */
    sg_arg args[SP_MAX_TASK_TENSORS + 1], pred; /* + a predicate's inner read */
    uint32_t n = fw.tensor_count <= SP_MAX_TASK_TENSORS ? fw.tensor_count : 0;
    memset(args, 0, n * sizeof *args);
    for (uint32_t i = 0; i < n; i++) {
        args[i].dir = fw.dirs[i];
        if (fw.dirs[i] == SP_OUT) {
            args[i].kind = ARG_FRESH;
            args[i].index = UINT32_MAX; /* its inner tensor once submitted */
        } else if (fw.tensors[i])
            classify(r, fw.tensors[i], &args[i]);
    }
    memset(&pred, 0, sizeof pred);
    if (fw.pred_op != SP_PRED_NONE && fw.pred_tensor)
        classify(r, fw.pred_tensor, &pred);

    /* A predicate on an inner tensor is one more read of it: past the
     * arguments in args[], for the inner edges and the ring check. */
    const uint32_t pred_inner = pred.kind == ARG_SLOT;
    if (pred_inner) {
        args[n] = pred;
        args[n].dir = SP_IN;
    }

    o->ops = r->prev;
    int64_t id = r->prev->submit(o, &fw);
    int64_t got[SP_MAX_PRODUCERS];
    uint32_t nd = id >= 0 ? sg->hooks->derived(o, id, got, SP_MAX_PRODUCERS) : 0;
    int64_t live = id >= 0 ? sg->hooks->live_below(o) : 0;
    o->ops = &r->ops;
    if (id < 0)
        return id; /* the run has failed: the record goes with it */
    if (r->fallback)
        return id;
    if (id != r->first + r->task_count) {
        r->fallback = "its tasks' ids are not consecutive";
        return id;
    }
    if (nd > SP_MAX_PRODUCERS) {
        r->fallback = "a task has more producers than a recording holds";
        return id;
    }
    /* Inner edges: those an instance cannot derive again. */
    uint32_t inner[SP_MAX_EXPLICIT_DEPS], ninner = 0;
    int64_t outer[SP_MAX_EXPLICIT_DEPS];
    uint32_t nouter = 0;
    for (int i = 0; i < fw.dep_count && i < SP_MAX_EXPLICIT_DEPS; i++)
        if (fw.deps[i] < r->first)
            outer[nouter++] = fw.deps[i];
    unsigned char *ops = sg->mem + r->rec_off;
    sg_record *rec = (sg_record *)(void *)ops;
    for (uint32_t k = 0; k < nd; k++) {
        int64_t p = got[k];
        if (p < r->first || p >= id)
            continue;
        bool keep = false;
        for (int i = 0; i < fw.dep_count && !keep; i++)
            keep = fw.deps[i] == p;
        if (!keep) {
            sg_task *pt = template_at(ops + rec->ops_off, r->end - r->rec_off - rec->ops_off,
                                      (uint32_t)(p - r->first));
            keep = pt && share_inner(pt, args, n + pred_inner);
        }
        if (!keep)
            continue;
        if (ninner + nouter >= SP_MAX_EXPLICIT_DEPS) {
            r->fallback = "a task has more inner producers than SP_MAX_EXPLICIT_DEPS";
            return id;
        }
        inner[ninner++] = (uint32_t)(p - r->first);
    }
    /* On a ring, an inner task retired before a later one touched the
     * same inner tensor: its edge was never derived, so the record would
     * miss it. */
    for (uint32_t i = 0; i < n + pred_inner; i++) {
        if (args[i].kind != ARG_SLOT)
            continue;
        sg_slot *s = slot_at(r, args[i].index);
        if (s->first_access >= 0 && s->first_access < live) {
            r->fallback = "an inner task retired before a later task reached its tensor";
            return id;
        }
        if (s->first_access < 0)
            s->first_access = id;
    }
    /* The fresh outputs become inner tensors. */
    for (uint32_t i = 0; i < n; i++)
        if (args[i].kind == ARG_FRESH) {
            int64_t s = rec_add_slot(r, fw.tensors[i], id);
            if (s < 0)
                return id;
            args[i].index = (uint32_t)s;
            sp_tensor spec =
                sp_tensor_spec(fw.tensors[i]->dtype, fw.tensors[i]->ndim, fw.tensors[i]->shape);
            args[i].view = spec;
        }
    sg_task *tt = rec_take(r, task_bytes(n, fw.scalar_count, nouter, ninner));
    if (!tt)
        return id;
    tt->h =
        (sg_op){.kind = OP_TASK, .bytes = (uint32_t)task_bytes(n, fw.scalar_count, nouter, ninner)};
    tt->shape = fw.shape;
    tt->tensor_count = (uint8_t)n;
    tt->scalar_count = fw.scalar_count;
    tt->outer_deps = (uint8_t)nouter;
    tt->inner_deps = (uint8_t)ninner;
    tt->abi = t->abi;
    tt->pred_op = fw.pred_op;
    tt->block_num = fw.block_num;
    memcpy(tt->func_id, fw.func_id, sizeof tt->func_id);
    tt->pred_index = fw.pred_index;
    tt->pred_value = fw.pred_value;
    tt->pred = pred;
    memcpy(task_args(tt), args, n * sizeof *args);
    /* The template keeps graph scalars as graph scalars: t's sources. */
    for (uint32_t i = 0; i < fw.scalar_count; i++) {
        task_scalars(tt)[i] = fw.scalars[i];
        task_src(tt)[i] = v2 ? t->scalar_src[i] : SP_SCALAR_LITERAL;
    }
    memcpy(task_outer(tt), outer, nouter * sizeof *outer);
    memcpy(task_inner(tt), inner, ninner * sizeof *inner);
    r->task_count++;
    return id;
}

static int r_alloc_tensor(sp_orch *o, sp_tensor *t)
{
    sg_recorder *r = rec_of(o);
    o->ops = r->prev;
    int rc = r->prev->alloc_tensor(o, t);
    o->ops = &r->ops;
    if (rc || r->fallback)
        return rc;
    sp_tensor spec = sp_tensor_spec(t->dtype, t->ndim, t->shape);
    int64_t s = rec_add_slot(r, t, SP_NO_TASK);
    sg_alloc *op = s < 0 ? NULL : rec_take(r, sizeof(sg_alloc));
    if (op) {
        op->h = (sg_op){.kind = OP_ALLOC, .arg = (uint16_t)s, .bytes = sizeof(sg_alloc)};
        op->spec = spec;
    }
    if (s > UINT16_MAX)
        r->fallback = "more inner allocations than a record holds";
    return rc;
}

static void rec_op(sg_recorder *r, uint16_t kind, uint16_t arg)
{
    if (r->fallback)
        return;
    sg_op *op = rec_take(r, ALIGN8(sizeof(sg_op)));
    if (op)
        *op = (sg_op){.kind = kind, .arg = arg, .bytes = (uint32_t)ALIGN8(sizeof(sg_op))};
}

static int r_scope_begin(sp_orch *o, int mode)
{
    sg_recorder *r = rec_of(o);
    o->ops = r->prev;
    int rc = r->prev->scope_begin(o, mode);
    o->ops = &r->ops;
    if (rc == SP_OK)
        rec_op(r, OP_SCOPE_BEGIN, (uint16_t)mode);
    return rc;
}

static int r_scope_end(sp_orch *o)
{
    sg_recorder *r = rec_of(o);
    o->ops = r->prev;
    int rc = r->prev->scope_end(o);
    o->ops = &r->ops;
    if (rc == SP_OK)
        rec_op(r, OP_SCOPE_END, 0);
    return rc;
}

/* A body that reads or writes control elements may submit something else
 * next time: it is not recorded. */
static int r_tensor_read(sp_orch *o, const sp_tensor *t, int64_t index, void *out)
{
    sg_recorder *r = rec_of(o);
    r->fallback = "its body reads a control tensor";
    o->ops = r->prev;
    int rc = r->prev->tensor_read(o, t, index, out);
    o->ops = &r->ops;
    return rc;
}

static int r_tensor_write(sp_orch *o, const sp_tensor *t, int64_t index, const void *v)
{
    sg_recorder *r = rec_of(o);
    r->fallback = "its body writes a control tensor";
    o->ops = r->prev;
    int rc = r->prev->tensor_write(o, t, index, v);
    o->ops = &r->ops;
    return rc;
}

static void r_log(sp_orch *o, int level, const char *msg)
{
    sg_recorder *r = rec_of(o);
    o->ops = r->prev;
    r->prev->log(o, level, msg);
    o->ops = &r->ops;
}

static void r_fatal(sp_orch *o, int status, const char *msg)
{
    sg_recorder *r = rec_of(o);
    o->ops = r->prev;
    r->prev->fatal(o, status, msg);
    o->ops = &r->ops;
}

static int r_error(sp_orch *o)
{
    sg_recorder *r = rec_of(o);
    o->ops = r->prev;
    int rc = r->prev->error(o);
    o->ops = &r->ops;
    return rc;
}

/* A graph task inside a body being recorded: its scalars' sources are the
 * inner a's, not the outer one's; it runs one by one and the outer key is
 * not recorded. */
static int64_t r_submit_graph(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a, uint64_t key)
{
    sg_recorder *r = rec_of(o);
    r->fallback = "its body submits a graph task";
    o->ops = r->prev;
    int rc = check_args(r->sg, o, fn, a, key);
    o->ops = &r->ops;
    if (rc)
        return rc;
    int64_t before = r->sg->hooks->next_id(o);
    fn(o, a);
    rc = r_error(o);
    return rc ? rc : r->sg->hooks->next_id(o) - before;
}

static const sp_orch_ops recorder_ops = {
    .abi_version = SP_ORCH_ABI_VERSION,
    .submit = r_submit,
    .alloc_tensor = r_alloc_tensor,
    .scope_begin = r_scope_begin,
    .scope_end = r_scope_end,
    .tensor_read = r_tensor_read,
    .tensor_write = r_tensor_write,
    .log = r_log,
    .fatal = r_fatal,
    .error = r_error,
    .submit_graph = r_submit_graph,
};

/* Commit the record (or a fallback marker) at r->rec_off. */
static void commit(rt_subgraph *sg, sg_recorder *r, uint64_t key, int mode, const sp_graph_args *a)
{
    sg_record *rec = (sg_record *)(void *)(sg->mem + r->rec_off);
    uint64_t slots_off = ALIGN8(r->end - r->rec_off);
    uint64_t slot_bytes = (uint64_t)r->slot_count * sizeof(sp_tensor);
    uint64_t total = slots_off + slot_bytes;
    if (!r->fallback && (r->full || r->rec_off + total > sg->bytes))
        r->fallback = "its record does not fit the region";
    if (r->fallback) {
        SP_DEBUG("graph task key %llu runs its body one by one: %s", (unsigned long long)key,
                 r->fallback);
        rec->state = SG_FALLBACK;
        rec->ops_bytes = 0;
        total = rec->ops_off;
    } else {
        rec->state = SG_READY;
        rec->ops_bytes = r->end - r->rec_off - rec->ops_off;
        rec->slots_off = slots_off;
        SP_DEBUG("graph task key %llu recorded: %u tasks, %llu bytes of the %llu-byte region",
                 (unsigned long long)key, r->task_count, (unsigned long long)total,
                 (unsigned long long)sg->bytes);
    }
    rec->key = key;
    rec->scope_mode = (uint8_t)mode;
    rec->tensor_count = (uint16_t)a->tensor_count;
    rec->scalar_count = (uint16_t)a->scalar_count;
    rec->task_count = r->task_count;
    rec->slot_count = r->slot_count;
    rec->bytes = (uint32_t)total;
    uint32_t b = bucket_of(key);
    rec->next = sg->buckets[b];
    sg->buckets[b] = (uint32_t)(r->rec_off + 1);
    sg->used = r->rec_off + ALIGN8(total);
}

/* The body, called: returns the number of tasks it submitted. */
static int64_t one_by_one(rt_subgraph *sg, sp_orch *o, sp_graph_fn fn, const sp_graph_args *a)
{
    int64_t before = sg->hooks->next_id(o);
    fn(o, a);
    int rc = o->ops->error(o);
    return rc ? rc : sg->hooks->next_id(o) - before;
}

/* First call: run the body through the recorder. */
static int64_t record(rt_subgraph *sg, sp_orch *o, sp_graph_fn fn, const sp_graph_args *a,
                      uint64_t key, int mode)
{
    uint64_t head = sizeof(sg_record) + (uint64_t)a->tensor_count * sizeof(sg_geom);
    bool room = sg->used + head <= sg->bytes && sg->bytes - sg->used - head >= sizeof(sg_task) &&
                sg->used + head < UINT32_MAX;
    if (!room) {
        SP_DEBUG("graph task key %llu runs its body one by one: the %llu-byte record region is "
                 "full",
                 (unsigned long long)key, (unsigned long long)sg->bytes);
        return one_by_one(sg, o, fn, a);
    }
    sg_recorder r = {
        .ops = recorder_ops,
        .prev = o->ops,
        .sg = sg,
        .a = a,
        .rec_off = sg->used,
        .end = sg->used + head,
        .top = sg->bytes,
        .first = sg->hooks->next_id(o),
    };
    sg_record *rec = (sg_record *)(void *)(sg->mem + sg->used);
    memset(rec, 0, head);
    rec->ops_off = head;
    sg_geom *g = (sg_geom *)(void *)(rec + 1);
    for (uint32_t b = 0; b < a->tensor_count; b++)
        geom_of(a, b, &g[b]);
    o->ops = &r.ops;
    fn(o, a);
    o->ops = r.prev;
    int rc = o->ops->error(o);
    if (rc)
        return rc; /* nothing of a failed record is kept */
    commit(sg, &r, key, mode, a);
    return sg->hooks->next_id(o) - r.first;
}

/* Later calls: submit the templates over a. */
static int64_t instantiate(rt_subgraph *sg, sp_orch *o, sg_record *rec, const sp_graph_args *a)
{
    unsigned char *ops = (unsigned char *)rec + rec->ops_off;
    sp_tensor *slots = (sp_tensor *)(void *)((unsigned char *)rec + rec->slots_off);
    sp_tensor views[SP_MAX_TASK_TENSORS], pview;
    const int64_t first = sg->hooks->next_id(o);
    uint32_t j = 0;
    sg->inner_first = first;
    int64_t result = 0;
    for (uint64_t at = 0; at < rec->ops_bytes && result >= 0;) {
        sg_op *h = (sg_op *)(void *)(ops + at);
        at += h->bytes;
        if (h->kind == OP_SCOPE_BEGIN) {
            int rc = o->ops->scope_begin(o, h->arg);
            result = rc ? rc : result;
            continue;
        }
        if (h->kind == OP_SCOPE_END) {
            int rc = o->ops->scope_end(o);
            result = rc ? rc : result;
            continue;
        }
        if (h->kind == OP_ALLOC) {
            slots[h->arg] = ((sg_alloc *)h)->spec;
            int rc = o->ops->alloc_tensor(o, &slots[h->arg]);
            result = rc ? rc : result;
            continue;
        }
        sg_task *tt = (sg_task *)h;
        sp_task t = sp_task_make((sp_task_shape)tt->shape);
        t.block_num = tt->block_num;
        memcpy(t.func_id, tt->func_id, sizeof t.func_id);
        const sg_arg *args = task_args(tt);
        for (uint32_t i = 0; i < tt->tensor_count; i++) {
            const sg_arg *g = &args[i];
            sp_tensor *x = &views[i];
            uint8_t dir = g->dir;
            if (g->kind == ARG_FRESH) {
                slots[g->index] = g->view;
                x = &slots[g->index];
            } else if (g->kind == ARG_BOUND) {
                const sp_tensor *bt = &a->tensors[g->index];
                *x = g->view;
                x->addr = bt->addr;
                x->buf_bytes = bt->buf_bytes;
                x->offset = bt->offset + g->view.offset;
                x->owner_task = bt->owner_task;
                x->flags = bt->flags;
                x->version = bt->version;
            } else if (g->kind == ARG_SLOT) {
                const sp_tensor *st = &slots[g->index];
                *x = g->view;
                x->addr = st->addr;
                x->buf_bytes = st->buf_bytes;
                x->owner_task = st->owner_task;
                x->flags = st->flags;
                x->version = st->version;
                dir = SP_NO_DEP; /* its edges are the recorded ones */
            } else {
                *x = g->view;
            }
            sp_task_arg(&t, x, (sp_dir)dir);
        }
        const uint64_t *sc = task_scalars(tt);
        const uint16_t *src = task_src(tt);
        for (uint32_t i = 0; i < tt->scalar_count; i++) {
            uint16_t s = src[i];
            if ((s & 0xff00) == 0x200) {
                sp_task_scalar(&t, a->scalars[s & 0xff]);
                t.scalar_src[i] = a->scalar_src[s & 0xff];
            } else {
                sp_task_scalar(&t, sc[i]);
                t.scalar_src[i] = s;
            }
        }
        const int64_t *outer = task_outer(tt);
        for (uint32_t i = 0; i < tt->outer_deps; i++)
            sp_task_dep(&t, outer[i]);
        const uint32_t *inner = task_inner(tt);
        for (uint32_t i = 0; i < tt->inner_deps; i++)
            sp_task_dep(&t, first + inner[i]);
        if (tt->pred_op != SP_PRED_NONE) {
            const sg_arg *g = &tt->pred;
            pview = g->view;
            if (g->kind == ARG_BOUND) {
                const sp_tensor *bt = &a->tensors[g->index];
                pview.addr = bt->addr;
                pview.buf_bytes = bt->buf_bytes;
                pview.offset = bt->offset + g->view.offset;
                pview.owner_task = bt->owner_task;
                pview.flags = bt->flags;
                pview.version = bt->version;
            } else if (g->kind == ARG_SLOT) {
                /* An inner tensor: its writer's edge is a recorded one. */
                const sp_tensor *st = &slots[g->index];
                pview.addr = st->addr;
                pview.buf_bytes = st->buf_bytes;
                pview.owner_task = st->owner_task;
                pview.flags = st->flags;
                pview.version = st->version;
            }
            sp_task_predicate(&t, &pview, tt->pred_index, (sp_pred_op)tt->pred_op, tt->pred_value);
        }
        t.abi = tt->abi;
        int64_t id = o->ops->submit(o, &t);
        if (id < 0) {
            result = id;
            break;
        }
        if (id != first + j)
            result = sg_fail(sg, o, SP_EGRAPH_TASK,
                             "graph task instance: task %lld submitted as inner task %u of an "
                             "instance that began at %lld",
                             (long long)id, j, (long long)first);
        j++;
    }
    sg->inner_first = -1;
    return result < 0 ? result : j;
}

int64_t rt_subgraph_submit(rt_subgraph *sg, sp_orch *o, sp_graph_fn fn, const sp_graph_args *a,
                           uint64_t key)
{
    int rc = o->ops->error(o);
    if (rc)
        return rc;
    if ((rc = check_args(sg, o, fn, a, key)) != SP_OK)
        return rc;
    uint64_t outer_key = sg->key;
    sg->key = key;
    sg->depth++;
    int mode = sg->hooks->scope_mode(o);
    sg_record *rec = sg->mem ? find_record(sg, key, mode, a) : NULL;
    int64_t n;
    if (rec && rec->state == SG_READY) {
        n = instantiate(sg, o, rec, a);
    } else if (rec || !sg->mem) {
        n = one_by_one(sg, o, fn, a); /* marked one by one, or no region */
    } else {
        n = record(sg, o, fn, a, key, mode);
    }
    sg->depth--;
    sg->key = outer_key;
    return n;
}
