/* The level-4 transport alone (src/l4 over Open MPI, the table of
 * src/l3/l3_transport.h), under mpirun -np 2 and -np 4: a send/recv ring
 * with its data checked, iallreduce of every dtype and op against a
 * reference, a group of a subset of the ranks, the end-of-run agreement
 * (with failing ranks: everybody sees the lowest), a send that is never
 * posted (the receiver times out naming the sender), an agreement a rank
 * joins late (the others time out naming it; the next agreement works),
 * and an allreduce one rank joins late (the others time out, the transport
 * is broken and says so, the late rank still completes).
 * A plain program: exit status 0 when every check passed on this rank. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wait.h"
#include "l3/l3_coll.h"
#include "l3/l3_transport.h"
#include "simpler/mpi.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define OK_MS 60000ull  /* deadline of operations that must succeed */
#define SHORT_MS 500ull /* deadline of operations that must time out */

static int g_rank;
static int g_fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", g_rank, __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            g_fails++;                                                                             \
        }                                                                                          \
    } while (0)

typedef struct waiter {
    sp__waitword w;
    _Atomic int released; /* the callback is done with w (waiters live on stacks) */
    int status;
    int peer;
} waiter;

static void on_done(void *user, int status, int peer)
{
    waiter *d = user;
    d->status = status;
    d->peer = peer;
    sp__waitword_store(&d->w, 1);
    atomic_store_explicit(&d->released, 1, memory_order_release);
}

static void waiter_init(waiter *d)
{
    atomic_init(&d->w.value, 0);
    atomic_init(&d->w.parked, 0);
    atomic_init(&d->released, 0);
    d->status = 1;
    d->peer = -2;
}

/* Wait for `d` (the test's own deadline, well past the operation's). */
static int wait_done(waiter *d)
{
    uint64_t deadline = sp_now_ns() + (OK_MS + 10000) * 1000000ull;
    int timed_out = 0;
    while (sp__waitword_load(&d->w) == 0 && !timed_out)
        sp__waitword_wait_ne(&d->w, 0, NULL, deadline, &timed_out);
    if (timed_out) {
        fprintf(stderr, "rank %d: an operation never completed\n", g_rank);
        exit(2);
    }
    while (!atomic_load_explicit(&d->released, memory_order_acquire))
        sp__cpu_relax();
    return d->status;
}

static uint64_t in_ms(uint64_t ms)
{
    return sp_now_ns() + ms * 1000000ull;
}

/* Every rank here: an agreement that must succeed with status 0. */
static void barrier(const sp_l3_transport *t, const char *where)
{
    l3x_outcome mine = {.status = 0, .rank = g_rank, .chip = SP_L3_HOST, .task = -1};
    l3x_outcome first;
    int st = t->agree(t->ctx, &mine, &first, in_ms(OK_MS));
    CHECK(st == 0 && first.status == 0, "%s: agree %d (%s), first status %d", where, st,
          t->last_error(t->ctx), first.status);
}

static void test_ring(const sp_l3_transport *t, int rank, int size)
{
    static const uint64_t sizes[] = {0, 1, 4096, 3 << 20};
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t n = sizes[k];
        /* Two messages of one tag: they match in posting order. */
        uint8_t *out[2], *in[2];
        waiter ds[2], dr[2];
        for (int j = 0; j < 2; j++) {
            out[j] = malloc(n + 1);
            in[j] = calloc(1, n + 1);
            for (uint64_t i = 0; i < n; i++)
                out[j][i] = (uint8_t)(i * 7 + (uint64_t)rank * 13 + (uint64_t)j * 101);
            waiter_init(&ds[j]);
            waiter_init(&dr[j]);
        }
        for (int j = 0; j < 2; j++) {
            int st = t->irecv(t->ctx, in[j], n, from, 5, in_ms(OK_MS), on_done, &dr[j]);
            CHECK(st == 0, "irecv: %d %s", st, t->last_error(t->ctx));
        }
        for (int j = 0; j < 2; j++) {
            int st = t->isend(t->ctx, out[j], n, to, 5, in_ms(OK_MS), on_done, &ds[j]);
            CHECK(st == 0, "isend: %d %s", st, t->last_error(t->ctx));
        }
        for (int j = 0; j < 2; j++) {
            CHECK(wait_done(&ds[j]) == 0, "send %d of %llu bytes: %d", j, (unsigned long long)n,
                  ds[j].status);
            CHECK(wait_done(&dr[j]) == 0, "recv %d of %llu bytes: %d", j, (unsigned long long)n,
                  dr[j].status);
            uint64_t bad = n;
            for (uint64_t i = 0; i < n && bad == n; i++)
                if (in[j][i] != (uint8_t)(i * 7 + (uint64_t)from * 13 + (uint64_t)j * 101))
                    bad = i;
            CHECK(bad == n, "message %d of %llu bytes from rank %d: byte %llu differs", j,
                  (unsigned long long)n, from, (unsigned long long)bad);
            free(out[j]);
            free(in[j]);
        }
    }
    /* Bad arguments are refused by name, not posted. */
    waiter d;
    waiter_init(&d);
    char b;
    CHECK(t->isend(t->ctx, &b, 1, size, 1, 0, on_done, &d) == SP_EINVAL, "peer out of range");
    CHECK(strstr(t->last_error(t->ctx), "peer") != NULL, "message: %s", t->last_error(t->ctx));
    CHECK(t->irecv(t->ctx, &b, 1, to, 1u << 20, 0, on_done, &d) == SP_EINVAL, "tag too big");
}

/* Member r's element i: small integers, so float sums are exact. */
static int32_t value(int r, uint64_t i)
{
    return (int32_t)((i * 3 + (uint64_t)r * 5) % 17) - 8;
}

static void test_allreduce_on(const sp_l3_transport *t, l3x_group *g, const int *ranks, uint32_t n,
                              const char *what)
{
    static const int dtypes[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_I32};
    static const int ops[] = {SP_L3_SUM, SP_L3_MAX};
    const uint64_t counts[] = {1, 1000, 300000};
    for (size_t a = 0; a < 3; a++)
        for (size_t o = 0; o < 2; o++)
            for (size_t c = 0; c < 3; c++) {
                int dt = dtypes[a], op = ops[o];
                uint64_t count = counts[c];
                size_t es = dt == SP_DTYPE_F16 ? 2 : 4;
                uint8_t *buf = malloc(count * es);
                for (uint64_t i = 0; i < count; i++) {
                    int32_t v = value(g_rank, i);
                    if (dt == SP_DTYPE_F32)
                        ((float *)buf)[i] = (float)v;
                    else if (dt == SP_DTYPE_I32)
                        ((int32_t *)buf)[i] = v;
                    else
                        ((uint16_t *)buf)[i] = l3_f16_from_float((float)v);
                }
                waiter d;
                waiter_init(&d);
                int st = t->iallreduce(t->ctx, g, buf, count, dt, op, in_ms(OK_MS), on_done, &d);
                CHECK(st == 0, "%s: iallreduce: %d %s", what, st, t->last_error(t->ctx));
                if (st == 0)
                    CHECK(wait_done(&d) == 0, "%s: iallreduce done: %d %s", what, d.status,
                          t->last_error(t->ctx));
                uint64_t bad = count;
                for (uint64_t i = 0; i < count && bad == count; i++) {
                    int32_t ref = op == SP_L3_SUM ? 0 : INT32_MIN;
                    for (uint32_t m = 0; m < n; m++) {
                        int32_t v = value(ranks[m], i);
                        ref = op == SP_L3_SUM ? ref + v : (v > ref ? v : ref);
                    }
                    double got = dt == SP_DTYPE_F32   ? ((float *)buf)[i]
                                 : dt == SP_DTYPE_I32 ? ((int32_t *)buf)[i]
                                                      : l3_f16_to_float(((uint16_t *)buf)[i]);
                    if (got != (double)ref)
                        bad = i;
                }
                CHECK(bad == count, "%s: %s %s of %llu elements: element %llu differs", what,
                      sp_dtype_name(dt), op == SP_L3_SUM ? "sum" : "max", (unsigned long long)count,
                      (unsigned long long)bad);
                free(buf);
            }
}

static void test_allreduce(const sp_l3_transport *t, int size)
{
    int all[64];
    for (int r = 0; r < size; r++)
        all[r] = r;
    l3x_group *g = NULL;
    int st = t->group_create(t->ctx, all, (uint32_t)size, &g);
    CHECK(st == 0 && g, "group of every rank: %d %s", st, t->last_error(t->ctx));
    if (!g)
        return;
    test_allreduce_on(t, g, all, (uint32_t)size, "every rank");
    /* A dtype the transport does not reduce is refused by name. */
    waiter d;
    waiter_init(&d);
    double x = 0;
    CHECK(t->iallreduce(t->ctx, g, &x, 1, SP_DTYPE_F64, SP_L3_SUM, 0, on_done, &d) == SP_EDTYPE,
          "f64 refused");
    t->group_destroy(t->ctx, g);
}

static void test_subset(const sp_l3_transport *t, int rank, int size)
{
    /* The odd ranks (for -np 2: rank 1 alone), then the ranks but the last. */
    int odd[32], nodd = 0, head[64], nhead = 0;
    for (int r = 1; r < size; r += 2)
        odd[nodd++] = r;
    for (int r = 0; r < size - 1; r++)
        head[nhead++] = r;
    if (rank % 2) {
        l3x_group *g = NULL;
        int st = t->group_create(t->ctx, odd, (uint32_t)nodd, &g);
        CHECK(st == 0 && g, "group of the odd ranks: %d %s", st, t->last_error(t->ctx));
        if (g) {
            test_allreduce_on(t, g, odd, (uint32_t)nodd, "odd ranks");
            t->group_destroy(t->ctx, g);
        }
    }
    if (rank < size - 1) {
        l3x_group *g = NULL;
        int st = t->group_create(t->ctx, head, (uint32_t)nhead, &g);
        CHECK(st == 0 && g, "group of all but the last: %d %s", st, t->last_error(t->ctx));
        if (g) {
            test_allreduce_on(t, g, head, (uint32_t)nhead, "all but the last");
            t->group_destroy(t->ctx, g);
        }
    }
    /* A group without the caller, or not ascending, is refused. */
    l3x_group *g = NULL;
    int other = (rank + 1) % size;
    CHECK(t->group_create(t->ctx, &other, 1, &g) == SP_EINVAL && !g, "group without the caller");
    int twice[2] = {rank, rank};
    CHECK(t->group_create(t->ctx, twice, 2, &g) == SP_EINVAL, "group not ascending");
    barrier(t, "after the subset groups");
}

static void test_agree(const sp_l3_transport *t, int rank, int size)
{
    barrier(t, "agree, nobody failed");
    /* The last rank fails, and for -np 4 rank 1 too: all see rank 1 (the
     * lowest), with its status, chip, task and message. */
    int lowest = size > 2 ? 1 : size - 1;
    l3x_outcome mine = {.status = 0, .rank = rank, .chip = SP_L3_HOST, .task = -1};
    if (rank == size - 1 || rank == lowest) {
        mine.status = rank == lowest ? SP_EKERNEL_FAULT : SP_EINVAL;
        mine.chip = rank * 2;
        mine.task = 40 + rank;
        snprintf(mine.message, sizeof mine.message, "chip %d task %d failed on rank %d", rank * 2,
                 40 + rank, rank);
    }
    l3x_outcome first;
    memset(&first, 0x5a, sizeof first);
    int st = t->agree(t->ctx, &mine, &first, in_ms(OK_MS));
    CHECK(st == 0, "agree: %d %s", st, t->last_error(t->ctx));
    CHECK(first.rank == lowest && first.status == SP_EKERNEL_FAULT && first.chip == lowest * 2 &&
              first.task == 40 + lowest,
          "first failure: rank %d status %d chip %d task %lld", first.rank, first.status,
          first.chip, (long long)first.task);
    char want[64];
    snprintf(want, sizeof want, "failed on rank %d", lowest);
    CHECK(strstr(first.message, want) != NULL, "message: %s", first.message);
    barrier(t, "agree after a failure");
}

/* Rank 1 never posts its send: rank 0's receive times out naming rank 1;
 * after it, the transport still works (the receive was cancelled). */
static void test_recv_timeout(const sp_l3_transport *t, int rank)
{
    if (rank == 0) {
        char buf[64];
        waiter d;
        waiter_init(&d);
        uint64_t t0 = sp_now_ns();
        int st = t->irecv(t->ctx, buf, sizeof buf, 1, 99, in_ms(SHORT_MS), on_done, &d);
        CHECK(st == 0, "irecv: %d", st);
        st = wait_done(&d);
        uint64_t waited_ms = (sp_now_ns() - t0) / 1000000u;
        CHECK(st == SP_ERANK_TIMEOUT && d.peer == 1, "status %d (%s) peer %d", st,
              sp_status_name(st), d.peer);
        CHECK(waited_ms >= SHORT_MS, "completed after %llu ms, before its deadline",
              (unsigned long long)waited_ms);
        CHECK(strstr(t->last_error(t->ctx), "rank 1 did not send") != NULL, "message: %s",
              t->last_error(t->ctx));
    }
    barrier(t, "after the receive timeout");
    /* One message 1 -> 0 on the same tag now arrives whole, as the first. */
    char msg[16] = "after";
    if (rank == 1) {
        waiter d;
        waiter_init(&d);
        CHECK(t->isend(t->ctx, msg, sizeof msg, 0, 99, in_ms(OK_MS), on_done, &d) == 0, "isend");
        CHECK(wait_done(&d) == 0, "send after the timeout: %d", d.status);
    } else if (rank == 0) {
        char in[16] = {0};
        waiter d;
        waiter_init(&d);
        CHECK(t->irecv(t->ctx, in, sizeof in, 1, 99, in_ms(OK_MS), on_done, &d) == 0, "irecv");
        CHECK(wait_done(&d) == 0 && strcmp(in, "after") == 0, "recv after the timeout: %d '%s'",
              d.status, in);
    }
    barrier(t, "after the second message");
}

/* The last rank joins an agreement only when every other rank told it
 * that its agreement timed out: every other rank times out naming it; the
 * late rank's own agreement completes (the others' outcomes were there);
 * the next agreement works everywhere (its left-over message dropped). */
static void test_agree_late(const sp_l3_transport *t, int rank, int size)
{
    int late = size - 1;
    char go = 'g';
    l3x_outcome mine = {.status = 0, .rank = rank, .chip = SP_L3_HOST, .task = -1}, first;
    if (rank == late) {
        /* Only once every other rank's agreement timed out. */
        for (int p = 0; p < late; p++) {
            waiter d;
            waiter_init(&d);
            CHECK(t->irecv(t->ctx, &go, 1, p, 77, in_ms(OK_MS), on_done, &d) == 0, "irecv go");
            CHECK(wait_done(&d) == 0, "go from rank %d: %d", p, d.status);
        }
        int st = t->agree(t->ctx, &mine, &first, in_ms(OK_MS));
        CHECK(st == 0 && first.status == 0, "late agree: %d %s", st, t->last_error(t->ctx));
    } else {
        int st = t->agree(t->ctx, &mine, &first, in_ms(SHORT_MS));
        CHECK(st == SP_ERANK_TIMEOUT && first.status == SP_ERANK_TIMEOUT && first.rank == late,
              "agree without rank %d: %d, first rank %d status %d", late, st, first.rank,
              first.status);
        char want[48];
        snprintf(want, sizeof want, "rank %d did not answer", late);
        CHECK(strstr(t->last_error(t->ctx), want) != NULL, "message: %s", t->last_error(t->ctx));
        waiter d;
        waiter_init(&d);
        CHECK(t->isend(t->ctx, &go, 1, late, 77, in_ms(OK_MS), on_done, &d) == 0, "isend go");
        CHECK(wait_done(&d) == 0, "go sent: %d", d.status);
    }
    barrier(t, "the agreement after a late one");
}

/* The last rank posts its part of an allreduce only after an agreement
 * the others reach once their allreduce timed out: they see
 * SP_ERANK_TIMEOUT, their transport is broken (a send fails at once with
 * the same status, naming the allreduce), and the late rank's allreduce
 * still completes with the right sum (the others' parts stay alive). */
static void test_allreduce_late(const sp_l3_transport *t, int rank, int size)
{
    int all[64];
    for (int r = 0; r < size; r++)
        all[r] = r;
    l3x_group *g = NULL;
    int st = t->group_create(t->ctx, all, (uint32_t)size, &g);
    CHECK(st == 0 && g, "group: %d", st);
    if (!g)
        return;
    int32_t *buf = malloc(1000 * sizeof *buf);
    for (int i = 0; i < 1000; i++)
        buf[i] = rank + i;
    int late = size - 1;
    waiter d;
    waiter_init(&d);
    if (rank != late) {
        st = t->iallreduce(t->ctx, g, buf, 1000, SP_DTYPE_I32, SP_L3_SUM, in_ms(SHORT_MS), on_done,
                           &d);
        CHECK(st == 0, "iallreduce: %d", st);
        CHECK(wait_done(&d) == SP_ERANK_TIMEOUT, "allreduce without rank %d: %d", late, d.status);
        CHECK(strstr(t->last_error(t->ctx), "allreduce") != NULL, "message: %s",
              t->last_error(t->ctx));
        char b = 0;
        waiter d2;
        waiter_init(&d2);
        st = t->isend(t->ctx, &b, 1, late, 3, 0, on_done, &d2);
        CHECK(st == SP_ERANK_TIMEOUT, "a send on the broken transport: %d", st);
        CHECK(strstr(t->last_error(t->ctx), "broken") != NULL, "message: %s",
              t->last_error(t->ctx));
    }
    barrier(t, "after the allreduce timeout"); /* the agreement works when broken */
    if (rank == late) {
        st =
            t->iallreduce(t->ctx, g, buf, 1000, SP_DTYPE_I32, SP_L3_SUM, in_ms(OK_MS), on_done, &d);
        CHECK(st == 0, "late iallreduce: %d", st);
        CHECK(wait_done(&d) == 0, "late allreduce: %d %s", d.status, t->last_error(t->ctx));
        int bad = -1;
        for (int i = 0; i < 1000 && bad < 0; i++)
            if (buf[i] != size * (size - 1) / 2 + size * i)
                bad = i;
        CHECK(bad < 0, "late allreduce: element %d is %d", bad, bad >= 0 ? buf[bad] : 0);
    }
    barrier(t, "after the late allreduce");
    free(buf);
    t->group_destroy(t->ctx, g);
}

int main(int argc, char **argv)
{
    sp_mpi *m = NULL;
    char err[256] = "";
    int st = sp_mpi_open(&argc, &argv, &m, err, sizeof err);
    if (st) {
        fprintf(stderr, "sp_mpi_open: %d %s\n", st, err);
        return 1;
    }
    const sp_l3_transport *t = sp_mpi_transport(m);
    int rank = sp_mpi_rank(m), size = sp_mpi_size(m);
    g_rank = rank;
    CHECK(t->rank(t->ctx) == rank && t->size(t->ctx) == size && size >= 2, "rank %d size %d", rank,
          size);
    if (size < 2) {
        sp_mpi_close(m);
        return 1;
    }
    test_ring(t, rank, size);
    barrier(t, "after the ring");
    test_allreduce(t, size);
    test_subset(t, rank, size);
    test_agree(t, rank, size);
    test_recv_timeout(t, rank);
    test_agree_late(t, rank, size);
    test_allreduce_late(t, rank, size);
    /* Everybody's verdict, so one rank's failure fails every rank's exit. */
    l3x_outcome mine = {
        .status = g_fails ? SP_EINVAL : 0, .rank = rank, .chip = SP_L3_HOST, .task = -1};
    snprintf(mine.message, sizeof mine.message, "%d checks failed on rank %d", g_fails, rank);
    l3x_outcome first;
    st = t->agree(t->ctx, &mine, &first, in_ms(OK_MS));
    int ok = st == 0 && first.status == 0;
    printf("rank %d of %d: %s (%d checks failed here%s%s)\n", rank, size, ok ? "passed" : "FAILED",
           g_fails, first.status ? "; first: " : "", first.status ? first.message : "");
    sp_mpi_close(m);
    return ok ? 0 : 1;
}
