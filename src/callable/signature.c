/* The orchestration's argument signature (simpler/callable.h): parse its
 * text once, then check each run's sp_args against it without allocating,
 * so a mismatching run is refused by argument name before anything is
 * staged. The parser is also the validator's rule for a blob's orch_args. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callable/callable_internal.h"
#include "simpler/callable.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* A bounded piece of the text: [p, p + n). */
typedef struct span {
    const char *p;
    size_t n;
} span;

typedef struct parser {
    sp_callable_signature *out;
    unsigned entry; /* 1-based, for messages */
    char *err;
    size_t err_len;
} parser;

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static span trim(span s)
{
    while (s.n && is_space(s.p[0]))
        s.p++, s.n--;
    while (s.n && is_space(s.p[s.n - 1]))
        s.n--;
    return s;
}

static bool span_is(span s, const char *word)
{
    return strlen(word) == s.n && memcmp(s.p, word, s.n) == 0;
}

/* Split *rest at the first `sep` outside brackets: returns the part before
 * it, leaves what follows in *rest; *found says whether there was one. */
static span split(span *rest, char sep, bool *found)
{
    int depth = 0;
    for (size_t i = 0; i < rest->n; i++) {
        char c = rest->p[i];
        if (c == '[')
            depth++;
        else if (c == ']')
            depth--;
        else if (c == sep && depth == 0) {
            span head = {rest->p, i};
            rest->p += i + 1;
            rest->n -= i + 1;
            *found = true;
            return head;
        }
    }
    span head = *rest;
    rest->p += rest->n;
    rest->n = 0;
    *found = false;
    return head;
}

static bool ident(span s)
{
    if (s.n == 0 || s.n >= SP_CALLABLE_ARG_NAME_MAX)
        return false;
    for (size_t i = 0; i < s.n; i++) {
        char c = s.p[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

/* The entry's text, made printable and cut short, for messages. */
static const char *shown(span s, char *buf, size_t len)
{
    size_t n = s.n < 48 ? s.n : 48;
    if (n >= len)
        n = len - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = s.p[i] >= 0x20 && s.p[i] < 0x7f ? s.p[i] : '?';
    buf[n] = '\0';
    return buf;
}

#define PARSE_FAIL(ps, ...) callable_fail((ps)->err, (ps)->err_len, SP_EINVAL, __VA_ARGS__)

static const struct {
    const char *name;
    uint8_t dir;
} dir_names[] = {
    {"in", SP_IN},         {"out", SP_OUT}, {"inout", SP_INOUT}, {"out_existing", SP_OUT_EXISTING},
    {"no_dep", SP_NO_DEP},
};

static const char *dir_name(unsigned dir)
{
    for (size_t i = 0; i < sizeof dir_names / sizeof dir_names[0]; i++)
        if (dir_names[i].dir == dir)
            return dir_names[i].name;
    return "invalid";
}

/* sp_dtype for `s`, SP_CALLABLE_DTYPE_ANY for "any", or SP_DTYPE_INVALID. */
static int dtype_of(span s)
{
    if (span_is(s, "any"))
        return SP_CALLABLE_DTYPE_ANY;
    for (int d = 1; d < SP_DTYPE_COUNT; d++)
        if (span_is(s, sp_dtype_name(d)))
            return d;
    return SP_DTYPE_INVALID;
}

/* Index of symbol `s`, added if new; -1 when the table is full. */
static int symbol_index(sp_callable_signature *sig, span s)
{
    for (uint32_t k = 0; k < sig->symbol_count; k++)
        if (span_is(s, sig->symbols[k]))
            return (int)k;
    if (sig->symbol_count == SP_CALLABLE_MAX_SYMBOLS)
        return -1;
    memcpy(sig->symbols[sig->symbol_count], s.p, s.n);
    sig->symbols[sig->symbol_count][s.n] = '\0';
    return (int)sig->symbol_count++;
}

/* "[d0,d1,...]" (brackets included) into arg->dims / ndim. */
static int parse_dims(parser *ps, span s, sp_callable_arg *arg)
{
    char buf[64];
    if (s.n < 2 || s.p[s.n - 1] != ']')
        return PARSE_FAIL(ps, "signature entry %u ('%s'): dims \"%s\" do not end with ']'",
                          ps->entry, arg->name, shown(s, buf, sizeof buf));
    span rest = trim((span){s.p + 1, s.n - 2});
    arg->ndim = 0;
    if (rest.n == 0)
        return SP_OK; /* "[]": rank 0 */
    bool more = true;
    while (more) {
        span d = trim(split(&rest, ',', &more));
        if (arg->ndim == SP_MAX_DIMS)
            return PARSE_FAIL(ps, "signature entry %u ('%s'): more than %d dims", ps->entry,
                              arg->name, SP_MAX_DIMS);
        int64_t *slot = &arg->dims[arg->ndim++];
        if (span_is(d, "*")) {
            *slot = SP_CALLABLE_DIM_ANY;
        } else if (d.n && d.p[0] >= '0' && d.p[0] <= '9') {
            int64_t v = 0;
            for (size_t i = 0; i < d.n; i++) {
                if (d.p[i] < '0' || d.p[i] > '9' || v > (INT64_MAX - 9) / 10)
                    return PARSE_FAIL(ps,
                                      "signature entry %u ('%s'): dim %d \"%s\" is not a number, a "
                                      "symbol or *",
                                      ps->entry, arg->name, arg->ndim - 1,
                                      shown(d, buf, sizeof buf));
                v = v * 10 + (d.p[i] - '0');
            }
            if (v == 0)
                return PARSE_FAIL(ps, "signature entry %u ('%s'): dim %d is 0 (extents are > 0)",
                                  ps->entry, arg->name, arg->ndim - 1);
            *slot = v;
        } else if (ident(d)) {
            int k = symbol_index(ps->out, d);
            if (k < 0)
                return PARSE_FAIL(ps, "signature entry %u ('%s'): more than %u dim symbols",
                                  ps->entry, arg->name, SP_CALLABLE_MAX_SYMBOLS);
            *slot = -(int64_t)k - 1;
        } else {
            return PARSE_FAIL(ps,
                              "signature entry %u ('%s'): dim %d \"%s\" is not a number, a symbol "
                              "or *",
                              ps->entry, arg->name, arg->ndim - 1, shown(d, buf, sizeof buf));
        }
    }
    return SP_OK;
}

static int parse_entry(parser *ps, span text)
{
    sp_callable_signature *sig = ps->out;
    char buf[64], whole[64];
    bool more;
    span rest = text;
    span name = trim(split(&rest, ':', &more));
    if (!ident(name))
        return PARSE_FAIL(ps,
                          "signature entry %u (\"%s\"): name \"%s\" is not a C identifier of 1..%u "
                          "characters",
                          ps->entry, shown(text, whole, sizeof whole), shown(name, buf, sizeof buf),
                          SP_CALLABLE_ARG_NAME_MAX - 1);
    sp_callable_arg arg = {.kind = SP_CALLABLE_ARG_TENSOR, .ndim = -1};
    memcpy(arg.name, name.p, name.n);
    if (!more)
        return PARSE_FAIL(ps,
                          "signature entry %u ('%s'): no direction (NAME:DIR:DTYPE[DIMS] or "
                          "NAME:scalar[:DTYPE])",
                          ps->entry, arg.name);
    span kind = trim(split(&rest, ':', &more));
    if (span_is(kind, "scalar")) {
        arg.kind = SP_CALLABLE_ARG_SCALAR;
        arg.ndim = 0;
        arg.dtype = SP_DTYPE_I64;
        if (more) {
            span d = trim(split(&rest, ':', &more));
            int dt = dtype_of(d);
            if (dt != SP_DTYPE_I64 && dt != SP_DTYPE_U64 && dt != SP_DTYPE_F64 &&
                dt != SP_DTYPE_F32 && dt != SP_DTYPE_BOOL)
                return PARSE_FAIL(ps,
                                  "signature entry %u ('%s'): scalar DTYPE \"%s\" is not one of "
                                  "i64 u64 f64 f32 bool",
                                  ps->entry, arg.name, shown(d, buf, sizeof buf));
            arg.dtype = (uint8_t)dt;
        }
    } else {
        for (size_t i = 0; i < sizeof dir_names / sizeof dir_names[0]; i++)
            if (span_is(kind, dir_names[i].name))
                arg.dir = dir_names[i].dir;
        if (!arg.dir)
            return PARSE_FAIL(ps,
                              "signature entry %u ('%s'): DIR \"%s\" is not in, out, inout, "
                              "out_existing, no_dep or scalar",
                              ps->entry, arg.name, shown(kind, buf, sizeof buf));
        if (!more)
            return PARSE_FAIL(ps, "signature entry %u ('%s'): no DTYPE (NAME:DIR:DTYPE[DIMS])",
                              ps->entry, arg.name);
        span type = trim(split(&rest, ':', &more));
        span dims = {type.p + type.n, 0};
        const char *br = memchr(type.p, '[', type.n);
        if (br) {
            dims = trim((span){br, (size_t)(type.p + type.n - br)});
            type = trim((span){type.p, (size_t)(br - type.p)});
        }
        int dt = dtype_of(type);
        if (dt == SP_DTYPE_INVALID)
            return PARSE_FAIL(ps,
                              "signature entry %u ('%s'): DTYPE \"%s\" is not one of f32 f16 bf16 "
                              "f64 i8 u8 i16 u16 i32 u32 i64 u64 bool any",
                              ps->entry, arg.name, shown(type, buf, sizeof buf));
        arg.dtype = (uint8_t)dt;
        if (br) {
            int rc = parse_dims(ps, dims, &arg);
            if (rc)
                return rc;
        }
    }
    if (more)
        return PARSE_FAIL(ps, "signature entry %u ('%s'): unexpected field \"%s\"", ps->entry,
                          arg.name, shown(trim(rest), buf, sizeof buf));
    for (uint32_t i = 0; i < sig->tensor_count + sig->scalar_count; i++) {
        const sp_callable_arg *o =
            i < sig->tensor_count ? &sig->tensors[i] : &sig->scalars[i - sig->tensor_count];
        if (strcmp(o->name, arg.name) == 0)
            return PARSE_FAIL(ps, "signature entry %u: name '%s' is used twice", ps->entry,
                              arg.name);
    }
    if (arg.kind == SP_CALLABLE_ARG_TENSOR) {
        if (sig->scalar_count)
            return PARSE_FAIL(ps,
                              "signature entry %u ('%s'): a tensor after a scalar (tensors come "
                              "first, as in sp_args)",
                              ps->entry, arg.name);
        if (sig->tensor_count == SP_MAX_RUN_TENSORS)
            return PARSE_FAIL(ps, "signature entry %u ('%s'): more than %d tensors", ps->entry,
                              arg.name, SP_MAX_RUN_TENSORS);
        sig->tensors[sig->tensor_count++] = arg;
    } else {
        if (sig->scalar_count == SP_MAX_RUN_SCALARS)
            return PARSE_FAIL(ps, "signature entry %u ('%s'): more than %d scalars", ps->entry,
                              arg.name, SP_MAX_RUN_SCALARS);
        sig->scalars[sig->scalar_count++] = arg;
    }
    return SP_OK;
}

SP_EXPORT int sp_callable_parse_signature(const char *text, sp_callable_signature *out, char *err,
                                          size_t err_len)
{
    if (err && err_len)
        err[0] = '\0';
    if (!text || !out)
        return callable_fail(err, err_len, SP_EINVAL,
                             "sp_callable_parse_signature: text and out must not be NULL");
    memset(out, 0, sizeof *out);
    parser ps = {.out = out, .err = err, .err_len = err_len};
    span rest = trim((span){text, strlen(text)});
    if (rest.n == 0)
        return SP_OK;
    bool more = true;
    int rc = SP_OK;
    while (more && !rc) {
        ps.entry++;
        span e = trim(split(&rest, ',', &more));
        if (e.n == 0)
            rc = PARSE_FAIL(&ps, "signature entry %u is empty (two commas, or a trailing one)",
                            ps.entry);
        else
            rc = parse_entry(&ps, e);
    }
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- checking a run ----------------------------------------------------- */

#define ARG_FAIL(err, err_len, ...) callable_fail(err, err_len, SP_EARG_SIGNATURE, __VA_ARGS__)

/* Write "x, y, z" (the names of `args`) into buf, cut to fit. */
static const char *name_list(const sp_callable_arg *args, uint32_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used + 1 < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", args[i].name);
        if (w < 0 || (size_t)w >= len - used) {
            if (len > 4)
                memcpy(buf + len - 4, "...", 4);
            break;
        }
        used += (size_t)w;
    }
    return buf;
}

SP_EXPORT int sp_callable_check_args(const sp_callable_signature *sig, const sp_args *args,
                                     char *err, size_t err_len)
{
    if (err && err_len)
        err[0] = '\0';
    if (!sig || !args)
        return callable_fail(err, err_len, SP_EINVAL,
                             "sp_callable_check_args: sig and args must not be NULL");
    char names[160];
    if (args->tensor_count != sig->tensor_count)
        return ARG_FAIL(err, err_len,
                        "the run gives %" PRIu32 " tensors, the callable declares %" PRIu32 " (%s)",
                        args->tensor_count, sig->tensor_count,
                        name_list(sig->tensors, sig->tensor_count, names, sizeof names));
    if (args->scalar_count != sig->scalar_count)
        return ARG_FAIL(err, err_len,
                        "the run gives %" PRIu32 " scalars, the callable declares %" PRIu32 " (%s)",
                        args->scalar_count, sig->scalar_count,
                        name_list(sig->scalars, sig->scalar_count, names, sizeof names));
    /* Each symbol's extent and the argument that bound it first. */
    int64_t bound[SP_CALLABLE_MAX_SYMBOLS];
    uint32_t bound_by[SP_CALLABLE_MAX_SYMBOLS];
    for (uint32_t k = 0; k < SP_CALLABLE_MAX_SYMBOLS; k++)
        bound_by[k] = UINT32_MAX; /* not bound yet */
    for (uint32_t i = 0; i < sig->tensor_count; i++) {
        const sp_callable_arg *a = &sig->tensors[i];
        const sp_tensor *t = &args->tensors[i];
        if (args->dirs[i] != a->dir)
            return ARG_FAIL(err, err_len,
                            "argument '%s' (tensor %" PRIu32
                            "): direction %s, the callable declares %s",
                            a->name, i, dir_name(args->dirs[i]), dir_name(a->dir));
        if (a->dtype != SP_CALLABLE_DTYPE_ANY && t->dtype != a->dtype)
            return ARG_FAIL(err, err_len,
                            "argument '%s' (tensor %" PRIu32
                            "): dtype %s, the callable declares %s",
                            a->name, i, sp_dtype_name(t->dtype), sp_dtype_name(a->dtype));
        if (a->ndim < 0)
            continue;
        if (t->ndim != (uint8_t)a->ndim)
            return ARG_FAIL(err, err_len,
                            "argument '%s' (tensor %" PRIu32
                            "): rank %u, the callable declares rank %d",
                            a->name, i, t->ndim, a->ndim);
        for (int d = 0; d < a->ndim; d++) {
            int64_t want = a->dims[d], got = t->shape[d];
            if (want > 0 && got != want)
                return ARG_FAIL(err, err_len,
                                "argument '%s' (tensor %" PRIu32 "): dim %d is %" PRId64
                                ", the callable declares %" PRId64,
                                a->name, i, d, got, want);
            if (want >= 0)
                continue;
            uint32_t k = (uint32_t)(-want - 1);
            if (k >= SP_CALLABLE_MAX_SYMBOLS)
                return callable_fail(err, err_len, SP_EINVAL,
                                     "argument '%s': dim %d names symbol %" PRIu32
                                     ", past the %u a signature holds",
                                     a->name, d, k, SP_CALLABLE_MAX_SYMBOLS);
            if (bound_by[k] == UINT32_MAX) {
                bound[k] = got;
                bound_by[k] = i;
            } else if (bound[k] != got) {
                return ARG_FAIL(err, err_len,
                                "argument '%s' (tensor %" PRIu32 "): dim %d (%s) is %" PRId64
                                ", but argument '%s' gave %s = %" PRId64,
                                a->name, i, d, sig->symbols[k], got, sig->tensors[bound_by[k]].name,
                                sig->symbols[k], bound[k]);
            }
        }
    }
    for (uint32_t i = 0; i < sig->scalar_count; i++) {
        const sp_callable_arg *a = &sig->scalars[i];
        if (a->dtype == SP_DTYPE_BOOL && args->scalars[i] > 1)
            return ARG_FAIL(err, err_len,
                            "argument '%s' (scalar %" PRIu32 "): %" PRIu64
                            " is not a bool (0 or 1)",
                            a->name, i, args->scalars[i]);
    }
    return SP_OK;
}
