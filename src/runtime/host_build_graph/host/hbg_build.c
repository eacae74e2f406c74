/* host_build_graph's orchestration ops: validate each submit, allocate its
 * outputs from the bank's heap, derive its producers and append it. The
 * flat arrays live in the caller's store and keep their size from one build
 * to the next (doubling when a graph outgrows them), so a submit in steady
 * state allocates nothing, and writes its tensor descriptors straight into
 * the image's staging. */
#include "runtime/host_build_graph/host/hbg_build.h"

#include "runtime/device/orch_fatal.h"
#include "runtime/device/orch_ops.h"
#include "runtime/device/task_check.h"
#include "runtime/host/redzone.h"
#include "runtime/host_build_graph/host/hbg_replay.h"

#include <stdarg.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define HBG_MAX_TASKS (1u << 30) /* what the image's 32-bit indices allow */

/* Host bytes the graph's store holds now (the arrays that grow with it). */
static uint64_t store_bytes(const hbg_graph *g)
{
    static const int grown[] = {HBG_STORE_IMAGE, HBG_STORE_TASKS, HBG_STORE_DEPS, HBG_STORE_ARGS,
                                HBG_STORE_MAP};
    uint64_t sum = 0;
    for (size_t i = 0; i < sizeof grown / sizeof grown[0]; i++)
        sum += g->store[grown[i]].cap;
    return sum;
}

/* May store buffer `s` grow to `bytes`? The graph limit counts every array. */
static bool within_budget(const hbg_graph *g, const rt_host_scratch *s, uint64_t bytes)
{
    uint64_t others = store_bytes(g) - (s ? s->cap : 0);
    return bytes <= g->max_bytes && others <= g->max_bytes - bytes;
}

int hbg_graph_fail(hbg_graph *g, int status, const char *fmt, ...)
{
    if (g->error)
        return status;
    g->error = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->message, sizeof g->message, fmt, ap);
    va_end(ap);
    rt_subgraph_note(&g->subgraph, g->message, sizeof g->message);
    return status;
}

/* sp_orch is single-threaded. A call from a thread other than the entry's
 * is refused before it touches anything (two threads building one graph
 * garble it) and counted; the entry's thread turns the count into the
 * build's error at its next call or when the entry returns. One
 * pthread_self() (a register read) and one relaxed load per call. */
static void foreign_fail(hbg_graph *g)
{
    /* Relaxed: the count only needs to be seen eventually (at the latest
     * after the entry joined the thread that made the calls). */
    const char *op = atomic_load_explicit(&g->foreign_op, memory_order_relaxed);
    hbg_graph_fail(g, SP_EORCH_THREAD,
                   "sp_orch %s called from a thread other than the orchestration's (%u call(s) "
                   "refused): sp_orch is single-threaded",
                   op ? op : "op", atomic_load_explicit(&g->foreign_calls, memory_order_relaxed));
}

static bool refuse_foreign(hbg_graph *g, const char *op)
{
    if (pthread_equal(pthread_self(), g->owner)) {
        /* Relaxed: see foreign_fail. */
        if (atomic_load_explicit(&g->foreign_calls, memory_order_relaxed))
            foreign_fail(g);
        return false;
    }
    const char *none = NULL;
    atomic_compare_exchange_strong_explicit(&g->foreign_op, &none, op, memory_order_relaxed,
                                            memory_order_relaxed);
    atomic_fetch_add_explicit(&g->foreign_calls, 1, memory_order_relaxed);
    return true;
}

/* Huge pages for the big arrays: a store grows (and its pages are first
 * touched) in the build of a slot's first run, where 4 KiB faults over a
 * 10^5-task graph's tens of MB cost more than deriving its edges. A huge
 * page is zeroed whole, however little of it is used: the map, whose pools
 * are touched only as far as they are used, takes them only when big. */
#define HBG_HUGE_MAP ((size_t)8 << 20)

/* Make room for `need` more elements of `elem` bytes after `used` in the
 * array *p at byte `at` of store buffer `s` (its contents kept), capacity
 * *cap elements. Doubling: in steady state the store is big enough. */
static int grow_at(hbg_graph *g, rt_host_scratch *s, size_t at, void **p, uint64_t *cap,
                   uint64_t used, uint64_t need, size_t elem)
{
    if (used + need <= *cap)
        return SP_OK;
    uint64_t n = *cap ? *cap : 64;
    while (n < used + need)
        n *= 2;
    if (n > (SIZE_MAX - at) / elem)
        return SP_ENOMEM;
    if (!within_budget(g, s, at + n * elem))
        return SP_EGRAPH_LIMIT;
    int rc = rt_host_scratch_grow(s, at + n * elem, at + used * elem, SP_HOST_SCRATCH_HUGE_PAGE);
    if (rc)
        return rc;
    *p = (char *)s->ptr + at;
    *cap = (s->cap - at) / elem;
    return SP_OK;
}

static int grow(hbg_graph *g, rt_host_scratch *s, void **p, uint64_t *cap, uint64_t used,
                uint64_t need, size_t elem)
{
    return grow_at(g, s, 0, p, cap, used, need, elem);
}

static int grow32(hbg_graph *g, rt_host_scratch *s, size_t at, void **p, uint32_t *cap,
                  uint32_t used, uint32_t need, size_t elem)
{
    uint64_t c = *cap;
    int rc = grow_at(g, s, at, p, &c, used, need, elem);
    if (rc == SP_OK && c > UINT32_MAX)
        return SP_EGRAPH_LIMIT; /* *p is valid; *cap stays what the counts can index */
    *cap = (uint32_t)c;
    return rc;
}

/* A TensorMap of `entries` laid out in store buffer `s`, grown if need be
 * (the contents are not kept: the map is moved or fresh). */
static int map_in_store(rt_host_scratch *s, rt_tensormap *map, uint32_t entries)
{
    int rc = rt_host_scratch_grow(s, rt_tensormap_bytes(entries), 0, HBG_HUGE_MAP);
    return rc ? rc : rt_tensormap_init(map, s->ptr, s->cap, entries);
}

static int map_reserve(hbg_graph *g, uint32_t need)
{
    if (g->map.capacity - g->map.used >= need)
        return SP_OK;
    uint32_t n = g->map.capacity * 2;
    while (n - g->map.used < need)
        n *= 2;
    if (!within_budget(g, &g->store[HBG_STORE_MAP], rt_tensormap_bytes(n)))
        return SP_EGRAPH_LIMIT;
    rt_host_scratch spare = {0};
    rt_tensormap bigger;
    int rc = map_in_store(&spare, &bigger, n);
    if (rc == SP_OK)
        rc = rt_tensormap_move(&bigger, &g->map);
    if (rc) {
        free(spare.ptr);
        return rc;
    }
    free(g->store[HBG_STORE_MAP].ptr);
    g->store[HBG_STORE_MAP] = spare;
    g->map = bigger;
    return SP_OK;
}

/* The most heap a measuring build counts (1 PiB): past it, it fails at once. */
#define HBG_HEAP_MEASURE_MAX (1ull << 50)

static int heap_alloc(hbg_graph *g, uint64_t bytes, uint64_t *dev_out)
{
    /* Checking mode: a red zone before the buffer, one after it. */
    const uint64_t rz = g->redzones ? SP_REDZONE_BYTES : 0;
    uint64_t off = ((g->heap_used + 63) & ~63ull) + rz;
    if (bytes > g->heap_bytes || off > g->heap_bytes - bytes ||
        (rz && ((off + bytes + 63) & ~63ull) + rz > g->heap_bytes)) {
        /* Past the heap: measure (heap_auto) up to a bound no device has. */
        if (!g->heap_auto || bytes > HBG_HEAP_MEASURE_MAX || off > HBG_HEAP_MEASURE_MAX - bytes)
            return SP_EDEVMEM;
        g->heap_short = true;
        g->heap_used = rz ? ((off + bytes + 63) & ~63ull) + rz : off + bytes;
        /* Validation takes these addresses as the heap's: the graph is
         * measured, never launched. */
        g->check.heap.bytes = g->heap_used;
        *dev_out = g->heap_base + off;
        return SP_OK;
    }
    g->heap_used = off + bytes;
    *dev_out = g->heap_base + off;
    if (rz) {
        /* Nothing runs during the build: the zones stay as filled here. */
        uint64_t end = *dev_out + bytes;
        int rc = sp_host_memset(g->api, *dev_out - rz, SP_REDZONE_FILL, rz);
        if (rc == SP_OK)
            rc = sp_host_memset(g->api, end, SP_REDZONE_FILL,
                                rt_redzone_after_end(*dev_out, bytes) - end);
        if (rc)
            return rc;
    }
    return SP_OK;
}

/* The staged buffer holding all of [addr, addr + bytes), or NULL. */
static const hbg_buffer *find_buffer(const hbg_graph *g, uint64_t addr, uint64_t bytes)
{
    for (uint32_t i = 0; i < g->buffer_count; i++)
        if (rt_range_holds(&g->ranges[i], addr, bytes))
            return &g->buffers[i];
    return NULL;
}

/* Checking mode: whether a task argument's home is a device-resident run
 * argument (no red zones); only for written arguments in that mode. */
static bool home_is_device(const hbg_graph *g, const rt_range *home)
{
    for (uint32_t i = 0; i < g->buffer_count; i++)
        if (g->ranges[i].dev == home->dev && g->ranges[i].bytes == home->bytes)
            return g->buffers[i].device;
    return false;
}

static bool in_heap(const hbg_graph *g, uint64_t addr, uint64_t bytes)
{
    rt_range heap = {.dev = g->heap_base, .bytes = g->heap_bytes};
    return rt_range_holds(&heap, addr, bytes);
}

static int scope_mode(const hbg_graph *g)
{
    return g->scope_depth ? g->scope_mode[g->scope_depth - 1] : SP_SCOPE_AUTO;
}

static int alloc_output(hbg_graph *g, sp_tensor *x, int64_t owner)
{
    int64_t shape[SP_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    int dtype = x->dtype, ndim = x->ndim;
    uint64_t dev;
    uint64_t bytes = (uint64_t)sp_tensor_numel(x) * sp_dtype_size(dtype);
    int rc = heap_alloc(g, bytes, &dev);
    if (rc)
        return rc;
    rc = sp_tensor_init(x, dev, dtype, ndim, shape);
    x->owner_task = owner;
    x->flags |= SP_TENSOR_RUNTIME_OWNED;
    return rc;
}

/* A store that could not grow: the graph limit, or the host's memory. */
static int grow_fail(hbg_graph *g, int rc, uint32_t id)
{
    if (rc == SP_EGRAPH_LIMIT)
        return hbg_graph_fail(g, rc,
                              "task %u: the graph's host arrays would grow past %llu bytes "
                              "(sp_call_config.graph_bytes; they hold %llu)",
                              id, (unsigned long long)g->max_bytes,
                              (unsigned long long)store_bytes(g));
    return hbg_graph_fail(g, rc, "task %u: out of host memory building the graph", id);
}

/* The slow half of a submit's room check: grow what is short. */
static int reserve_task(hbg_graph *g, uint32_t nargs, uint32_t ntensors, uint32_t naccess)
{
    rt_host_scratch *st = g->store;
    int rc;
    if ((rc = grow32(g, &st[HBG_STORE_TASKS], 0, (void **)&g->tasks, &g->task_cap, g->task_count, 1,
                     sizeof *g->tasks)) ||
        (rc = grow(g, &st[HBG_STORE_ARGS], (void **)&g->args, &g->arg_cap, g->arg_count, nargs,
                   sizeof *g->args)) ||
        (rc = grow32(g, &st[HBG_STORE_IMAGE], HBG_IMAGE_TENSORS_OFF, (void **)&g->tensors,
                     &g->tensor_cap, g->tensor_count, ntensors, sizeof *g->tensors)))
        return rc;
    return map_reserve(g, naccess);
}

static int64_t op_submit(sp_orch *o, sp_task *t)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "submit"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    uint32_t id = g->task_count;
    if (id >= g->max_tasks)
        return hbg_graph_fail(g, SP_EGRAPH_LIMIT,
                              "task %u: the graph exceeds %u tasks (sp_call_config.graph_tasks)",
                              id, g->max_tasks);
    int32_t kernel[3];
    int rc = rt_task_validate(&g->check, id, t, kernel);
    if (rc)
        return hbg_graph_fail(g, rc, "%s", g->check_msg);

    /* A predicate: its words before the arguments, its read a TensorMap access. */
    const bool predicated = rt_task_has_predicate(t);
    const uint32_t ntensors = t->tensor_count,
                   nargs = ntensors + t->scalar_count + (predicated ? HBG_PRED_WORDS : 0);
    const uint32_t naccess = ntensors + predicated;
    if ((id >= g->task_cap || g->arg_count + nargs > g->arg_cap ||
         g->tensor_count + ntensors > g->tensor_cap || g->map.capacity - g->map.used < naccess) &&
        (rc = reserve_task(g, nargs, ntensors, naccess)) != SP_OK)
        return grow_fail(g, rc, id);

    rt_dep_list *deps = &g->scratch;
    deps->count = 0;
    for (int i = 0; i < t->dep_count && rc == SP_OK; i++)
        rc = rt_dep_list_add(deps, t->deps[i], id, SP_EDGE_EXPLICIT);
    const bool manual = scope_mode(g) == SP_SCOPE_MANUAL;
    const uint32_t first = g->tensor_count;
    uint64_t *args = &g->args[g->arg_count];
    if (predicated) {
        args[0] = g->pred.addr;
        args[1] = (uint64_t)g->pred.value;
        args += HBG_PRED_WORDS;
    }
    uint32_t check_mask = 0;
    for (uint32_t i = 0; i < ntensors && rc == SP_OK; i++) {
        sp_tensor *x = t->tensors[i];
        if (t->dirs[i] == SP_OUT && (rc = alloc_output(g, x, id)) != SP_OK) {
            hbg_graph_fail(g, rc,
                           "task %u: output %u (%llu bytes) does not fit the %llu-byte heap "
                           "(sp_call_config.heap_bytes; 0 sizes it from the graph)",
                           id, i, (unsigned long long)x->buf_bytes,
                           (unsigned long long)g->heap_bytes);
            return rc;
        }
        /* The kernel and the TensorMap see the argument at its buffer's
         * base (a view starting inside a staged buffer is rehomed). */
        sp_tensor *d = &g->tensors[first + i];
        *d = *x;
        rt_tensor_rehome(d, &g->home[i]);
        /* A manual scope records accesses (later auto tasks see them) but
         * keeps only the explicit edges. */
        if (!rt_subgraph_skips_map(&g->subgraph, t->dirs[i]))
            rc = rt_tensormap_access(&g->map, id, d, t->dirs[i], manual, deps);
        args[i] = first + i;
        /* Red zones surround staged buffers and runtime-owned heap ones;
         * a device-resident argument (SP_TENSOR_DEVICE) has none. */
        if (g->redzones && rt_redzone_dir_written(t->dirs[i]) &&
            ((g->home[i].bytes && !home_is_device(g, &g->home[i])) ||
             ((d->flags & SP_TENSOR_RUNTIME_OWNED) && in_heap(g, d->addr, d->buf_bytes))))
            check_mask |= 1u << i;
    }
    /* The predicate's element is read: the task waits for its writers. */
    if (rc == SP_OK && predicated)
        rc = rt_tensormap_access(&g->map, id, &g->pred.view, SP_IN, manual, deps);
    if (rc)
        return hbg_graph_fail(g, rc, "task %u: more than %d producers", id, SP_MAX_PRODUCERS);
    rt_subgraph_drop_inner_creators(&g->subgraph, deps);
    if (g->map.used > g->map_peak)
        g->map_peak = g->map.used;
    const uint32_t ndeps = deps->count;
    if (g->dep_count + ndeps > g->dep_cap &&
        (rc = grow(g, &g->store[HBG_STORE_DEPS], (void **)&g->deps, &g->dep_cap, g->dep_count,
                   ndeps, sizeof *g->deps)) != SP_OK)
        return grow_fail(g, rc, id);
    hbg_dep *out = &g->deps[g->dep_count];
    for (uint32_t i = 0; i < ndeps; i++) {
        uint32_t p = (uint32_t)deps->producer[i];
        out[i] = (hbg_dep){.producer = p, .kind = deps->kind[i]};
        g->tasks[p].fanout_count++;
    }
    for (uint32_t i = 0; i < t->scalar_count; i++)
        args[ntensors + i] = t->scalars[i];
    /* The scalars' words start past the predicate's (args was moved there). */
    if (g->rec &&
        (rc = hbg_recording_note_task(g->rec, t, (uint64_t)(args - g->args) + ntensors)) != SP_OK)
        return grow_fail(g, rc, id);

    g->tasks[id] = (hbg_build_task){
        .shape = t->shape,
        .tensor_count = (uint8_t)ntensors,
        .scalar_count = t->scalar_count,
        .block_num = t->block_num,
        .kernel = {kernel[0], kernel[1], kernel[2]},
        .args_begin = (uint32_t)(g->arg_count + (predicated ? HBG_PRED_WORDS : 0)),
        .dep_count = ndeps,
        .deps_begin = g->dep_count,
        .check_mask = check_mask,
        .pred_op = predicated ? g->pred.op : SP_PRED_NONE,
        .pred_dtype = predicated ? g->pred.dtype : 0,
    };
    g->pred_tasks += predicated;
    g->queue_blocks[rt_queue_of_shape(t->shape)] += t->block_num;
    g->arg_count += nargs;
    g->tensor_count += ntensors;
    g->dep_count += ndeps;
    g->task_count = id + 1;
    return id;
}

static int op_alloc_tensor(sp_orch *o, sp_tensor *t)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "alloc_tensor"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    if (!t || !sp_dtype_size(t->dtype) || sp_tensor_numel(t) == 0)
        return hbg_graph_fail(g, SP_ESHAPE, "alloc_tensor: bad dtype or shape");
    int rc = alloc_output(g, t, SP_NO_TASK);
    if (rc)
        return hbg_graph_fail(g, rc, "alloc_tensor: %llu bytes do not fit the %llu-byte heap",
                              (unsigned long long)t->buf_bytes, (unsigned long long)g->heap_bytes);
    return SP_OK;
}

static int op_scope_begin(sp_orch *o, int mode)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "scope_begin"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    if (mode != SP_SCOPE_AUTO && mode != SP_SCOPE_MANUAL)
        return hbg_graph_fail(g, SP_EINVAL, "scope_begin: unknown mode %d", mode);
    if (g->scope_depth >= HBG_MAX_SCOPE_DEPTH)
        return hbg_graph_fail(g, SP_ESCOPE, "scope_begin: deeper than %d", HBG_MAX_SCOPE_DEPTH);
    g->scope_mode[g->scope_depth++] = (uint8_t)mode;
    return SP_OK;
}

static int op_scope_end(sp_orch *o)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "scope_end"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    if (g->scope_depth == 0)
        return hbg_graph_fail(g, SP_ESCOPE, "scope_end without a scope_begin");
    g->scope_depth--;
    return SP_OK;
}

/* Shared checks of tensor_read / tensor_write: the element's buffer and
 * offset. On hbg nothing runs while the graph is built, so the element must
 * not be one a submitted task writes (read) or touches at all (write). */
static int control_element(hbg_graph *g, const sp_tensor *t, int64_t index, bool write,
                           const hbg_buffer **buf, uint64_t *off)
{
    const char *what = write ? "tensor_write" : "tensor_read";
    if (!t)
        return hbg_graph_fail(g, SP_EINVAL, "%s: NULL tensor", what);
    if (sp_tensor_element_offset(t, index, off) != SP_OK)
        return hbg_graph_fail(g, SP_ESHAPE, "%s: element %lld outside the view", what,
                              (long long)index);
    *buf = find_buffer(g, t->addr, t->buf_bytes);
    if (!*buf && g->heap_short && t->addr >= g->heap_base &&
        t->addr - g->heap_base < g->heap_used && !in_heap(g, t->addr, t->buf_bytes))
        return hbg_graph_fail(g, SP_EDEVMEM,
                              "%s: the tensor lies past the %llu-byte heap, which the graph's "
                              "outputs outgrew",
                              what, (unsigned long long)g->heap_bytes);
    if (!*buf) {
        if (!in_heap(g, t->addr, t->buf_bytes))
            return hbg_graph_fail(g, SP_EBOUNDS,
                                  "%s: tensor 0x%llx is in no device buffer of this run", what,
                                  (unsigned long long)t->addr);
        /* A runtime-allocated tensor: reached by copies into the heap. */
        g->heap_buffer = (hbg_buffer){.dev = g->heap_base, .bytes = g->heap_bytes};
        *buf = &g->heap_buffer;
    }
    uint64_t es = sp_tensor_elem_size(t);
    /* Tasks' accesses to a staged buffer are keyed on its base (rehomed),
     * so look there; a heap tensor keeps its own address. */
    bool staged = *buf != &g->heap_buffer;
    uint64_t key = staged ? (*buf)->dev : t->addr, at = *off + (staged ? t->addr - key : 0);
    if (rt_tensormap_touched(&g->map, key, at, at + es, !write))
        return hbg_graph_fail(g, SP_ESTATE,
                              "%s: element %lld is %s by a submitted task; host_build_graph runs "
                              "tasks only after the build, so access it before submitting them",
                              what, (long long)index, write ? "accessed" : "written");
    *off += t->addr - (*buf)->dev;
    return SP_OK;
}

static int op_tensor_read(sp_orch *o, const sp_tensor *t, int64_t index, void *out)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "tensor_read"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    const hbg_buffer *b;
    uint64_t off;
    int rc = control_element(g, t, index, false, &b, &off);
    if (rc)
        return rc;
    if (!out)
        return hbg_graph_fail(g, SP_EINVAL, "tensor_read: NULL destination");
    size_t es = sp_tensor_elem_size(t);
    if (b->host_map)
        memcpy(out, (const char *)b->host_map + off, es);
    else if ((rc = sp_host_copy_from_device(g->api, out, b->dev + off, es)) != SP_OK)
        return hbg_graph_fail(g, rc, "tensor_read: copy from device failed");
    /* Replay: a recorded graph is valid while this element reads the same. */
    if (g->rec && hbg_recording_note_read(g->rec, b == &g->heap_buffer ? -1 : (int)(b - g->buffers),
                                          off, out, es) != SP_OK)
        return hbg_graph_fail(g, SP_ENOMEM, "tensor_read: out of host memory recording it");
    return SP_OK;
}

static int op_tensor_write(sp_orch *o, const sp_tensor *t, int64_t index, const void *v)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "tensor_write"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    const hbg_buffer *b;
    uint64_t off;
    int rc = control_element(g, t, index, true, &b, &off);
    if (rc)
        return rc;
    if (!v)
        return hbg_graph_fail(g, SP_EINVAL, "tensor_write: NULL value");
    g->control_writes++;
    size_t es = sp_tensor_elem_size(t);
    if (b->host_map) {
        memcpy((char *)b->host_map + off, v, es);
        return SP_OK;
    }
    rc = sp_host_copy_to_device(g->api, b->dev + off, v, es);
    return rc ? hbg_graph_fail(g, rc, "tensor_write: copy to device failed") : SP_OK;
}

static void op_fatal(sp_orch *o, int status, const char *msg)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "fatal"))
        return;
    hbg_graph_fail(g, rt_orch_fatal_status(status), "orchestration fatal: %s",
                   msg ? msg : "(no message)");
}

static int op_error(sp_orch *o)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "error"))
        return SP_EORCH_THREAD;
    return g->error;
}

/* ---- graph tasks (runtime/device/subgraph) -------------------------------- */

static uint32_t sg_derived(sp_orch *o, int64_t id, int64_t *out, uint32_t max)
{
    const hbg_graph *g = (const hbg_graph *)o;
    const hbg_build_task *t = &g->tasks[id];
    for (uint32_t i = 0; i < t->dep_count && i < max; i++)
        out[i] = g->deps[t->deps_begin + i].producer;
    return t->dep_count;
}

static int64_t sg_next_id(sp_orch *o)
{
    return ((const hbg_graph *)o)->task_count;
}

static int64_t sg_live_below(sp_orch *o)
{
    (void)o;
    return 0; /* the whole graph is kept: every edge is derived */
}

static int sg_scope_mode(sp_orch *o)
{
    return scope_mode((const hbg_graph *)o);
}

static int sg_fail(sp_orch *o, int status, const char *msg)
{
    return hbg_graph_fail((hbg_graph *)o, status, "%s", msg);
}

static const rt_subgraph_hooks hbg_subgraph_hooks = {
    .derived = sg_derived,
    .next_id = sg_next_id,
    .live_below = sg_live_below,
    .scope_mode = sg_scope_mode,
    .fail = sg_fail,
};

/* Host bytes for one build's graph-task records (the store keeps them). */
#define HBG_GRAPH_RECORD_BYTES ((size_t)4 << 20)

static int64_t op_submit_graph(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a, uint64_t key)
{
    hbg_graph *g = (hbg_graph *)o;
    if (refuse_foreign(g, "submit_graph"))
        return SP_EORCH_THREAD;
    if (g->error)
        return g->error;
    /* The region on the first graph task: a build without one costs nothing;
     * without room, every graph task runs its body one by one. */
    rt_host_scratch *rs = &g->store[HBG_STORE_GRAPHS];
    if (!g->subgraph.mem && rt_host_scratch_reserve(rs, HBG_GRAPH_RECORD_BYTES) == SP_OK)
        rt_subgraph_init(&g->subgraph, &hbg_subgraph_hooks, rs->ptr, rs->cap);
    return rt_subgraph_submit(&g->subgraph, o, fn, a, key);
}

static const sp_orch_ops hbg_orch_ops = RT_ORCH_OPS(op, op_submit, rt_orch_log);

int hbg_graph_init(hbg_graph *g, const sp_host_api *api, const rt_loaded_callable *lc,
                   uint64_t heap_base, uint64_t heap_bytes, const hbg_buffer *buffers,
                   uint32_t buffer_count, rt_host_scratch *store)
{
    memset(g, 0, sizeof *g);
    g->orch.ops = &hbg_orch_ops;
    g->owner = pthread_self(); /* the entry runs on the thread that builds */
    g->api = api;
    g->callable = lc;
    g->heap_base = heap_base;
    g->heap_bytes = heap_bytes;
    g->buffers = buffers;
    g->buffer_count = buffer_count;
    rt_subgraph_init(&g->subgraph, &hbg_subgraph_hooks, NULL, 0);
    for (uint32_t i = 0; i < buffer_count && i < SP_MAX_RUN_TENSORS; i++)
        g->ranges[i] = (rt_range){.dev = buffers[i].dev, .bytes = buffers[i].bytes};
    /* Validation reads the callable as device code does (the same table
     * tmr's orchestrator gets), laid out in the store, read where it lies. */
    rt_host_scratch *dcs = &(store ? store : g->own_store)[HBG_STORE_CALLABLE];
    if (rt_host_scratch_reserve(dcs, rt_dev_callable_bytes(lc)) != SP_OK)
        return SP_ENOMEM;
    g->check = (rt_task_check){
        .callable = rt_dev_callable_write(lc, dcs->ptr, (uint64_t)(uintptr_t)dcs->ptr),
        .ranges = g->ranges,
        .range_count = buffer_count,
        .heap = {.dev = heap_base, .bytes = heap_bytes},
        .msg = g->check_msg,
        .msg_len = sizeof g->check_msg,
        .memo = g->memo,
        .view = &g->view,
        .home = g->home,
        .pred = &g->pred,
    };

    /* The arrays start where the last build left them: same capacity, warm. */
    g->store = store ? store : g->own_store;
    rt_host_scratch *st = g->store;
    g->max_tasks = SP_DEFAULT_GRAPH_TASKS;
    g->max_bytes = SP_DEFAULT_GRAPH_BYTES;
    for (int b = 0; b < HBG_STORE_BUFFERS; b++)
        g->start_cap[b] = st[b].cap;
    g->tasks = st[HBG_STORE_TASKS].ptr;
    g->task_cap = (uint32_t)(st[HBG_STORE_TASKS].cap / sizeof *g->tasks);
    g->deps = st[HBG_STORE_DEPS].ptr;
    g->dep_cap = st[HBG_STORE_DEPS].cap / sizeof *g->deps;
    g->args = st[HBG_STORE_ARGS].ptr;
    g->arg_cap = st[HBG_STORE_ARGS].cap / sizeof *g->args;
    if (st[HBG_STORE_IMAGE].cap > HBG_IMAGE_TENSORS_OFF) {
        g->tensors = (sp_tensor *)((char *)st[HBG_STORE_IMAGE].ptr + HBG_IMAGE_TENSORS_OFF);
        g->tensor_cap =
            (uint32_t)((st[HBG_STORE_IMAGE].cap - HBG_IMAGE_TENSORS_OFF) / sizeof *g->tensors);
    }
    /* The map as big as the last build needed: the same graph again never
     * moves it, and a small graph after a big one lays out a small map. */
    const hbg_store_state *state = st[HBG_STORE_STATE].ptr;
    uint32_t entries = 1024;
    while (state && entries < state->map_entries && entries < (1u << 30))
        entries *= 2;
    return map_in_store(&st[HBG_STORE_MAP], &g->map, entries);
}

void hbg_graph_set_limits(hbg_graph *g, uint32_t max_tasks, uint64_t max_bytes)
{
    if (max_tasks)
        g->max_tasks = max_tasks < HBG_MAX_TASKS ? max_tasks : HBG_MAX_TASKS;
    if (max_bytes)
        g->max_bytes = max_bytes;
}

void hbg_graph_give_back(hbg_graph *g)
{
    rt_host_scratch *st = g->store;
    if (!st)
        return;
    for (int b = 0; b < HBG_STORE_BUFFERS; b++)
        if (b != HBG_STORE_STATE && st[b].cap > g->start_cap[b]) {
            free(st[b].ptr);
            st[b] = (rt_host_scratch){0};
        }
    /* The map's size is not remembered either: the next build starts at
     * what the last good one needed. */
    g->map.capacity = 0;
#ifdef __GLIBC__
    /* glibc keeps freed chunks below its (adaptive) mmap threshold in the
     * heap; hand their pages back to the system as well. Failed runs only. */
    malloc_trim(0);
#endif
}

void hbg_graph_free(hbg_graph *g)
{
    rt_host_scratch *st = g->store;
    /* Room for the peak and one more task's accesses: no move next time. */
    if (st && g->map.capacity &&
        rt_host_scratch_reserve(&st[HBG_STORE_STATE], sizeof(hbg_store_state)) == SP_OK)
        ((hbg_store_state *)st[HBG_STORE_STATE].ptr)->map_entries =
            g->map_peak + SP_MAX_TASK_TENSORS;
    if (st == g->own_store)
        for (int b = 0; b < HBG_STORE_BUFFERS; b++)
            free(st[b].ptr);
    memset(g, 0, sizeof *g);
}

uint64_t hbg_graph_edge_count(const hbg_graph *g)
{
    return g->dep_count;
}

int hbg_graph_finish(hbg_graph *g)
{
    if (atomic_load_explicit(&g->foreign_calls, memory_order_relaxed))
        foreign_fail(g);
    /* The outputs outgrew the heap: that is the failure to report (what
     * went wrong after it may follow from the addresses past the heap). */
    if (g->heap_short) {
        g->error = SP_EDEVMEM;
        snprintf(g->message, sizeof g->message,
                 "the graph's outputs need %llu bytes of heap; the run's heap has %llu",
                 (unsigned long long)g->heap_used, (unsigned long long)g->heap_bytes);
        return g->error;
    }
    if (g->error)
        return g->error;
    if (g->scope_depth)
        return hbg_graph_fail(g, SP_ESCOPE, "orchestration returned with %u scope(s) open",
                              g->scope_depth);
    return SP_OK;
}
