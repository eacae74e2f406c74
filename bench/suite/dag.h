/* The suite's task graphs, as one generator every system submits from, so
 * that simpler, StarPU, OpenMP and oneTBB run the same DAG in the same order.
 *
 * A task is an operation (which kernel) and up to three tile accesses; the
 * last access is always the one the task writes. Tiles are numbered:
 *   independent n:  task i writes tile i                       (n tasks)
 *   chain n:        every task read-writes tile 0              (n tasks)
 *   wavefront n:    task (i,j) reads (i-1,j) and (i,j-1), writes (i,j),
 *                   tile i*n+j                                 (n*n tasks)
 *   cholesky T:     right-looking tiled Cholesky on T x T tiles, tile i*T+j:
 *                   potrf(k) RW(k,k); trsm(i,k) R(k,k) RW(i,k);
 *                   syrk(i,k) R(i,k) RW(i,i); gemm(i,j,k) R(i,k) R(j,k) RW(i,j)
 * Header-only and allocation-free: the simpler orchestration (which may run
 * on the chip) includes it as well as the C and C++ peers. */
#ifndef SUITE_DAG_H
#define SUITE_DAG_H

#include <stdint.h>
#include <string.h>

enum dag_kind { DAG_INDEPENDENT = 0, DAG_CHAIN = 1, DAG_WAVEFRONT = 2, DAG_CHOLESKY = 3 };
/* OP_TASK is the one kernel of the synthetic graphs; the others are Cholesky's. */
enum dag_op { OP_TASK = 0, OP_POTRF = 1, OP_TRSM = 2, OP_SYRK = 3, OP_GEMM = 4 };
enum dag_mode { ACC_R = 1, ACC_W = 2, ACC_RW = 3 };

typedef struct dag_task {
    uint8_t op;
    uint8_t n_acc;
    uint8_t mode[3];
    uint32_t tile[3];      /* tile ids; tile[n_acc-1] is the one written */
    uint32_t ti[3], tj[3]; /* the same tiles as (row, column) */
} dag_task;

typedef struct dag_iter {
    int kind;
    uint32_t n; /* task count (independent, chain) or tiles per side */
    uint32_t k, i, j;
    int phase; /* cholesky: 0 potrf, 1 trsm, 2 syrk/gemm; wavefront: 0 running */
    int done;
} dag_iter;

static inline const char *dag_kind_name(int kind)
{
    static const char *const names[] = {"independent", "chain", "wavefront", "cholesky"};
    return kind >= 0 && kind <= DAG_CHOLESKY ? names[kind] : "?";
}

static inline int dag_kind_parse(const char *s)
{
    for (int k = 0; k <= DAG_CHOLESKY; k++)
        if (strcmp(s, dag_kind_name(k)) == 0)
            return k;
    return -1;
}

/* Number of tasks of a graph. */
static inline uint64_t dag_task_count(int kind, uint64_t n)
{
    switch (kind) {
    case DAG_INDEPENDENT:
    case DAG_CHAIN:
        return n;
    case DAG_WAVEFRONT:
        return n * n;
    default: /* T potrf + T(T-1)/2 trsm + T(T-1)/2 syrk + T(T-1)(T-2)/6 gemm */
        return n + n * (n - 1) + n * (n - 1) * (n - 2) / 6;
    }
}

/* Number of tiles (ids are below it). */
static inline uint64_t dag_tile_count(int kind, uint64_t n)
{
    return kind == DAG_INDEPENDENT ? n : kind == DAG_CHAIN ? 1 : n * n;
}

/* How many tasks write tile t: what a per-tile write counter must read. */
static inline uint64_t dag_writes_of_tile(int kind, uint64_t n, uint64_t t)
{
    switch (kind) {
    case DAG_INDEPENDENT:
    case DAG_WAVEFRONT:
        return 1;
    case DAG_CHAIN:
        return n;
    default: { /* lower tile (i,j): j gemm/syrk updates, then trsm or potrf */
        uint64_t i = t / n, j = t % n;
        return j <= i ? j + 1 : 0;
    }
    }
}

static inline void dag_begin(dag_iter *it, int kind, uint32_t n)
{
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->n = n;
    it->done = n == 0;
}

static inline void dag_acc(dag_task *t, int mode, uint32_t n, uint32_t i, uint32_t j)
{
    int a = t->n_acc++;
    t->mode[a] = (uint8_t)mode;
    t->ti[a] = i;
    t->tj[a] = j;
    t->tile[a] = i * n + j;
}

/* The next task in submission order; 0 when the graph is exhausted. */
static inline int dag_next(dag_iter *it, dag_task *t)
{
    if (it->done)
        return 0;
    memset(t, 0, sizeof *t);
    const uint32_t n = it->n;
    switch (it->kind) {
    case DAG_INDEPENDENT:
        t->op = OP_TASK;
        dag_acc(t, ACC_W, 1, it->i, 0);
        it->done = ++it->i == n;
        return 1;
    case DAG_CHAIN:
        t->op = OP_TASK;
        dag_acc(t, ACC_RW, 1, 0, 0);
        it->done = ++it->i == n;
        return 1;
    case DAG_WAVEFRONT:
        t->op = OP_TASK;
        if (it->i > 0)
            dag_acc(t, ACC_R, n, it->i - 1, it->j);
        if (it->j > 0)
            dag_acc(t, ACC_R, n, it->i, it->j - 1);
        dag_acc(t, ACC_W, n, it->i, it->j);
        if (++it->j == n) {
            it->j = 0;
            it->done = ++it->i == n;
        }
        return 1;
    default:
        break;
    }
    /* Cholesky: k outer; potrf, then the trsm column, then syrk + gemm per row. */
    const uint32_t k = it->k;
    switch (it->phase) {
    case 0:
        t->op = OP_POTRF;
        dag_acc(t, ACC_RW, n, k, k);
        it->phase = 1;
        it->i = k + 1;
        if (it->i == n)
            it->done = 1;
        return 1;
    case 1:
        t->op = OP_TRSM;
        dag_acc(t, ACC_R, n, k, k);
        dag_acc(t, ACC_RW, n, it->i, k);
        if (++it->i == n) {
            it->phase = 2;
            it->i = k + 1;
            it->j = k + 1;
        }
        return 1;
    default:
        if (it->j == it->i) {
            t->op = OP_SYRK;
            dag_acc(t, ACC_R, n, it->i, k);
            dag_acc(t, ACC_RW, n, it->i, it->i);
            it->j = k + 1;
            if (++it->i == n) {
                it->k++;
                it->phase = 0;
            }
        } else {
            t->op = OP_GEMM;
            dag_acc(t, ACC_R, n, it->i, k);
            dag_acc(t, ACC_R, n, it->j, k);
            dag_acc(t, ACC_RW, n, it->i, it->j);
            it->j++;
        }
        return 1;
    }
}

#endif
