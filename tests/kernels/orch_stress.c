/* Orchestrations for the scheduling stress tests and the one-thread rule
 * (tests/scene/test_tmr_stress.c, tests/scene/test_orch_thread.c); kernels
 * from tests/kernels/stress_kernels.c. Scalar 0 picks a mode; tensor 0 is a
 * u64 run argument `y` (INOUT). */
#include <pthread.h>

#include "simpler/orchestration.h"

enum { K_MARK_AIV = 0, K_MARK_AIC = 1, K_WAIT = 2, K_FILL2 = 3, K_ADD = 4, K_COPY = 5, K_FILL = 6 };

enum {
    MODE_SPMD = 0,    /* [1] tasks of [2] blocks, AIC and AIV in turn; task i marks y[i*b, +b) */
    MODE_RANDOM = 1,  /* [1] tasks of a random graph from seed [2] */
    MODE_HOLDS = 2,   /* one task with [1] + 1 producers whose input's creator must stay */
    MODE_THREADS = 3, /* [1] marks from this thread and [1] from a second one */
};

SP_ORCH_CONFIG(orch_stress_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 3;
}

static int64_t mark_slice(sp_orch *o, const sp_tensor *y, int64_t at, int64_t len, bool aic,
                          uint32_t blocks)
{
    sp_tensor e;
    if (sp_tensor_slice(y, 0, at, len, &e) != SP_OK)
        return SP_ESHAPE;
    sp_task t = aic ? sp_task_aic(K_MARK_AIC) : sp_task_aiv(K_MARK_AIV);
    sp_task_blocks(&t, blocks);
    sp_task_arg(&t, &e, SP_OUT_EXISTING);
    return sp_submit(o, &t);
}

static void spmd(sp_orch *o, const sp_tensor *y, int64_t n, uint32_t blocks)
{
    for (int64_t i = 0; i < n; i++)
        if (mark_slice(o, y, i * blocks, blocks, i % 2 == 0, blocks) < 0)
            return;
}

/* ---- random graphs ---------------------------------------------------------- */

static uint64_t next(uint64_t *s)
{
    /* xorshift64*: plenty for picking shapes. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

#define CHUNK 16 /* elements: every block and lane of a mark writes its own */

/* A random slice of y, a whole number of chunks. */
static void random_slice(uint64_t *s, const sp_tensor *y, sp_tensor *out)
{
    int64_t chunks = y->shape[0] / CHUNK;
    int64_t len = 1 + (int64_t)(next(s) % 3);
    int64_t at = (int64_t)(next(s) % (uint64_t)(chunks - len + 1));
    sp_tensor_slice(y, 0, at * CHUNK, len * CHUNK, out);
}

/* SPMD, MIX and dummy tasks over overlapping slices of y and runtime-owned
 * outputs (the previous task's output is often an input), in nested AUTO
 * scopes held small enough for a 4-slot window and a 4 KiB heap. */
static void random_graph(sp_orch *o, const sp_tensor *y, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    sp_tensor outs[2], ins[2];
    sp_tensor *prev = NULL; /* the last task's fresh output, if it made one */
    int cur = 0;
    uint32_t depth = 0, held = 0; /* open scopes, tasks they hold */
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next(&s) % 16;
        if (r >= 14 && depth < 2 && held < 2) {
            if (sp_scope_begin(o, SP_SCOPE_AUTO) != SP_OK)
                return;
            depth++;
        } else if ((r == 13 && depth) || held >= 2) {
            while (depth) {
                if (sp_scope_end(o) != SP_OK)
                    return;
                depth--;
            }
            held = 0;
        }
        uint64_t kind = next(&s) % 10;
        sp_task t;
        if (kind < 4)
            t = sp_task_aiv(K_MARK_AIV);
        else if (kind < 6)
            t = sp_task_aic(K_MARK_AIC);
        else if (kind < 8)
            t = sp_task_mix(K_MARK_AIC, K_MARK_AIV, K_MARK_AIV);
        else
            t = sp_task_make(SP_SHAPE_DUMMY);
        if (kind < 8)
            sp_task_blocks(&t, 1 + (uint32_t)(next(&s) % 4));
        sp_tensor *w = &outs[cur];
        if (kind < 8) { /* the kernel writes argument 0 */
            if (next(&s) % 2) {
                int64_t len = (int64_t)(2 + next(&s) % 7) * 8; /* 128..512 bytes */
                *w = sp_tensor_spec(SP_DTYPE_U64, 1, &len);
                sp_task_out(&t, w);
            } else {
                random_slice(&s, y, w);
                sp_task_arg(&t, w, next(&s) % 2 ? SP_INOUT : SP_OUT_EXISTING);
            }
        }
        int nin = (int)(next(&s) % 3);
        for (int k = 0; k < nin; k++) {
            if (k == 0 && prev && next(&s) % 2) {
                sp_task_in(&t, prev);
            } else {
                random_slice(&s, y, &ins[k]);
                sp_task_in(&t, &ins[k]);
            }
        }
        if (sp_submit(o, &t) < 0)
            return;
        if (depth)
            held++;
        bool fresh = kind < 8 && t.dirs[0] == SP_OUT;
        prev = fresh ? w : NULL;
        if (fresh)
            cur ^= 1; /* keep prev intact while the next output is built */
    }
    while (depth--)
        sp_scope_end(o);
}

/* ---- a task with more producers than one hold per producer leaves room for */

/* The shape of issue 12's item 1: C makes X2 (1 KiB) and X1 (3 KiB), the
 * whole 4 KiB heap; W adds 1 to X2 in place; `readers` tasks read z (the
 * last one slowly); T copies X2 into z, so it depends on W and on every
 * reader, and needs C's buffer until it has run; then two small outputs
 * need heap room. z must end as C's 5 plus W's 1 everywhere. */
static void holds(sp_orch *o, const sp_tensor *z, int64_t readers)
{
    int64_t n2 = 128, n1 = 384, small = 8;
    sp_tensor x2 = sp_tensor_spec(SP_DTYPE_U64, 1, &n2), x1 = sp_tensor_spec(SP_DTYPE_U64, 1, &n1);
    sp_task c = sp_task_aiv(K_FILL2);
    sp_task_out(&c, &x2);
    sp_task_out(&c, &x1);
    sp_task_scalar(&c, 5);
    if (sp_submit(o, &c) < 0)
        return;
    sp_task w = sp_task_aiv(K_ADD);
    sp_task_inout(&w, &x2);
    sp_task_scalar(&w, 1);
    if (sp_submit(o, &w) < 0)
        return;
    sp_tensor zz = *z;
    for (int64_t i = 0; i < readers; i++) {
        sp_task r = sp_task_aiv(K_WAIT);
        sp_task_in(&r, &zz);
        sp_task_scalar(&r, i + 1 == readers ? 100000 : 0); /* the last: 100 ms */
        if (sp_submit(o, &r) < 0)
            return;
    }
    sp_task t = sp_task_aiv(K_COPY);
    sp_task_in(&t, &x2);
    sp_task_arg(&t, &zz, SP_OUT_EXISTING);
    if (sp_submit(o, &t) < 0)
        return;
    for (int k = 0; k < 2; k++) {
        sp_tensor s = sp_tensor_spec(SP_DTYPE_U64, 1, &small);
        sp_task f = sp_task_aiv(K_FILL);
        sp_task_out(&f, &s);
        sp_task_scalar(&f, 99);
        if (sp_submit(o, &f) < 0)
            return;
    }
}

/* ---- two threads on one sp_orch --------------------------------------------- */

typedef struct foreign_job {
    sp_orch *o;
    const sp_tensor *y;
    int64_t n;
} foreign_job;

static void *foreign_submits(void *arg)
{
    foreign_job *j = arg;
    for (int64_t i = 0; i < j->n; i++)
        mark_slice(j->o, j->y, (j->n + i) * CHUNK, CHUNK, false, 1);
    return NULL;
}

static void two_threads(sp_orch *o, const sp_tensor *y, int64_t n)
{
    foreign_job j = {.o = o, .y = y, .n = n};
    pthread_t th;
    if (pthread_create(&th, NULL, foreign_submits, &j) != 0) {
        sp_orch_fatal(o, SP_ESYS, "orch_stress: pthread_create failed");
        return;
    }
    for (int64_t i = 0; i < n; i++)
        mark_slice(o, y, i * CHUNK, CHUNK, false, 1);
    pthread_join(th, NULL);
}

SP_ORCHESTRATION(orch_stress)
{
    const sp_tensor *y = &args->tensors[0];
    int64_t n = (int64_t)args->scalars[1];
    switch (args->scalars[0]) {
    case MODE_SPMD:
        spmd(o, y, n, (uint32_t)args->scalars[2]);
        break;
    case MODE_RANDOM:
        random_graph(o, y, n, args->scalars[2]);
        break;
    case MODE_HOLDS:
        holds(o, y, n);
        break;
    case MODE_THREADS:
        two_threads(o, y, n);
        break;
    default:
        sp_orch_fatal(o, SP_EINVAL, "orch_stress: unknown mode");
    }
}
