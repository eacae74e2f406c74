/* simpler.DeviceArray: a tensor kept in the worker's device memory across
 * runs (sp_worker_device_alloc), made by Worker.device_array(shape, dtype).
 * Passed as a run argument it is used in place (SP_TENSOR_DEVICE: no copy
 * in or back); .copy_from(array) uploads, .to_numpy() downloads, .free()
 * (or the last reference, or the worker's close) frees it. Copies release
 * the GIL and take the worker's lock (spy_worker_lock), as its calls do. */
#include <stdio.h>
#include <string.h>

#include "py_simpler.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

typedef struct SpyDeviceArray {
    PyObject_HEAD PyObject *worker; /* the Worker (strong) */
    uint64_t dev;                   /* 0 once freed */
    uint64_t bytes;
    int dtype;
    int ndim;
    int64_t shape[SP_MAX_DIMS];
} SpyDeviceArray;

static int live(SpyDeviceArray *d)
{
    if (d->dev)
        return 0;
    spy_raise(SP_EDOUBLEFREE, "the DeviceArray was freed");
    return -1;
}

/* One worker call on d's buffer: 0, or -1 with the worker's error raised. */
typedef int (*dev_op)(sp_worker *w, SpyDeviceArray *d, void *host);

static int op_free(sp_worker *w, SpyDeviceArray *d, void *host)
{
    (void)host;
    return sp_worker_device_free(w, d->dev);
}

static int op_up(sp_worker *w, SpyDeviceArray *d, void *host)
{
    return sp_worker_copy_to_device(w, d->dev, host, d->bytes);
}

static int op_down(sp_worker *w, SpyDeviceArray *d, void *host)
{
    return sp_worker_copy_from_device(w, host, d->dev, d->bytes);
}

static int call(SpyDeviceArray *d, dev_op op, void *host)
{
    char err[640] = "the worker is closed";
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    sp_worker *w = spy_worker_lock(d->worker);
    rc = w ? op(w, d, host) : SP_ESTATE;
    if (rc && w)
        snprintf(err, sizeof err, "%s", sp_worker_last_error(w));
    spy_worker_unlock(d->worker);
    Py_END_ALLOW_THREADS;
    if (rc) {
        spy_raise(rc, err);
        return -1;
    }
    return 0;
}

PyObject *spy_device_array_new(PyObject *worker, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"shape", "dtype", NULL};
    PyObject *shape_obj;
    const char *dtype_name = "f32";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s:device_array", kwlist, &shape_obj, &dtype_name))
        return NULL;
    int dtype = spy_dtype_from_name(dtype_name);
    if (!dtype)
        return spy_raisef(SP_EDTYPE, "device_array: unknown dtype '%s'", dtype_name);
    PyObject *seq =
        PyLong_Check(shape_obj) ? PyTuple_Pack(1, shape_obj) : PySequence_Tuple(shape_obj);
    if (!seq)
        return NULL;
    Py_ssize_t nd = PyTuple_GET_SIZE(seq);
    int64_t shape[SP_MAX_DIMS];
    if (nd < 1 || nd > SP_MAX_DIMS) {
        Py_DECREF(seq);
        return spy_raisef(SP_ESHAPE, "device_array: %zd dimensions; simpler takes 1..%d", nd,
                          SP_MAX_DIMS);
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
        shape[i] = v;
    }
    Py_DECREF(seq);
    sp_tensor t;
    if (sp_tensor_init(&t, 0, dtype, (int)nd, shape) != SP_OK || !t.buf_bytes)
        return spy_raisef(SP_ESHAPE, "device_array: a shape with an empty or negative dimension");
    SpyDeviceArray *d = PyObject_New(SpyDeviceArray, &SpyDeviceArray_Type);
    if (!d)
        return NULL;
    d->worker = Py_NewRef(worker);
    d->dev = 0;
    d->bytes = t.buf_bytes;
    d->dtype = dtype;
    d->ndim = (int)nd;
    memcpy(d->shape, shape, sizeof shape);
    char err[640] = "the worker is closed";
    int rc;
    uint64_t dev = 0;
    Py_BEGIN_ALLOW_THREADS;
    sp_worker *w = spy_worker_lock(worker);
    rc = w ? sp_worker_device_alloc(w, d->bytes, &dev) : SP_ESTATE;
    if (rc && w)
        snprintf(err, sizeof err, "%s", sp_worker_last_error(w));
    spy_worker_unlock(worker);
    Py_END_ALLOW_THREADS;
    if (rc) {
        Py_DECREF(d);
        return spy_raise(rc, err);
    }
    d->dev = dev;
    return (PyObject *)d;
}

int spy_device_array_tensor(PyObject *obj, sp_tensor *t, char *err, size_t err_len)
{
    SpyDeviceArray *d = (SpyDeviceArray *)obj;
    if (!d->dev) {
        snprintf(err, err_len, "the DeviceArray was freed");
        return SP_EDOUBLEFREE;
    }
    int rc = sp_tensor_init(t, d->dev, d->dtype, d->ndim, d->shape);
    if (rc == SP_OK)
        t->flags |= SP_TENSOR_DEVICE;
    else
        snprintf(err, err_len, "the DeviceArray's shape");
    return rc;
}

static void device_array_dealloc(SpyDeviceArray *d)
{
    if (d->dev) {
        /* Best effort: a buffer a run in flight uses (SP_EBUSY) or a closed
         * worker's is freed at the worker's close. */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (call(d, op_free, NULL))
            PyErr_Clear();
        PyErr_Restore(et, ev, tb);
    }
    Py_XDECREF(d->worker);
    PyObject_Free(d);
}

static PyObject *numpy_dtype(int dtype)
{
    static const char *const names[SP_DTYPE_COUNT] = {
        [SP_DTYPE_F32] = "float32", [SP_DTYPE_F16] = "float16", [SP_DTYPE_BF16] = "uint16",
        [SP_DTYPE_F64] = "float64", [SP_DTYPE_I8] = "int8",     [SP_DTYPE_U8] = "uint8",
        [SP_DTYPE_I16] = "int16",   [SP_DTYPE_U16] = "uint16",  [SP_DTYPE_I32] = "int32",
        [SP_DTYPE_U32] = "uint32",  [SP_DTYPE_I64] = "int64",   [SP_DTYPE_U64] = "uint64",
        [SP_DTYPE_BOOL] = "bool",
    };
    return PyUnicode_FromString(dtype > 0 && dtype < SP_DTYPE_COUNT ? names[dtype] : "uint8");
}

static PyObject *shape_tuple(const SpyDeviceArray *d)
{
    PyObject *t = PyTuple_New(d->ndim);
    for (int i = 0; t && i < d->ndim; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(d->shape[i]));
    return t;
}

static PyObject *device_array_to_numpy(SpyDeviceArray *d, PyObject *unused)
{
    (void)unused;
    if (live(d))
        return NULL;
    PyObject *np = spy_numpy();
    PyObject *shape = np ? shape_tuple(d) : NULL, *dt = shape ? numpy_dtype(d->dtype) : NULL;
    PyObject *arr = dt ? PyObject_CallMethod(np, "empty", "OO", shape, dt) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dt);
    if (!arr)
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(arr, &v, PyBUF_CONTIG)) {
        Py_DECREF(arr);
        return NULL;
    }
    int bad = (uint64_t)v.len != d->bytes || call(d, op_down, v.buf);
    PyBuffer_Release(&v);
    if (bad) {
        if (!PyErr_Occurred())
            spy_raise(SP_EINVAL, "to_numpy: the array's size differs");
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

static PyObject *device_array_copy_from(SpyDeviceArray *d, PyObject *src)
{
    if (live(d))
        return NULL;
    Py_buffer v;
    if (PyObject_GetBuffer(src, &v, PyBUF_C_CONTIGUOUS))
        return NULL;
    int bad = 0;
    if ((uint64_t)v.len != d->bytes) {
        spy_raisef(SP_ESHAPE, "copy_from: %zd bytes given, the DeviceArray has %llu", v.len,
                   (unsigned long long)d->bytes);
        bad = 1;
    } else {
        bad = call(d, op_up, v.buf);
    }
    PyBuffer_Release(&v);
    if (bad)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *device_array_free(SpyDeviceArray *d, PyObject *unused)
{
    (void)unused;
    if (live(d) || call(d, op_free, NULL))
        return NULL;
    d->dev = 0;
    Py_RETURN_NONE;
}

static PyObject *get_shape(SpyDeviceArray *d, void *unused)
{
    (void)unused;
    return shape_tuple(d);
}

static PyObject *get_dtype(SpyDeviceArray *d, void *unused)
{
    (void)unused;
    return PyUnicode_FromString(sp_dtype_name(d->dtype));
}

static PyObject *get_nbytes(SpyDeviceArray *d, void *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(d->bytes);
}

static PyObject *get_address(SpyDeviceArray *d, void *unused)
{
    (void)unused;
    return PyLong_FromUnsignedLongLong(d->dev);
}

static PyMethodDef device_array_methods[] = {
    {"to_numpy", (PyCFunction)device_array_to_numpy, METH_NOARGS,
     "A new numpy array with a copy of the device data."},
    {"copy_from", (PyCFunction)device_array_copy_from, METH_O,
     "Upload a C-contiguous buffer of the same byte size."},
    {"free", (PyCFunction)device_array_free, METH_NOARGS,
     "Free the device memory (SP_EBUSY while a run not yet waited for uses it)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_array_getset[] = {
    {"shape", (getter)get_shape, NULL, "The shape.", NULL},
    {"dtype", (getter)get_dtype, NULL, "The simpler dtype name.", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "Bytes of device memory.", NULL},
    {"device_address", (getter)get_address, NULL, "The device address (0 once freed).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject SpyDeviceArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.DeviceArray",
    .tp_basicsize = sizeof(SpyDeviceArray),
    .tp_dealloc = (destructor)device_array_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tensor kept in device memory across runs (Worker.device_array).",
    .tp_methods = device_array_methods,
    .tp_getset = device_array_getset,
};

int spy_device_array_init(PyObject *module)
{
    if (PyType_Ready(&SpyDeviceArray_Type))
        return -1;
    return PyModule_AddObjectRef(module, "DeviceArray", (PyObject *)&SpyDeviceArray_Type);
}
