/* simpler.Callable: a validated callable blob (a private, 64-byte aligned
 * copy) and its parsed argument signature; ArgSpec and KernelInfo, what it
 * says about its arguments and kernels; pack (sp_callable_build) and
 * kernels_header (sp_callable_header_text). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "py_simpler.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define SPY_BLOB_ALIGN 64

/* ---- ArgSpec, KernelInfo ------------------------------------------------------ */
static PyTypeObject ArgSpec_Type, KernelInfo_Type;

static PyStructSequence_Field argspec_fields[] = {
    {"name", "the argument's name in the signature"},
    {"kind", "\"tensor\" or \"scalar\""},
    {"dir", "a tensor's direction (simpler.IN, ...); None for a scalar"},
    {"dtype", "the declared dtype (\"f32\", ...); None: any"},
    {"shape", "a tensor's dims (int, symbol str, None: any extent); None: any rank"},
    {NULL, NULL},
};
static PyStructSequence_Desc argspec_desc = {
    "simpler.ArgSpec", "One argument of a callable's declared signature.", argspec_fields, 5};

static PyStructSequence_Field kernelinfo_fields[] = {
    {"func_id", "the number tasks name the kernel by"},
    {"core", "\"aic\" or \"aiv\""},
    {"entry", "the kernel's symbol (its name)"},
    {"signature", "the kernel's argument signature (i o x e n s); None: unchecked"},
    {NULL, NULL},
};
static PyStructSequence_Desc kernelinfo_desc = {"simpler.KernelInfo", "One kernel of a callable.",
                                                kernelinfo_fields, 4};

static const char *core_name(uint32_t core)
{
    return core == SP_CORE_AIC ? "aic" : core == SP_CORE_AIV ? "aiv" : "?";
}

/* A str (or None for NULL): the tuple items below. */
static PyObject *str_or_none(const char *s)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_FromString(s);
}

/* Fill item `i` of struct sequence `seq` with `v` (stolen); -1 when v is NULL. */
static int seq_set(PyObject *seq, Py_ssize_t i, PyObject *v)
{
    if (!v)
        return -1;
    PyStructSequence_SET_ITEM(seq, i, v);
    return 0;
}

static PyObject *argspec_new(const sp_callable_signature *sig, const sp_callable_arg *a)
{
    PyObject *o = PyStructSequence_New(&ArgSpec_Type);
    if (!o)
        return NULL;
    int tensor = a->kind == SP_CALLABLE_ARG_TENSOR;
    PyObject *shape;
    if (!tensor || a->ndim < 0) {
        shape = Py_NewRef(Py_None);
    } else {
        shape = PyTuple_New(a->ndim);
        for (int d = 0; shape && d < a->ndim; d++) {
            int64_t v = a->dims[d];
            PyObject *item = v > 0                      ? PyLong_FromLongLong(v)
                             : v == SP_CALLABLE_DIM_ANY ? Py_NewRef(Py_None)
                             : (uint64_t)(-(v + 1)) < sig->symbol_count
                                 ? PyUnicode_FromString(sig->symbols[-(v + 1)])
                                 : Py_NewRef(Py_None);
            if (!item) {
                Py_CLEAR(shape);
                break;
            }
            PyTuple_SET_ITEM(shape, d, item);
        }
    }
    if (seq_set(o, 0, PyUnicode_FromString(a->name)) ||
        seq_set(o, 1, PyUnicode_FromString(tensor ? "tensor" : "scalar")) ||
        seq_set(o, 2, tensor ? PyLong_FromLong(a->dir) : Py_NewRef(Py_None)) ||
        seq_set(o, 3,
                a->dtype == SP_CALLABLE_DTYPE_ANY
                    ? Py_NewRef(Py_None)
                    : PyUnicode_FromString(sp_dtype_name(a->dtype))) ||
        seq_set(o, 4, shape)) {
        Py_DECREF(o);
        return NULL;
    }
    return o;
}

/* ---- Callable ------------------------------------------------------------------ */
const char *spy_callable_kernel_name(const SpyCallable *c, int32_t func_id)
{
    int k = sp_callable_find_kernel(&c->view, func_id);
    return k < 0 ? NULL : sp_callable_string(&c->view, c->view.kernels[k].entry);
}

/* Take a private aligned copy of `size` bytes, validate it and parse its
 * signature into `c`. 0, or -1 with simpler.CallableError (or
 * MemoryError) raised and `c` left empty. */
static int callable_adopt(SpyCallable *c, const void *bytes, size_t size)
{
    size_t cap = (size + SPY_BLOB_ALIGN - 1) / SPY_BLOB_ALIGN * SPY_BLOB_ALIGN;
    void *blob = aligned_alloc(SPY_BLOB_ALIGN, cap ? cap : SPY_BLOB_ALIGN);
    if (!blob) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(blob, bytes, size);
    memset((char *)blob + size, 0, (cap ? cap : SPY_BLOB_ALIGN) - size);
    char err[512] = "";
    sp_callable_view view;
    int rc = sp_callable_validate(blob, size, &view, err, sizeof err);
    if (rc) {
        free(blob);
        spy_raisef(rc, "invalid callable: %s", err);
        return -1;
    }
    sp_callable_signature *sig = NULL;
    if (view.orch_args) {
        sig = malloc(sizeof *sig);
        if (!sig) {
            free(blob);
            PyErr_NoMemory();
            return -1;
        }
        rc = sp_callable_parse_signature(view.orch_args, sig, err, sizeof err);
        if (rc) {
            /* The builder stores only text that parses: this blob was made
             * some other way. */
            free(sig);
            free(blob);
            spy_raisef(SP_EBLOB, "invalid callable: its argument signature does not parse: %s",
                       err);
            return -1;
        }
    }
    PyObject **names = NULL;
    if (sig && (sig->tensor_count || sig->scalar_count)) {
        uint32_t n = sig->tensor_count + sig->scalar_count;
        names = PyMem_Calloc(n, sizeof *names);
        for (uint32_t i = 0; names && i < n; i++) {
            const char *nm = i < sig->tensor_count ? sig->tensors[i].name
                                                   : sig->scalars[i - sig->tensor_count].name;
            if (!(names[i] = PyUnicode_InternFromString(nm))) {
                for (uint32_t k = 0; k < i; k++)
                    Py_DECREF(names[k]);
                PyMem_Free(names);
                free(sig);
                free(blob);
                return -1;
            }
        }
        if (!names) {
            free(sig);
            free(blob);
            PyErr_NoMemory();
            return -1;
        }
    }
    c->blob = blob;
    c->size = size;
    c->view = view;
    c->sig = sig;
    c->names = names;
    return 0;
}

static PyObject *callable_from_bytes(PyTypeObject *type, const void *bytes, size_t size)
{
    SpyCallable *c = (SpyCallable *)type->tp_alloc(type, 0);
    if (!c)
        return NULL;
    if (callable_adopt(c, bytes, size)) {
        Py_DECREF(c);
        return NULL;
    }
    return (PyObject *)c;
}

static PyObject *callable_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"blob", NULL};
    Py_buffer buf;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*:Callable", kwlist, &buf))
        return NULL;
    PyObject *c = callable_from_bytes(type, buf.buf, (size_t)buf.len);
    PyBuffer_Release(&buf);
    return c;
}

static void callable_dealloc(SpyCallable *c)
{
    if (c->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)c);
    if (c->names) {
        for (uint32_t i = 0; i < c->sig->tensor_count + c->sig->scalar_count; i++)
            Py_XDECREF(c->names[i]);
        PyMem_Free(c->names);
    }
    free(c->sig);
    free(c->blob);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* The whole of the file at `path` (malloc'd) into *data and *size, without
 * the GIL: 0 or an errno value. */
static int read_file(const char *path, void **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int e = 0;
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        char *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    if (!buf)
        e = ENOMEM;
    else if (ferror(f))
        e = errno ? errno : EIO;
    fclose(f);
    if (e) {
        free(buf);
        return e;
    }
    *data = buf;
    *size = len;
    return 0;
}

/* Prefix the message of the simpler.Error being raised with `path`. */
static void error_name_file(const char *path)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *msg = value ? PyObject_GetAttrString(value, "message") : NULL;
    PyObject *st = msg ? PyObject_GetAttrString(value, "status") : NULL;
    const char *text = msg && PyUnicode_Check(msg) ? PyUnicode_AsUTF8(msg) : NULL;
    if (text && st && PyLong_Check(st)) {
        int status = (int)PyLong_AsLong(st);
        char *copy = strdup(text);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        if (copy)
            spy_raisef(status, "%s: %s", path, copy);
        else
            PyErr_NoMemory();
        free(copy);
    } else {
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(msg);
    Py_XDECREF(st);
}

static PyObject *callable_load(PyObject *cls, PyObject *arg)
{
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    void *data = NULL;
    size_t size = 0;
    PyThreadState *ts = PyEval_SaveThread();
    int e = read_file(PyBytes_AS_STRING(path), &data, &size);
    PyEval_RestoreThread(ts);
    if (e) {
        errno = e;
        PyErr_SetFromErrnoWithFilename(e == ENOMEM ? PyExc_MemoryError : PyExc_OSError,
                                       PyBytes_AS_STRING(path));
        Py_DECREF(path);
        return NULL;
    }
    PyObject *c = callable_from_bytes((PyTypeObject *)cls, data, size);
    free(data);
    if (!c)
        error_name_file(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    return c;
}

static PyObject *callable_save(SpyCallable *c, PyObject *arg)
{
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    const char *p = PyBytes_AS_STRING(path);
    PyThreadState *ts = PyEval_SaveThread();
    FILE *f = fopen(p, "wb");
    int ok = f && fwrite(c->blob, 1, c->size, f) == c->size;
    if (f && fclose(f))
        ok = 0;
    PyEval_RestoreThread(ts);
    if (!ok) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, p);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    Py_RETURN_NONE;
}

static PyObject *callable_kernel_name(SpyCallable *c, PyObject *arg)
{
    long id = PyLong_AsLong(arg);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if (id < INT32_MIN || id > INT32_MAX)
        Py_RETURN_NONE;
    return str_or_none(spy_callable_kernel_name(c, (int32_t)id));
}

static Py_ssize_t callable_len(SpyCallable *c)
{
    return (Py_ssize_t)c->size;
}

static PyObject *callable_get_blob(SpyCallable *c, void *closure)
{
    (void)closure;
    return PyBytes_FromStringAndSize(c->blob, (Py_ssize_t)c->size);
}

static PyObject *callable_get_checksum(SpyCallable *c, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(c->view.header->checksum);
}

static PyObject *callable_get_entry(SpyCallable *c, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(c->view.orch_entry);
}

static PyObject *callable_get_config(SpyCallable *c, void *closure)
{
    (void)closure;
    return str_or_none(c->view.orch_config);
}

static PyObject *callable_get_signature(SpyCallable *c, void *closure)
{
    (void)closure;
    return str_or_none(c->view.orch_args);
}

static PyObject *callable_get_version(SpyCallable *c, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(c->view.header->version);
}

static PyObject *callable_get_args(SpyCallable *c, void *closure)
{
    (void)closure;
    if (!c->sig)
        return PyTuple_New(0);
    const sp_callable_signature *s = c->sig;
    PyObject *t = PyTuple_New(s->tensor_count + s->scalar_count);
    if (!t)
        return NULL;
    for (uint32_t i = 0; i < s->tensor_count + s->scalar_count; i++) {
        const sp_callable_arg *a =
            i < s->tensor_count ? &s->tensors[i] : &s->scalars[i - s->tensor_count];
        PyObject *o = argspec_new(s, a);
        if (!o) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static PyObject *callable_get_kernels(SpyCallable *c, void *closure)
{
    (void)closure;
    uint32_t n = c->view.header->kernel_count;
    PyObject *t = PyTuple_New(n);
    if (!t)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        const sp_callable_kernel *k = &c->view.kernels[i];
        const char *sig = sp_callable_string(&c->view, k->signature);
        PyObject *o = PyStructSequence_New(&KernelInfo_Type);
        if (!o || seq_set(o, 0, PyLong_FromLong(k->func_id)) ||
            seq_set(o, 1, PyUnicode_FromString(core_name(k->core_type))) ||
            seq_set(o, 2, PyUnicode_FromString(sp_callable_string(&c->view, k->entry))) ||
            seq_set(o, 3, str_or_none(sig && *sig ? sig : NULL))) {
            Py_XDECREF(o);
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static PyObject *callable_repr(SpyCallable *c)
{
    return PyUnicode_FromFormat("<simpler.Callable entry=%s, %u kernel%s, %zu bytes, "
                                "signature=%s>",
                                c->view.orch_entry, c->view.header->kernel_count,
                                c->view.header->kernel_count == 1 ? "" : "s", c->size,
                                c->view.orch_args ? c->view.orch_args : "(none)");
}

static PyMethodDef callable_methods[] = {
    {"load", callable_load, METH_O | METH_CLASS,
     "Callable.load(path): the callable in a .spc file, validated (CallableError if "
     "malformed)."},
    {"save", (PyCFunction)callable_save, METH_O, "save(path): write the blob to a file."},
    {"kernel_name", (PyCFunction)callable_kernel_name, METH_O,
     "kernel_name(func_id): the entry name of that kernel, None if there is none."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef callable_getset[] = {
    {"blob", (getter)callable_get_blob, NULL, "the blob's bytes (a copy)", NULL},
    {"checksum", (getter)callable_get_checksum, NULL, "the blob's CRC32C (its header's)", NULL},
    {"version", (getter)callable_get_version, NULL, "the blob format's version", NULL},
    {"entry", (getter)callable_get_entry, NULL, "the orchestration's entry symbol", NULL},
    {"config", (getter)callable_get_config, NULL, "the config symbol, or None", NULL},
    {"signature", (getter)callable_get_signature, NULL,
     "the declared argument signature (text), or None", NULL},
    {"args", (getter)callable_get_args, NULL,
     "the declared arguments (tuple of ArgSpec, tensors then scalars); () when undeclared", NULL},
    {"kernels", (getter)callable_get_kernels, NULL, "the kernels (tuple of KernelInfo)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods callable_as_sequence = {
    .sq_length = (lenfunc)callable_len,
};

PyTypeObject SpyCallable_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "simpler.Callable",
    .tp_doc = "Callable(blob): a callable blob (bytes-like), copied and validated.\n"
              "Callable.load(path) reads a .spc file.",
    .tp_basicsize = sizeof(SpyCallable),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = callable_new,
    .tp_dealloc = (destructor)callable_dealloc,
    .tp_repr = (reprfunc)callable_repr,
    .tp_methods = callable_methods,
    .tp_getset = callable_getset,
    .tp_as_sequence = &callable_as_sequence,
    .tp_weaklistoffset = offsetof(SpyCallable, weakrefs),
};

/* ---- pack, kernels_header -------------------------------------------------------- */
/* What one kernel item's Python objects hold while the C spec points into them. */
typedef struct kernel_hold {
    PyObject *path;  /* bytes (FSConverter) or NULL */
    Py_buffer bytes; /* or the binary's bytes */
    int have_bytes;
    PyObject *entry, *sig; /* str, borrowed from the item */
} kernel_hold;

static int core_from_object(PyObject *o, uint32_t *core, Py_ssize_t i)
{
    if (PyUnicode_Check(o)) {
        const char *s = PyUnicode_AsUTF8(o);
        if (!s)
            return -1;
        if (strcmp(s, "aic") == 0) {
            *core = SP_CORE_AIC;
            return 0;
        }
        if (strcmp(s, "aiv") == 0) {
            *core = SP_CORE_AIV;
            return 0;
        }
    } else if (PyLong_Check(o)) {
        long v = PyLong_AsLong(o);
        if (v == SP_CORE_AIC || v == SP_CORE_AIV) {
            *core = (uint32_t)v;
            return 0;
        }
        if (v == -1 && PyErr_Occurred())
            return -1;
    }
    spy_raisef(SP_EINVAL, "kernel %zd: core must be \"aic\" or \"aiv\"", i);
    return -1;
}

/* A path (str / PathLike) into *path, or a bytes-like into *buf. */
static int binary_from_object(PyObject *o, PyObject **path, Py_buffer *buf, int *have_bytes)
{
    if (PyObject_CheckBuffer(o) && !PyUnicode_Check(o)) {
        if (PyObject_GetBuffer(o, buf, PyBUF_SIMPLE))
            return -1;
        *have_bytes = 1;
        return 0;
    }
    return PyUnicode_FSConverter(o, path) ? 0 : -1;
}

static const char *optional_str(PyObject *o, const char *what)
{
    if (!o || o == Py_None)
        return NULL;
    if (!PyUnicode_Check(o)) {
        spy_raisef(SP_EINVAL, "%s must be a str or None", what);
        return NULL;
    }
    return PyUnicode_AsUTF8(o);
}

/* Fill specs[0, n) from the sequence `kernels`; `full`: (func_id, core,
 * binary, entry[, sig]) as pack takes, else (func_id, core, entry) as
 * kernels_header takes. -1 with an exception set. holds[] must be zeroed
 * and are released by the caller either way. */
static int kernel_specs(PyObject *seq, int full, sp_callable_kernel_spec *specs, kernel_hold *holds,
                        Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t len = PyTuple_Check(item) || PyList_Check(item) ? PySequence_Size(item) : -1;
        if (full ? (len != 4 && len != 5) : len < 3) {
            spy_raisef(SP_EINVAL,
                       full ? "kernel %zd: expected (func_id, core, binary, entry[, signature])"
                            : "kernel %zd: expected (func_id, core, entry)",
                       i);
            return -1;
        }
        PyObject *fid = PySequence_Fast_GET_ITEM(item, 0); /* a tuple or list: Fast works */
        long v = PyLong_Check(fid) ? PyLong_AsLong(fid) : -1;
        if (v < 0 || v > INT32_MAX) {
            if (!PyErr_Occurred())
                spy_raisef(SP_EINVAL, "kernel %zd: func_id must be an int in [0, 2^31)", i);
            return -1;
        }
        specs[i].func_id = (int32_t)v;
        if (core_from_object(PySequence_Fast_GET_ITEM(item, 1), &specs[i].core_type, i))
            return -1;
        PyObject *entry = PySequence_Fast_GET_ITEM(item, full ? 3 : 2);
        if (!PyUnicode_Check(entry)) {
            spy_raisef(SP_EINVAL, "kernel %zd: entry must be a str", i);
            return -1;
        }
        if (!(specs[i].entry = PyUnicode_AsUTF8(entry)))
            return -1;
        if (!full)
            continue;
        if (binary_from_object(PySequence_Fast_GET_ITEM(item, 2), &holds[i].path, &holds[i].bytes,
                               &holds[i].have_bytes))
            return -1;
        if (holds[i].have_bytes) {
            specs[i].bytes = holds[i].bytes.buf;
            specs[i].size = (size_t)holds[i].bytes.len;
        } else {
            specs[i].path = PyBytes_AS_STRING(holds[i].path);
        }
        if (len == 5) {
            PyObject *sig = PySequence_Fast_GET_ITEM(item, 4);
            specs[i].signature = optional_str(sig, "a kernel's signature");
            if (!specs[i].signature && PyErr_Occurred())
                return -1;
        }
    }
    return 0;
}

/* The `kernels` argument converted: the items (a fast sequence), their
 * specs and what keeps the specs' strings and bytes alive. */
typedef struct kernel_table {
    PyObject *seq;
    sp_callable_kernel_spec *specs;
    kernel_hold *holds;
    Py_ssize_t n;
} kernel_table;

static void kernel_table_release(kernel_table *t)
{
    for (Py_ssize_t i = 0; t->holds && i < t->n; i++) {
        Py_XDECREF(t->holds[i].path);
        if (t->holds[i].have_bytes)
            PyBuffer_Release(&t->holds[i].bytes);
    }
    PyMem_Free(t->specs);
    PyMem_Free(t->holds);
    Py_XDECREF(t->seq);
    memset(t, 0, sizeof *t);
}

/* Convert `kernels` (NULL: none) into `t`, with binaries (`full`, pack)
 * or without (the header). 0, or -1 with an exception set and nothing held. */
static int kernel_table_fill(kernel_table *t, PyObject *kernels, int full)
{
    memset(t, 0, sizeof *t);
    if (!kernels)
        return 0;
    if (!(t->seq = PySequence_Fast(kernels, "kernels must be a sequence of tuples")))
        return -1;
    t->n = PySequence_Fast_GET_SIZE(t->seq);
    if ((size_t)t->n > SP_CALLABLE_MAX_KERNELS) {
        spy_raisef(SP_EINVAL, "%zd kernels: a callable holds at most %u", t->n,
                   SP_CALLABLE_MAX_KERNELS);
        kernel_table_release(t);
        return -1;
    }
    t->specs = PyMem_Calloc(t->n ? (size_t)t->n : 1, sizeof *t->specs);
    t->holds = PyMem_Calloc(t->n ? (size_t)t->n : 1, sizeof *t->holds);
    if (!t->specs || !t->holds) {
        PyErr_NoMemory();
        kernel_table_release(t);
        return -1;
    }
    if (kernel_specs(t->seq, full, t->specs, t->holds, t->n)) {
        kernel_table_release(t);
        return -1;
    }
    return 0;
}

static PyObject *py_pack(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"orchestration", "entry", "kernels", "config", "signature", NULL};
    PyObject *orch, *kernels = NULL, *config = Py_None, *signature = Py_None;
    const char *entry = "orchestration";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|sOOO:pack", kwlist, &orch, &entry, &kernels,
                                     &config, &signature))
        return NULL;
    sp_callable_spec spec = {.orch_entry = entry};
    PyObject *orch_path = NULL;
    Py_buffer orch_buf;
    int orch_bytes = 0;
    PyObject *result = NULL;
    kernel_table kt = {0};
    if (!(spec.orch_config = optional_str(config, "config")) && PyErr_Occurred())
        return NULL;
    if (!(spec.orch_args = optional_str(signature, "signature")) && PyErr_Occurred())
        return NULL;
    if (binary_from_object(orch, &orch_path, &orch_buf, &orch_bytes))
        return NULL;
    if (orch_bytes) {
        spec.orch_bytes = orch_buf.buf;
        spec.orch_size = (size_t)orch_buf.len;
    } else {
        spec.orch_path = PyBytes_AS_STRING(orch_path);
    }
    if (kernel_table_fill(&kt, kernels, 1))
        goto done;
    spec.kernels = kt.specs;
    spec.kernel_count = (uint32_t)kt.n;
    void *blob = NULL;
    size_t size = 0;
    char err[512] = "";
    PyThreadState *ts = PyEval_SaveThread();
    int rc = sp_callable_build(&spec, &blob, &size, err, sizeof err);
    PyEval_RestoreThread(ts);
    if (rc) {
        spy_raise(rc, err);
        goto done;
    }
    result = callable_from_bytes(&SpyCallable_Type, blob, size);
    free(blob);
done:
    kernel_table_release(&kt);
    Py_XDECREF(orch_path);
    if (orch_bytes)
        PyBuffer_Release(&orch_buf);
    return result;
}

static PyObject *py_kernels_header(PyObject *self, PyObject *args, PyObject *kwds)
{
    (void)self;
    static char *kwlist[] = {"kernels", "signature", "name", NULL};
    PyObject *kernels = NULL, *signature = Py_None;
    const char *name = "callable_kernels.h";
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOs:kernels_header", kwlist, &kernels,
                                     &signature, &name))
        return NULL;
    sp_callable_spec spec = {0};
    PyObject *result = NULL;
    kernel_table kt = {0};
    if (!(spec.orch_args = optional_str(signature, "signature")) && PyErr_Occurred())
        return NULL;
    if (kernel_table_fill(&kt, kernels, 0))
        goto done;
    spec.kernels = kt.specs;
    spec.kernel_count = (uint32_t)kt.n;
    char *text = NULL;
    size_t len = 0;
    char err[512] = "";
    int rc = sp_callable_header_text(&spec, name, &text, &len, err, sizeof err);
    if (rc) {
        spy_raise(rc, err);
        goto done;
    }
    result = PyUnicode_FromStringAndSize(text, (Py_ssize_t)len);
    free(text);
done:
    kernel_table_release(&kt);
    return result;
}

static PyMethodDef module_methods[] = {
    {"pack", (PyCFunction)(void (*)(void))py_pack, METH_VARARGS | METH_KEYWORDS,
     "pack(orchestration, entry=\"orchestration\", kernels=[(func_id, core, binary, entry[, "
     "sig])], config=None, signature=None) -> Callable\n"
     "Pack shared objects (paths or bytes) into a callable (sp_callable_build)."},
    {"kernels_header", (PyCFunction)(void (*)(void))py_kernels_header, METH_VARARGS | METH_KEYWORDS,
     "kernels_header(kernels=[(func_id, core, entry)], signature=None, "
     "name=\"callable_kernels.h\") -> str\n"
     "The header an orchestration includes: SP_FUNC_<kernel>, SP_ARG_<arg>, ... "
     "(sp_callable_header_text)."},
    {NULL, NULL, 0, NULL},
};

int spy_callable_init(PyObject *module)
{
    if (PyType_Ready(&SpyCallable_Type) ||
        PyStructSequence_InitType2(&ArgSpec_Type, &argspec_desc) ||
        PyStructSequence_InitType2(&KernelInfo_Type, &kernelinfo_desc))
        return -1;
    if (PyModule_AddObjectRef(module, "Callable", (PyObject *)&SpyCallable_Type) ||
        PyModule_AddObjectRef(module, "ArgSpec", (PyObject *)&ArgSpec_Type) ||
        PyModule_AddObjectRef(module, "KernelInfo", (PyObject *)&KernelInfo_Type))
        return -1;
    return PyModule_AddFunctions(module, module_methods);
}
