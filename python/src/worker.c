/* simpler.Worker and simpler.Run: the run path of the binding, all C so
 * that a run costs Python no more than argument conversion and the result
 * objects. A Worker owns one preallocated spy_args for synchronous runs
 * (a second thread running at the same time gets a temporary one) and one
 * per lane slot for submitted runs, each held, with its Py_buffers, until
 * its run is waited for. Every call into the sp_worker, and the reads of
 * its last error and last trace that belong to that call, happen under
 * the Worker's lock with the GIL released; the lock is only ever taken
 * without the GIL, so neither waits on the other in a cycle. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "py_simpler.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "structmember.h"

/* Callable ids a Worker hands out: the worker's table holds 256. */
#define SPY_MAX_IDS 256u
/* Lane slots: sp_worker_lane_depth is 1 or 2; room for a deeper lane. */
#define SPY_MAX_LANE 8u
#define SPY_ERR_LEN 1024

typedef struct SpyRun SpyRun;

typedef struct lane_slot {
    spy_args args;
    SpyRun *run; /* the Run using the slot (borrowed: it clears this), NULL when free */
} lane_slot;

typedef struct SpyWorker {
    PyObject_HEAD sp_worker *w; /* NULL once closed; written under lock */
    pthread_mutex_t lock;
    int lock_ready;
    char runtime[128];
    uint32_t lane_depth;
    spy_args *sync; /* the synchronous runs' arguments */
    int sync_busy;  /* under the GIL */
    lane_slot *lane;
    SpyCallable *reg[SPY_MAX_IDS]; /* id -> Callable (strong) */
    SpyCallable *last_c;           /* the last callable run, for a lookup without a scan */
    uint32_t last_id;
    PyObject *weakrefs;
} SpyWorker;

struct SpyRun {
    PyObject_HEAD SpyWorker *worker; /* strong */
    SpyCallable *callable;           /* strong, may be NULL (run by id) */
    sp_run_handle h;
    int submitted; /* under the worker's lock: h names a queued run */
    int slot;      /* lane slot, -1 once finished */
    int traced;
    PyObject *result;  /* RunResult once finished well */
    int status;        /* the failure once finished badly */
    PyObject *message; /* its message (str) */
};

static PyTypeObject SpyWorker_Type;
static PyTypeObject SpyRun_Type;

/* ---- helpers ------------------------------------------------------------------------- */

static void copy_error(SpyWorker *self, char *err)
{
    const char *m = self->w ? sp_worker_last_error(self->w) : "the worker is closed";
    snprintf(err, SPY_ERR_LEN, "%s", m && *m ? m : "(no message)");
}

static int check_open(SpyWorker *self)
{
    if (self->w)
        return 0;
    spy_raise(SP_ESTATE, "the worker is closed (or was never opened)");
    return -1;
}

static int find_registered(SpyWorker *self, SpyCallable *c, uint32_t *id)
{
    if (c == self->last_c && c) {
        *id = self->last_id;
        return 1;
    }
    for (uint32_t i = 0; i < SPY_MAX_IDS; i++)
        if (self->reg[i] == c) {
            *id = i;
            return 1;
        }
    return 0;
}

static int do_register(SpyWorker *self, SpyCallable *c, long want, uint32_t *out)
{
    uint32_t id;
    if (find_registered(self, c, &id)) {
        if (want >= 0 && (uint32_t)want != id) {
            spy_raisef(SP_EINVAL, "the callable is registered under id %u already, not %ld", id,
                       want);
            return -1;
        }
        *out = id;
        return 0;
    }
    if (want >= 0) {
        if ((unsigned long)want >= SPY_MAX_IDS) {
            spy_raisef(SP_EINVAL, "callable id %ld is out of range 0..%u", want, SPY_MAX_IDS - 1);
            return -1;
        }
        if (self->reg[want]) {
            spy_raisef(SP_EINVAL, "callable id %ld holds another callable; unregister it first",
                       want);
            return -1;
        }
        id = (uint32_t)want;
    } else {
        for (id = 0; id < SPY_MAX_IDS && self->reg[id]; id++)
            ;
        if (id == SPY_MAX_IDS) {
            spy_raisef(SP_EINVAL, "all %u callable ids are in use; unregister one", SPY_MAX_IDS);
            return -1;
        }
    }
    char err[SPY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_register_callable(self->w, id, c->blob, c->size) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc) {
        spy_raise(rc, err);
        return -1;
    }
    self->reg[id] = (SpyCallable *)Py_NewRef(c);
    *out = id;
    return 0;
}

/* What a run names: a Callable (registered on first use) or an id. */
static int resolve(SpyWorker *self, PyObject *target, uint32_t *id, SpyCallable **c)
{
    if (SpyCallable_Check(target)) {
        *c = (SpyCallable *)target;
        if (do_register(self, *c, -1, id))
            return -1;
        self->last_c = *c;
        self->last_id = *id;
        return 0;
    }
    if (PyLong_Check(target)) {
        unsigned long v = PyLong_AsUnsignedLong(target);
        if (v == (unsigned long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            spy_raise(SP_EINVAL, "a callable id is an int 0..2^32-1");
            return -1;
        }
        *id = (uint32_t)v;
        *c = v < SPY_MAX_IDS ? self->reg[v] : NULL;
        return 0;
    }
    spy_raisef(SP_EINVAL, "a run names a simpler.Callable or its id, not a %s",
               Py_TYPE(target)->tp_name);
    return -1;
}

/* The call's own keywords, interned once at import (immutable): a
 * keyword the interpreter passes is interned, so identity decides. */
enum { KW_CALLABLE, KW_TENSORS, KW_SCALARS, KW_CONFIG, KW_TRACE, KW_COUNT };
static const char *const kw_text[KW_COUNT] = {"callable", "tensors", "scalars", "config", "trace"};
static PyObject *kw_str[KW_COUNT];

/* The arguments Worker.run and Worker.submit share. */
typedef struct run_call {
    PyObject *target, *tensors, *scalars, *config;
    int trace;
    spy_named named;           /* the keywords that are signature names (n 0: none) */
    Py_ssize_t skip[KW_COUNT]; /* the keyword positions that are the call's own */
} run_call;

/* Which of the call's own keywords `name` is, KW_COUNT for none. */
static int own_keyword(PyObject *name)
{
    for (int j = 0; j < KW_COUNT; j++)
        if (name == kw_str[j])
            return j;
    if (PyUnicode_CheckExact(name) && PyUnicode_CHECK_INTERNED(name))
        return KW_COUNT; /* interned and none of them: no other text can match */
    for (int j = 0; j < KW_COUNT; j++)
        if (PyUnicode_CompareWithASCIIString(name, kw_text[j]) == 0)
            return j;
    return KW_COUNT;
}

static int parse_run_call(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, run_call *rc,
                          const char *fn)
{
    rc->target = rc->tensors = rc->scalars = rc->config = NULL;
    rc->trace = 0;
    rc->named.n = 0;
    rc->named.nskip = 0;
    PyObject **pos[4] = {&rc->target, &rc->tensors, &rc->scalars, &rc->config};
    if (nargs < 1 || nargs > 4) {
        if (nargs < 1 && kwnames) {
            /* the callable by keyword is allowed too */
        } else {
            PyErr_Format(PyExc_TypeError, "%s() takes 1 to 4 positional arguments, got %zd", fn,
                         nargs);
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < nargs && i < 4; i++)
        *pos[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k), *v = args[nargs + k];
        int j = own_keyword(name);
        if (j == KW_COUNT)
            continue;                      /* a signature name: spy_args_fill places it */
        if (rc->named.nskip == KW_COUNT) { /* the interpreter refuses a keyword twice */
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for '%s'", fn, kw_text[j]);
            return -1;
        }
        rc->skip[rc->named.nskip++] = k;
        if (j == KW_TRACE) {
            if ((rc->trace = PyObject_IsTrue(v)) < 0)
                return -1;
            continue;
        }
        if (*pos[j]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for '%s'", fn, kw_text[j]);
            return -1;
        }
        *pos[j] = v;
    }
    if (nkw > rc->named.nskip) {
        rc->named.names = &PyTuple_GET_ITEM(kwnames, 0);
        rc->named.values = args + nargs;
        rc->named.n = nkw;
        rc->named.skip = rc->skip;
    }
    if (!rc->target) {
        PyErr_Format(PyExc_TypeError, "%s() needs the callable (or its id)", fn);
        return -1;
    }
    if (rc->config == Py_None)
        rc->config = NULL;
    if (rc->config && !PyObject_TypeCheck(rc->config, &SpyCallConfig_Type)) {
        spy_raisef(SP_EINVAL, "config must be a simpler.CallConfig or None, not %s",
                   Py_TYPE(rc->config)->tp_name);
        return -1;
    }
    return 0;
}

/* The config a run uses: the caller's, or a copy raised to trace. */
static const sp_call_config *run_config(const run_call *rc, sp_call_config *copy, int *traced)
{
    const sp_call_config *cfg = rc->config ? &((SpyCallConfig *)rc->config)->cfg : NULL;
    if (rc->trace && (!cfg || cfg->trace_level < SP_TRACE_TASKS)) {
        if (cfg)
            *copy = *cfg;
        else
            memset(copy, 0, sizeof *copy);
        copy->trace_level = SP_TRACE_TASKS;
        cfg = copy;
    }
    *traced = cfg && cfg->trace_level;
    return cfg;
}

/* A private copy of the trace of the run just waited for, taken under the
 * lock without the GIL (the worker's copy is valid only until its next
 * wait); out->level 0 when it was not traced. 0, or SP_ENOMEM. Only a
 * traced run allocates here. */
static int trace_snapshot(SpyWorker *self, sp_run_trace *out)
{
    const sp_run_trace *tr = self->w ? sp_worker_last_trace(self->w) : NULL;
    memset(out, 0, sizeof *out);
    if (!tr)
        return SP_OK;
    *out = *tr;
    uint64_t nr = tr->record_count < tr->record_cap ? tr->record_count : tr->record_cap;
    uint64_t ne = tr->edge_count < tr->edge_cap ? tr->edge_count : tr->edge_cap;
    out->records = nr ? malloc(nr * sizeof *out->records) : NULL;
    out->edges = ne ? malloc(ne * sizeof *out->edges) : NULL;
    if ((nr && !out->records) || (ne && !out->edges)) {
        free(out->records);
        free(out->edges);
        memset(out, 0, sizeof *out);
        return SP_ENOMEM;
    }
    if (nr)
        memcpy(out->records, tr->records, nr * sizeof *out->records);
    if (ne)
        memcpy(out->edges, tr->edges, ne * sizeof *out->edges);
    out->record_count = out->record_cap = nr;
    out->edge_count = out->edge_cap = ne;
    return SP_OK;
}

/* The Trace of a snapshot (None when the run was not traced); frees the
 * snapshot's arrays. */
static PyObject *trace_from_snapshot(SpyWorker *self, sp_run_trace *t, const sp_run_stats *st,
                                     SpyCallable *c, int snap_rc)
{
    PyObject *r;
    if (snap_rc)
        r = spy_raise(snap_rc, "out of memory copying the run's trace");
    else if (!t->level)
        r = Py_NewRef(Py_None);
    else
        r = spy_trace_new(t, st, c, self->runtime);
    free(t->records);
    free(t->edges);
    return r;
}

/* ---- Worker: open and close ------------------------------------------------------------- */

static int parse_log_level(PyObject *o, int32_t *out)
{
    static const char *const names[] = {"debug", "info", "warn", "error", "off"};
    *out = 0;
    if (o == Py_None)
        return 0;
    const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    for (int i = 0; s && i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = 1 + i; /* settings: 1 + SP_LOG_* */
            return 0;
        }
    if (!PyErr_Occurred())
        spy_raise(SP_EINVAL, "log_level is one of 'debug' 'info' 'warn' 'error' 'off' or None");
    return -1;
}

static int worker_init(SpyWorker *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"runtime",           "device",
                             "clusters",          "sched_threads",
                             "platform",          "module_dir",
                             "trace_path",        "close_timeout_ms",
                             "memory_bytes",      "check",
                             "log_level",         "kernel_timeout_ms",
                             "orch_timeout_ms",   "pipeline_depth",
                             "core_queue",        "graph_cache_count",
                             "graph_cache_bytes", NULL};
    const char *runtime = "hbg", *platform = NULL, *module_dir = NULL, *trace_path = NULL;
    int device = 0, check = 0;
    unsigned int clusters = 0, sched = 0, pipeline_depth = 0, core_queue = 0, cache_count = 0;
    unsigned long long close_ms = 0, memory = 0, kernel_ms = 0, orch_ms = 0, cache_bytes = 0;
    PyObject *log_level = Py_None;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "|siIIzzzKKpOKKIIIK:Worker", kwlist, &runtime, &device, &clusters, &sched,
            &platform, &module_dir, &trace_path, &close_ms, &memory, &check, &log_level, &kernel_ms,
            &orch_ms, &pipeline_depth, &core_queue, &cache_count, &cache_bytes))
        return -1;
    if (self->w) {
        spy_raise(SP_ESTATE, "the worker is open already");
        return -1;
    }
    sp_worker_options o;
    memset(&o, 0, sizeof o);
    o.device_id = device;
    o.prewarm.clusters = clusters;
    o.prewarm.sched_threads = sched;
    o.close_timeout_ms = close_ms;
    o.module_dir = module_dir;
    o.trace_path = trace_path;
    o.settings.check = check ? 1 : 0;
    o.settings.kernel_timeout_ms = kernel_ms;
    o.settings.orch_timeout_ms = orch_ms;
    o.settings.pipeline_depth = pipeline_depth;
    o.settings.memory_bytes = memory;
    o.settings.sim.core_queue = core_queue;
    o.settings.graph_cache_count = cache_count;
    o.settings.graph_cache_bytes = cache_bytes;
    if (parse_log_level(log_level, &o.settings.log_level))
        return -1;
    if (!self->sync && !(self->sync = PyMem_Calloc(1, sizeof *self->sync))) {
        PyErr_NoMemory();
        return -1;
    }
    char err[SPY_ERR_LEN] = "";
    sp_worker *w = NULL;
    int rc;
    /* A path names a module file; a bare name is a runtime of the module dir. */
    int is_path = strchr(runtime, '/') != NULL;
    Py_BEGIN_ALLOW_THREADS;
    rc = is_path ? sp_worker_open(runtime, &o, &w, err, sizeof err)
                 : sp_worker_open_runtime(runtime, platform, &o, &w, err, sizeof err);
    Py_END_ALLOW_THREADS;
    if (rc) {
        spy_raise(rc, err);
        return -1;
    }
    uint32_t depth = sp_worker_lane_depth(w);
    if (depth < 1)
        depth = 1;
    if (depth > SPY_MAX_LANE)
        depth = SPY_MAX_LANE;
    self->lane = PyMem_Calloc(depth, sizeof *self->lane);
    if (!self->lane) {
        Py_BEGIN_ALLOW_THREADS;
        sp_worker_close(w);
        Py_END_ALLOW_THREADS;
        PyErr_NoMemory();
        return -1;
    }
    self->lane_depth = depth;
    snprintf(self->runtime, sizeof self->runtime, "%s", runtime);
    self->w = w;
    return 0;
}

static PyObject *run_finish(SpyRun *r, uint64_t timeout_ms, int *timed_out);

/* Finish every run still in flight (their Runs keep the outcome), then
 * close the sp_worker. Idempotent. */
static void worker_close_impl(SpyWorker *self)
{
    if (!self->w)
        return;
    for (uint32_t i = 0; self->lane && i < self->lane_depth; i++) {
        SpyRun *r = self->lane[i].run;
        if (!r)
            continue;
        Py_INCREF(r);
        int timed_out;
        PyObject *res = run_finish(r, UINT64_MAX, &timed_out);
        Py_XDECREF(res);
        PyErr_Clear(); /* the Run keeps its failure for its wait */
        Py_DECREF(r);
    }
    sp_worker *w;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    w = self->w;
    self->w = NULL;
    pthread_mutex_unlock(&self->lock);
    sp_worker_close(w);
    Py_END_ALLOW_THREADS;
    for (uint32_t i = 0; i < SPY_MAX_IDS; i++)
        Py_CLEAR(self->reg[i]);
    self->last_c = NULL;
}

static PyObject *worker_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    (void)args, (void)kw;
    SpyWorker *self = (SpyWorker *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (pthread_mutex_init(&self->lock, NULL)) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->lock_ready = 1;
    return (PyObject *)self;
}

static void worker_dealloc(SpyWorker *self)
{
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->lock_ready) {
        worker_close_impl(self);
        pthread_mutex_destroy(&self->lock);
    }
    if (self->sync) {
        spy_args_release(self->sync);
        PyMem_Free(self->sync);
    }
    PyMem_Free(self->lane);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *worker_close(SpyWorker *self, PyObject *unused)
{
    (void)unused;
    worker_close_impl(self);
    Py_RETURN_NONE;
}

static PyObject *worker_enter(SpyWorker *self, PyObject *unused)
{
    (void)unused;
    if (check_open(self))
        return NULL;
    return Py_NewRef(self);
}

static PyObject *worker_exit(SpyWorker *self, PyObject *args)
{
    (void)args;
    worker_close_impl(self);
    Py_RETURN_FALSE;
}

/* ---- Worker: callables ---------------------------------------------------------------- */

static PyObject *worker_register(SpyWorker *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"callable", "id", NULL};
    PyObject *c, *idobj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O:register", kwlist, &SpyCallable_Type, &c,
                                     &idobj))
        return NULL;
    if (check_open(self))
        return NULL;
    long want = -1;
    if (idobj != Py_None) {
        want = PyLong_AsLong(idobj);
        if (want == -1 && PyErr_Occurred())
            return NULL;
        if (want < 0)
            return spy_raisef(SP_EINVAL, "callable id %ld is out of range 0..%u", want,
                              SPY_MAX_IDS - 1);
    }
    uint32_t id;
    if (do_register(self, (SpyCallable *)c, want, &id))
        return NULL;
    return PyLong_FromUnsignedLong(id);
}

static PyObject *worker_unregister(SpyWorker *self, PyObject *target)
{
    if (check_open(self))
        return NULL;
    uint32_t id;
    if (SpyCallable_Check(target)) {
        if (!find_registered(self, (SpyCallable *)target, &id))
            return spy_raise(SP_EINVAL, "the callable is not registered on this worker");
    } else {
        SpyCallable *c;
        if (resolve(self, target, &id, &c))
            return NULL;
    }
    char err[SPY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_unregister_callable(self->w, id) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc)
        return spy_raise(rc, err);
    if (id < SPY_MAX_IDS) {
        if (self->last_c == self->reg[id])
            self->last_c = NULL;
        Py_CLEAR(self->reg[id]);
    }
    Py_RETURN_NONE;
}

/* ---- Worker: running ---------------------------------------------------------------- */

static PyObject *worker_run(SpyWorker *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    run_call call;
    if (parse_run_call(args, nargs, kwnames, &call, "run"))
        return NULL;
    PyObject *result = NULL;
    uint32_t id;
    SpyCallable *c;
    if (check_open(self) || resolve(self, call.target, &id, &c))
        goto out;
    sp_call_config copy;
    int traced;
    const sp_call_config *cfg = run_config(&call, &copy, &traced);
    /* The sync slot, or a temporary one while another thread runs. */
    spy_args *a = self->sync;
    int temp = self->sync_busy;
    if (temp && !(a = PyMem_Calloc(1, sizeof *a))) {
        PyErr_NoMemory();
        goto out;
    }
    self->sync_busy = 1;
    if (spy_args_fill(a, c, call.tensors, call.scalars, &call.named))
        goto release;
    sp_run_stats st;
    char err[SPY_ERR_LEN];
    int rc;
    PyObject *trace = NULL;
    sp_run_trace snap = {0}; /* level 0: not traced */
    int snap_rc = 0;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_run(self->w, id, &a->args, cfg, &st) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    else if (traced)
        snap_rc = trace_snapshot(self, &snap);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc) {
        spy_raise(rc, err);
        goto release;
    }
    if (traced && !(trace = trace_from_snapshot(self, &snap, &st, c, snap_rc)))
        goto release;
    result = spy_run_result_new(&st, trace, a->outputs);
    Py_XDECREF(trace);
release:
    spy_args_release(a);
    if (temp)
        PyMem_Free(a);
    else
        self->sync_busy = 0;
out:
    return result;
}

static PyObject *worker_submit(SpyWorker *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    run_call call;
    if (parse_run_call(args, nargs, kwnames, &call, "submit"))
        return NULL;
    PyObject *ret = NULL;
    uint32_t id;
    SpyCallable *c;
    if (check_open(self) || resolve(self, call.target, &id, &c))
        goto out;
    lane_slot *s = NULL;
    int slot;
    for (slot = 0; slot < (int)self->lane_depth; slot++)
        if (!self->lane[slot].run) {
            s = &self->lane[slot];
            break;
        }
    if (!s) {
        spy_raisef(SP_EBUSY,
                   "the async lane is full: %u runs in flight (lane_depth); wait for one first",
                   self->lane_depth);
        goto out;
    }
    sp_call_config copy;
    int traced;
    const sp_call_config *cfg = run_config(&call, &copy, &traced);
    SpyRun *r = PyObject_New(SpyRun, &SpyRun_Type);
    if (!r)
        goto out;
    r->worker = (SpyWorker *)Py_NewRef(self);
    r->callable = (SpyCallable *)Py_XNewRef((PyObject *)c);
    r->submitted = 0;
    r->slot = slot;
    r->traced = traced;
    r->result = NULL;
    r->status = 0;
    r->message = NULL;
    memset(&r->h, 0, sizeof r->h);
    s->run = r; /* reserved before the GIL is let go */
    if (spy_args_fill(&s->args, c, call.tensors, call.scalars, &call.named)) {
        s->run = NULL;
        r->slot = -1;
        Py_DECREF(r);
        goto out;
    }
    char err[SPY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_submit(self->w, id, &s->args.args, cfg, &r->h) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    else
        r->submitted = 1;
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc) {
        spy_args_release(&s->args);
        s->run = NULL;
        r->slot = -1;
        Py_DECREF(r);
        spy_raise(rc, err);
        goto out;
    }
    ret = (PyObject *)r;
out:
    return ret;
}

/* ---- Worker: recorded graphs (replay) ----------------------------------------------- */

/* forget(callable_or_id, tensors=None, scalars=None, config=None, **named):
 * drop the graph a run on these arguments with this config would replay
 * (no arguments given: every graph of the callable). A Callable never
 * registered here has none: a no-op. */
static PyObject *worker_forget(SpyWorker *self, PyObject *args, PyObject *kw)
{
    PyObject *target = NULL, *tensors = NULL, *scalars = NULL, *config = NULL;
    if (!PyArg_UnpackTuple(args, "forget", 1, 4, &target, &tensors, &scalars, &config))
        return NULL;
    PyObject *named = NULL;
    if (kw && PyDict_GET_SIZE(kw)) {
        if (!(named = PyDict_Copy(kw)))
            return NULL;
        PyObject **slot[3] = {&tensors, &scalars, &config};
        static const char *const keys[3] = {"tensors", "scalars", "config"};
        for (int i = 0; i < 3; i++) {
            PyObject *v = PyDict_GetItemString(named, keys[i]); /* borrowed, from kw */
            if (!v)
                continue;
            if (*slot[i]) {
                Py_DECREF(named);
                return PyErr_Format(PyExc_TypeError, "forget() got multiple values for '%s'",
                                    keys[i]);
            }
            *slot[i] = v; /* kw (the caller's) keeps it alive */
            if (PyDict_DelItemString(named, keys[i])) {
                Py_DECREF(named);
                return NULL;
            }
        }
    }
    PyObject *ret = NULL;
    spy_args *a = NULL;
    if (check_open(self))
        goto out;
    uint32_t id;
    SpyCallable *c;
    if (SpyCallable_Check(target)) {
        c = (SpyCallable *)target;
        if (!find_registered(self, c, &id)) {
            ret = Py_NewRef(Py_None);
            goto out;
        }
    } else if (resolve(self, target, &id, &c)) {
        goto out;
    }
    const sp_call_config *cfg = NULL;
    if (config && config != Py_None) {
        if (!PyObject_TypeCheck(config, &SpyCallConfig_Type)) {
            PyErr_SetString(PyExc_TypeError, "forget(): config must be a simpler.CallConfig");
            goto out;
        }
        cfg = &((SpyCallConfig *)config)->cfg;
    }
    int with_args = (tensors && tensors != Py_None) || (scalars && scalars != Py_None) ||
                    (named && PyDict_GET_SIZE(named));
    if (with_args) {
        if (!(a = PyMem_Calloc(1, sizeof *a))) {
            PyErr_NoMemory();
            goto out;
        }
        if (spy_args_fill_dict(a, c, tensors, scalars, named))
            goto out;
    }
    char err[SPY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_forget(self->w, id, a ? &a->args : NULL, cfg) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc)
        spy_raise(rc, err);
    else
        ret = Py_NewRef(Py_None);
out:
    if (a) {
        spy_args_release(a);
        PyMem_Free(a);
    }
    Py_XDECREF(named);
    return ret;
}

/* simpler.GraphCacheInfo: sp_graph_cache_info as a struct sequence. */
static PyStructSequence_Field cache_info_fields[] = {
    {"count", "graphs kept now"},
    {"max_count", "the bound (Worker(graph_cache_count=...); default 16)"},
    {"bytes", "host bytes they hold"},
    {"max_bytes", "the bound (Worker(graph_cache_bytes=...); default 256 MiB)"},
    {"recorded", "runs that recorded a graph, since the worker opened"},
    {"replayed", "runs that replayed one"},
    {"evicted", "graphs dropped for the bound"},
    {"rerecorded", "replays refused because a control value read changed"},
    {NULL, NULL},
};

static PyStructSequence_Desc cache_info_desc = {
    "simpler.GraphCacheInfo",
    "What a worker keeps of recorded graphs (sp_graph_cache_info).",
    cache_info_fields,
    8,
};

static PyTypeObject *GraphCacheInfo_Type;

static PyObject *worker_graph_cache_info(SpyWorker *self, PyObject *unused)
{
    (void)unused;
    if (check_open(self))
        return NULL;
    sp_graph_cache_info gi;
    char err[SPY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_graph_cache_info(self->w, &gi) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc)
        return spy_raise(rc, err);
    PyObject *o = PyStructSequence_New(GraphCacheInfo_Type);
    if (!o)
        return NULL;
    const uint64_t v[8] = {gi.count,    gi.max_count, gi.bytes,   gi.max_bytes,
                           gi.recorded, gi.replayed,  gi.evicted, gi.rerecorded};
    for (int i = 0; i < 8; i++) {
        PyObject *n = PyLong_FromUnsignedLongLong(v[i]);
        if (!n) {
            Py_DECREF(o);
            return NULL;
        }
        PyStructSequence_SET_ITEM(o, i, n);
    }
    return o;
}

/* _c_run_loop(callable_or_id, tensors, scalars, config, n) -> [ns, ...]:
 * the C baseline for bench/: the arguments converted once, then n
 * sp_worker_run calls timed one by one, the GIL released throughout. */
static PyObject *worker_c_run_loop(SpyWorker *self, PyObject *args)
{
    PyObject *target, *tensors, *scalars, *config;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOOOn:_c_run_loop", &target, &tensors, &scalars, &config, &n))
        return NULL;
    if (n < 0)
        return spy_raise(SP_EINVAL, "n must be >= 0");
    if (config != Py_None && !PyObject_TypeCheck(config, &SpyCallConfig_Type))
        return spy_raise(SP_EINVAL, "config must be a simpler.CallConfig or None");
    uint32_t id;
    SpyCallable *c;
    if (check_open(self) || resolve(self, target, &id, &c))
        return NULL;
    const sp_call_config *cfg = config == Py_None ? NULL : &((SpyCallConfig *)config)->cfg;
    spy_args *a = PyMem_Calloc(1, sizeof *a);
    uint64_t *ns = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *ns);
    PyObject *list = NULL;
    if (!a || !ns) {
        PyErr_NoMemory();
        goto out;
    }
    if (spy_args_fill(a, c, tensors, scalars, NULL))
        goto out;
    char err[SPY_ERR_LEN];
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    for (Py_ssize_t i = 0; i < n && !rc; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = self->w ? sp_worker_run(self->w, id, &a->args, cfg, NULL) : SP_ESTATE;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ns[i] = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t1.tv_nsec -
                (uint64_t)t0.tv_nsec;
    }
    if (rc)
        copy_error(self, err);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc) {
        spy_raise(rc, err);
        goto out;
    }
    list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(ns[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
out:
    if (a) {
        spy_args_release(a);
        PyMem_Free(a);
    }
    PyMem_Free(ns);
    return list;
}

/* ---- Worker: what it is ------------------------------------------------------------------ */

static PyObject *worker_get_runtime(SpyWorker *self, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(self->runtime);
}

static PyObject *worker_get_lane_depth(SpyWorker *self, void *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLong(self->lane_depth);
}

static PyObject *worker_get_closed(SpyWorker *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(self->w == NULL);
}

static PyObject *worker_get_last_error(SpyWorker *self, void *unused)
{
    (void)unused;
    if (check_open(self))
        return NULL;
    char err[SPY_ERR_LEN];
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    snprintf(err, sizeof err, "%s", self->w ? sp_worker_last_error(self->w) : "");
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    return PyUnicode_FromString(err);
}

static int dict_set_u64(PyObject *d, const char *k, unsigned long long v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    int rc = o ? PyDict_SetItemString(d, k, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *worker_get_device_info(SpyWorker *self, void *unused)
{
    (void)unused;
    if (check_open(self))
        return NULL;
    sp_device_info di;
    char err[SPY_ERR_LEN];
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&self->lock);
    rc = self->w ? sp_worker_device_info(self->w, &di) : SP_ESTATE;
    if (rc)
        copy_error(self, err);
    pthread_mutex_unlock(&self->lock);
    Py_END_ALLOW_THREADS;
    if (rc)
        return spy_raise(rc, err);
    PyObject *d = PyDict_New(), *g = PyDict_New(), *lanes = PyTuple_New(di.geometry.lanes);
    PyObject *plat =
        PyUnicode_FromStringAndSize(di.platform, strnlen(di.platform, sizeof di.platform));
    if (!d || !g || !lanes || !plat)
        goto fail;
    for (uint32_t i = 0; i < di.geometry.lanes && i < SP_GEOMETRY_MAX_LANES; i++)
        PyTuple_SET_ITEM(lanes, i, PyUnicode_FromString(di.geometry.lane_type[i] ? "aiv" : "aic"));
    if (PyDict_SetItemString(d, "platform", plat) || dict_set_u64(d, "device_id", di.device_id) ||
        dict_set_u64(d, "core_count", di.core_count) ||
        dict_set_u64(d, "core_queue", di.core_queue) ||
        PyDict_SetItemString(d, "host_map", di.host_map ? Py_True : Py_False) ||
        dict_set_u64(d, "abandoned_cores", di.abandoned_cores) ||
        dict_set_u64(d, "open_devices", di.open_devices) ||
        dict_set_u64(d, "memory_bytes", di.memory_bytes) ||
        dict_set_u64(d, "committed_bytes", di.committed_bytes) ||
        dict_set_u64(g, "clusters", di.geometry.clusters) ||
        dict_set_u64(g, "lanes", di.geometry.lanes) ||
        PyDict_SetItemString(g, "lane_types", lanes) ||
        dict_set_u64(g, "aicpu_threads", di.geometry.aicpu_threads) ||
        PyDict_SetItemString(d, "geometry", g))
        goto fail;
    Py_DECREF(g);
    Py_DECREF(lanes);
    Py_DECREF(plat);
    return d;
fail:
    Py_XDECREF(d);
    Py_XDECREF(g);
    Py_XDECREF(lanes);
    Py_XDECREF(plat);
    return NULL;
}

static PyObject *worker_repr(SpyWorker *self)
{
    return PyUnicode_FromFormat("<simpler.Worker runtime='%s' %s>", self->runtime,
                                self->w ? "open" : "closed");
}

static PyMethodDef worker_methods[] = {
    {"run", (PyCFunction)(void (*)(void))worker_run, METH_FASTCALL | METH_KEYWORDS,
     "run(callable_or_id, tensors=(), scalars=(), config=None, *, trace=False, **named) -> "
     "RunResult: run synchronously (the GIL released); outputs land in the caller's arrays."},
    {"submit", (PyCFunction)(void (*)(void))worker_submit, METH_FASTCALL | METH_KEYWORDS,
     "submit(...same arguments as run...) -> Run: queue a run on the async lane."},
    {"register", (PyCFunction)(void (*)(void))worker_register, METH_VARARGS | METH_KEYWORDS,
     "register(callable, id=None) -> int: the callable's id (the same Callable: the same id)."},
    {"unregister", (PyCFunction)worker_unregister, METH_O,
     "unregister(callable_or_id): drop a registered callable."},
    {"forget", (PyCFunction)(void (*)(void))worker_forget, METH_VARARGS | METH_KEYWORDS,
     "forget(callable_or_id, tensors=None, scalars=None, **named): drop the recorded graph a "
     "run on these arguments would replay (no arguments: every graph of the callable)."},
    {"graph_cache_info", (PyCFunction)worker_graph_cache_info, METH_NOARGS,
     "graph_cache_info() -> GraphCacheInfo: the recorded graphs kept, their bounds, and how "
     "often runs recorded, replayed, evicted and re-recorded."},
    {"close", (PyCFunction)worker_close, METH_NOARGS,
     "close(): finish the runs in flight, detach the device; idempotent."},
    {"__enter__", (PyCFunction)worker_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)worker_exit, METH_VARARGS, NULL},
    {"_c_run_loop", (PyCFunction)worker_c_run_loop, METH_VARARGS,
     "_c_run_loop(callable_or_id, tensors, scalars, config, n) -> [ns per run]: the C "
     "baseline (arguments converted once, n sp_worker_run calls timed in C)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef worker_getset[] = {
    {"runtime", (getter)worker_get_runtime, NULL, "The runtime (or module path) opened.", NULL},
    {"lane_depth", (getter)worker_get_lane_depth, NULL, "Runs that may be in flight at once.",
     NULL},
    {"device_info", (getter)worker_get_device_info, NULL, "What the device is (a dict).", NULL},
    {"last_error", (getter)worker_get_last_error, NULL, "The text of the last failure.", NULL},
    {"closed", (getter)worker_get_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SpyWorker_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.Worker",
    .tp_basicsize = sizeof(SpyWorker),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Worker(runtime='hbg', device=0, clusters=0, sched_threads=0, ...): a runtime "
              "module with its device attached; a context manager.",
    .tp_new = worker_new,
    .tp_init = (initproc)worker_init,
    .tp_dealloc = (destructor)worker_dealloc,
    .tp_repr = (reprfunc)worker_repr,
    .tp_methods = worker_methods,
    .tp_getset = worker_getset,
    .tp_weaklistoffset = offsetof(SpyWorker, weakrefs),
};

/* ---- Run ---------------------------------------------------------------------------------- */

/* Wait for r (GIL released) and keep its outcome; release its lane slot.
 * Returns the result (new reference), or NULL with the run's error raised;
 * *timed_out set (and the run still in flight) when timeout_ms passed. */
static PyObject *run_finish(SpyRun *r, uint64_t timeout_ms, int *timed_out)
{
    *timed_out = 0;
    if (r->slot < 0) { /* finished before */
        if (r->result)
            return Py_NewRef(r->result);
        return spy_raise(r->status, r->message ? PyUnicode_AsUTF8(r->message) : "");
    }
    SpyWorker *W = r->worker;
    sp_run_stats st;
    char err[SPY_ERR_LEN];
    int rc;
    PyObject *trace = NULL;
    sp_run_trace snap = {0}; /* level 0: not traced */
    int snap_rc = 0;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&W->lock);
    if (!W->w || !r->submitted)
        rc = SP_ESTATE;
    else if (timeout_ms == UINT64_MAX)
        rc = sp_worker_wait(W->w, &r->h, &st);
    else {
        rc = sp_worker_wait_for(W->w, &r->h, &st, timeout_ms);
        /* A run that failed with SP_ETIMEOUT itself is released: its
         * handle is stale now; one still running keeps a live handle. */
        if (rc == SP_ETIMEOUT && sp_worker_poll(W->w, &r->h) != SP_ESTALE)
            *timed_out = 1;
    }
    if (rc && !*timed_out)
        copy_error(W, err);
    else if (!rc && r->traced)
        snap_rc = trace_snapshot(W, &snap);
    pthread_mutex_unlock(&W->lock);
    Py_END_ALLOW_THREADS;
    if (*timed_out)
        return spy_raisef(SP_ETIMEOUT, "the run is still in flight after %llu ms; wait again",
                          (unsigned long long)timeout_ms);
    if (!rc && r->traced)
        trace = trace_from_snapshot(W, &snap, &st, r->callable, snap_rc);
    lane_slot *s = &W->lane[r->slot];
    PyObject *outputs = s->args.outputs;
    s->args.outputs = NULL;
    spy_args_release(&s->args);
    s->run = NULL;
    r->slot = -1;
    if (rc) {
        Py_XDECREF(outputs);
        r->status = rc;
        r->message = PyUnicode_FromString(err);
        return spy_raise(rc, err);
    }
    if (trace || !r->traced)
        r->result = spy_run_result_new(&st, trace, outputs);
    Py_XDECREF(trace);
    Py_XDECREF(outputs);
    if (!r->result) { /* out of memory building it: the run is over all the same */
        r->status = SP_ENOMEM;
        r->message = PyUnicode_FromString("the run's result could not be built");
        return NULL;
    }
    return Py_NewRef(r->result);
}

static PyObject *run_wait(SpyRun *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:wait", kwlist, &timeout))
        return NULL;
    uint64_t ms = UINT64_MAX;
    if (timeout != Py_None) {
        double s = PyFloat_AsDouble(timeout);
        if (s == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(s >= 0))
            return spy_raise(SP_EINVAL, "timeout is seconds >= 0, or None");
        ms = s * 1000.0 >= 1e18 ? UINT64_MAX - 1 : (uint64_t)(s * 1000.0 + 0.5);
    }
    int timed_out;
    return run_finish(self, ms, &timed_out);
}

static PyObject *run_done(SpyRun *self, PyObject *unused)
{
    (void)unused;
    if (self->slot < 0)
        Py_RETURN_TRUE;
    SpyWorker *W = self->worker;
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    pthread_mutex_lock(&W->lock);
    rc = W->w && self->submitted ? sp_worker_poll(W->w, &self->h) : SP_ESTATE;
    pthread_mutex_unlock(&W->lock);
    Py_END_ALLOW_THREADS;
    return PyBool_FromLong(rc != SP_RUN_NOT_READY);
}

static void run_dealloc(SpyRun *self)
{
    if (self->slot >= 0) {
        /* Dropped unwaited: the buffers stay held until the run is over. */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        int timed_out;
        PyObject *res = run_finish(self, UINT64_MAX, &timed_out);
        Py_XDECREF(res);
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    Py_CLEAR(self->result);
    Py_CLEAR(self->message);
    Py_CLEAR(self->callable);
    Py_CLEAR(self->worker);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *run_repr(SpyRun *self)
{
    const char *state = self->slot >= 0 ? "in flight" : self->result ? "done" : "failed";
    return PyUnicode_FromFormat("<simpler.Run %llu %s>", (unsigned long long)self->h.run_id, state);
}

static PyMethodDef run_methods[] = {
    {"wait", (PyCFunction)(void (*)(void))run_wait, METH_VARARGS | METH_KEYWORDS,
     "wait(timeout=None) -> RunResult: wait for the run (seconds; TimeoutError past it, and "
     "the run stays valid); the failure's error if it failed."},
    {"done", (PyCFunction)run_done, METH_NOARGS,
     "done() -> bool: the run is over (it may still need wait() for its result)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SpyRun_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.Run",
    .tp_basicsize = sizeof(SpyRun),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A submitted run (Worker.submit): wait() for its RunResult, done() to poll.",
    .tp_dealloc = (destructor)run_dealloc,
    .tp_repr = (reprfunc)run_repr,
    .tp_methods = run_methods,
};

/* _args_probe(callable_or_None, tensors=(), scalars=(), **named) -> dict:
 * what spy_args_fill makes of the arguments (tensors as (dir, dtype,
 * shape, addr), scalars as their 64-bit words, the outputs dict), for the
 * binding's tests; nothing runs. */
static PyObject *args_probe(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    PyObject *target, *tensors = NULL, *scalars = NULL;
    if (!PyArg_ParseTuple(args, "O|OO:_args_probe", &target, &tensors, &scalars))
        return NULL;
    if (target != Py_None && !SpyCallable_Check(target))
        return spy_raise(SP_EINVAL, "_args_probe takes a Callable or None");
    spy_args *a = PyMem_Calloc(1, sizeof *a);
    if (!a)
        return PyErr_NoMemory();
    PyObject *out = NULL, *tl = NULL, *sl = NULL;
    if (spy_args_fill_dict(a, target == Py_None ? NULL : (SpyCallable *)target, tensors, scalars,
                           kw))
        goto done;
    tl = PyList_New(a->args.tensor_count);
    sl = PyList_New(a->args.scalar_count);
    if (!tl || !sl)
        goto done;
    for (uint32_t i = 0; i < a->args.tensor_count; i++) {
        const sp_tensor *t = &a->args.tensors[i];
        PyObject *shape = PyTuple_New(t->ndim);
        if (!shape)
            goto done;
        for (int d = 0; d < t->ndim; d++)
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(t->shape[d]));
        PyObject *row = Py_BuildValue("isNK", a->args.dirs[i], sp_dtype_name(t->dtype), shape,
                                      (unsigned long long)t->addr);
        if (!row)
            goto done;
        PyList_SET_ITEM(tl, i, row);
    }
    for (uint32_t j = 0; j < a->args.scalar_count; j++) {
        PyObject *v = PyLong_FromUnsignedLongLong(a->args.scalars[j]);
        if (!v)
            goto done;
        PyList_SET_ITEM(sl, j, v);
    }
    out = Py_BuildValue("{sOsOsO}", "tensors", tl, "scalars", sl, "outputs",
                        a->outputs ? a->outputs : Py_None);
done:
    Py_XDECREF(tl);
    Py_XDECREF(sl);
    spy_args_release(a);
    PyMem_Free(a);
    return out;
}

static PyMethodDef module_functions[] = {
    {"_args_probe", (PyCFunction)(void (*)(void))args_probe, METH_VARARGS | METH_KEYWORDS,
     "_args_probe(callable_or_None, tensors=(), scalars=(), **named) -> dict (for tests)."},
    {NULL, NULL, 0, NULL},
};

int spy_worker_init(PyObject *module)
{
    for (int j = 0; j < KW_COUNT; j++)
        if (!kw_str[j] && !(kw_str[j] = PyUnicode_InternFromString(kw_text[j])))
            return -1;
    if (PyType_Ready(&SpyWorker_Type) || PyType_Ready(&SpyRun_Type))
        return -1;
    Py_INCREF(&SpyWorker_Type);
    if (PyModule_AddObject(module, "Worker", (PyObject *)&SpyWorker_Type)) {
        Py_DECREF(&SpyWorker_Type);
        return -1;
    }
    Py_INCREF(&SpyRun_Type);
    if (PyModule_AddObject(module, "Run", (PyObject *)&SpyRun_Type)) {
        Py_DECREF(&SpyRun_Type);
        return -1;
    }
    if (!(GraphCacheInfo_Type = PyStructSequence_NewType(&cache_info_desc)))
        return -1;
    Py_INCREF(GraphCacheInfo_Type);
    if (PyModule_AddObject(module, "GraphCacheInfo", (PyObject *)GraphCacheInfo_Type)) {
        Py_DECREF(GraphCacheInfo_Type);
        return -1;
    }
    return PyModule_AddFunctions(module, module_functions);
}
