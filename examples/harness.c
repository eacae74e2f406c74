/* The example harness helpers (example.h): parameters with defaults and
 * case overrides, host tensors owned by an instance, and error measures the
 * examples' check functions share. Host-side only. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

static int param_find(const ex_instance *inst, const char *name)
{
    for (int i = 0; i < inst->param_count; i++)
        if (strcmp(inst->param_names[i], name) == 0)
            return i;
    return -1;
}

/* Apply one "KEY=VALUE" (len bytes of `kv`) over the current values: a
 * copy into param_values, or, `by_ref` (kv is NUL-terminated and outlives
 * the instance), a reference to the value of any length. */
static int param_set(ex_instance *inst, const char *kv, size_t len, bool by_ref, const char *from,
                     char *err, size_t err_len)
{
    const char *eq = memchr(kv, '=', len);
    if (!eq || eq == kv) {
        snprintf(err, err_len, "%s: '%.*s' is not KEY=VALUE", from, (int)len, kv);
        return -1;
    }
    size_t klen = (size_t)(eq - kv), vlen = len - klen - 1;
    for (int i = 0; i < inst->param_count; i++) {
        const char *name = inst->param_names[i];
        if (strlen(name) != klen || memcmp(name, kv, klen) != 0)
            continue;
        if (by_ref) {
            inst->param_ref[i] = eq + 1;
            return 0;
        }
        if (vlen >= sizeof inst->param_values[i]) {
            snprintf(err, err_len, "%s: value of '%s' is longer than %zu characters", from, name,
                     sizeof inst->param_values[i] - 1);
            return -1;
        }
        memcpy(inst->param_values[i], eq + 1, vlen);
        inst->param_values[i][vlen] = '\0';
        inst->param_ref[i] = NULL;
        return 0;
    }
    /* Name the known keys: the user typed one of them wrong. */
    int n = snprintf(err, err_len, "%s: unknown parameter '%.*s' of %s (known:", from, (int)klen,
                     kv, inst->example->name);
    for (int i = 0; i < inst->param_count && n > 0 && (size_t)n < err_len; i++)
        n += snprintf(err + n, err_len - (size_t)n, " %s", inst->param_names[i]);
    if (n > 0 && (size_t)n < err_len)
        snprintf(err + n, err_len - (size_t)n, ")");
    return -1;
}

int ex_instance_init(ex_instance *inst, const ex_example *ex, const char *case_name,
                     const char *const *overrides, char *err, size_t err_len)
{
    memset(inst, 0, sizeof *inst);
    inst->example = ex;
    inst->expect_tasks = -1;
    inst->expect_edges = -1;
    if (ex->param_count > EX_MAX_PARAMS) {
        snprintf(err, err_len, "%s has %d parameters, more than EX_MAX_PARAMS (%d)", ex->name,
                 ex->param_count, EX_MAX_PARAMS);
        return -1;
    }
    inst->param_count = ex->param_count;
    for (int i = 0; i < ex->param_count; i++) {
        inst->param_names[i] = ex->params[i].name;
        snprintf(inst->param_values[i], sizeof inst->param_values[i], "%s",
                 ex->params[i].default_value);
    }

    const ex_case *c = NULL;
    if (case_name) {
        for (int i = 0; i < ex->case_count; i++)
            if (strcmp(ex->cases[i].name, case_name) == 0)
                c = &ex->cases[i];
        if (!c) {
            int n = snprintf(err, err_len, "%s has no case '%s' (cases:", ex->name, case_name);
            for (int i = 0; i < ex->case_count && n > 0 && (size_t)n < err_len; i++)
                n += snprintf(err + n, err_len - (size_t)n, " %s", ex->cases[i].name);
            if (n > 0 && (size_t)n < err_len)
                snprintf(err + n, err_len - (size_t)n, ")");
            return -1;
        }
    } else if (ex->case_count > 0) {
        c = &ex->cases[0];
    }
    inst->case_name = c ? c->name : "default";

    if (c && c->overrides) {
        const char *p = c->overrides;
        while (*p) {
            while (*p == ' ')
                p++;
            size_t len = strcspn(p, " ");
            if (len && param_set(inst, p, len, false, "case", err, err_len) != 0)
                return -1;
            p += len;
        }
    }
    for (int i = 0; overrides && overrides[i]; i++)
        if (param_set(inst, overrides[i], strlen(overrides[i]), true, "--param", err, err_len) != 0)
            return -1;
    return 0;
}

void ex_instance_free(ex_instance *inst)
{
    for (int i = 0; i < inst->owned_count; i++)
        free(inst->owned[i]);
    inst->owned_count = 0;
}

static const char *param_value(const ex_instance *inst, const char *name, char *err, size_t err_len)
{
    int i = param_find(inst, name);
    if (i < 0) {
        snprintf(err, err_len, "%s has no parameter '%s'", inst->example->name, name);
        return NULL;
    }
    return inst->param_ref[i] ? inst->param_ref[i] : inst->param_values[i];
}

static int parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int ex_param_int(const ex_instance *inst, const char *name, int64_t *out, char *err, size_t err_len)
{
    const char *v = param_value(inst, name, err, err_len);
    if (!v)
        return -1;
    if (parse_int(v, out) != 0) {
        snprintf(err, err_len, "parameter %s='%s' is not an integer", name, v);
        return -1;
    }
    return 0;
}

int ex_param_double(const ex_instance *inst, const char *name, double *out, char *err,
                    size_t err_len)
{
    const char *v = param_value(inst, name, err, err_len);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !isfinite(d)) {
        snprintf(err, err_len, "parameter %s='%s' is not a finite number", name, v);
        return -1;
    }
    *out = d;
    return 0;
}

int ex_param_int_list(const ex_instance *inst, const char *name, int64_t *out, int max, int *count,
                      char *err, size_t err_len)
{
    const char *v = param_value(inst, name, err, err_len);
    if (!v)
        return -1;
    int n = 0;
    const char *p = v;
    for (;;) {
        char item[64];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item || n >= max) {
            snprintf(err, err_len, "parameter %s='%s' is not a list of at most %d integers", name,
                     v, max);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        if (parse_int(item, &out[n]) != 0) {
            snprintf(err, err_len, "parameter %s='%s': '%s' is not an integer", name, v, item);
            return -1;
        }
        n++;
        p += len;
        if (*p == '\0')
            break;
        p++; /* the comma */
    }
    *count = n;
    return 0;
}

void *ex_alloc(ex_instance *inst, size_t bytes)
{
    int cap = (int)(sizeof inst->owned / sizeof inst->owned[0]);
    if (inst->owned_count >= cap)
        return NULL;
    void *p = calloc(1, bytes ? bytes : 1);
    if (p)
        inst->owned[inst->owned_count++] = p;
    return p;
}

void *ex_add_tensor(ex_instance *inst, const char *name, int dtype, int ndim, const int64_t *shape,
                    int dir)
{
    sp_args *a = &inst->args;
    if (a->tensor_count >= SP_MAX_RUN_TENSORS)
        return NULL;
    sp_tensor t;
    if (sp_tensor_init(&t, 0, dtype, ndim, shape) != SP_OK)
        return NULL;
    void *data = ex_alloc(inst, (size_t)t.buf_bytes);
    if (!data)
        return NULL;
    t.addr = (uint64_t)(uintptr_t)data;
    uint32_t i = a->tensor_count++;
    a->tensors[i] = t;
    a->dirs[i] = (uint8_t)dir;
    inst->arg_names[i] = name;
    return data;
}

void ex_add_scalar(ex_instance *inst, uint64_t value)
{
    if (inst->args.scalar_count < SP_MAX_RUN_SCALARS)
        inst->args.scalars[inst->args.scalar_count++] = value;
}

double ex_max_err_f32(const ex_instance *inst, int arg, int relative)
{
    const sp_tensor *t = &inst->args.tensors[arg];
    const float *out = (const float *)(uintptr_t)t->addr;
    const float *gold = inst->golden[arg];
    if (!gold || t->dtype != SP_DTYPE_F32)
        return INFINITY;
    int64_t n = sp_tensor_numel(t);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)out[i] - (double)gold[i]);
        if (relative)
            e /= fmax(fabs((double)gold[i]), 1e-6);
        if (!(e <= worst)) /* also catches NaN */
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

int64_t ex_mismatches(const ex_instance *inst, int arg)
{
    const sp_tensor *t = &inst->args.tensors[arg];
    const char *out = (const char *)(uintptr_t)t->addr;
    const char *gold = inst->golden[arg];
    size_t es = sp_dtype_size(t->dtype);
    int64_t n = sp_tensor_numel(t);
    if (!gold || !es)
        return n ? n : 1;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += memcmp(out + i * es, gold + i * es, es) != 0;
    return bad;
}

int ex_arg_index(const ex_instance *inst, const char *name)
{
    for (uint32_t i = 0; i < inst->args.tensor_count; i++)
        if (inst->arg_names[i] && strcmp(inst->arg_names[i], name) == 0)
            return (int)i;
    return -1;
}
