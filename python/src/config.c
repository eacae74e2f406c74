/* The small value types of a run: Arg (a tensor with its direction) and
 * its In/Out/... constructors, CallConfig (an sp_call_config with named
 * attributes), RunStats (a struct sequence of sp_run_stats) and RunResult
 * (what Worker.run and Run.wait return). Nothing here runs per task. */
#include <stddef.h>
#include <string.h>

#include "py_simpler.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "structmember.h"

/* ---- Arg ------------------------------------------------------------------- */

/* The dtype keyword: None (the buffer's own) or a name of DTYPES. */
static int parse_dtype(PyObject *o, int *out)
{
    *out = 0;
    if (!o || o == Py_None)
        return 0;
    const char *name = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!name) {
        if (!PyErr_Occurred())
            spy_raisef(SP_EDTYPE, "dtype must be a name of simpler.DTYPES or None, not %s",
                       Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = spy_dtype_from_name(name);
    if (!*out) {
        spy_raisef(SP_EDTYPE, "unknown dtype '%s' (simpler.DTYPES names them)", name);
        return -1;
    }
    return 0;
}

static int arg_set(SpyArg *a, PyObject *obj, int dir, PyObject *dtype)
{
    if (dir < SP_IN || dir > SP_NO_DEP) {
        spy_raisef(SP_EINVAL, "direction %d is not one of simpler.IN OUT INOUT OUT_EXISTING NO_DEP",
                   dir);
        return -1;
    }
    if (Py_TYPE(obj) == &SpyArg_Type) {
        spy_raise(SP_EINVAL, "an Arg cannot wrap another Arg");
        return -1;
    }
    int dt;
    if (parse_dtype(dtype, &dt))
        return -1;
    Py_XSETREF(a->obj, Py_NewRef(obj));
    a->dir = dir;
    a->dtype = dt;
    return 0;
}

static int arg_init(SpyArg *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"obj", "dir", "dtype", NULL};
    PyObject *obj, *dtype = NULL;
    int dir;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|O:Arg", kwlist, &obj, &dir, &dtype))
        return -1;
    return arg_set(self, obj, dir, dtype);
}

static void arg_dealloc(SpyArg *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->obj);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int arg_traverse(SpyArg *self, visitproc visit, void *arg)
{
    Py_VISIT(self->obj);
    return 0;
}

static int arg_clear(SpyArg *self)
{
    Py_CLEAR(self->obj);
    return 0;
}

static const char *dir_name(int dir)
{
    static const char *const names[] = {"?", "IN", "OUT", "INOUT", "OUT_EXISTING", "NO_DEP"};
    return dir >= SP_IN && dir <= SP_NO_DEP ? names[dir] : "?";
}

static PyObject *arg_repr(SpyArg *self)
{
    if (self->dtype)
        return PyUnicode_FromFormat("simpler.Arg(%R, %s, dtype='%s')", self->obj,
                                    dir_name(self->dir), sp_dtype_name(self->dtype));
    return PyUnicode_FromFormat("simpler.Arg(%R, %s)", self->obj, dir_name(self->dir));
}

static PyObject *arg_get_obj(SpyArg *self, void *unused)
{
    (void)unused;
    return Py_NewRef(self->obj ? self->obj : Py_None);
}

static PyObject *arg_get_dir(SpyArg *self, void *unused)
{
    (void)unused;
    return PyLong_FromLong(self->dir);
}

static PyObject *arg_get_dtype(SpyArg *self, void *unused)
{
    (void)unused;
    if (!self->dtype)
        Py_RETURN_NONE;
    return PyUnicode_FromString(sp_dtype_name(self->dtype));
}

static PyGetSetDef arg_getset[] = {
    {"obj", (getter)arg_get_obj, NULL, "The wrapped tensor object.", NULL},
    {"dir", (getter)arg_get_dir, NULL, "Its direction (simpler.IN, OUT, ...).", NULL},
    {"dtype", (getter)arg_get_dtype, NULL, "The dtype override (a DTYPES name) or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SpyArg_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.Arg",
    .tp_basicsize = sizeof(SpyArg),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Arg(obj, dir, dtype=None): a tensor argument with its direction; dtype= names "
              "the dtype of its items when the buffer's format does not (same item size).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)arg_init,
    .tp_dealloc = (destructor)arg_dealloc,
    .tp_traverse = (traverseproc)arg_traverse,
    .tp_clear = (inquiry)arg_clear,
    .tp_repr = (reprfunc)arg_repr,
    .tp_getset = arg_getset,
};

/* In(obj, dtype=None) and the others: Arg with a fixed direction. */
static PyObject *arg_make(PyObject *args, PyObject *kw, int dir, const char *fmt)
{
    static char *kwlist[] = {"obj", "dtype", NULL};
    PyObject *obj, *dtype = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &obj, &dtype))
        return NULL;
    SpyArg *a = PyObject_GC_New(SpyArg, &SpyArg_Type);
    if (!a)
        return NULL;
    a->obj = NULL;
    a->dir = 0;
    a->dtype = 0;
    PyObject_GC_Track(a);
    if (arg_set(a, obj, dir, dtype)) {
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}

#define SPY_ARG_CTOR(fn, dir, pyname)                                                              \
    static PyObject *fn(PyObject *self, PyObject *args, PyObject *kw)                              \
    {                                                                                              \
        (void)self;                                                                                \
        return arg_make(args, kw, dir, "O|O:" pyname);                                             \
    }
SPY_ARG_CTOR(make_in, SP_IN, "In")
SPY_ARG_CTOR(make_out, SP_OUT, "Out")
SPY_ARG_CTOR(make_inout, SP_INOUT, "InOut")
SPY_ARG_CTOR(make_out_existing, SP_OUT_EXISTING, "OutExisting")
SPY_ARG_CTOR(make_no_dep, SP_NO_DEP, "NoDep")

static PyMethodDef arg_ctors[] = {
    {"In", (PyCFunction)(void (*)(void))make_in, METH_VARARGS | METH_KEYWORDS,
     "In(obj, dtype=None): an input tensor (read)."},
    {"Out", (PyCFunction)(void (*)(void))make_out, METH_VARARGS | METH_KEYWORDS,
     "Out(obj, dtype=None): an output tensor (written)."},
    {"InOut", (PyCFunction)(void (*)(void))make_inout, METH_VARARGS | METH_KEYWORDS,
     "InOut(obj, dtype=None): a tensor read and written."},
    {"OutExisting", (PyCFunction)(void (*)(void))make_out_existing, METH_VARARGS | METH_KEYWORDS,
     "OutExisting(obj, dtype=None): an output written into the existing buffer."},
    {"NoDep", (PyCFunction)(void (*)(void))make_no_dep, METH_VARARGS | METH_KEYWORDS,
     "NoDep(obj, dtype=None): accessed, only the creator edge derived."},
    {NULL, NULL, 0, NULL},
};

/* ---- CallConfig ------------------------------------------------------------ */

#define CFG_OFF(f) (offsetof(SpyCallConfig, cfg) + offsetof(sp_call_config, f))

static PyMemberDef config_members[] = {
    {"clusters", T_UINT, CFG_OFF(clusters), 0, "Clusters to use (0: the device's)."},
    {"sched_threads", T_UINT, CFG_OFF(sched_threads), 0, "Scheduler threads (0: default)."},
    {"task_window", T_UINT, CFG_OFF(task_window), 0, "tmr: task ring slots."},
    {"trace_level", T_UINT, CFG_OFF(trace_level), 0, "0 off, 1 tasks, 2 sched, 3 submits."},
    {"heap_bytes", T_ULONGLONG, CFG_OFF(heap_bytes), 0, "tmr: heap ring bytes."},
    {"timeout_us", T_ULONGLONG, CFG_OFF(timeout_us), 0, "Per-task scheduler timeout."},
    {"trace_records", T_ULONGLONG, CFG_OFF(trace_records), 0, "tmr: trace buffer records."},
    {"graph_bytes", T_ULONGLONG, CFG_OFF(graph_bytes), 0, "hbg: graph build memory bound."},
    {"graph_tasks", T_UINT, CFG_OFF(graph_tasks), 0, "hbg: most tasks of one graph."},
    {"orch_timeout_us", T_ULONGLONG, CFG_OFF(orch_timeout_us), 0, "Orchestration watchdog."},
    {"run_timeout_us", T_ULONGLONG, CFG_OFF(run_timeout_us), 0, "The lane's bound on a run."},
    {"flags", T_ULONGLONG, CFG_OFF(flags), 0, "SP_CALL_* flags (check and replay set them)."},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *config_get_check(SpyCallConfig *self, void *unused)
{
    (void)unused;
    if (self->cfg.flags & SP_CALL_CHECK)
        Py_RETURN_TRUE;
    if (self->cfg.flags & SP_CALL_NO_CHECK)
        Py_RETURN_FALSE;
    Py_RETURN_NONE;
}

static int config_set_check(SpyCallConfig *self, PyObject *v, void *unused)
{
    (void)unused;
    self->cfg.flags &= ~(SP_CALL_CHECK | SP_CALL_NO_CHECK);
    if (!v || v == Py_None)
        return 0;
    int on = PyObject_IsTrue(v);
    if (on < 0)
        return -1;
    self->cfg.flags |= on ? SP_CALL_CHECK : SP_CALL_NO_CHECK;
    return 0;
}

/* The replay policy (DESIGN §12) as a name: "off", "auto", "only". */
static const char *replay_name(uint64_t flags)
{
    return flags & SP_CALL_REPLAY_ONLY ? "only" : flags & SP_CALL_REPLAY_AUTO ? "auto" : "off";
}

static PyObject *config_get_replay(SpyCallConfig *self, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(replay_name(self->cfg.flags));
}

static int config_set_replay(SpyCallConfig *self, PyObject *v, void *unused)
{
    (void)unused;
    static const char *const names[] = {"off", "auto", "only"};
    static const uint64_t bits[] = {0, SP_CALL_REPLAY_AUTO, SP_CALL_REPLAY_ONLY};
    const char *s = v && v != Py_None && PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
    if (!v || v == Py_None)
        s = "off";
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            self->cfg.flags &= ~(SP_CALL_REPLAY_AUTO | SP_CALL_REPLAY_ONLY);
            self->cfg.flags |= bits[i];
            return 0;
        }
    if (!PyErr_Occurred()) {
        PyObject *r = PyObject_Repr(v);
        spy_raisef(SP_EINVAL, "replay is 'off', 'auto' or 'only' (or None: off), not %s",
                   r ? PyUnicode_AsUTF8(r) : "that");
        Py_XDECREF(r);
    }
    return -1;
}

static PyGetSetDef config_getset[] = {
    {"check", (getter)config_get_check, (setter)config_set_check,
     "True: the checking mode (red zones), False: never, None: the worker's default.", NULL},
    {"replay", (getter)config_get_replay, (setter)config_set_replay,
     "'off' (default: the orchestration runs, nothing kept), 'auto' (replay the graph recorded "
     "for this callable and graph key, else record it), 'only' (replay, else "
     "simpler.ReplayMissError); the SP_CALL_REPLAY_* flags.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int config_init(SpyCallConfig *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {
        "clusters",       "sched_threads", "task_window", "trace_level", "heap_bytes",
        "timeout_us",     "trace_records", "graph_bytes", "graph_tasks", "orch_timeout_us",
        "run_timeout_us", "check",         "replay",      NULL};
    sp_call_config c = {0};
    PyObject *check = Py_None, *replay = Py_None;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "|IIIIKKKKIKKOO:CallConfig", kwlist, &c.clusters, &c.sched_threads,
            &c.task_window, &c.trace_level, &c.heap_bytes, &c.timeout_us, &c.trace_records,
            &c.graph_bytes, &c.graph_tasks, &c.orch_timeout_us, &c.run_timeout_us, &check, &replay))
        return -1;
    self->cfg = c;
    return config_set_check(self, check, NULL) || config_set_replay(self, replay, NULL) ? -1 : 0;
}

static PyObject *config_repr(SpyCallConfig *self)
{
    PyObject *parts = PyList_New(0);
    if (!parts)
        return NULL;
    for (PyMemberDef *m = config_members; m->name; m++) {
        if (strcmp(m->name, "flags") == 0)
            continue;
        unsigned long long v = m->type == T_UINT ? *(uint32_t *)((char *)self + m->offset)
                                                 : *(uint64_t *)((char *)self + m->offset);
        if (!v)
            continue;
        PyObject *s = PyUnicode_FromFormat("%s=%llu", m->name, v);
        if (!s || PyList_Append(parts, s)) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    if (self->cfg.flags & (SP_CALL_CHECK | SP_CALL_NO_CHECK)) {
        PyObject *s =
            PyUnicode_FromString(self->cfg.flags & SP_CALL_CHECK ? "check=True" : "check=False");
        if (!s || PyList_Append(parts, s)) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    if (self->cfg.flags & (SP_CALL_REPLAY_AUTO | SP_CALL_REPLAY_ONLY)) {
        PyObject *s = PyUnicode_FromFormat("replay='%s'", replay_name(self->cfg.flags));
        if (!s || PyList_Append(parts, s)) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *joined = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    Py_DECREF(parts);
    if (!joined)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("simpler.CallConfig(%U)", joined);
    Py_DECREF(joined);
    return r;
}

PyTypeObject SpyCallConfig_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.CallConfig",
    .tp_basicsize = sizeof(SpyCallConfig),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "CallConfig(clusters=0, sched_threads=0, ..., check=None, replay='off'): one run's "
              "sp_call_config; 0 in a field is the default.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)config_init,
    .tp_repr = (reprfunc)config_repr,
    .tp_members = config_members,
    .tp_getset = config_getset,
};

/* ---- RunStats ----------------------------------------------------------------- */

static PyStructSequence_Field stats_fields[] = {
    {"tasks", "tasks the run executed"},
    {"edges", "dependency edges"},
    {"build_ns", "hbg: host-side graph build"},
    {"upload_ns", "hbg: image upload"},
    {"device_ns", "launch to completion"},
    {"image_bytes", "hbg: graph image size"},
    {"orch_ns", "tmr: launch to the orchestration's return"},
    {"first_complete_ns", "tmr: launch to the first task's completion"},
    {"replay", "'fresh' (the orchestration ran, nothing kept), 'recorded' (it ran and its graph "
               "was kept) or 'replayed' (a recorded graph ran: no orchestration)"},
    {"skipped", "predicated tasks retired without running"},
    {"patch_bytes", "replayed: bytes uploaded for the patch (hbg) or the stream (tmr)"},
    {"chained", "tasks queued on a core behind their last unfinished producer"},
    {NULL, NULL},
};

#define SPY_STATS_FIELDS 12

static PyStructSequence_Desc stats_desc = {
    "simpler.RunStats",
    "One run's figures (sp_run_stats).",
    stats_fields,
    SPY_STATS_FIELDS,
};

static PyTypeObject *RunStats_Type;
/* "fresh", "recorded", "replayed": immutable, made once at import. */
static PyObject *replay_names[3];

PyObject *spy_run_stats_new(const sp_run_stats *st)
{
    PyObject *s = PyStructSequence_New(RunStats_Type);
    if (!s)
        return NULL;
    const uint64_t v[SPY_STATS_FIELDS] = {st->tasks,
                                          st->edges,
                                          st->build_ns,
                                          st->upload_ns,
                                          st->device_ns,
                                          st->image_bytes,
                                          st->orch_ns,
                                          st->first_complete_ns,
                                          0,
                                          st->skipped,
                                          st->patch_bytes,
                                          st->chained};
    for (int i = 0; i < SPY_STATS_FIELDS; i++) {
        PyObject *n;
        if (i == 8) /* replay: its name; a value this binding does not know as a number */
            n = st->replay < 3 ? Py_NewRef(replay_names[st->replay])
                               : PyLong_FromUnsignedLong(st->replay);
        else
            n = PyLong_FromUnsignedLongLong(v[i]);
        if (!n) {
            Py_DECREF(s);
            return NULL;
        }
        PyStructSequence_SET_ITEM(s, i, n);
    }
    return s;
}

/* ---- RunResult ------------------------------------------------------------------ */

typedef struct SpyRunResult {
    PyObject_HEAD PyObject *stats; /* the RunStats, made on first access (NULL before) */
    PyObject *trace;
    PyObject *outputs;
    sp_run_stats st; /* the run's figures */
} SpyRunResult;

static PyTypeObject SpyRunResult_Type;

PyObject *spy_run_result_new(const sp_run_stats *st, PyObject *trace, PyObject *outputs)
{
    SpyRunResult *r = PyObject_GC_New(SpyRunResult, &SpyRunResult_Type);
    if (!r)
        return NULL;
    r->stats = NULL;
    r->st = *st;
    r->trace = Py_NewRef(trace ? trace : Py_None);
    r->outputs = outputs ? Py_NewRef(outputs) : PyDict_New();
    PyObject_GC_Track(r);
    if (!r->outputs) {
        Py_DECREF(r);
        return NULL;
    }
    return (PyObject *)r;
}

static PyObject *result_get_stats(SpyRunResult *self, void *unused)
{
    (void)unused;
    if (!self->stats && !(self->stats = spy_run_stats_new(&self->st)))
        return NULL;
    return Py_NewRef(self->stats);
}

static void result_dealloc(SpyRunResult *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->stats);
    Py_CLEAR(self->trace);
    Py_CLEAR(self->outputs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int result_traverse(SpyRunResult *self, visitproc visit, void *arg)
{
    Py_VISIT(self->stats);
    Py_VISIT(self->trace);
    Py_VISIT(self->outputs);
    return 0;
}

static int result_clear(SpyRunResult *self)
{
    Py_CLEAR(self->stats);
    Py_CLEAR(self->trace);
    Py_CLEAR(self->outputs);
    return 0;
}

static PyObject *result_getitem(SpyRunResult *self, PyObject *key)
{
    return PyObject_GetItem(self->outputs, key);
}

static PyObject *result_repr(SpyRunResult *self)
{
    PyObject *stats = result_get_stats(self, NULL);
    if (!stats)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("simpler.RunResult(stats=%R, trace=%R, outputs=%R)", stats,
                                       self->trace, self->outputs);
    Py_DECREF(stats);
    return r;
}

static PyMappingMethods result_mapping = {
    .mp_subscript = (binaryfunc)result_getitem,
};

static PyMemberDef result_members[] = {
    {"trace", T_OBJECT, offsetof(SpyRunResult, trace), READONLY, "simpler.Trace or None"},
    {"outputs", T_OBJECT, offsetof(SpyRunResult, outputs), READONLY,
     "dict: argument name (index without a signature) -> the array written"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef result_getset[] = {
    {"stats", (getter)result_get_stats, NULL,
     "simpler.RunStats (made on first access: a run that does not look costs no object)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SpyRunResult_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.RunResult",
    .tp_basicsize = sizeof(SpyRunResult),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "What a run returns: .stats, .trace, .outputs; r[key] is r.outputs[key].",
    .tp_dealloc = (destructor)result_dealloc,
    .tp_traverse = (traverseproc)result_traverse,
    .tp_clear = (inquiry)result_clear,
    .tp_repr = (reprfunc)result_repr,
    .tp_as_mapping = &result_mapping,
    .tp_members = result_members,
    .tp_getset = result_getset,
};

/* ---- registration ------------------------------------------------------------- */

static int add_type(PyObject *module, const char *name, PyTypeObject *t)
{
    if (PyType_Ready(t))
        return -1;
    Py_INCREF(t);
    if (PyModule_AddObject(module, name, (PyObject *)t)) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

int spy_config_init(PyObject *module)
{
    if (add_type(module, "Arg", &SpyArg_Type) ||
        add_type(module, "CallConfig", &SpyCallConfig_Type) ||
        add_type(module, "RunResult", &SpyRunResult_Type))
        return -1;
    static const char *const names[3] = {
        [SP_RUN_FRESH] = "fresh", [SP_RUN_RECORDED] = "recorded", [SP_RUN_REPLAYED] = "replayed"};
    for (int i = 0; i < 3; i++)
        if (!replay_names[i] && !(replay_names[i] = PyUnicode_InternFromString(names[i])))
            return -1;
    RunStats_Type = PyStructSequence_NewType(&stats_desc);
    if (!RunStats_Type)
        return -1;
    Py_INCREF(RunStats_Type);
    if (PyModule_AddObject(module, "RunStats", (PyObject *)RunStats_Type)) {
        Py_DECREF(RunStats_Type);
        return -1;
    }
    return PyModule_AddFunctions(module, arg_ctors);
}
