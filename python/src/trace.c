/* simpler.Trace: a copy of one run's trace (simpler/trace.h), its records
 * and edges as numpy structured arrays (views of the copy, read-only) and
 * its pictures written by libsimpler's exporters (simpler/trace_export.h)
 * with the kernel names of the run's callable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_simpler.h"
#include "simpler/status.h"
#include "simpler/trace_export.h"

typedef struct SpyTrace {
    PyObject_HEAD sp_run_trace tr; /* records/edges point into the bytes below */
    sp_run_stats stats;
    PyObject *records;     /* bytes: tr.record_count sp_trace_records */
    PyObject *edges;       /* bytes: tr.edge_count sp_trace_edges */
    SpyCallable *callable; /* kernel names; may be NULL */
    PyObject *runtime;     /* str */
} SpyTrace;

PyObject *spy_trace_new(const sp_run_trace *tr, const sp_run_stats *stats, SpyCallable *callable,
                        const char *runtime)
{
    SpyTrace *t = PyObject_New(SpyTrace, &SpyTrace_Type);
    if (!t)
        return NULL;
    t->tr = *tr;
    t->stats = stats ? *stats : (sp_run_stats){0};
    t->records = t->edges = t->runtime = NULL;
    t->callable = (SpyCallable *)Py_XNewRef((PyObject *)callable);
    /* What the source holds: min(count, cap) of each; the rest counts as
     * dropped here too. */
    uint64_t nr =
        tr->records ? (tr->record_count < tr->record_cap ? tr->record_count : tr->record_cap) : 0;
    uint64_t ne = tr->edges ? (tr->edge_count < tr->edge_cap ? tr->edge_count : tr->edge_cap) : 0;
    t->tr.records_dropped += tr->record_count - nr;
    t->tr.edges_dropped += tr->edge_count - ne;
    t->records = PyBytes_FromStringAndSize(nr ? (const char *)tr->records : NULL,
                                           (Py_ssize_t)(nr * sizeof(sp_trace_record)));
    t->edges = PyBytes_FromStringAndSize(ne ? (const char *)tr->edges : NULL,
                                         (Py_ssize_t)(ne * sizeof(sp_trace_edge)));
    t->runtime = PyUnicode_FromString(runtime ? runtime : "");
    if (!t->records || !t->edges || !t->runtime) {
        Py_DECREF(t);
        return NULL;
    }
    /* Bytes never move: the exporters read the copy in place. */
    t->tr.records = (sp_trace_record *)PyBytes_AS_STRING(t->records);
    t->tr.record_count = t->tr.record_cap = nr;
    t->tr.edges = (sp_trace_edge *)PyBytes_AS_STRING(t->edges);
    t->tr.edge_count = t->tr.edge_cap = ne;
    return (PyObject *)t;
}

static void trace_dealloc(SpyTrace *t)
{
    Py_XDECREF(t->records);
    Py_XDECREF(t->edges);
    Py_XDECREF(t->callable);
    Py_XDECREF(t->runtime);
    PyObject_Free(t);
}

/* numpy.dtype of the given fields (name, format, offset) and item size. */
static PyObject *struct_dtype(const char *const *names, const char *const *formats,
                              const size_t *offsets, int n, size_t itemsize)
{
    PyObject *np = spy_numpy();
    if (!np)
        return NULL;
    PyObject *ln = PyList_New(n), *lf = PyList_New(n), *lo = PyList_New(n), *spec = NULL;
    if (!ln || !lf || !lo)
        goto done;
    for (int i = 0; i < n; i++) {
        PyObject *a = PyUnicode_FromString(names[i]), *b = PyUnicode_FromString(formats[i]),
                 *c = PyLong_FromSize_t(offsets[i]);
        if (!a || !b || !c) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_XDECREF(c);
            goto done;
        }
        PyList_SET_ITEM(ln, i, a);
        PyList_SET_ITEM(lf, i, b);
        PyList_SET_ITEM(lo, i, c);
    }
    spec = Py_BuildValue("{sOsOsOsn}", "names", ln, "formats", lf, "offsets", lo, "itemsize",
                         (Py_ssize_t)itemsize);
done:
    Py_XDECREF(ln);
    Py_XDECREF(lf);
    Py_XDECREF(lo);
    if (!spec)
        return NULL;
    PyObject *dt = PyObject_CallMethod(np, "dtype", "O", spec);
    Py_DECREF(spec);
    return dt;
}

/* A read-only structured array over `bytes` (no copy; it keeps them alive). */
static PyObject *array_over(PyObject *bytes, PyObject *dtype)
{
    if (!dtype)
        return NULL;
    PyObject *np = spy_numpy();
    PyObject *a = np ? PyObject_CallMethod(np, "frombuffer", "OO", bytes, dtype) : NULL;
    Py_DECREF(dtype);
    return a;
}

#define SPY_FIELD(type, f) offsetof(type, f)

static PyObject *trace_get_records(SpyTrace *t, void *closure)
{
    (void)closure;
    static const char *const names[] = {"task",   "submit_ns", "dispatch_ns", "start_ns",
                                        "end_ns", "func_id",   "block",       "core",
                                        "thread", "kind",      "shape",       "lane"};
    static const char *const formats[] = {"<u8", "<u8", "<u8", "<u8", "<u8", "<i4",
                                          "<u4", "<u2", "<u2", "u1",  "u1",  "u1"};
    static const size_t offsets[] = {
        SPY_FIELD(sp_trace_record, task),        SPY_FIELD(sp_trace_record, submit_ns),
        SPY_FIELD(sp_trace_record, dispatch_ns), SPY_FIELD(sp_trace_record, start_ns),
        SPY_FIELD(sp_trace_record, end_ns),      SPY_FIELD(sp_trace_record, func_id),
        SPY_FIELD(sp_trace_record, block),       SPY_FIELD(sp_trace_record, core),
        SPY_FIELD(sp_trace_record, thread),      SPY_FIELD(sp_trace_record, kind),
        SPY_FIELD(sp_trace_record, shape),       SPY_FIELD(sp_trace_record, lane),
    };
    return array_over(t->records,
                      struct_dtype(names, formats, offsets, 12, sizeof(sp_trace_record)));
}

static PyObject *trace_get_edges(SpyTrace *t, void *closure)
{
    (void)closure;
    static const char *const names[] = {"producer", "consumer", "kind"};
    static const char *const formats[] = {"<u8", "<u8", "<u4"};
    static const size_t offsets[] = {SPY_FIELD(sp_trace_edge, producer),
                                     SPY_FIELD(sp_trace_edge, consumer),
                                     SPY_FIELD(sp_trace_edge, kind)};
    return array_over(t->edges, struct_dtype(names, formats, offsets, 3, sizeof(sp_trace_edge)));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Distinct task ids among the records of kind_a or kind_b. */
static PyObject *distinct_tasks(SpyTrace *t, int kind_a, int kind_b)
{
    uint64_t n = t->tr.record_count, k = 0;
    uint64_t *ids = PyMem_Malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return PyErr_NoMemory();
    for (uint64_t i = 0; i < n; i++)
        if (t->tr.records[i].kind == kind_a || t->tr.records[i].kind == kind_b)
            ids[k++] = t->tr.records[i].task;
    qsort(ids, k, sizeof *ids, cmp_u64);
    uint64_t distinct = 0;
    for (uint64_t i = 0; i < k; i++)
        distinct += i == 0 || ids[i] != ids[i - 1];
    PyMem_Free(ids);
    return PyLong_FromUnsignedLongLong(distinct);
}

static PyObject *trace_get_task_count(SpyTrace *t, void *closure)
{
    (void)closure;
    return distinct_tasks(t, SP_TRACE_SLICE, SP_TRACE_DUMMY);
}

static PyObject *trace_get_skipped_count(SpyTrace *t, void *closure)
{
    (void)closure;
    return distinct_tasks(t, SP_TRACE_SKIPPED, SP_TRACE_SKIPPED);
}

static PyObject *trace_get_stats(SpyTrace *t, void *closure)
{
    (void)closure;
    return spy_run_stats_new(&t->stats);
}

static PyObject *trace_get_runtime(SpyTrace *t, void *closure)
{
    (void)closure;
    return Py_NewRef(t->runtime);
}

static PyObject *trace_get_callable(SpyTrace *t, void *closure)
{
    (void)closure;
    return Py_NewRef(t->callable ? (PyObject *)t->callable : Py_None);
}

/* The u64 and u32 figures of the trace, read-only. */
#define SPY_U64(field)                                                                             \
    static PyObject *trace_get_##field(SpyTrace *t, void *closure)                                 \
    {                                                                                              \
        (void)closure;                                                                             \
        return PyLong_FromUnsignedLongLong(t->tr.field);                                           \
    }
SPY_U64(level)
SPY_U64(sched_threads)
SPY_U64(clusters)
SPY_U64(launch_ns)
SPY_U64(done_ns)
SPY_U64(orch_begin_ns)
SPY_U64(orch_end_ns)
SPY_U64(record_count)
SPY_U64(records_dropped)
SPY_U64(edge_count)
SPY_U64(edges_dropped)
#undef SPY_U64

static PyObject *trace_get_phases(SpyTrace *t, void *closure)
{
    (void)closure;
    static const char *const names[SP_TRACE_PHASES] = {"stage", "orchestrate", "wire", "upload"};
    PyObject *d = PyDict_New();
    for (int p = 0; d && p < SP_TRACE_PHASES; p++) {
        if (!t->tr.phase_ns[p][0] && !t->tr.phase_ns[p][1])
            continue;
        PyObject *v = Py_BuildValue("(KK)", (unsigned long long)t->tr.phase_ns[p][0],
                                    (unsigned long long)t->tr.phase_ns[p][1]);
        if (!v || PyDict_SetItemString(d, names[p], v))
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

/* A format argument: None (then by the path's extension), a name or an int. */
static int format_of(PyObject *fmt, const char *path)
{
    static const char *const names[] = {NULL, "json", "svg", "dot", "stats"};
    if (!fmt || fmt == Py_None) {
        int f = sp_trace_format_of(path);
        if (!f)
            spy_raisef(SP_EINVAL,
                       "cannot tell the trace format from '%s': name it format=\"json\", "
                       "\"svg\", \"dot\" or \"stats\" (or use .json .svg .dot .txt .stats)",
                       path);
        return f;
    }
    if (PyUnicode_Check(fmt)) {
        const char *s = PyUnicode_AsUTF8(fmt);
        if (!s)
            return 0;
        for (int f = SP_TRACE_FORMAT_JSON; f <= SP_TRACE_FORMAT_STATS; f++)
            if (strcmp(s, names[f]) == 0)
                return f;
        if (strcmp(s, "txt") == 0)
            return SP_TRACE_FORMAT_STATS;
        spy_raisef(SP_EINVAL,
                   "unknown trace format '%s': use \"json\", \"svg\", \"dot\" or \"stats\"", s);
        return 0;
    }
    if (PyLong_Check(fmt)) {
        long f = PyLong_AsLong(fmt);
        if (f >= SP_TRACE_FORMAT_JSON && f <= SP_TRACE_FORMAT_STATS)
            return (int)f;
    }
    if (!PyErr_Occurred())
        spy_raisef(SP_EINVAL, "trace format must be a name (\"json\", ...) or None");
    return 0;
}

static sp_trace_info trace_info(const SpyTrace *t)
{
    return (sp_trace_info){
        .runtime = PyUnicode_AsUTF8(t->runtime),
        .callable = t->callable ? &t->callable->view : NULL,
        .stats = &t->stats,
    };
}

static PyObject *trace_write_as(SpyTrace *t, PyObject *pathobj, int format)
{
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(pathobj, &path))
        return NULL;
    sp_trace_info info = trace_info(t);
    char err[512] = "";
    PyThreadState *ts = PyEval_SaveThread();
    int rc = sp_trace_write(&t->tr, &info, format, PyBytes_AS_STRING(path), err, sizeof err);
    PyEval_RestoreThread(ts);
    if (rc) {
        spy_raisef(rc, "writing the trace to %s: %s", PyBytes_AS_STRING(path), err);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    Py_RETURN_NONE;
}

static PyObject *trace_write(SpyTrace *t, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"path", "format", NULL};
    PyObject *pathobj, *fmt = Py_None, *path = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:write", kwlist, &pathobj, &fmt))
        return NULL;
    if (!PyUnicode_FSConverter(pathobj, &path))
        return NULL;
    int format = format_of(fmt, PyBytes_AS_STRING(path));
    Py_DECREF(path);
    return format ? trace_write_as(t, pathobj, format) : NULL;
}

#define SPY_WRITER(name, format)                                                                   \
    static PyObject *trace_write_##name(SpyTrace *t, PyObject *path)                               \
    {                                                                                              \
        return trace_write_as(t, path, format);                                                    \
    }
SPY_WRITER(json, SP_TRACE_FORMAT_JSON)
SPY_WRITER(svg, SP_TRACE_FORMAT_SVG)
SPY_WRITER(dot, SP_TRACE_FORMAT_DOT)
SPY_WRITER(stats, SP_TRACE_FORMAT_STATS)
#undef SPY_WRITER

/* The text of one format, through a memory stream. */
static PyObject *trace_text_of(SpyTrace *t, int format)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return PyErr_SetFromErrno(PyExc_OSError);
    sp_trace_info info = trace_info(t);
    char err[512] = "";
    PyThreadState *ts = PyEval_SaveThread();
    int rc = sp_trace_write_file(&t->tr, &info, format, f, err, sizeof err);
    int closed = fclose(f);
    PyEval_RestoreThread(ts);
    PyObject *text = NULL;
    if (rc)
        spy_raise(rc, err);
    else if (closed)
        PyErr_SetFromErrno(PyExc_OSError);
    else
        text = PyUnicode_DecodeUTF8(buf ? buf : "", (Py_ssize_t)len, "replace");
    free(buf);
    return text;
}

static PyObject *trace_stats_text(SpyTrace *t, PyObject *unused)
{
    (void)unused;
    return trace_text_of(t, SP_TRACE_FORMAT_STATS);
}

static PyObject *trace_text(SpyTrace *t, PyObject *fmt)
{
    if (fmt == Py_None)
        return spy_raisef(SP_EINVAL, "text(format): name a format (\"json\", \"svg\", ...)");
    int format = format_of(fmt, "");
    return format ? trace_text_of(t, format) : NULL;
}

static Py_ssize_t trace_len(SpyTrace *t)
{
    return (Py_ssize_t)t->tr.record_count;
}

static PyObject *trace_repr(SpyTrace *t)
{
    return PyUnicode_FromFormat("<simpler.Trace %U level %u: %llu records, %llu edges>", t->runtime,
                                t->tr.level, (unsigned long long)t->tr.record_count,
                                (unsigned long long)t->tr.edge_count);
}

static PyMethodDef trace_methods[] = {
    {"write", (PyCFunction)(void (*)(void))trace_write, METH_VARARGS | METH_KEYWORDS,
     "write(path, format=None): the trace as \"json\" (Chrome/Perfetto), \"svg\" (swimlane), "
     "\"dot\" (dependency graph) or \"stats\" (text); None: by the path's extension."},
    {"write_json", (PyCFunction)trace_write_json, METH_O, "write_json(path): Chrome trace JSON."},
    {"write_svg", (PyCFunction)trace_write_svg, METH_O, "write_svg(path): the swimlane picture."},
    {"write_dot", (PyCFunction)trace_write_dot, METH_O, "write_dot(path): the dependency graph."},
    {"write_stats", (PyCFunction)trace_write_stats, METH_O, "write_stats(path): the STATS text."},
    {"stats_text", (PyCFunction)trace_stats_text, METH_NOARGS,
     "stats_text() -> str: the STATS lines (what `simpler run --stats` prints)."},
    {"text", (PyCFunction)trace_text, METH_O, "text(format) -> str: any format as text."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef trace_getset[] = {
    {"records", (getter)trace_get_records, NULL,
     "the records: a read-only numpy structured array (fields of sp_trace_record)", NULL},
    {"edges", (getter)trace_get_edges, NULL,
     "the dependency edges: a read-only numpy structured array (producer, consumer, kind)", NULL},
    {"task_count", (getter)trace_get_task_count, NULL,
     "distinct task ids among the SLICE and DUMMY records", NULL},
    {"skipped_count", (getter)trace_get_skipped_count, NULL,
     "distinct task ids among the SKIPPED records (predicated tasks that did not run; "
     "not in task_count)",
     NULL},
    {"stats", (getter)trace_get_stats, NULL, "the run's RunStats", NULL},
    {"runtime", (getter)trace_get_runtime, NULL, "the runtime that ran it (\"hbg\", \"tmr\")",
     NULL},
    {"callable", (getter)trace_get_callable, NULL, "the Callable that ran (kernel names)", NULL},
    {"phases", (getter)trace_get_phases, NULL,
     "host phases of the prepare: {name: (begin_ns, end_ns)}", NULL},
    {"level", (getter)trace_get_level, NULL, "the trace level of the run", NULL},
    {"sched_threads", (getter)trace_get_sched_threads, NULL, "scheduler threads of the run", NULL},
    {"clusters", (getter)trace_get_clusters, NULL, "clusters of the chip", NULL},
    {"launch_ns", (getter)trace_get_launch_ns, NULL, "when the device side was launched", NULL},
    {"done_ns", (getter)trace_get_done_ns, NULL, "when the host saw it complete", NULL},
    {"orch_begin_ns", (getter)trace_get_orch_begin_ns, NULL, "tmr: orchestration began", NULL},
    {"orch_end_ns", (getter)trace_get_orch_end_ns, NULL, "tmr: orchestration ended", NULL},
    {"record_count", (getter)trace_get_record_count, NULL, "len(records)", NULL},
    {"records_dropped", (getter)trace_get_records_dropped, NULL,
     "records lost because the buffer was full", NULL},
    {"edge_count", (getter)trace_get_edge_count, NULL, "len(edges)", NULL},
    {"edges_dropped", (getter)trace_get_edges_dropped, NULL,
     "edges lost because the buffer was full", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods trace_as_sequence = {
    .sq_length = (lenfunc)trace_len,
};

PyTypeObject SpyTrace_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.Trace",
    .tp_doc = "One run's trace (RunResult.trace): records, edges and exporters.",
    .tp_basicsize = sizeof(SpyTrace),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)trace_dealloc,
    .tp_repr = (reprfunc)trace_repr,
    .tp_methods = trace_methods,
    .tp_getset = trace_getset,
    .tp_as_sequence = &trace_as_sequence,
};

/* _simpler._trace_from_bytes(records, edges, level=1, sched_threads=1,
 * clusters=1, callable=None, runtime=""): a Trace
 * over given records (test and tooling hook: the exporters on a trace made
 * in Python, e.g. to check them without a device). */
static PyObject *trace_from_bytes(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"records",  "edges",    "level",   "sched_threads",
                             "clusters", "callable", "runtime", NULL};
    Py_buffer rec, edg;
    unsigned int level = 1, sched = 1, clusters = 1;
    PyObject *callable = Py_None;
    const char *runtime = "";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*y*|IIIOs:_trace_from_bytes", kwlist, &rec, &edg,
                                     &level, &sched, &clusters, &callable, &runtime))
        return NULL;
    PyObject *r = NULL;
    if (rec.len % (Py_ssize_t)sizeof(sp_trace_record) ||
        edg.len % (Py_ssize_t)sizeof(sp_trace_edge))
        spy_raisef(SP_EINVAL, "records / edges must be whole sp_trace_record / sp_trace_edge");
    else if (callable != Py_None && !SpyCallable_Check(callable))
        spy_raisef(SP_EINVAL, "callable must be a simpler.Callable or None");
    else {
        sp_run_trace tr = {
            .level = level,
            .sched_threads = sched,
            .clusters = clusters,
            .records = rec.buf,
            .record_count = (uint64_t)rec.len / sizeof(sp_trace_record),
            .record_cap = (uint64_t)rec.len / sizeof(sp_trace_record),
            .edges = edg.buf,
            .edge_count = (uint64_t)edg.len / sizeof(sp_trace_edge),
            .edge_cap = (uint64_t)edg.len / sizeof(sp_trace_edge),
        };
        r = spy_trace_new(&tr, NULL, callable == Py_None ? NULL : (SpyCallable *)callable, runtime);
    }
    PyBuffer_Release(&rec);
    PyBuffer_Release(&edg);
    return r;
}

static PyMethodDef module_methods[] = {
    {"_trace_from_bytes", (PyCFunction)(void (*)(void))trace_from_bytes,
     METH_VARARGS | METH_KEYWORDS, "A Trace over raw records and edges (internal, for tests)."},
    {NULL, NULL, 0, NULL},
};

int spy_trace_init(PyObject *module)
{
    if (PyType_Ready(&SpyTrace_Type))
        return -1;
    if (PyModule_AddObjectRef(module, "Trace", (PyObject *)&SpyTrace_Type))
        return -1;
    /* The record kinds (sp_trace_record.kind): TRACE_SLICE, ... and
     * TRACE_KINDS, kind -> its name ("slice", ..., "skipped"). */
    static const struct {
        int kind;
        const char *constant, *name;
    } kinds[] = {
        {SP_TRACE_SLICE, "TRACE_SLICE", "slice"},
        {SP_TRACE_DUMMY, "TRACE_DUMMY", "dummy"},
        {SP_TRACE_SCHED_PASS, "TRACE_SCHED_PASS", "sched_pass"},
        {SP_TRACE_SCHED_IDLE, "TRACE_SCHED_IDLE", "sched_idle"},
        {SP_TRACE_SUBMIT, "TRACE_SUBMIT", "submit"},
        {SP_TRACE_SKIPPED, "TRACE_SKIPPED", "skipped"},
    };
    PyObject *names = PyDict_New();
    if (!names)
        return -1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        PyObject *k = PyLong_FromLong(kinds[i].kind), *v = PyUnicode_FromString(kinds[i].name);
        int bad = !k || !v || PyDict_SetItem(names, k, v) ||
                  PyModule_AddIntConstant(module, kinds[i].constant, kinds[i].kind);
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad) {
            Py_DECREF(names);
            return -1;
        }
    }
    if (PyModule_AddObject(module, "TRACE_KINDS", names)) {
        Py_DECREF(names);
        return -1;
    }
    return PyModule_AddFunctions(module, module_methods);
}
