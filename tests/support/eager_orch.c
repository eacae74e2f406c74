/* The eager reference executor (eager_orch.h): sp_orch_ops on the host,
 * running each task's kernels inside submit. No threads, no graph, no
 * device: what it computes is what the orchestration and kernels mean.
 * A graph task runs its body at once; a predicated task is decided at its
 * submit, when everything before it has run. */
#include "eager_orch.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EAGER_MAX_SCOPES 64

static eager_orch *eager_of(sp_orch *o)
{
    return (eager_orch *)o; /* base is the first member */
}

static int fail(eager_orch *eo, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record the first error (later ones are consequences) and return `status`. */
static int fail(eager_orch *eo, int status, const char *fmt, ...)
{
    if (!eo->error) {
        eo->error = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(eo->msg, sizeof eo->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* A poisoned host buffer owned by the executor; NULL on failure. */
static void *eager_alloc(eager_orch *eo, size_t bytes)
{
    if (eo->alloc_count == eo->alloc_cap) {
        size_t cap = eo->alloc_cap ? 2 * eo->alloc_cap : 64;
        void **p = realloc(eo->allocs, cap * sizeof *p);
        if (!p)
            return NULL;
        eo->allocs = p;
        eo->alloc_cap = cap;
    }
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf)
        return NULL;
    memset(buf, 0xff, bytes);
    eo->allocs[eo->alloc_count++] = buf;
    return buf;
}

/* Give spec `t` (dtype, ndim, shape) a fresh contiguous buffer. */
static int fill_fresh(eager_orch *eo, sp_tensor *t, int64_t owner, const char *what)
{
    int64_t shape[SP_MAX_DIMS];
    int ndim = t->ndim;
    if (ndim < 1 || ndim > SP_MAX_DIMS)
        return fail(eo, SP_ESHAPE, "%s: ndim %d out of 1..%d", what, ndim, SP_MAX_DIMS);
    memcpy(shape, t->shape, sizeof shape);
    sp_tensor fresh;
    int rc = sp_tensor_init(&fresh, 0, t->dtype, ndim, shape);
    if (rc != SP_OK)
        return fail(eo, rc, "%s: bad spec (dtype %d, ndim %d)", what, t->dtype, ndim);
    void *buf = eager_alloc(eo, (size_t)fresh.buf_bytes);
    if (!buf)
        return fail(eo, SP_ENOMEM, "%s: %llu bytes", what, (unsigned long long)fresh.buf_bytes);
    fresh.addr = (uint64_t)(uintptr_t)buf;
    fresh.owner_task = owner;
    fresh.flags = SP_TENSOR_RUNTIME_OWNED;
    *t = fresh;
    return SP_OK;
}

static char *element(eager_orch *eo, const sp_tensor *t, int64_t index, const char *op);

/* Element `index` of an integer tensor as int64; 0 or SP_EPREDICATE. */
static int read_int(eager_orch *eo, const sp_tensor *t, int64_t index, int64_t id, int64_t *v)
{
    char what[64];
    snprintf(what, sizeof what, "task %lld: predicate", (long long)id);
    const char *p = element(eo, t, index, what);
    if (!p) {
        eo->error = SP_EPREDICATE; /* element() named it; the status is the predicate's */
        return SP_EPREDICATE;
    }
    switch (t->dtype) {
    case SP_DTYPE_I8:
        *v = *(const int8_t *)p;
        break;
    case SP_DTYPE_U8:
    case SP_DTYPE_BOOL:
        *v = *(const uint8_t *)p;
        break;
    case SP_DTYPE_I16:
        *v = *(const int16_t *)p;
        break;
    case SP_DTYPE_U16:
        *v = *(const uint16_t *)p;
        break;
    case SP_DTYPE_I32:
        *v = *(const int32_t *)p;
        break;
    case SP_DTYPE_U32:
        *v = *(const uint32_t *)p;
        break;
    case SP_DTYPE_I64:
    case SP_DTYPE_U64:
        memcpy(v, p, sizeof *v);
        break;
    default:
        return fail(eo, SP_EPREDICATE, "task %lld: predicate tensor has dtype %s, want an integer",
                    (long long)id, sp_dtype_name(t->dtype));
    }
    return SP_OK;
}

/* A task's predicate (abi >= 2), evaluated now: every earlier task has run.
 * *run = whether it holds. A predicated task may not have a fresh OUT (a
 * skip would leave it unset): refused by name whatever the value. */
static int eval_predicate(eager_orch *eo, const sp_task *task, int64_t id, int *run)
{
    *run = 1;
    if (task->abi < 2 || task->pred_op == SP_PRED_NONE)
        return SP_OK;
    if (task->pred_op > SP_PRED_GE)
        return fail(eo, SP_EPREDICATE, "task %lld: predicate op %d", (long long)id, task->pred_op);
    if (!task->pred_tensor)
        return fail(eo, SP_EPREDICATE, "task %lld: predicate with no tensor", (long long)id);
    for (int i = 0; i < task->tensor_count; i++)
        if (task->dirs[i] == SP_OUT)
            return fail(eo, SP_EPREDICATE,
                        "task %lld: OUT arg %d of a predicated task (a skip would leave it "
                        "unset): make it SP_OUT_EXISTING or SP_INOUT",
                        (long long)id, i);
    int64_t v = 0;
    int rc = read_int(eo, task->pred_tensor, task->pred_index, id, &v);
    if (rc != SP_OK)
        return rc;
    const int64_t c = task->pred_value;
    switch (task->pred_op) {
    case SP_PRED_EQ:
        *run = v == c;
        break;
    case SP_PRED_NE:
        *run = v != c;
        break;
    case SP_PRED_LT:
        *run = v < c;
        break;
    case SP_PRED_LE:
        *run = v <= c;
        break;
    case SP_PRED_GT:
        *run = v > c;
        break;
    default:
        *run = v >= c;
        break;
    }
    return SP_OK;
}

static const eager_kernel *find_kernel(const eager_orch *eo, int32_t func_id)
{
    for (int i = 0; i < eo->kernel_count; i++)
        if (eo->kernels[i].func_id == func_id)
            return &eo->kernels[i];
    return NULL;
}

static int64_t op_submit(sp_orch *o, sp_task *task)
{
    eager_orch *eo = eager_of(o);
    const int64_t id = eo->tasks;
    if (eo->error)
        return eo->error;
    if (!task)
        return fail(eo, SP_EINVAL, "submit: NULL task");
    if (task->overflow)
        return fail(eo, SP_ETASK_ARGS, "task %lld: too many tensors, scalars or deps",
                    (long long)id);
    if (task->tensor_count > SP_MAX_TASK_TENSORS || task->scalar_count > SP_MAX_TASK_SCALARS ||
        task->dep_count > SP_MAX_EXPLICIT_DEPS)
        return fail(eo, SP_ETASK_ARGS, "task %lld: counts out of range", (long long)id);
    if (task->block_num < 1)
        return fail(eo, SP_ETASK_ARGS, "task %lld: block_num 0", (long long)id);
    for (int i = 0; i < task->dep_count; i++)
        if (task->deps[i] < 0 || task->deps[i] >= id)
            return fail(eo, SP_EDEP, "task %lld: dependency %lld is no earlier task", (long long)id,
                        (long long)task->deps[i]);

    /* Which lanes run, on which core type. */
    int lanes[SP_LANES], lane_count = 0;
    switch (task->shape) {
    case SP_SHAPE_DUMMY:
        break;
    case SP_SHAPE_AIC:
        lanes[lane_count++] = SP_LANE_AIC;
        break;
    case SP_SHAPE_AIV:
        lanes[lane_count++] = SP_LANE_AIV0;
        break;
    case SP_SHAPE_MIX:
        for (int l = 0; l < SP_LANES; l++)
            if (task->func_id[l] != SP_FUNC_NONE)
                lanes[lane_count++] = l;
        if (!lane_count)
            return fail(eo, SP_ETASK_ARGS, "task %lld: MIX task with no lane", (long long)id);
        break;
    default:
        return fail(eo, SP_ETASK_ARGS, "task %lld: unknown shape %d", (long long)id, task->shape);
    }
    const eager_kernel *kern[SP_LANES];
    for (int i = 0; i < lane_count; i++) {
        int lane = lanes[i];
        uint32_t want = lane == SP_LANE_AIC ? SP_CORE_AIC : SP_CORE_AIV;
        kern[i] = find_kernel(eo, task->func_id[lane]);
        if (!kern[i])
            return fail(eo, SP_EFUNC_ID, "task %lld: no kernel with func_id %d", (long long)id,
                        task->func_id[lane]);
        if (kern[i]->core_type != want)
            return fail(eo, SP_EFUNC_ID, "task %lld: func_id %d is a %s kernel on a %s lane",
                        (long long)id, task->func_id[lane],
                        kern[i]->core_type == SP_CORE_AIC ? "AIC" : "AIV",
                        want == SP_CORE_AIC ? "AIC" : "AIV");
    }

    int run = 1;
    int prc = eval_predicate(eo, task, id, &run);
    if (prc != SP_OK)
        return prc;
    if (!run) { /* retired without running: its outputs keep their contents */
        eo->tasks++;
        eo->skipped_tasks++;
        return id;
    }

    /* Arguments: descriptor copies (their addresses are the tensor args),
     * then scalars. Fresh outputs get buffers first. */
    sp_tensor desc[SP_MAX_TASK_TENSORS];
    uint64_t argv[SP_MAX_TASK_TENSORS + SP_MAX_TASK_SCALARS];
    for (int i = 0; i < task->tensor_count; i++) {
        sp_tensor *t = task->tensors[i];
        int dir = task->dirs[i];
        if (!t || dir < SP_IN || dir > SP_NO_DEP)
            return fail(eo, SP_ETASK_ARGS, "task %lld: tensor arg %d is NULL or has dir %d",
                        (long long)id, i, dir);
        if (dir == SP_OUT) {
            char what[64];
            snprintf(what, sizeof what, "task %lld: OUT arg %d", (long long)id, i);
            int rc = fill_fresh(eo, t, id, what);
            if (rc != SP_OK)
                return rc;
        } else if (!t->addr || !sp_tensor_is_valid(t)) {
            return fail(eo, SP_ETASK_ARGS, "task %lld: tensor arg %d (dir %d) is not a valid view",
                        (long long)id, i, dir);
        }
        desc[i] = *t;
        argv[i] = (uint64_t)(uintptr_t)&desc[i];
    }
    for (int i = 0; i < task->scalar_count; i++)
        argv[task->tensor_count + i] = task->scalars[i];

    eo->tasks++;
    if (task->shape == SP_SHAPE_DUMMY) {
        eo->dummy_tasks++;
        return id;
    }
    for (uint32_t b = 0; b < task->block_num; b++)
        for (int i = 0; i < lane_count; i++) {
            sp_kernel_ctx ctx = {
                .block_idx = b,
                .block_num = task->block_num,
                .sub_block = task->shape == SP_SHAPE_MIX ? (uint32_t)lanes[i] : 0,
                .core_type = kern[i]->core_type,
                .core_id = 0,
                .cluster_id = 0,
                .task_id = (uint64_t)id,
            };
            kern[i]->fn(argv, &ctx);
            eo->blocks_run++;
        }
    return id;
}

static int op_alloc_tensor(sp_orch *o, sp_tensor *t)
{
    eager_orch *eo = eager_of(o);
    if (!t)
        return fail(eo, SP_EINVAL, "alloc_tensor: NULL tensor");
    return fill_fresh(eo, t, SP_NO_TASK, "alloc_tensor");
}

static int op_scope_begin(sp_orch *o, int mode)
{
    eager_orch *eo = eager_of(o);
    if (mode != SP_SCOPE_AUTO && mode != SP_SCOPE_MANUAL)
        return fail(eo, SP_EINVAL, "scope_begin: mode %d", mode);
    if (eo->scope_depth >= EAGER_MAX_SCOPES)
        return fail(eo, SP_ESCOPE, "scope_begin: deeper than %d", EAGER_MAX_SCOPES);
    eo->scope_depth++;
    return SP_OK;
}

static int op_scope_end(sp_orch *o)
{
    eager_orch *eo = eager_of(o);
    if (eo->scope_depth == 0)
        return fail(eo, SP_ESCOPE, "scope_end without scope_begin");
    eo->scope_depth--;
    return SP_OK;
}

/* Host address of element `index` (row-major over the view) or NULL. */
static char *element(eager_orch *eo, const sp_tensor *t, int64_t index, const char *op)
{
    if (!t || !t->addr || !sp_tensor_is_valid(t)) {
        fail(eo, SP_EINVAL, "%s: not a valid tensor view", op);
        return NULL;
    }
    int64_t n = sp_tensor_numel(t);
    if (index < 0 || index >= n) {
        fail(eo, SP_ESHAPE, "%s: index %lld outside %lld elements", op, (long long)index,
             (long long)n);
        return NULL;
    }
    int64_t off = t->offset, rest = index;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (rest % t->shape[d]) * t->strides[d];
        rest /= t->shape[d];
    }
    return (char *)(uintptr_t)t->addr + off * (int64_t)sp_dtype_size(t->dtype);
}

static int op_tensor_read(sp_orch *o, const sp_tensor *t, int64_t index, void *out)
{
    eager_orch *eo = eager_of(o);
    char *p = element(eo, t, index, "tensor_read");
    if (!p)
        return eo->error;
    memcpy(out, p, sp_dtype_size(t->dtype));
    return SP_OK;
}

static int op_tensor_write(sp_orch *o, const sp_tensor *t, int64_t index, const void *v)
{
    eager_orch *eo = eager_of(o);
    char *p = element(eo, t, index, "tensor_write");
    if (!p)
        return eo->error;
    memcpy(p, v, sp_dtype_size(t->dtype));
    return SP_OK;
}

static void op_log(sp_orch *o, int level, const char *msg)
{
    (void)o;
    if (level >= 2)
        fprintf(stderr, "[eager orch] %s\n", msg);
}

static void op_fatal(sp_orch *o, int status, const char *msg)
{
    fail(eager_of(o), status < 0 ? status : SP_EORCH_FATAL, "orchestration fatal: %s", msg);
}

static int op_error(sp_orch *o)
{
    return eager_of(o)->error;
}

/* A graph task, eagerly: its body runs here, its tasks one by one. */
static int64_t op_submit_graph(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a, uint64_t key)
{
    eager_orch *eo = eager_of(o);
    (void)key;
    if (eo->error)
        return eo->error;
    if (!fn || !a)
        return fail(eo, SP_EGRAPH_TASK, "submit_graph: NULL body or arguments");
    if (a->tensor_count > SP_MAX_GRAPH_TENSORS || a->scalar_count > SP_MAX_GRAPH_SCALARS)
        return fail(eo, SP_EGRAPH_TASK, "submit_graph: %u tensors / %u scalars, limits %d / %d",
                    a->tensor_count, a->scalar_count, SP_MAX_GRAPH_TENSORS, SP_MAX_GRAPH_SCALARS);
    for (uint32_t i = 0; i < a->tensor_count; i++)
        if (!a->tensors[i].addr || !sp_tensor_is_valid(&a->tensors[i]))
            return fail(eo, SP_EGRAPH_TASK, "submit_graph: boundary tensor %u is not a valid view",
                        i);
    const int64_t before = eo->tasks;
    eo->graph_tasks++;
    fn(o, a);
    return eo->error ? eo->error : eo->tasks - before;
}

static const sp_orch_ops eager_ops = {
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
    .submit_graph = op_submit_graph,
};

void eager_orch_init(eager_orch *eo)
{
    memset(eo, 0, sizeof *eo);
    eo->base.ops = &eager_ops;
}

void eager_orch_free(eager_orch *eo)
{
    for (size_t i = 0; i < eo->alloc_count; i++)
        free(eo->allocs[i]);
    free(eo->allocs);
    for (int i = 0; i < eo->kernel_count; i++)
        if (eo->kernels[i].handle)
            dlclose(eo->kernels[i].handle);
    if (eo->orch_handle)
        dlclose(eo->orch_handle);
    memset(eo, 0, sizeof *eo);
}

static int add_kernel(eager_orch *eo, int32_t func_id, uint32_t core_type, sp_kernel_fn fn,
                      void *handle)
{
    if (func_id < 0 || find_kernel(eo, func_id) || eo->kernel_count >= EAGER_MAX_KERNELS ||
        core_type > SP_CORE_AIV || !fn)
        return fail(eo, SP_EINVAL, "kernel func_id %d: invalid, duplicate or table full", func_id);
    eo->kernels[eo->kernel_count++] = (eager_kernel){func_id, core_type, fn, handle};
    return SP_OK;
}

int eager_orch_add_kernel(eager_orch *eo, int32_t func_id, uint32_t core_type, sp_kernel_fn fn)
{
    return add_kernel(eo, func_id, core_type, fn, NULL);
}

int eager_orch_load_kernel(eager_orch *eo, int32_t func_id, uint32_t core_type, const char *path,
                           const char *entry)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fail(eo, SP_EKERNEL_LOAD, "kernel %d: %s", func_id, dlerror());
    void *sym = dlsym(h, entry);
    if (!sym) {
        dlclose(h);
        return fail(eo, SP_EKERNEL_ENTRY, "kernel %d: no symbol %s in %s", func_id, entry, path);
    }
    sp_kernel_fn fn;
    memcpy(&fn, &sym, sizeof fn); /* object-to-function pointer, as dlsym requires */
    int rc = add_kernel(eo, func_id, core_type, fn, h);
    if (rc != SP_OK)
        dlclose(h);
    return rc;
}

int eager_orch_load_orchestration(eager_orch *eo, const char *path, const char *entry,
                                  const char *config)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return fail(eo, SP_EKERNEL_LOAD, "orchestration: %s", dlerror());
    void *e = dlsym(h, entry);
    void *c = config && strcmp(config, "-") != 0 ? dlsym(h, config) : NULL;
    if (!e || (config && strcmp(config, "-") != 0 && !c)) {
        dlclose(h);
        return fail(eo, SP_EKERNEL_ENTRY, "orchestration %s: no symbol %s", path,
                    !e ? entry : config);
    }
    eo->orch_handle = h;
    memcpy(&eo->entry, &e, sizeof e);
    if (c)
        memcpy(&eo->config, &c, sizeof c);
    return SP_OK;
}

int eager_orch_load_manifest(eager_orch *eo, const char *manifest_path)
{
    FILE *f = fopen(manifest_path, "r");
    if (!f)
        return fail(eo, SP_ESYS, "cannot open manifest %s", manifest_path);
    char line[4096];
    int rc = SP_OK;
    while (rc == SP_OK && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char entry[256], config[256], core[16];
        int func_id, pos = 0;
        if (sscanf(line, "orchestration %255s %255s %n", entry, config, &pos) == 2 && pos)
            rc = eager_orch_load_orchestration(eo, line + pos, entry, config);
        else if (sscanf(line, "kernel %d %15s %255s %n", &func_id, core, entry, &pos) == 3 && pos)
            rc = eager_orch_load_kernel(eo, func_id,
                                        strcmp(core, "aic") == 0 ? SP_CORE_AIC : SP_CORE_AIV,
                                        line + pos, entry);
        else if (line[0])
            rc = fail(eo, SP_EINVAL, "manifest %s: bad line '%s'", manifest_path, line);
    }
    fclose(f);
    if (rc == SP_OK && !eo->entry)
        rc = fail(eo, SP_EINVAL, "manifest %s names no orchestration", manifest_path);
    return rc;
}

int eager_orch_run(eager_orch *eo, sp_args *args)
{
    if (eo->error)
        return eo->error;
    if (!eo->entry)
        return fail(eo, SP_ESTATE, "no orchestration loaded");
    if (eo->config) {
        sp_orch_config cfg = {.abi_version = SP_ORCH_ABI_VERSION};
        eo->config(&cfg);
        if (args->tensor_count < cfg.tensor_count || args->scalar_count < cfg.scalar_count)
            return fail(eo, SP_EARGCOUNT, "run has %u tensors / %u scalars, config wants %u / %u",
                        args->tensor_count, args->scalar_count, cfg.tensor_count, cfg.scalar_count);
    }
    for (uint32_t i = 0; i < args->tensor_count; i++)
        if (args->dirs[i] == SP_OUT)
            memset((void *)(uintptr_t)args->tensors[i].addr, 0xff,
                   (size_t)args->tensors[i].buf_bytes);
    eo->entry(&eo->base, args);
    if (!eo->error && eo->scope_depth != 0)
        fail(eo, SP_ESCOPE, "orchestration returned with %d scope(s) open", eo->scope_depth);
    return eo->error;
}
