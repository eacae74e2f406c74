/* Python arguments -> sp_args, zero copy: each tensor's sp_tensor.addr is
 * its buffer's own pointer (the Py_buffer is held until the run is waited
 * for, so the memory cannot move or go away), directions and dtypes come
 * from Arg wrappers or the callable's signature, scalars become their
 * 64-bit words. Only [0, count) of the preallocated sp_args is written;
 * the only allocations are Python objects (the outputs dict, an array for
 * a None output, a __dlpack__ conversion). */
#include <stdio.h>
#include <string.h>

#include "py_simpler.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* What one fill works with (on the caller's stack). */
typedef struct fill_ctx {
    spy_args *a;
    const sp_callable_signature *sig;      /* NULL: the callable declares none */
    PyObject *const *names;                /* its names, interned (SpyCallable.names) */
    int64_t sym[SP_CALLABLE_MAX_SYMBOLS];  /* extents bound by the tensors given; 0: unbound */
    PyObject *tensors[SP_MAX_RUN_TENSORS]; /* borrowed; NULL: a hole (not given) */
    PyObject *scalars[SP_MAX_RUN_SCALARS];
    uint32_t nt, ns;
} fill_ctx;

/* "argument 'x'" with a signature, "argument 2" without; only on failure. */
static const char *label(const fill_ctx *f, uint32_t i, int scalar, char *buf, size_t len)
{
    const char *what = scalar ? "scalar" : "argument";
    uint32_t n = f->sig ? (scalar ? f->sig->scalar_count : f->sig->tensor_count) : 0;
    if (i < n)
        snprintf(buf, len, "%s '%s'", what,
                 scalar ? f->sig->scalars[i].name : f->sig->tensors[i].name);
    else
        snprintf(buf, len, "%s %u", what, i);
    return buf;
}

static int writes(int dir)
{
    return dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
}

/* The dtype of a buffer format of one item (struct module syntax, native
 * or little-endian byte order); 0 if simpler has no such dtype. Integer
 * codes go by the exporter's itemsize ('l' is 8 bytes native, 4 with '='). */
static int dtype_of_format(const char *fmt, Py_ssize_t itemsize)
{
    if (!fmt)
        fmt = "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    if (!fmt[0] || fmt[1])
        return 0;
    static const int sized_int[2][9] = {
        {0, SP_DTYPE_I8, SP_DTYPE_I16, 0, SP_DTYPE_I32, 0, 0, 0, SP_DTYPE_I64},
        {0, SP_DTYPE_U8, SP_DTYPE_U16, 0, SP_DTYPE_U32, 0, 0, 0, SP_DTYPE_U64},
    };
    switch (fmt[0]) {
    case 'f':
        return itemsize == 4 ? SP_DTYPE_F32 : 0;
    case 'd':
        return itemsize == 8 ? SP_DTYPE_F64 : 0;
    case 'e':
        return itemsize == 2 ? SP_DTYPE_F16 : 0;
    case '?':
        return itemsize == 1 ? SP_DTYPE_BOOL : 0;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
        return itemsize >= 1 && itemsize <= 8 ? sized_int[0][itemsize] : 0;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
        return itemsize >= 1 && itemsize <= 8 ? sized_int[1][itemsize] : 0;
    default:
        return 0;
    }
}

/* Record the extents of tensor i that bind a symbol of the signature. */
static void bind_symbols(fill_ctx *f, uint32_t i, const sp_tensor *t)
{
    if (!f->sig || i >= f->sig->tensor_count)
        return;
    const sp_callable_arg *s = &f->sig->tensors[i];
    if (s->ndim != (int8_t)t->ndim)
        return; /* the worker's check names the mismatch */
    for (int d = 0; d < t->ndim; d++)
        if (s->dims[d] < 0) {
            int64_t k = -s->dims[d] - 1;
            if (k < SP_CALLABLE_MAX_SYMBOLS && !f->sym[k])
                f->sym[k] = t->shape[d];
        }
}

/* Tensor i from `obj` (a buffer, or an object with __dlpack__): held in
 * a->views[i], described in a->args.tensors[i]. */
static int tensor_from(fill_ctx *f, uint32_t i, PyObject *obj, int dir, int dtype_override)
{
    spy_args *a = f->a;
    char lb[96];
    PyObject *src = obj, *converted = NULL;
    if (SpyDeviceArray_Check(obj)) { /* on the device already: no view, no copies */
        char err[64];
        sp_tensor *t = &a->args.tensors[i];
        int rc = spy_device_array_tensor(obj, t, err, sizeof err);
        if (rc == SP_OK && dtype_override && dtype_override != t->dtype) {
            snprintf(err, sizeof err, "dtype %s given for a %s DeviceArray",
                     sp_dtype_name(dtype_override), sp_dtype_name(t->dtype));
            rc = SP_EDTYPE;
        }
        if (rc) {
            spy_raisef(rc, "%s: %s", label(f, i, 0, lb, sizeof lb), err);
            return -1;
        }
        a->args.dirs[i] = (uint8_t)dir;
        bind_symbols(f, i, t);
        return 0;
    }
    if (!PyObject_CheckBuffer(obj)) {
        PyObject *dl = PyObject_GetAttrString(obj, "__dlpack__");
        if (!dl) {
            PyErr_Clear();
            spy_raisef(SP_EINVAL,
                       "%s: a %s is not a tensor; pass an object with the buffer protocol "
                       "(a numpy array, bytearray, ...) or __dlpack__",
                       label(f, i, 0, lb, sizeof lb), Py_TYPE(obj)->tp_name);
            return -1;
        }
        Py_DECREF(dl);
        PyObject *np = spy_numpy();
        converted = np ? PyObject_CallMethod(np, "from_dlpack", "O", obj) : NULL;
        if (!converted) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyObject *s = ev ? PyObject_Str(ev) : NULL;
            spy_raisef(SP_EINVAL, "%s: numpy.from_dlpack failed: %s", label(f, i, 0, lb, sizeof lb),
                       s ? PyUnicode_AsUTF8(s) : "?");
            Py_XDECREF(s);
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            return -1;
        }
        src = converted;
    }
    Py_buffer *v = &a->views[i];
    /* numpy.from_dlpack marks every array it makes read-only (DLPack before
     * 1.0 has no read-only flag), so the producer's memory is written as the
     * producer handed it out; a buffer of our own must say it is writable. */
    int need_writable = writes(dir) && !converted;
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (need_writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(src, v, flags)) {
        PyErr_Clear();
        /* Tell a read-only buffer from one that is no tensor at all. */
        if (need_writable && PyObject_GetBuffer(src, v, PyBUF_STRIDES | PyBUF_FORMAT) == 0) {
            PyBuffer_Release(v);
            spy_raisef(SP_EINVAL, "%s is read-only; an output (dir %d) needs a writable buffer",
                       label(f, i, 0, lb, sizeof lb), dir);
        } else {
            PyErr_Clear();
            spy_raisef(SP_EINVAL, "%s: its %s does not export a strided buffer",
                       label(f, i, 0, lb, sizeof lb), Py_TYPE(src)->tp_name);
        }
        Py_XDECREF(converted);
        return -1;
    }
    a->held[i] = 1;
    Py_XDECREF(converted); /* the view keeps it alive */
    if (v->ndim > SP_MAX_DIMS) {
        spy_raisef(SP_ESHAPE, "%s has %d dimensions; simpler takes 1..%d",
                   label(f, i, 0, lb, sizeof lb), v->ndim, SP_MAX_DIMS);
        return -1;
    }
    if (!PyBuffer_IsContiguous(v, 'C')) {
        label(f, i, 0, lb, sizeof lb);
        spy_raisef(SP_ESHAPE, "%s is not C-contiguous; pass numpy.ascontiguousarray(%s)", lb,
                   f->sig && i < f->sig->tensor_count ? f->sig->tensors[i].name : "x");
        return -1;
    }
    int dtype = dtype_of_format(v->format, v->itemsize);
    if (dtype_override) {
        if ((Py_ssize_t)sp_dtype_size(dtype_override) != v->itemsize) {
            spy_raisef(SP_EDTYPE, "%s: dtype %s is %zu bytes, its buffer's items are %zd",
                       label(f, i, 0, lb, sizeof lb), sp_dtype_name(dtype_override),
                       sp_dtype_size(dtype_override), v->itemsize);
            return -1;
        }
        dtype = dtype_override;
    } else if (!dtype) {
        spy_raisef(SP_EDTYPE,
                   "%s: buffer format '%s' (%zd-byte items) is no simpler dtype; name one with "
                   "simpler.Arg(x, dir, dtype=...)",
                   label(f, i, 0, lb, sizeof lb), v->format ? v->format : "B", v->itemsize);
        return -1;
    }
    int64_t shape[SP_MAX_DIMS] = {1};
    int ndim = v->ndim ? v->ndim : 1; /* a 0-d array is shape (1,) */
    for (int d = 0; d < v->ndim; d++)
        shape[d] = v->shape[d];
    sp_tensor *t = &a->args.tensors[i];
    int rc = sp_tensor_init(t, (uint64_t)(uintptr_t)v->buf, dtype, ndim, shape);
    if (rc) {
        spy_raisef(rc, "%s: shape with an empty or too large dimension (%zd bytes)",
                   label(f, i, 0, lb, sizeof lb), v->len);
        return -1;
    }
    a->args.dirs[i] = (uint8_t)dir;
    bind_symbols(f, i, t);
    return 0;
}

/* numpy's name of a dtype; bf16 has none and is held in uint16. */
static const char *numpy_dtype_name(int dtype)
{
    static const char *const names[SP_DTYPE_COUNT] = {
        [SP_DTYPE_F32] = "float32", [SP_DTYPE_F16] = "float16", [SP_DTYPE_BF16] = "uint16",
        [SP_DTYPE_F64] = "float64", [SP_DTYPE_I8] = "int8",     [SP_DTYPE_U8] = "uint8",
        [SP_DTYPE_I16] = "int16",   [SP_DTYPE_U16] = "uint16",  [SP_DTYPE_I32] = "int32",
        [SP_DTYPE_U32] = "uint32",  [SP_DTYPE_I64] = "int64",   [SP_DTYPE_U64] = "uint64",
        [SP_DTYPE_BOOL] = "bool",
    };
    return dtype > 0 && dtype < SP_DTYPE_COUNT ? names[dtype] : NULL;
}

/* A new numpy array for the None output i, shaped by the signature; NULL
 * with an error naming what is unknown. */
static PyObject *allocate_output(fill_ctx *f, uint32_t i, int dir, int dtype_override)
{
    char lb[96];
    if (!f->sig || i >= f->sig->tensor_count) {
        spy_raisef(SP_EARG_SIGNATURE,
                   "%s is None: only an output the callable's signature declares can be "
                   "allocated; pass an array",
                   label(f, i, 0, lb, sizeof lb));
        return NULL;
    }
    const sp_callable_arg *s = &f->sig->tensors[i];
    if (dir != SP_OUT && dir != SP_OUT_EXISTING) {
        spy_raisef(SP_EARG_SIGNATURE,
                   "%s is None: only an OUT or OUT_EXISTING argument is "
                   "allocated, this one is dir %d; pass an array",
                   label(f, i, 0, lb, sizeof lb), dir);
        return NULL;
    }
    int dtype = dtype_override ? dtype_override : s->dtype;
    if (dtype == SP_CALLABLE_DTYPE_ANY || !numpy_dtype_name(dtype)) {
        spy_raisef(SP_EARG_SIGNATURE,
                   "%s is None: its signature allows any dtype; pass an array (or "
                   "simpler.Out(None, dtype=...))",
                   label(f, i, 0, lb, sizeof lb));
        return NULL;
    }
    if (s->ndim < 1) {
        spy_raisef(SP_EARG_SIGNATURE, "%s is None: its signature allows any rank; pass an array",
                   label(f, i, 0, lb, sizeof lb));
        return NULL;
    }
    PyObject *shape = PyTuple_New(s->ndim);
    if (!shape)
        return NULL;
    for (int d = 0; d < s->ndim; d++) {
        int64_t n = s->dims[d];
        if (n < 0) {
            int64_t k = -n - 1;
            n = k < SP_CALLABLE_MAX_SYMBOLS ? f->sym[k] : 0;
            if (!n) {
                spy_raisef(SP_EARG_SIGNATURE,
                           "%s is None: its extent '%s' is bound by no tensor given; pass an "
                           "array",
                           label(f, i, 0, lb, sizeof lb),
                           k < SP_CALLABLE_MAX_SYMBOLS ? f->sig->symbols[k] : "?");
                Py_DECREF(shape);
                return NULL;
            }
        } else if (n == SP_CALLABLE_DIM_ANY) {
            spy_raisef(SP_EARG_SIGNATURE,
                       "%s is None: its dimension %d may have any extent; pass an array",
                       label(f, i, 0, lb, sizeof lb), d);
            Py_DECREF(shape);
            return NULL;
        }
        PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(n));
    }
    PyObject *np = spy_numpy();
    PyObject *arr =
        np ? PyObject_CallMethod(np, "empty", "Os", shape, numpy_dtype_name(dtype)) : NULL;
    Py_DECREF(shape);
    return arr;
}

/* The key of output i in the outputs dict: its name, else its index. */
static int add_output(fill_ctx *f, uint32_t i, PyObject *obj)
{
    spy_args *a = f->a;
    if (!a->outputs && !(a->outputs = PyDict_New()))
        return -1;
    PyObject *key =
        f->sig && i < f->sig->tensor_count ? Py_NewRef(f->names[i]) : PyLong_FromUnsignedLong(i);
    if (!key)
        return -1;
    int rc = PyDict_SetItem(a->outputs, key, obj);
    Py_DECREF(key);
    return rc;
}

/* An int's 64-bit word: two's complement for a negative one. */
static int int_word(fill_ctx *f, uint32_t j, PyObject *o, uint64_t *out)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (!overflow) {
        *out = (uint64_t)v;
        return 0;
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
            *out = u;
            return 0;
        }
        PyErr_Clear();
    }
    char lb[96];
    PyObject *r = PyObject_Repr(o);
    spy_raisef(SP_EINVAL, "%s: %s is outside -2^63 .. 2^64-1", label(f, j, 1, lb, sizeof lb),
               r ? PyUnicode_AsUTF8(r) : "the int");
    Py_XDECREF(r);
    return -1;
}

static uint64_t f32_word(double d)
{
    float x = (float)d;
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static uint64_t f64_word(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* A numpy scalar (or any 0-d buffer) by its format: np.float32 gives its
 * f32 bits, integers and bools their value. */
static int buffer_scalar_word(fill_ctx *f, uint32_t j, PyObject *o, uint64_t *out)
{
    char lb[96];
    Py_buffer v;
    if (PyObject_GetBuffer(o, &v, PyBUF_FORMAT | PyBUF_ND)) {
        PyErr_Clear();
        return 1;
    }
    int dt = v.ndim == 0 ? dtype_of_format(v.format, v.itemsize) : 0;
    int rc = 0;
    const void *p = v.buf;
    switch (dt) {
    case SP_DTYPE_F32: {
        uint32_t b;
        memcpy(&b, p, 4);
        *out = b;
        break;
    }
    case SP_DTYPE_F64:
    case SP_DTYPE_I64:
    case SP_DTYPE_U64:
        memcpy(out, p, 8);
        break;
    case SP_DTYPE_I8:
        *out = (uint64_t)(int64_t) * (const int8_t *)p;
        break;
    case SP_DTYPE_I16:
        *out = (uint64_t)(int64_t) * (const int16_t *)p;
        break;
    case SP_DTYPE_I32:
        *out = (uint64_t)(int64_t) * (const int32_t *)p;
        break;
    case SP_DTYPE_U8:
    case SP_DTYPE_BOOL:
        *out = *(const uint8_t *)p;
        break;
    case SP_DTYPE_U16:
        *out = *(const uint16_t *)p;
        break;
    case SP_DTYPE_U32:
        *out = *(const uint32_t *)p;
        break;
    default:
        spy_raisef(SP_EINVAL, "%s: a %s (format '%s', %d dims) is no scalar simpler passes",
                   label(f, j, 1, lb, sizeof lb), Py_TYPE(o)->tp_name, v.format ? v.format : "B",
                   v.ndim);
        rc = -1;
    }
    PyBuffer_Release(&v);
    return rc;
}

/* Scalar j's 64-bit word. */
static int scalar_word(fill_ctx *f, uint32_t j, PyObject *o, uint64_t *out)
{
    int sdt = f->sig && j < f->sig->scalar_count ? f->sig->scalars[j].dtype : 0;
    if (PyLong_Check(o)) {
        if ((sdt == SP_DTYPE_F32 || sdt == SP_DTYPE_F64) && !PyBool_Check(o)) {
            double d = PyLong_AsDouble(o);
            if (d == -1.0 && PyErr_Occurred())
                return -1;
            *out = sdt == SP_DTYPE_F32 ? f32_word(d) : f64_word(d);
            return 0;
        }
        return int_word(f, j, o, out);
    }
    if (PyFloat_Check(o)) { /* np.float64 too: it is a float */
        double d = PyFloat_AS_DOUBLE(o);
        *out = sdt == SP_DTYPE_F32 ? f32_word(d) : f64_word(d);
        return 0;
    }
    if (PyObject_CheckBuffer(o)) {
        int rc = buffer_scalar_word(f, j, o, out);
        if (rc <= 0)
            return rc;
    }
    if (PyIndex_Check(o)) {
        PyObject *n = PyNumber_Index(o);
        if (!n)
            return -1;
        int rc = int_word(f, j, n, out);
        Py_DECREF(n);
        return rc;
    }
    char lb[96];
    spy_raisef(SP_EINVAL, "%s: a %s is no scalar; pass an int, bool, float or numpy scalar",
               label(f, j, 1, lb, sizeof lb), Py_TYPE(o)->tp_name);
    return -1;
}

/* The slot of signature name `k`: a tensor's index i >= 0, a scalar's
 * -(j + 1), or INT32_MIN for none. An interned str (what the interpreter
 * passes for a keyword written in the call) is found by identity among
 * the callable's interned names; any other by its text. -2^31 - 1 with an
 * exception set if `k` is no str. */
#define SLOT_NONE INT32_MIN
static int64_t name_slot(const fill_ctx *f, PyObject *k)
{
    const sp_callable_signature *sig = f->sig;
    uint32_t nt = sig->tensor_count, n = nt + sig->scalar_count;
    if (PyUnicode_CheckExact(k) && PyUnicode_CHECK_INTERNED(k)) {
        for (uint32_t i = 0; i < n; i++)
            if (f->names[i] == k)
                return i < nt ? (int64_t)i : -(int64_t)(i - nt) - 1;
        return SLOT_NONE; /* interned strings are equal only if identical */
    }
    if (!PyUnicode_Check(k)) {
        spy_raisef(SP_EARG_SIGNATURE, "an argument name is a str, not a %s", Py_TYPE(k)->tp_name);
        return (int64_t)SLOT_NONE - 1;
    }
    const char *name = PyUnicode_AsUTF8(k);
    if (!name)
        return (int64_t)SLOT_NONE - 1;
    for (uint32_t i = 0; i < nt; i++)
        if (strcmp(sig->tensors[i].name, name) == 0)
            return i;
    for (uint32_t j = 0; j < sig->scalar_count; j++)
        if (strcmp(sig->scalars[j].name, name) == 0)
            return -(int64_t)j - 1;
    return SLOT_NONE;
}

/* Place the named arguments into the tensor and scalar slots. */
static int place_named(fill_ctx *f, const spy_named *nm)
{
    const sp_callable_signature *sig = f->sig;
    if (!sig) {
        PyObject *k0 = NULL;
        for (Py_ssize_t k = 0, s = 0; k < nm->n && !k0; k++) {
            if (s < nm->nskip && nm->skip[s] == k) {
                s++;
                continue;
            }
            k0 = nm->names[k];
        }
        spy_raisef(SP_EARG_SIGNATURE,
                   "argument '%s' given by name, but the callable declares no signature; pass "
                   "tensors= and scalars= in order",
                   k0 && PyUnicode_Check(k0) ? PyUnicode_AsUTF8(k0) : "?");
        return -1;
    }
    for (uint32_t i = f->nt; i < sig->tensor_count; i++)
        f->tensors[i] = NULL;
    for (uint32_t j = f->ns; j < sig->scalar_count; j++)
        f->scalars[j] = NULL;
    for (Py_ssize_t k = 0, s = 0; k < nm->n; k++) {
        if (s < nm->nskip && nm->skip[s] == k) {
            s++;
            continue;
        }
        PyObject *v = nm->values[k];
        int64_t slot = name_slot(f, nm->names[k]);
        if (slot < SLOT_NONE)
            return -1;
        if (slot >= 0) {
            uint32_t i = (uint32_t)slot;
            if (i < f->nt && f->tensors[i]) {
                spy_raisef(SP_EARG_SIGNATURE, "argument '%s' given twice (in tensors and by name)",
                           sig->tensors[i].name);
                return -1;
            }
            f->tensors[i] = v;
            if (i >= f->nt)
                f->nt = i + 1;
            continue;
        }
        if (slot != SLOT_NONE) {
            uint32_t i = (uint32_t)(-slot - 1);
            if (i < f->ns && f->scalars[i]) {
                spy_raisef(SP_EARG_SIGNATURE, "scalar '%s' given twice (in scalars and by name)",
                           sig->scalars[i].name);
                return -1;
            }
            f->scalars[i] = v;
            if (i >= f->ns)
                f->ns = i + 1;
            continue;
        }
        spy_raisef(SP_EARG_SIGNATURE, "the callable has no argument '%s'",
                   PyUnicode_AsUTF8(nm->names[k]));
        return -1;
    }
    for (uint32_t i = 0; i < f->nt; i++)
        if (!f->tensors[i]) {
            spy_raisef(SP_EARG_SIGNATURE, "argument '%s' is missing", sig->tensors[i].name);
            return -1;
        }
    for (uint32_t j = 0; j < f->ns; j++)
        if (!f->scalars[j]) {
            spy_raisef(SP_EARG_SIGNATURE, "scalar '%s' is missing", sig->scalars[j].name);
            return -1;
        }
    return 0;
}

/* Copy a sequence's items (borrowed) into slots; -1 past `max`. */
static int take_sequence(PyObject *seq, PyObject **slots, uint32_t max, uint32_t *n,
                         const char *what, PyObject **holder)
{
    *n = 0;
    if (!seq || seq == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    if ((size_t)len > max) {
        Py_DECREF(fast);
        spy_raisef(SP_EARGCOUNT, "%zd %s; a run takes at most %u", len, what, max);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t i = 0; i < len; i++)
        slots[i] = items[i];
    *n = (uint32_t)len;
    *holder = fast; /* keeps a list's items alive while we borrow them */
    return 0;
}

int spy_args_fill(spy_args *a, SpyCallable *c, PyObject *tensors, PyObject *scalars,
                  const spy_named *named)
{
    fill_ctx f;
    f.a = a;
    f.sig = c ? c->sig : NULL;
    f.names = c ? c->names : NULL;
    memset(f.sym, 0, sizeof f.sym);
    a->args.tensor_count = 0;
    a->args.scalar_count = 0;
    a->outputs = NULL;
    PyObject *tseq = NULL, *sseq = NULL;
    int rc = -1;
    if (take_sequence(tensors, f.tensors, SP_MAX_RUN_TENSORS, &f.nt, "tensors", &tseq) ||
        take_sequence(scalars, f.scalars, SP_MAX_RUN_SCALARS, &f.ns, "scalars", &sseq))
        goto out;
    if (named && named->n > named->nskip && place_named(&f, named))
        goto out;
    a->args.tensor_count = f.nt;
    a->args.scalar_count = f.ns;

    /* The given tensors first: they bind the symbols a None output's
     * shape may use. */
    int pending = 0;
    for (uint32_t i = 0; i < f.nt; i++) {
        PyObject *o = f.tensors[i];
        int dir = 0, dt = 0;
        if (Py_TYPE(o) == &SpyArg_Type) {
            SpyArg *w = (SpyArg *)o;
            dir = w->dir, dt = w->dtype, o = w->obj;
        } else if (f.sig && i < f.sig->tensor_count) {
            dir = f.sig->tensors[i].dir;
        }
        if (!dir) {
            char lb[96];
            spy_raisef(SP_EARG_SIGNATURE,
                       "%s: no direction: the callable declares %s; wrap it in "
                       "simpler.In/Out/InOut",
                       label(&f, i, 0, lb, sizeof lb), f.sig ? "fewer tensors" : "no signature");
            goto out;
        }
        a->args.dirs[i] = (uint8_t)dir;
        if (o == Py_None) {
            pending = 1;
            continue;
        }
        if (tensor_from(&f, i, o, dir, dt))
            goto out;
        if (writes(dir) && add_output(&f, i, o))
            goto out;
    }
    for (uint32_t i = 0; pending && i < f.nt; i++) {
        PyObject *o = f.tensors[i];
        int dt = 0;
        if (Py_TYPE(o) == &SpyArg_Type)
            dt = ((SpyArg *)o)->dtype, o = ((SpyArg *)o)->obj;
        if (o != Py_None)
            continue;
        PyObject *arr = allocate_output(&f, i, a->args.dirs[i], dt);
        if (!arr)
            goto out;
        int bad = tensor_from(&f, i, arr, a->args.dirs[i], dt ? dt : f.sig->tensors[i].dtype) ||
                  add_output(&f, i, arr);
        Py_DECREF(arr);
        if (bad)
            goto out;
    }
    for (uint32_t j = 0; j < f.ns; j++)
        if (scalar_word(&f, j, f.scalars[j], &a->args.scalars[j]))
            goto out;
    rc = 0;
out:
    Py_XDECREF(tseq);
    Py_XDECREF(sseq);
    if (rc)
        spy_args_release(a);
    return rc;
}

int spy_args_fill_dict(spy_args *a, SpyCallable *c, PyObject *tensors, PyObject *scalars,
                       PyObject *named)
{
    Py_ssize_t n = named ? PyDict_GET_SIZE(named) : 0;
    if (!n)
        return spy_args_fill(a, c, tensors, scalars, NULL);
    PyObject **kv = PyMem_Malloc(2 * (size_t)n * sizeof *kv);
    if (!kv) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0, i = 0;
    while (i < n && PyDict_Next(named, &pos, &k, &v)) {
        kv[i] = k;
        kv[n + i] = v;
        i++;
    }
    spy_named nm = {.names = kv, .values = kv + n, .n = i};
    int rc = spy_args_fill(a, c, tensors, scalars, &nm);
    PyMem_Free(kv);
    return rc;
}

void spy_args_release(spy_args *a)
{
    /* Every held view is below tensor_count, which is set before any
     * view is taken, so a released one (count 0) is a no-op. */
    for (uint32_t i = 0; i < a->args.tensor_count; i++)
        if (a->held[i]) {
            PyBuffer_Release(&a->views[i]);
            a->held[i] = 0;
        }
    a->args.tensor_count = 0;
    a->args.scalar_count = 0;
    Py_CLEAR(a->outputs);
}
