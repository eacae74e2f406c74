/* The example harness: what each example under examples/<name>/ provides so
 * that `simpler run`, `simpler list` and the scene tests can run it end to
 * end and compare it against an independent C golden.
 *
 * An example has named parameters (strings with defaults, overridable with
 * --param KEY=VALUE), named cases (sets of overrides), a setup that creates
 * the host input/output tensors of one run plus the golden result, and a
 * check that compares the outputs with the golden. The orchestration and
 * kernels are built into a callable blob (<name>.spc) by CMake. */
#ifndef SP_EXAMPLES_EXAMPLE_H
#define SP_EXAMPLES_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/types.h"

#define EX_MAX_PARAMS 24
#define EX_ERR_LEN 256

typedef struct ex_param_def {
    const char *name;
    const char *default_value;
    const char *help;
} ex_param_def;

typedef struct ex_case {
    const char *name;
    const char *overrides; /* "KEY=VALUE KEY=VALUE", applied over the defaults */
    /* The orchestration reads a task's output mid-run (sp_tensor_read of a
     * kernel result), which host_build_graph cannot serve because it runs the
     * whole orchestration before launch: run such a case on tmr only. */
    int needs_live_read;
} ex_case;

/* One prepared run of an example: its parameters, host tensors and golden. */
typedef struct ex_instance {
    const struct ex_example *example;
    const char *case_name;
    int param_count;
    const char *param_names[EX_MAX_PARAMS];
    /* Defaults and case overrides are copied here; a --param value (any
     * length) is not: param_ref points into the caller's "KEY=VALUE"
     * string, which must outlive the instance. param_ref NULL: the copy. */
    char param_values[EX_MAX_PARAMS][128];
    const char *param_ref[EX_MAX_PARAMS];

    sp_args args;                              /* host tensors (addr = host pointer) */
    const char *arg_names[SP_MAX_RUN_TENSORS]; /* for --save: <name>.npy */
    void *golden[SP_MAX_RUN_TENSORS];          /* expected contents of OUT/INOUT args */
    void *owned[2 * SP_MAX_RUN_TENSORS + 8];   /* freed by ex_instance_free */
    int owned_count;
    int64_t expect_tasks; /* -1: not checked */
    int64_t expect_edges; /* -1: not checked */
} ex_instance;

typedef struct ex_example {
    const char *name;
    const char *description;
    const ex_param_def *params;
    int param_count;
    const ex_case *cases;
    int case_count;
    /* Create inputs, outputs and the golden in `inst` (params already set).
     * Returns 0, or a negative status with a message in err. */
    int (*setup)(ex_instance *inst, char *err, size_t err_len);
    /* Compare outputs with the golden; *max_err is the largest error found.
     * Returns 0 if within tolerance, 1 if not (message in err). */
    int (*check)(const ex_instance *inst, double *max_err, char *err, size_t err_len);
} ex_example;

/* ---- the registry (examples/registry.c) --------------------------------- */
const ex_example *const *ex_registry(int *count);
const ex_example *ex_find(const char *name);

/* ---- helpers for examples (examples/harness.c) -------------------------- */
/* Set parameters from defaults, then the case's overrides, then `overrides`
 * (NULL-terminated "KEY=VALUE" strings of any length, referenced, not
 * copied: they must outlive the instance). case_name NULL: the first case.
 * Unknown key or case → -1 + err (naming the known ones). */
int ex_instance_init(ex_instance *inst, const ex_example *ex, const char *case_name,
                     const char *const *overrides, char *err, size_t err_len);
void ex_instance_free(ex_instance *inst);
/* Parameter accessors: 0 on success, -1 (with err) if missing or malformed. */
int ex_param_int(const ex_instance *inst, const char *name, int64_t *out, char *err,
                 size_t err_len);
int ex_param_double(const ex_instance *inst, const char *name, double *out, char *err,
                    size_t err_len);
/* A comma-separated list of integers ("1,17,64,100"); *count gets its length. */
int ex_param_int_list(const ex_instance *inst, const char *name, int64_t *out, int max, int *count,
                      char *err, size_t err_len);
/* Allocate a zeroed host buffer owned by the instance; NULL on failure. */
void *ex_alloc(ex_instance *inst, size_t bytes);
/* Append a host tensor argument of dtype/shape (allocated, zeroed) named
 * `name` with direction `dir`; returns its data pointer or NULL. */
void *ex_add_tensor(ex_instance *inst, const char *name, int dtype, int ndim, const int64_t *shape,
                    int dir);
/* Append a u64 scalar argument. */
void ex_add_scalar(ex_instance *inst, uint64_t value);
/* Largest |out - golden| over an f32 argument; relative when `relative`
 * (divided by max(|golden|, 1e-6)). NaN or inf in the output gives INFINITY. */
double ex_max_err_f32(const ex_instance *inst, int arg, int relative);
/* Number of elements of an integer argument that differ from the golden
 * (exact comparison of the raw bytes, element by element). */
int64_t ex_mismatches(const ex_instance *inst, int arg);
/* Index of the argument named `name`, or -1. */
int ex_arg_index(const ex_instance *inst, const char *name);

/* Deterministic pseudo-random numbers for inputs (xorshift64*). */
static inline uint64_t ex_rand_u64(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}
/* Uniform float in [lo, hi). */
static inline float ex_rand_f32(uint64_t *state, float lo, float hi)
{
    return lo + (hi - lo) * (float)((ex_rand_u64(state) >> 40) * (1.0 / 16777216.0));
}

#endif
