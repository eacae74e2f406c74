/* host_build_graph's orchestration ops: validate each submit, allocate its
 * outputs from the bank's heap, derive its producers and append it. Growth
 * is amortised doubling of flat arrays, so a submit allocates nothing in
 * the common case. */
#include "runtime/host_build_graph/hbg_build.h"

#include "runtime/shared/task_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define HBG_MAX_TASKS (1u << 30)

int hbg_graph_fail(hbg_graph *g, int status, const char *fmt, ...)
{
    if (g->error)
        return status;
    g->error = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->message, sizeof g->message, fmt, ap);
    va_end(ap);
    return status;
}

/* Make room for `need` more elements of `elem` bytes in *p (capacity *cap). */
static int grow(void **p, uint64_t *cap, uint64_t used, uint64_t need, size_t elem)
{
    if (used + need <= *cap)
        return SP_OK;
    uint64_t n = *cap ? *cap : 64;
    while (n < used + need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return SP_ENOMEM;
    *p = q;
    *cap = n;
    return SP_OK;
}

static int grow32(void **p, uint32_t *cap, uint32_t used, uint32_t need, size_t elem)
{
    uint64_t c = *cap;
    int rc = grow(p, &c, used, need, elem);
    if (rc == SP_OK && c > UINT32_MAX)
        return SP_EGRAPH_LIMIT;
    *cap = (uint32_t)c;
    return rc;
}

static int map_reserve(hbg_graph *g, uint32_t need)
{
    if (g->map.capacity - g->map.used >= need)
        return SP_OK;
    uint32_t n = g->map.capacity * 2;
    while (n - g->map.used < need)
        n *= 2;
    size_t bytes = sp_tensormap_bytes(n);
    void *mem = malloc(bytes);
    if (!mem)
        return SP_ENOMEM;
    sp_tensormap bigger;
    int rc = sp_tensormap_init(&bigger, mem, bytes, n);
    if (rc == SP_OK)
        rc = sp_tensormap_move(&bigger, &g->map);
    if (rc) {
        free(mem);
        return rc;
    }
    free(g->map_mem);
    g->map_mem = mem;
    g->map = bigger;
    return SP_OK;
}

static int heap_alloc(hbg_graph *g, uint64_t bytes, uint64_t *dev_out)
{
    uint64_t off = (g->heap_used + 63) & ~63ull;
    if (bytes > g->heap_bytes || off > g->heap_bytes - bytes)
        return SP_EDEVMEM;
    g->heap_used = off + bytes;
    *dev_out = g->heap_base + off;
    return SP_OK;
}

/* The staged buffer holding all of [addr, addr + bytes), or NULL. */
static const hbg_buffer *find_buffer(const hbg_graph *g, uint64_t addr, uint64_t bytes)
{
    for (uint32_t i = 0; i < g->buffer_count; i++)
        if (sp_range_holds(&g->ranges[i], addr, bytes))
            return &g->buffers[i];
    return NULL;
}

static bool in_heap(const hbg_graph *g, uint64_t addr, uint64_t bytes)
{
    sp_device_range heap = {.dev = g->heap_base, .bytes = g->heap_bytes};
    return sp_range_holds(&heap, addr, bytes);
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

static int64_t op_submit(sp_orch *o, sp_task *t)
{
    hbg_graph *g = (hbg_graph *)o;
    if (g->error)
        return g->error;
    uint32_t id = g->task_count;
    if (id >= HBG_MAX_TASKS)
        return hbg_graph_fail(g, SP_EGRAPH_LIMIT, "graph exceeds %u tasks", HBG_MAX_TASKS);
    int32_t kernel[3];
    char msg[sizeof g->message];
    sp_task_check check = {
        .callable = g->callable,
        .ranges = g->ranges,
        .range_count = g->buffer_count,
        .heap = {.dev = g->heap_base, .bytes = g->heap_bytes},
        .msg = msg,
        .msg_len = sizeof msg,
    };
    int rc = sp_task_validate(&check, id, t, kernel);
    if (rc)
        return hbg_graph_fail(g, rc, "%s", msg);

    uint32_t nargs = (uint32_t)t->tensor_count + t->scalar_count;
    if ((rc = grow32((void **)&g->tasks, &g->task_cap, g->task_count, 1, sizeof *g->tasks)) ||
        (rc = grow((void **)&g->args, &g->arg_cap, g->arg_count, nargs, sizeof *g->args)) ||
        (rc = grow32((void **)&g->tensors, &g->tensor_cap, g->tensor_count, t->tensor_count,
                     sizeof *g->tensors)) ||
        (rc = map_reserve(g, t->tensor_count)))
        return hbg_graph_fail(g, rc, "task %u: out of host memory building the graph", id);

    sp_dep_list *deps = &g->scratch;
    deps->count = 0;
    for (int i = 0; i < t->dep_count && rc == SP_OK; i++)
        rc = sp_dep_list_add(deps, t->deps[i], id, SP_EDGE_EXPLICIT);
    bool manual = scope_mode(g) == SP_SCOPE_MANUAL;
    for (int i = 0; i < t->tensor_count && rc == SP_OK; i++) {
        sp_tensor *x = t->tensors[i];
        if (t->dirs[i] == SP_OUT && (rc = alloc_output(g, x, id)) != SP_OK) {
            hbg_graph_fail(g, rc, "task %u: output %d (%llu bytes) does not fit the %llu-byte heap",
                           id, i, (unsigned long long)x->buf_bytes,
                           (unsigned long long)g->heap_bytes);
            return rc;
        }
        /* A manual scope records accesses (later auto tasks see them) but
         * keeps only the explicit edges. */
        rc = sp_tensormap_access(&g->map, id, x, t->dirs[i], manual, deps);
        g->tensors[g->tensor_count + (uint32_t)i] = *x;
        g->args[g->arg_count + (uint64_t)i] = g->tensor_count + (uint32_t)i;
    }
    if (rc)
        return hbg_graph_fail(g, rc, "task %u: more than %d producers", id, SP_MAX_PRODUCERS);
    if ((rc = grow((void **)&g->deps, &g->dep_cap, g->dep_count, deps->count, sizeof *g->deps)))
        return hbg_graph_fail(g, rc, "task %u: out of host memory building the graph", id);
    for (uint32_t i = 0; i < deps->count; i++) {
        g->deps[g->dep_count + i].producer = (uint32_t)deps->producer[i];
        g->deps[g->dep_count + i].kind = deps->kind[i];
        g->edges_by_kind[deps->kind[i]]++;
    }
    for (int i = 0; i < t->scalar_count; i++)
        g->args[g->arg_count + t->tensor_count + (uint64_t)i] = t->scalars[i];

    hbg_build_task *bt = &g->tasks[id];
    memset(bt, 0, sizeof *bt);
    bt->shape = t->shape;
    bt->tensor_count = t->tensor_count;
    bt->scalar_count = t->scalar_count;
    bt->block_num = t->block_num;
    memcpy(bt->kernel, kernel, sizeof kernel);
    bt->args_begin = (uint32_t)g->arg_count;
    bt->deps_begin = g->dep_count;
    bt->dep_count = deps->count;
    g->arg_count += nargs;
    g->tensor_count += t->tensor_count;
    g->dep_count += deps->count;
    g->task_count++;
    return id;
}

static int op_alloc_tensor(sp_orch *o, sp_tensor *t)
{
    hbg_graph *g = (hbg_graph *)o;
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
    if (sp_tensormap_touched(&g->map, t->addr, *off, *off + es, !write))
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
    if (b->host_map) {
        memcpy(out, (const char *)b->host_map + off, es);
        return SP_OK;
    }
    rc = sp_host_copy_from_device(g->api, out, b->dev + off, es);
    return rc ? hbg_graph_fail(g, rc, "tensor_read: copy from device failed") : SP_OK;
}

static int op_tensor_write(sp_orch *o, const sp_tensor *t, int64_t index, const void *v)
{
    hbg_graph *g = (hbg_graph *)o;
    if (g->error)
        return g->error;
    const hbg_buffer *b;
    uint64_t off;
    int rc = control_element(g, t, index, true, &b, &off);
    if (rc)
        return rc;
    if (!v)
        return hbg_graph_fail(g, SP_EINVAL, "tensor_write: NULL value");
    size_t es = sp_tensor_elem_size(t);
    if (b->host_map) {
        memcpy((char *)b->host_map + off, v, es);
        return SP_OK;
    }
    rc = sp_host_copy_to_device(g->api, b->dev + off, v, es);
    return rc ? hbg_graph_fail(g, rc, "tensor_write: copy to device failed") : SP_OK;
}

static void op_log(sp_orch *o, int level, const char *msg)
{
    (void)o;
    if (level < SP_LOG_DEBUG || level > SP_LOG_ERROR)
        level = SP_LOG_INFO;
    sp_log(level, "orchestration: %s", msg ? msg : "");
}

static void op_fatal(sp_orch *o, int status, const char *msg)
{
    hbg_graph *g = (hbg_graph *)o;
    hbg_graph_fail(g, status < 0 ? status : SP_EORCH_FATAL, "orchestration fatal: %s",
                   msg ? msg : "(no message)");
}

static int op_error(sp_orch *o)
{
    return ((hbg_graph *)o)->error;
}

static const sp_orch_ops hbg_orch_ops = {
    .abi_version = SP_ORCH_ABI_VERSION,
    .submit = op_submit,
    .alloc_tensor = op_alloc_tensor,
    .scope_begin = op_scope_begin,
    .scope_end = op_scope_end,
    .tensor_read = op_tensor_read,
    .tensor_write = op_tensor_write,
    .log = op_log,
    .fatal = op_fatal,
    .error = op_error,
};

int hbg_graph_init(hbg_graph *g, const sp_host_api *api, const sp_loaded_callable *lc,
                   uint64_t heap_base, uint64_t heap_bytes, const hbg_buffer *buffers,
                   uint32_t buffer_count)
{
    memset(g, 0, sizeof *g);
    g->orch.ops = &hbg_orch_ops;
    g->api = api;
    g->callable = lc;
    g->heap_base = heap_base;
    g->heap_bytes = heap_bytes;
    g->buffers = buffers;
    g->buffer_count = buffer_count;
    for (uint32_t i = 0; i < buffer_count && i < SP_MAX_RUN_TENSORS; i++)
        g->ranges[i] = (sp_device_range){.dev = buffers[i].dev, .bytes = buffers[i].bytes};
    uint32_t entries = 1024;
    size_t bytes = sp_tensormap_bytes(entries);
    g->map_mem = malloc(bytes);
    if (!g->map_mem)
        return SP_ENOMEM;
    return sp_tensormap_init(&g->map, g->map_mem, bytes, entries);
}

void hbg_graph_free(hbg_graph *g)
{
    free(g->tasks);
    free(g->deps);
    free(g->args);
    free(g->tensors);
    free(g->map_mem);
    memset(g, 0, sizeof *g);
}

uint64_t hbg_graph_edge_count(const hbg_graph *g)
{
    return g->dep_count;
}

int hbg_graph_finish(hbg_graph *g)
{
    if (g->error)
        return g->error;
    if (g->scope_depth)
        return hbg_graph_fail(g, SP_ESCOPE, "orchestration returned with %u scope(s) open",
                              g->scope_depth);
    return SP_OK;
}
