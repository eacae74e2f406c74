/* The CPython extension simpler._simpler: what its files share. Each file
 * owns its types and registers them on the module in its spy_*_init:
 *   mod.c       module init, the status-to-exception map, dtype names
 *   callable.c  Callable (a validated blob, its signature), pack, header
 *   trace.c     Trace (a copy of one run's trace records and edges)
 *   config.c    Arg, CallConfig, RunStats, RunResult
 *   args.c      Python arguments -> sp_args (buffers held until released)
 *   worker.c    Worker and Run (the async lane's handle)
 * Everything goes through libsimpler's public headers; nothing here is per
 * task. The GIL is released around every call that may wait. */
#ifndef SIMPLER_PY_SIMPLER_H
#define SIMPLER_PY_SIMPLER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "simpler/callable.h"
#include "simpler/module.h"
#include "simpler/trace.h"
#include "simpler/types.h"
#include "simpler/worker.h"

/* ---- mod.c ----------------------------------------------------------------- */
/* Raise the simpler.Error subclass registered for `status` (errors.py hands
 * the map over at import through _simpler._set_errors), constructed as
 * cls(status, message). Returns NULL, for `return spy_raise(...)`. */
PyObject *spy_raise(int status, const char *message);
/* spy_raise with a printf-style message. */
PyObject *spy_raisef(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* sp_dtype of a name ("f32", ..., "bool"), 0 for an unknown name. Names are
 * sp_dtype_name's (simpler/tensor.h). */
int spy_dtype_from_name(const char *name);
/* numpy, imported on first use (NULL with an exception set if missing). */
PyObject *spy_numpy(void);

/* ---- callable.c -------------------------------------------------------------- */
typedef struct SpyCallable {
    PyObject_HEAD void *blob; /* 64-byte aligned private copy of the blob */
    size_t size;
    sp_callable_view view;      /* points into blob */
    sp_callable_signature *sig; /* parsed orch_args; NULL when the callable declares none */
    /* The signature's names as interned str: [0, tensor_count) the tensors',
     * then the scalars'; NULL without names. A keyword the interpreter
     * interned is found by identity, and the outputs dict takes them as keys. */
    PyObject **names;
    PyObject *weakrefs;
} SpyCallable;

extern PyTypeObject SpyCallable_Type;
#define SpyCallable_Check(o) PyObject_TypeCheck(o, &SpyCallable_Type)
/* The entry name of the callable's kernel with `func_id`; NULL if none. */
const char *spy_callable_kernel_name(const SpyCallable *c, int32_t func_id);
int spy_callable_init(PyObject *module);

/* ---- trace.c ---------------------------------------------------------------- */
extern PyTypeObject SpyTrace_Type;
/* A Trace holding a copy of `tr` (records and edges), with the run's
 * stats, the callable (kernel names; may be NULL) and the runtime name. */
PyObject *spy_trace_new(const sp_run_trace *tr, const sp_run_stats *stats, SpyCallable *callable,
                        const char *runtime);
int spy_trace_init(PyObject *module);

/* ---- config.c ---------------------------------------------------------------- */
/* simpler.Arg(obj, dir, dtype=None): a tensor argument with its direction. */
typedef struct SpyArg {
    PyObject_HEAD PyObject *obj;
    int dir;   /* sp_dir */
    int dtype; /* sp_dtype, 0: the buffer's own */
} SpyArg;
extern PyTypeObject SpyArg_Type;

/* simpler.CallConfig: an sp_call_config with named attributes. */
typedef struct SpyCallConfig {
    PyObject_HEAD sp_call_config cfg;
} SpyCallConfig;
extern PyTypeObject SpyCallConfig_Type;

/* simpler.RunStats (a struct sequence) from the C figures. */
PyObject *spy_run_stats_new(const sp_run_stats *st);
/* simpler.RunResult(stats, trace, outputs); its RunStats is made from a
 * copy of `st` when first asked for. */
PyObject *spy_run_result_new(const sp_run_stats *st, PyObject *trace, PyObject *outputs);
int spy_config_init(PyObject *module);

/* ---- args.c ------------------------------------------------------------------ */
/* One run's converted arguments: the sp_args the worker reads and the
 * buffers (and objects) that must stay alive, and unchanged, until the run
 * is over. Owned by whoever holds it (a Worker's sync slot, a Run). */
typedef struct spy_args {
    sp_args args; /* only [0, tensor_count) / [0, scalar_count) are filled */
    Py_buffer views[SP_MAX_RUN_TENSORS];
    uint8_t held[SP_MAX_RUN_TENSORS]; /* views[i] is held */
    PyObject *outputs;                /* dict: name or index -> the output object */
} spy_args;

/* Arguments given by signature name: values[k] for names[k] (a str), both
 * borrowed, k < n, skipping the `nskip` positions in skip[] (ascending:
 * the keywords that are the call's own, as Worker.run's trace=). */
typedef struct spy_named {
    PyObject *const *names;
    PyObject *const *values;
    Py_ssize_t n;
    const Py_ssize_t *skip;
    int nskip;
} spy_named;

/* Convert `tensors` (a sequence), `scalars` (a sequence) and `named` (may
 * be NULL) for callable `c` into `a`. 0, or -1 with a simpler.Error raised
 * (naming the argument). On failure nothing stays held. */
int spy_args_fill(spy_args *a, SpyCallable *c, PyObject *tensors, PyObject *scalars,
                  const spy_named *named);
/* spy_args_fill with the named arguments in a dict (NULL or empty: none). */
int spy_args_fill_dict(spy_args *a, SpyCallable *c, PyObject *tensors, PyObject *scalars,
                       PyObject *named);
/* Release what spy_args_fill holds (safe on a released or zeroed one). */
void spy_args_release(spy_args *a);

/* ---- worker.c ---------------------------------------------------------------- */
int spy_worker_init(PyObject *module);
/* The Worker's handle under its lock, for a call without the GIL (NULL:
 * closed); spy_worker_unlock after, in any case. */
sp_worker *spy_worker_lock(PyObject *worker);
void spy_worker_unlock(PyObject *worker);

/* ---- device_array.c ------------------------------------------------------------ */
/* simpler.DeviceArray (Worker.device_array): device memory across runs. */
extern PyTypeObject SpyDeviceArray_Type;
#define SpyDeviceArray_Check(o) PyObject_TypeCheck(o, &SpyDeviceArray_Type)
/* Worker.device_array(shape, dtype="f32"). */
PyObject *spy_device_array_new(PyObject *worker, PyObject *args, PyObject *kw);
/* The run argument a DeviceArray is (SP_TENSOR_DEVICE); 0 or a status
 * with `err` set. */
int spy_device_array_tensor(PyObject *obj, sp_tensor *t, char *err, size_t err_len);
int spy_device_array_init(PyObject *module);

#endif
