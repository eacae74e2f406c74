/* `simpler run FILE.spc`: run a user's packed callable with tensors read
 * from .npy files (--input, --inout) and created from a shape and dtype
 * (--output), scalars from --scalar. A callable packed with an argument
 * signature (simpler pack --args) names its arguments: each is looked up by
 * name and checked against it before anything runs; without one, tensors
 * and scalars go in command-line order. Outputs are written to --save DIR. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/npy.h"
#include "cli/run.h"
#include "cli/run_trace.h"
#include "simpler/callable.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* What the run's arguments are made of; freed by file_run_free. */
typedef struct file_run {
    void *blob;
    size_t size;
    sp_callable_view view;
    bool has_sig;
    sp_callable_signature sig;
    sp_args args;
    const char *names[SP_MAX_RUN_TENSORS]; /* tensor argument names, for --save */
    void *data[SP_MAX_RUN_TENSORS];        /* host buffers */
    void *pristine[SP_MAX_RUN_TENSORS];    /* INOUT inputs, restored before each round */
} file_run;

static void file_run_free(file_run *f)
{
    for (uint32_t i = 0; i < SP_MAX_RUN_TENSORS; i++) {
        free(f->data[i]);
        free(f->pristine[i]);
    }
    free(f->blob);
}

/* The callable file, read whole and validated. 0, CLI_EXIT_IO or CLI_EXIT_USAGE. */
static int load_callable(const char *path, file_run *f)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return cli_io_error("read the callable '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        fclose(fp);
        return cli_io_error("read the callable '%s': not a regular, non-empty file", path);
    }
    f->size = (size_t)st.st_size;
    f->blob = malloc(f->size); /* malloc's alignment: the validator wants 8 */
    size_t got = f->blob ? fread(f->blob, 1, f->size, fp) : 0;
    fclose(fp);
    if (got != f->size)
        return cli_io_error("read the callable '%s': %s", path,
                            f->blob ? "short read" : "out of memory");
    char err[256] = "";
    int rc = sp_callable_validate(f->blob, f->size, &f->view, err, sizeof err);
    if (rc) {
        cli_fail(rc, "'%s' is not a callable simpler can run: %s", path, err);
        return CLI_EXIT_USAGE;
    }
    if (f->view.orch_args && f->view.orch_args[0]) {
        rc = sp_callable_parse_signature(f->view.orch_args, &f->sig, err, sizeof err);
        if (rc) {
            cli_fail(rc, "'%s': its argument signature does not parse: %s", path, err);
            return CLI_EXIT_USAGE;
        }
        f->has_sig = true;
    }
    return 0;
}

static int dtype_by_name(const char *s, size_t n)
{
    for (int d = 1; d < SP_DTYPE_COUNT; d++)
        if (strlen(sp_dtype_name(d)) == n && strncmp(sp_dtype_name(d), s, n) == 0)
            return d;
    return SP_DTYPE_INVALID;
}

/* --output NAME=SHAPE:DTYPE, SHAPE "4096" or "64x64" (or "64,64"). */
static int parse_output(const run_arg *a, sp_tensor *t)
{
    const char *colon = strrchr(a->value, ':');
    int dtype = colon ? dtype_by_name(colon + 1, strlen(colon + 1)) : SP_DTYPE_INVALID;
    int64_t shape[SP_MAX_DIMS];
    int ndim = 0;
    const char *p = a->value;
    while (colon && p < colon && ndim < SP_MAX_DIMS) {
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || errno || d <= 0 || end > colon)
            break;
        shape[ndim++] = d;
        p = end;
        if (p < colon && (*p == 'x' || *p == ','))
            p++;
        else
            break;
    }
    if (!colon || !dtype || ndim == 0 || p != colon)
        return cli_usage_error("run",
                               "--output %s=%s: want SHAPE:DTYPE, e.g. 4096:f32 or 64x64:f16 (at "
                               "most %d dims; dtypes f32 f16 bf16 f64 i8 u8 i16 u16 i32 u32 i64 "
                               "u64 bool)",
                               a->name, a->value, SP_MAX_DIMS);
    if (sp_tensor_init(t, 0, dtype, ndim, shape) != SP_OK)
        return cli_usage_error("run", "--output %s=%s: the tensor is too large", a->name, a->value);
    return 0;
}

/* Tensor argument `i` from command-line argument `a`, direction `dir`. */
static int make_tensor(const run_arg *a, int dir, uint32_t i, file_run *f)
{
    sp_tensor *t = &f->args.tensors[i];
    if (a->kind == RUN_ARG_OUTPUT) {
        int rc = parse_output(a, t);
        if (rc)
            return rc;
        if (!(f->data[i] = calloc(1, t->buf_bytes ? (size_t)t->buf_bytes : 1)))
            return cli_fail(SP_ENOMEM, "no host memory for --output %s (%llu bytes)", a->name,
                            (unsigned long long)t->buf_bytes);
    } else {
        npy_array arr;
        char err[256] = "";
        int rc = npy_read(a->value, &arr, err, sizeof err);
        if (rc == NPY_EFORMAT) {
            cli_fail(SP_EINVAL, "--%s %s=%s: %s", a->kind == RUN_ARG_INOUT ? "inout" : "input",
                     a->name, a->value, err);
            return CLI_EXIT_USAGE;
        }
        if (rc)
            return cli_io_error("read '%s' (argument '%s'): %s", a->value, a->name,
                                strerror(errno));
        if (sp_tensor_init(t, 0, arr.dtype, arr.ndim, arr.shape) != SP_OK) {
            free(arr.data);
            return cli_usage_error("run", "%s: the array is too large", a->value);
        }
        f->data[i] = arr.data;
        if (dir == SP_INOUT && !(f->pristine[i] = malloc(arr.bytes ? arr.bytes : 1)))
            return cli_fail(SP_ENOMEM, "no host memory for a copy of '%s'", a->value);
        if (f->pristine[i])
            memcpy(f->pristine[i], arr.data, arr.bytes);
    }
    t->addr = (uint64_t)(uintptr_t)f->data[i];
    f->args.dirs[i] = (uint8_t)dir;
    f->names[i] = a->name;
    return 0;
}

/* --scalar NAME=VALUE as the 64-bit word of `dtype` (sp_dtype; I64 when
 * the callable declares nothing). */
static int make_scalar(const run_arg *a, int dtype, uint64_t *out)
{
    char *end;
    errno = 0;
    if (dtype == SP_DTYPE_F64 || dtype == SP_DTYPE_F32) {
        double d = strtod(a->value, &end);
        if (!errno && end != a->value && !*end) {
            if (dtype == SP_DTYPE_F64)
                memcpy(out, &d, sizeof d);
            else {
                float x = (float)d;
                uint32_t bits;
                memcpy(&bits, &x, sizeof bits);
                *out = bits;
            }
            return 0;
        }
    } else if (dtype == SP_DTYPE_BOOL) {
        if (!strcmp(a->value, "1") || !strcmp(a->value, "true") || !strcmp(a->value, "0") ||
            !strcmp(a->value, "false")) {
            *out = a->value[0] == '1' || a->value[0] == 't';
            return 0;
        }
    } else if (dtype == SP_DTYPE_U64) {
        unsigned long long v = strtoull(a->value, &end, 0);
        if (!errno && end != a->value && !*end && a->value[0] != '-') {
            *out = v;
            return 0;
        }
    } else {
        long long v = strtoll(a->value, &end, 0);
        if (!errno && end != a->value && !*end) {
            *out = (uint64_t)v;
            return 0;
        }
    }
    return cli_usage_error("run", "--scalar %s=%s: not a %s", a->name, a->value,
                           dtype == SP_DTYPE_BOOL ? "bool (0, 1, true, false)"
                                                  : sp_dtype_name(dtype));
}

static int dir_of(run_arg_kind k)
{
    return k == RUN_ARG_INPUT ? SP_IN : k == RUN_ARG_INOUT ? SP_INOUT : SP_OUT;
}

/* Without a signature: tensors and scalars each in command-line order. */
static int args_in_order(const run_opts *o, file_run *f)
{
    for (int i = 0; i < o->arg_count; i++) {
        const run_arg *a = &o->args[i];
        int rc;
        if (a->kind == RUN_ARG_SCALAR) {
            if (f->args.scalar_count >= SP_MAX_RUN_SCALARS)
                return cli_usage_error("run", "more than %d scalars", SP_MAX_RUN_SCALARS);
            rc = make_scalar(a, SP_DTYPE_I64, &f->args.scalars[f->args.scalar_count++]);
        } else {
            if (f->args.tensor_count >= SP_MAX_RUN_TENSORS)
                return cli_usage_error("run", "more than %d tensors", SP_MAX_RUN_TENSORS);
            rc = make_tensor(a, dir_of(a->kind), f->args.tensor_count++, f);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static const run_arg *find_arg(const run_opts *o, const char *name)
{
    for (int i = 0; i < o->arg_count; i++)
        if (strcmp(o->args[i].name, name) == 0)
            return &o->args[i];
    return NULL;
}

/* With a signature: every declared argument by name, nothing else. */
static int args_by_signature(const run_opts *o, file_run *f)
{
    const sp_callable_signature *s = &f->sig;
    const char *declared[SP_MAX_RUN_TENSORS + SP_MAX_RUN_SCALARS];
    uint32_t nd = 0;
    for (uint32_t i = 0; i < s->tensor_count; i++)
        declared[nd++] = s->tensors[i].name;
    for (uint32_t i = 0; i < s->scalar_count; i++)
        declared[nd++] = s->scalars[i].name;
    for (int i = 0; i < o->arg_count; i++) {
        bool known = false;
        for (uint32_t k = 0; k < nd && !known; k++)
            known = strcmp(declared[k], o->args[i].name) == 0;
        if (!known) {
            const char *best = cli_suggest(o->args[i].name, declared, (int)nd);
            return cli_usage_error("run", "the callable has no argument '%s'%s%s%s (it takes: %s)",
                                   o->args[i].name, best ? " (did you mean " : "", best ? best : "",
                                   best ? "?)" : "", f->view.orch_args);
        }
    }
    for (uint32_t i = 0; i < s->tensor_count; i++) {
        const sp_callable_arg *d = &s->tensors[i];
        const run_arg *a = find_arg(o, d->name);
        bool writes = d->dir == SP_OUT || d->dir == SP_OUT_EXISTING;
        if (!a)
            return cli_usage_error("run", "argument '%s' of the callable is missing: give %s %s=%s",
                                   d->name, writes ? "--output" : "--input", d->name,
                                   writes ? "SHAPE:DTYPE" : "FILE.npy");
        if (a->kind == RUN_ARG_SCALAR)
            return cli_usage_error("run", "argument '%s' is a tensor, not a scalar", d->name);
        if (a->kind == RUN_ARG_OUTPUT && (d->dir == SP_IN || d->dir == SP_INOUT))
            return cli_usage_error("run",
                                   "argument '%s' is read by the callable: give --%s %s=FILE.npy",
                                   d->name, d->dir == SP_IN ? "input" : "inout", d->name);
        int rc = make_tensor(a, d->dir, i, f);
        if (rc)
            return rc;
        f->args.tensor_count = i + 1;
        /* bf16 has no numpy dtype: its bits come as uint16. */
        if (d->dtype == SP_DTYPE_BF16 && f->args.tensors[i].dtype == SP_DTYPE_U16)
            f->args.tensors[i].dtype = SP_DTYPE_BF16;
    }
    for (uint32_t i = 0; i < s->scalar_count; i++) {
        const sp_callable_arg *d = &s->scalars[i];
        const run_arg *a = find_arg(o, d->name);
        if (!a)
            return cli_usage_error("run",
                                   "scalar '%s' of the callable is missing: give --scalar "
                                   "%s=VALUE",
                                   d->name, d->name);
        if (a->kind != RUN_ARG_SCALAR)
            return cli_usage_error("run", "argument '%s' is a scalar: give --scalar %s=VALUE",
                                   d->name, d->name);
        int rc = make_scalar(a, d->dtype, &f->args.scalars[i]);
        if (rc)
            return rc;
        f->args.scalar_count = i + 1;
    }
    char err[256] = "";
    int rc = sp_callable_check_args(s, &f->args, err, sizeof err);
    if (rc) {
        cli_fail(rc, "%s", err);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* --save DIR: every tensor the run wrote, as DIR/NAME.npy. 0 or CLI_EXIT_IO. */
static int save_outputs(const file_run *f, const char *dir)
{
    int rc = run_save_dir(dir);
    for (uint32_t i = 0; !rc && i < f->args.tensor_count; i++)
        if (run_dir_written(f->args.dirs[i]))
            rc = run_save_tensor(dir, f->names[i], &f->args.tensors[i], f->data[i]);
    return rc;
}

int run_file(const run_opts *o)
{
    if (o->trace_cost)
        return cli_usage_error("run", "%s", "--trace-cost is an option of the examples");
    file_run *f = calloc(1, sizeof *f);
    if (!f)
        return cli_fail(SP_ENOMEM, "no host memory for the run's arguments");
    int rc = load_callable(o->target, f);
    if (!rc)
        rc = f->has_sig ? args_by_signature(o, f) : args_in_order(o, f);
    if (rc) {
        file_run_free(f);
        free(f);
        return rc;
    }

    run_report r = {.target = o->target, .is_file = true, .runtime = o->runtime};
    r.rounds = o->rounds;
    r.replay = o->replay;
    sp_worker *w = NULL;
    sp_call_config cfg;
    char werr[640] = "";
    if ((rc = run_open(o, &w, &cfg, &r, werr, sizeof werr)) != 0) {
        file_run_free(f);
        free(f);
        return rc;
    }
    if (r.status == SP_OK && (r.status = sp_worker_register_callable(w, 0, f->blob, f->size)))
        snprintf(werr, sizeof werr, "%s", sp_worker_last_error(w));
    uint64_t *device_ns = calloc((size_t)o->rounds, sizeof *device_ns);
    if (r.status == SP_OK && !device_ns) {
        r.status = SP_ENOMEM;
        snprintf(werr, sizeof werr, "no host memory for the timings of %ld rounds", o->rounds);
    }
    for (long i = 0; r.status == SP_OK && i < o->rounds; i++) {
        for (uint32_t t = 0; i > 0 && t < f->args.tensor_count; t++)
            if (f->pristine[t])
                memcpy(f->data[t], f->pristine[t], (size_t)f->args.tensors[t].buf_bytes);
        if ((r.status = sp_worker_run(w, 0, &f->args, &cfg, &r.st)) != SP_OK)
            snprintf(werr, sizeof werr, "%s", sp_worker_last_error(w));
        else
            device_ns[i] = r.st.device_ns;
        r.replayed += r.status == SP_OK && r.st.replay == SP_RUN_REPLAYED;
        run_progress(i + 1, o->rounds);
    }
    int io = 0;
    char *stats_text = NULL;
    if (r.status == SP_OK && o->save_dir)
        io = save_outputs(f, o->save_dir);
    if (!io && r.status == SP_OK && run_opts_wants_trace(o)) {
        io = run_trace_write(o, w, &stats_text);
        r.trace = sp_worker_last_trace(w);
        r.stats_text = stats_text;
    }
    if (io) {
        r.wrong = true;
        r.why = "an output file could not be written";
    }
    if (r.status) {
        run_print_status(o, r.status, werr);
        r.error = werr;
    }
    for (uint32_t i = 0; r.status == SP_OK && i < f->args.tensor_count; i++)
        if (run_dir_written(f->args.dirs[i]))
            run_report_output(&r, f->names[i], &f->args.tensors[i], f->data[i]);
    if (o->rounds > 1 && r.status == SP_OK) {
        qsort(device_ns, (size_t)o->rounds, sizeof *device_ns, run_cmp_u64);
        r.device_ns = device_ns;
    }
    if (o->json) {
        run_report_json(&r, stdout);
    } else {
        run_report_text(&r, stdout);
        if (stats_text)
            fputs(stats_text, stdout);
    }
    free(stats_text);
    free(device_ns);
    sp_worker_close(w);
    cli_log_end(&r.log, r.status != SP_OK);
    file_run_free(f);
    free(f);
    if (io)
        return io;
    return r.status ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
