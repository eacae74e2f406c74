/* simpler._simpler: the module, its status table and the map from a status
 * to the exception class errors.py defines for it. */
#include <stdarg.h>
#include <stdio.h>

#include "py_simpler.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/version.h"

/* The module's state (one interpreter, one import): the error classes and
 * numpy. Not run state: set once at import, read when raising. */
static PyObject *error_map;  /* dict: int status -> class */
static PyObject *error_base; /* simpler.Error, for a status without a class */
static PyObject *numpy_module;

PyObject *spy_raise(int status, const char *message)
{
    PyObject *cls = NULL;
    if (error_map) {
        PyObject *key = PyLong_FromLong(status);
        if (!key)
            return NULL;
        cls = PyDict_GetItemWithError(error_map, key);
        Py_DECREF(key);
        if (!cls && PyErr_Occurred())
            return NULL;
    }
    if (!cls)
        cls = error_base;
    if (!cls) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s (simpler.errors not imported)",
                     sp_status_name(status), message);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(cls, "is", status, message ? message : "");
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *spy_raisef(int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return spy_raise(status, msg);
}

int spy_dtype_from_name(const char *name)
{
    for (int d = 1; d < SP_DTYPE_COUNT; d++)
        if (strcmp(sp_dtype_name(d), name) == 0)
            return d;
    return 0;
}

PyObject *spy_numpy(void)
{
    if (!numpy_module)
        numpy_module = PyImport_ImportModule("numpy");
    return numpy_module;
}

/* _set_errors(map, base): errors.py's classes, once at import. */
static PyObject *set_errors(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *map, *base;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &map, &base))
        return NULL;
    Py_XSETREF(error_map, Py_NewRef(map));
    Py_XSETREF(error_base, Py_NewRef(base));
    Py_RETURN_NONE;
}

/* statuses() -> [(value, name, hint), ...]: simpler/status.h's table. */
static PyObject *statuses(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
#define SPY_STATUS_ROW(name, value, hint)                                                          \
    {                                                                                              \
        PyObject *row = Py_BuildValue("iss", value, #name, hint);                                  \
        if (!row || PyList_Append(list, row)) {                                                    \
            Py_XDECREF(row);                                                                       \
            Py_DECREF(list);                                                                       \
            return NULL;                                                                           \
        }                                                                                          \
        Py_DECREF(row);                                                                            \
    }
    SP_STATUS_LIST(SPY_STATUS_ROW)
#undef SPY_STATUS_ROW
    return list;
}

static PyObject *status_name(PyObject *self, PyObject *arg)
{
    (void)self;
    int st = PyLong_AsLong(arg);
    if (st == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(sp_status_name(st));
}

static PyObject *status_hint(PyObject *self, PyObject *arg)
{
    (void)self;
    int st = PyLong_AsLong(arg);
    if (st == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(sp_status_hint(st));
}

static PyMethodDef methods[] = {
    {"_set_errors", set_errors, METH_VARARGS, "Install errors.py's classes (internal)."},
    {"statuses", statuses, METH_NOARGS, "simpler's status table: [(value, name, hint), ...]."},
    {"status_name", status_name, METH_O, "The name of a status code (\"SP_EDEVMEM\")."},
    {"status_hint", status_hint, METH_O, "The one-line hint of a status code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "simpler._simpler",
    "The C half of the simpler package: libsimpler's public API for Python.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__simpler(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    PyObject *dtypes = PyTuple_New(SP_DTYPE_COUNT - 1);
    if (!dtypes)
        goto fail;
    for (int d = 1; d < SP_DTYPE_COUNT; d++)
        PyTuple_SET_ITEM(dtypes, d - 1, PyUnicode_FromString(sp_dtype_name(d)));
    if (PyModule_AddObject(m, "DTYPES", dtypes)) {
        Py_DECREF(dtypes);
        goto fail;
    }
    if (PyModule_AddStringConstant(m, "VERSION", sp_version()) ||
        PyModule_AddIntConstant(m, "ABI_VERSION", (long)sp_abi_version()) ||
        PyModule_AddIntConstant(m, "IN", SP_IN) || PyModule_AddIntConstant(m, "OUT", SP_OUT) ||
        PyModule_AddIntConstant(m, "INOUT", SP_INOUT) ||
        PyModule_AddIntConstant(m, "OUT_EXISTING", SP_OUT_EXISTING) ||
        PyModule_AddIntConstant(m, "NO_DEP", SP_NO_DEP) ||
        PyModule_AddIntConstant(m, "TRACE_OFF", SP_TRACE_OFF) ||
        PyModule_AddIntConstant(m, "TRACE_TASKS", SP_TRACE_TASKS) ||
        PyModule_AddIntConstant(m, "TRACE_SCHED", SP_TRACE_SCHED) ||
        PyModule_AddIntConstant(m, "TRACE_SUBMITS", SP_TRACE_SUBMITS))
        goto fail;
    if (spy_callable_init(m) || spy_trace_init(m) || spy_config_init(m) || spy_worker_init(m) ||
        spy_device_array_init(m))
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
