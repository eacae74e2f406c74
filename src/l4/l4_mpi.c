/* Level 4 over Open MPI (simpler/mpi.h): the sp_l3_transport table
 * (src/l3/l3_transport.h) on a duplicate of MPI_COMM_WORLD.
 *
 * One progress thread makes every MPI call after sp_mpi_open: callers post
 * operations to it through a lock-free stack (pushed by any thread, taken
 * whole and put back in posting order by the thread, so messages of one
 * pair and tag and the collectives of a group start in the order they were
 * posted); it starts them (MPI_Isend / Irecv / Iallreduce), MPI_Test's what
 * is outstanding and completes each through done(user, status, peer). With
 * nothing outstanding it parks on a wait word the posters bump; with
 * something outstanding it polls, spinning, then yielding (MPI's
 * non-blocking collectives and large messages progress only when tested,
 * so it does not sleep while one is in flight).
 *
 * Deadlines: a receive past its deadline is cancelled and completes with
 * SP_ERANK_TIMEOUT naming its peer; a send or a collective cannot be
 * cancelled (Open MPI does not cancel sends, nor any collective), so it
 * completes with SP_ERANK_TIMEOUT, its request is kept (MPI may still use
 * the buffer) and the transport is marked broken: later operations fail at
 * once, naming that failure. The end-of-run agreement is point to point
 * (every rank sends its outcome to every other), so a rank that does not
 * answer is known by name; each message carries the agreement's sequence
 * number, and one left over from an agreement that timed out is dropped. */
#include "simpler/mpi.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wait.h"
#include "l3/l3_transport.h"
#include "l4/l4_f16.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* Tags: the L3 layer's are < 2^20; the agreement uses one above them. */
#define L4_TAG_LIMIT (1u << 20)
#define L4_TAG_AGREE ((int)L4_TAG_LIMIT + 1)
#define L4_TAG_GROUP 7 /* MPI_Comm_create_group's tag (its own context) */
/* Messages over INT_MAX bytes go as blocks of this type plus a tail. */
#define L4_BLOCK_BYTES (1 << 20)
/* How long sp_mpi_close waits for operations that timed out to finish. */
#define L4_CLOSE_GRACE_NS 2000000000ull

typedef enum l4_kind {
    L4_SEND = 1,
    L4_RECV,
    L4_ALLREDUCE,
    L4_GROUP_CREATE,
    L4_GROUP_FREE,
    L4_AGREE,
} l4_kind;

struct l3x_group {
    MPI_Comm comm;
    uint32_t n;
    int ranks[]; /* world ranks, ascending */
};

typedef struct l4_agree_msg {
    uint64_t seq;
    l3x_outcome outcome;
} l4_agree_msg;

typedef struct l4_op l4_op;
struct l4_op {
    l4_op *next; /* the post stack, then the active list */
    l4_kind kind;
    void *buf;
    uint64_t bytes; /* SEND, RECV; elements for ALLREDUCE */
    int peer;
    uint32_t tag;
    int dtype, op;
    l3x_group *group;
    uint64_t deadline_ns;
    l3x_done_fn done;
    void *user;
    uint32_t nreq;
    MPI_Request req[2];
    /* Blocking operations (GROUP_*, AGREE): the caller waits on `finished`
     * and reads `status` after it. */
    sp__waitword finished;
    _Atomic int released; /* set after the last touch of `finished` by the thread */
    int status;
    /* GROUP_CREATE */
    const int *ranks;
    uint32_t n;
    l3x_group **group_out;
    /* AGREE */
    const l3x_outcome *mine;
    l3x_outcome *first;
    uint64_t seq;
    l4_agree_msg out;
    l4_agree_msg *in;  /* one per rank */
    MPI_Request *areq; /* [0, size): receives, [size, 2 size): sends */
    uint32_t apending;
};

/* A request MPI may still own after its operation completed by deadline. */
typedef struct l4_zombie {
    struct l4_zombie *next;
    MPI_Request req;
} l4_zombie;

struct sp_mpi {
    /* Posters' side: its own cache line. */
    _Alignas(SP_CACHE_LINE) _Atomic(l4_op *) posted;
    sp__waitword word; /* bumped per post and at stop */
    _Alignas(SP_CACHE_LINE) _Atomic int stop;
    /* Set once by the progress thread when an operation that MPI cannot
     * take back timed out: later operations fail with it. */
    _Atomic int broken_status;
    _Atomic int broken_peer;
    char broken_msg[256];

    MPI_Comm comm;
    int rank, size;
    bool initialized_here;
    l4_f16_ops f16;
    pthread_t thread;
    bool thread_started;
    uint64_t agree_seq; /* the caller's (agreements are serialized by the L3 layer) */

    /* The progress thread's own. */
    l4_op *active;
    l4_zombie *zombies;

    pthread_mutex_t err_lock;
    char last_error[512];
    sp_l3_transport table;
};

static const sp__wait_policy l4_idle_policy = {.spin_ns = 20000, .yield_ns = 200000};

static void set_error(sp_mpi *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(sp_mpi *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&m->err_lock);
    vsnprintf(m->last_error, sizeof m->last_error, fmt, ap);
    pthread_mutex_unlock(&m->err_lock);
    va_end(ap);
}

/* An MPI failure of `what`: the message names this rank, the peer (if
 * any) and MPI's text; SP_ERANK when a peer is involved, else SP_ESYS. */
static int mpi_fail(sp_mpi *m, int rc, int peer, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    if (peer >= 0) {
        set_error(m, "rank %d: %s with rank %d failed: %s", m->rank, what, peer, text);
        return SP_ERANK;
    }
    set_error(m, "rank %d: %s failed: %s", m->rank, what, text);
    return SP_ESYS;
}

static void mark_broken(sp_mpi *m, int status, int peer, const char *msg)
{
    int expect = 0;
    if (atomic_compare_exchange_strong_explicit(&m->broken_status, &expect, status,
                                                memory_order_acq_rel, memory_order_acquire)) {
        snprintf(m->broken_msg, sizeof m->broken_msg, "%s", msg);
        atomic_store_explicit(&m->broken_peer, peer, memory_order_release);
    }
}

/* Fail fast on a broken transport: the status of the failure that broke it. */
static int check_broken(sp_mpi *m, int *peer)
{
    int st = atomic_load_explicit(&m->broken_status, memory_order_acquire);
    if (st) {
        *peer = atomic_load_explicit(&m->broken_peer, memory_order_acquire);
        set_error(m, "rank %d: the transport is broken since: %s", m->rank, m->broken_msg);
    }
    return st;
}

/* ---- posting --------------------------------------------------------------------- */

static void post(sp_mpi *m, l4_op *op)
{
    l4_op *head = atomic_load_explicit(&m->posted, memory_order_relaxed);
    do {
        op->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&m->posted, &head, op, memory_order_release,
                                                    memory_order_relaxed));
    sp__waitword_add(&m->word, 1); /* wakes the thread only if it is parked */
}

/* Post a blocking operation (on the caller's stack) and wait for it. */
static int post_and_wait(sp_mpi *m, l4_op *op)
{
    atomic_init(&op->finished.value, 0);
    atomic_init(&op->finished.parked, 0);
    atomic_init(&op->released, 0);
    post(m, op);
    while (sp__waitword_load(&op->finished) == 0)
        sp__waitword_wait_ne(&op->finished, 0, &sp__wait_default, 0, NULL);
    /* The thread may still be in the store's wake (it reads the parked
     * count after the value): op lives on this stack, so wait for it to be
     * done with it. A few instructions at most. */
    while (!atomic_load_explicit(&op->released, memory_order_acquire))
        sp__cpu_relax();
    return op->status;
}

static void finish_blocking(l4_op *op, int status)
{
    op->status = status;
    sp__waitword_store(&op->finished, 1);
    atomic_store_explicit(&op->released, 1, memory_order_release); /* op may die from here on */
}

/* ---- the operations, on the progress thread ----------------------------------------- */

static void complete(sp_mpi *m, l4_op *op, int status, int peer)
{
    (void)m;
    l3x_done_fn done = op->done;
    void *user = op->user;
    free(op);
    done(user, status, peer);
}

static void keep_zombie(sp_mpi *m, MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return;
    l4_zombie *z = malloc(sizeof *z);
    if (!z) { /* cannot keep it: let MPI finish it on its own */
        MPI_Request_free(&req);
        return;
    }
    z->req = req;
    z->next = m->zombies;
    m->zombies = z;
}

static MPI_Datatype dtype_of(sp_mpi *m, int dtype)
{
    switch (dtype) {
    case SP_DTYPE_F32:
        return MPI_FLOAT;
    case SP_DTYPE_I32:
        return MPI_INT;
    case SP_DTYPE_F16:
        return m->f16.type;
    default:
        return MPI_DATATYPE_NULL;
    }
}

static MPI_Op op_of(sp_mpi *m, int dtype, int op)
{
    if (dtype == SP_DTYPE_F16)
        return op == SP_L3_SUM ? m->f16.sum : m->f16.max;
    return op == SP_L3_SUM ? MPI_SUM : MPI_MAX;
}

/* Start a point-to-point operation: one request, or blocks + tail past INT_MAX bytes. */
static int start_p2p(sp_mpi *m, l4_op *op)
{
    bool send = op->kind == L4_SEND;
    uint64_t blocks = op->bytes > INT_MAX ? op->bytes / L4_BLOCK_BYTES : 0;
    uint64_t tail = op->bytes - blocks * L4_BLOCK_BYTES;
    int rc = MPI_SUCCESS;
    op->nreq = 0;
    if (blocks) {
        MPI_Datatype block;
        rc = MPI_Type_contiguous(L4_BLOCK_BYTES, MPI_BYTE, &block);
        if (rc == MPI_SUCCESS)
            rc = MPI_Type_commit(&block);
        if (rc == MPI_SUCCESS) {
            rc = send ? MPI_Isend(op->buf, (int)blocks, block, op->peer, (int)op->tag, m->comm,
                                  &op->req[op->nreq])
                      : MPI_Irecv(op->buf, (int)blocks, block, op->peer, (int)op->tag, m->comm,
                                  &op->req[op->nreq]);
            MPI_Type_free(&block); /* freed when the request no longer needs it */
        }
        if (rc == MPI_SUCCESS)
            op->nreq++;
    }
    if (rc == MPI_SUCCESS && (tail || !blocks)) {
        uint8_t *p = (uint8_t *)op->buf + blocks * L4_BLOCK_BYTES;
        rc = send ? MPI_Isend(p, (int)tail, MPI_BYTE, op->peer, (int)op->tag, m->comm,
                              &op->req[op->nreq])
                  : MPI_Irecv(p, (int)tail, MPI_BYTE, op->peer, (int)op->tag, m->comm,
                              &op->req[op->nreq]);
        if (rc == MPI_SUCCESS)
            op->nreq++;
    }
    if (rc != MPI_SUCCESS) {
        for (uint32_t i = 0; i < op->nreq; i++)
            keep_zombie(m, op->req[i]);
        op->nreq = 0;
        char what[96];
        snprintf(what, sizeof what, "%s of %llu bytes (tag %u)", send ? "MPI_Isend" : "MPI_Irecv",
                 (unsigned long long)op->bytes, op->tag);
        return mpi_fail(m, rc, op->peer, what);
    }
    return 0;
}

static void group_text(const l3x_group *g, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < g->n && at + 12 < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? "," : "", g->ranks[i]);
}

static int start_allreduce(sp_mpi *m, l4_op *op)
{
    op->nreq = 1;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, op->buf, (int)op->bytes, dtype_of(m, op->dtype),
                            op_of(m, op->dtype, op->op), op->group->comm, &op->req[0]);
    if (rc != MPI_SUCCESS) {
        op->nreq = 0;
        char what[160], ranks[96];
        group_text(op->group, ranks, sizeof ranks);
        snprintf(what, sizeof what, "MPI_Iallreduce of %llu elements over ranks {%s}",
                 (unsigned long long)op->bytes, ranks);
        return mpi_fail(m, rc, -1, what);
    }
    return 0;
}

static int do_group_create(sp_mpi *m, l4_op *op)
{
    MPI_Group world = MPI_GROUP_NULL, sub = MPI_GROUP_NULL;
    l3x_group *g = malloc(sizeof *g + op->n * sizeof(int));
    if (!g) {
        set_error(m, "rank %d: no memory for a group of %u ranks", m->rank, op->n);
        return SP_ENOMEM;
    }
    g->n = op->n;
    memcpy(g->ranks, op->ranks, op->n * sizeof(int));
    g->comm = MPI_COMM_NULL;
    int rc = MPI_Comm_group(m->comm, &world);
    if (rc == MPI_SUCCESS)
        rc = MPI_Group_incl(world, (int)op->n, op->ranks, &sub);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_create_group(m->comm, sub, L4_TAG_GROUP, &g->comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    if (sub != MPI_GROUP_NULL)
        MPI_Group_free(&sub);
    if (world != MPI_GROUP_NULL)
        MPI_Group_free(&world);
    if (rc != MPI_SUCCESS) {
        char what[160], ranks[96];
        group_text(g, ranks, sizeof ranks);
        snprintf(what, sizeof what, "MPI_Comm_create_group over ranks {%s}", ranks);
        if (g->comm != MPI_COMM_NULL)
            MPI_Comm_free(&g->comm);
        free(g);
        return mpi_fail(m, rc, -1, what);
    }
    *op->group_out = g;
    return 0;
}

static int start_agree(sp_mpi *m, l4_op *op)
{
    int n = m->size;
    op->in = calloc((size_t)n, sizeof *op->in);
    op->areq = malloc(2 * (size_t)n * sizeof *op->areq);
    if (!op->in || !op->areq) {
        set_error(m, "rank %d: no memory for the agreement over %d ranks", m->rank, n);
        return SP_ENOMEM;
    }
    op->out.seq = op->seq;
    op->out.outcome = *op->mine;
    op->in[m->rank] = op->out;
    op->apending = 0;
    for (int p = 0; p < 2 * n; p++)
        op->areq[p] = MPI_REQUEST_NULL;
    for (int p = 0; p < n; p++) {
        if (p == m->rank)
            continue;
        int rc = MPI_Irecv(&op->in[p], (int)sizeof op->in[p], MPI_BYTE, p, L4_TAG_AGREE, m->comm,
                           &op->areq[p]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(&op->out, (int)sizeof op->out, MPI_BYTE, p, L4_TAG_AGREE, m->comm,
                           &op->areq[n + p]);
        if (rc != MPI_SUCCESS)
            return mpi_fail(m, rc, p, "the end-of-run agreement's message");
        op->apending += 2;
    }
    return 0;
}

static void agree_release(sp_mpi *m, l4_op *op)
{
    if (op->areq) {
        for (int p = 0; p < 2 * m->size; p++) {
            if (op->areq[p] == MPI_REQUEST_NULL)
                continue;
            if (p < m->size) { /* a receive: cancel, and its completion is local */
                MPI_Cancel(&op->areq[p]);
                MPI_Wait(&op->areq[p], MPI_STATUS_IGNORE);
            } else {
                keep_zombie(m, op->areq[p]); /* op->out is copied by then (eager) */
            }
        }
    }
    free(op->in);
    free(op->areq);
    op->in = NULL;
    op->areq = NULL;
}

static void agree_result(sp_mpi *m, l4_op *op)
{
    memset(op->first, 0, sizeof *op->first);
    op->first->rank = -1;
    op->first->chip = SP_L3_HOST;
    op->first->task = -1;
    for (int p = 0; p < m->size; p++) {
        if (op->in[p].outcome.status != 0) {
            *op->first = op->in[p].outcome;
            op->first->message[sizeof op->first->message - 1] = 0;
            op->first->rank = p; /* the sender, whatever it wrote */
            return;
        }
    }
}

/* Test an agreement: 1 when finished (op->status set), 0 while it waits. */
static int test_agree(sp_mpi *m, l4_op *op, uint64_t now)
{
    int n = m->size;
    for (int p = 0; p < 2 * n && op->apending; p++) {
        if (op->areq[p] == MPI_REQUEST_NULL)
            continue;
        int flag = 0;
        MPI_Status st;
        int rc = MPI_Test(&op->areq[p], &flag, &st);
        if (rc != MPI_SUCCESS) {
            op->status = mpi_fail(m, rc, p % n, "the end-of-run agreement's message");
            memset(op->first, 0, sizeof *op->first);
            op->first->status = op->status;
            op->first->rank = p % n;
            agree_release(m, op);
            return 1;
        }
        if (!flag)
            continue;
        if (p < n && op->in[p].seq != op->seq) {
            /* Left over from an agreement that timed out here: wait for this one's. */
            rc = MPI_Irecv(&op->in[p], (int)sizeof op->in[p], MPI_BYTE, p, L4_TAG_AGREE, m->comm,
                           &op->areq[p]);
            if (rc == MPI_SUCCESS)
                continue;
            op->areq[p] = MPI_REQUEST_NULL;
        }
        op->apending--;
    }
    if (op->apending == 0) {
        agree_result(m, op);
        op->status = 0;
        agree_release(m, op);
        return 1;
    }
    if (op->deadline_ns && now >= op->deadline_ns) {
        int late = -1;
        for (int p = 0; p < n; p++) {
            if (op->areq[p] != MPI_REQUEST_NULL) {
                late = p;
                break;
            }
        }
        if (late < 0) { /* only a send left: some peer did not take our outcome */
            for (int p = 0; p < n; p++) {
                if (op->areq[n + p] != MPI_REQUEST_NULL) {
                    late = p;
                    break;
                }
            }
        }
        memset(op->first, 0, sizeof *op->first);
        op->first->status = SP_ERANK_TIMEOUT;
        op->first->rank = late;
        op->first->chip = SP_L3_HOST;
        op->first->task = -1;
        snprintf(op->first->message, sizeof op->first->message,
                 "rank %d did not answer the end-of-run agreement in time", late);
        set_error(m, "rank %d: %s", m->rank, op->first->message);
        op->status = SP_ERANK_TIMEOUT;
        agree_release(m, op);
        return 1;
    }
    return 0;
}

/* Start a posted operation: blocking ones finish here (GROUP_*) or join the
 * active list like the rest. */
static void start_op(sp_mpi *m, l4_op *op)
{
    int st = 0;
    switch (op->kind) {
    case L4_SEND:
    case L4_RECV:
        st = start_p2p(m, op);
        break;
    case L4_ALLREDUCE:
        st = start_allreduce(m, op);
        break;
    case L4_GROUP_CREATE:
        finish_blocking(op, do_group_create(m, op));
        return;
    case L4_GROUP_FREE: {
        l3x_group *g = op->group;
        if (g->comm != MPI_COMM_NULL)
            MPI_Comm_free(&g->comm);
        free(g);
        finish_blocking(op, 0);
        return;
    }
    case L4_AGREE:
        st = start_agree(m, op);
        if (st) {
            memset(op->first, 0, sizeof *op->first);
            op->first->status = st;
            op->first->rank = m->rank;
            agree_release(m, op);
            finish_blocking(op, st);
            return;
        }
        break;
    }
    if (st) {
        complete(m, op, st, op->kind == L4_ALLREDUCE ? -1 : op->peer);
        return;
    }
    op->next = m->active;
    m->active = op;
}

/* Test an active operation: 1 when it is finished (and completed / freed). */
static int test_op(sp_mpi *m, l4_op *op, uint64_t now)
{
    if (op->kind == L4_AGREE) {
        if (!test_agree(m, op, now))
            return 0;
        finish_blocking(op, op->status);
        return 1;
    }
    int all = 0;
    int rc = MPI_Testall((int)op->nreq, op->req, &all, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        for (uint32_t i = 0; i < op->nreq; i++)
            keep_zombie(m, op->req[i]);
        const char *what = op->kind == L4_SEND   ? "MPI_Isend"
                           : op->kind == L4_RECV ? "MPI_Irecv"
                                                 : "MPI_Iallreduce";
        int peer = op->kind == L4_ALLREDUCE ? -1 : op->peer;
        complete(m, op, mpi_fail(m, rc, peer, what), peer);
        return 1;
    }
    if (all) {
        complete(m, op, 0, -1);
        return 1;
    }
    if (!op->deadline_ns || now < op->deadline_ns)
        return 0;
    /* Past the deadline. */
    if (op->kind == L4_RECV) {
        bool cancelled = false;
        for (uint32_t i = 0; i < op->nreq; i++) {
            if (op->req[i] == MPI_REQUEST_NULL)
                continue;
            MPI_Status st;
            int c = 0;
            MPI_Cancel(&op->req[i]);
            MPI_Wait(&op->req[i], &st); /* local once cancelled */
            MPI_Test_cancelled(&st, &c);
            cancelled = cancelled || c;
        }
        if (!cancelled) { /* it arrived after all */
            complete(m, op, 0, -1);
            return 1;
        }
        set_error(m, "rank %d: rank %d did not send its %llu bytes (tag %u) in time", m->rank,
                  op->peer, (unsigned long long)op->bytes, op->tag);
        complete(m, op, SP_ERANK_TIMEOUT, op->peer);
        return 1;
    }
    char msg[256];
    if (op->kind == L4_SEND) {
        snprintf(msg, sizeof msg, "rank %d: rank %d did not receive %llu bytes (tag %u) in time",
                 m->rank, op->peer, (unsigned long long)op->bytes, op->tag);
    } else {
        char ranks[96];
        group_text(op->group, ranks, sizeof ranks);
        snprintf(msg, sizeof msg,
                 "rank %d: an allreduce of %llu elements over ranks {%s} did not complete in "
                 "time",
                 m->rank, (unsigned long long)op->bytes, ranks);
    }
    set_error(m, "%s", msg);
    int peer = op->kind == L4_SEND ? op->peer : -1;
    mark_broken(m, SP_ERANK_TIMEOUT, peer, msg);
    for (uint32_t i = 0; i < op->nreq; i++)
        keep_zombie(m, op->req[i]);
    complete(m, op, SP_ERANK_TIMEOUT, peer);
    return 1;
}

static void test_zombies(sp_mpi *m)
{
    l4_zombie **pp = &m->zombies;
    while (*pp) {
        l4_zombie *z = *pp;
        int flag = 0;
        if (MPI_Test(&z->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || flag) {
            *pp = z->next;
            free(z);
        } else {
            pp = &z->next;
        }
    }
}

/* Take what was posted, in posting order, and start it. 1 if anything was. */
static int take_posted(sp_mpi *m)
{
    l4_op *stack = atomic_exchange_explicit(&m->posted, NULL, memory_order_acquire);
    if (!stack)
        return 0;
    l4_op *fifo = NULL;
    while (stack) {
        l4_op *next = stack->next;
        stack->next = fifo;
        fifo = stack;
        stack = next;
    }
    while (fifo) {
        l4_op *next = fifo->next;
        start_op(m, fifo);
        fifo = next;
    }
    return 1;
}

/* Test every active operation; 1 if any finished. */
static int test_active(sp_mpi *m, uint64_t now)
{
    int progressed = 0;
    l4_op **pp = &m->active;
    while (*pp) {
        l4_op *op = *pp;
        l4_op *next = op->next;
        if (test_op(m, op, now)) {
            *pp = next;
            progressed = 1;
        } else {
            pp = &op->next;
        }
    }
    return progressed;
}

static void cancel_active(sp_mpi *m)
{
    while (m->active) {
        l4_op *op = m->active;
        m->active = op->next;
        set_error(m, "rank %d: the transport closed with operations outstanding", m->rank);
        if (op->kind == L4_AGREE) {
            agree_release(m, op);
            memset(op->first, 0, sizeof *op->first);
            op->first->status = SP_ESTATE;
            finish_blocking(op, SP_ESTATE);
            continue;
        }
        for (uint32_t i = 0; i < op->nreq; i++)
            keep_zombie(m, op->req[i]);
        complete(m, op, SP_ESTATE, -1);
    }
}

static void *progress_main(void *arg)
{
    sp_mpi *m = arg;
    uint64_t idle_since = 0; /* when the last poll that made progress was */
    for (;;) {
        uint32_t seen = sp__waitword_load(&m->word);
        int progressed = take_posted(m);
        uint64_t now = sp_now_ns();
        if (m->active)
            progressed |= test_active(m, now);
        if (m->zombies)
            test_zombies(m);
        if (atomic_load_explicit(&m->stop, memory_order_acquire)) {
            take_posted(m);
            cancel_active(m);
            break;
        }
        if (progressed) {
            idle_since = now;
            continue;
        }
        if (!m->active && !m->zombies) {
            /* Nothing outstanding: park until something is posted. (A
             * timed-out request is outstanding too: a late peer's part of
             * it progresses only while this side tests it.) */
            sp__waitword_wait_ne(&m->word, seen, &l4_idle_policy, 0, NULL);
            idle_since = sp_now_ns();
            continue;
        }
        /* Outstanding but nothing finished: spin, then yield. MPI moves a
         * non-blocking collective or a large message only inside a test
         * (every round, every fragment), and nothing tells from outside
         * whether it moved, so while an operation is in flight the thread
         * never parks (sched_yield gives the CPU to anything runnable).
         * Only timed-out requests left (kept for a late peer's sake):
         * park in 1 ms slices, cut short by a post. */
        uint64_t idle = now - idle_since;
        if (m->active && idle < 20000) {
            sp__cpu_relax();
        } else if (m->active) {
            sched_yield();
        } else {
            static const sp__wait_policy park_now = {.spin_ns = 0, .yield_ns = 0};
            sp__waitword_wait_ne(&m->word, seen, &park_now, now + 1000000, NULL);
        }
    }
    return NULL;
}

/* ---- the transport table ------------------------------------------------------------- */

static int t_rank(void *ctx)
{
    return ((sp_mpi *)ctx)->rank;
}

static int t_size(void *ctx)
{
    return ((sp_mpi *)ctx)->size;
}

static const char *t_last_error(void *ctx)
{
    return ((sp_mpi *)ctx)->last_error;
}

static int t_group_create(void *ctx, const int *ranks, uint32_t n, l3x_group **out)
{
    sp_mpi *m = ctx;
    if (!ranks || !out || n == 0 || n > (uint32_t)m->size) {
        set_error(m, "rank %d: group_create: bad arguments (%u ranks)", m->rank, n);
        return SP_EINVAL;
    }
    bool member = false;
    for (uint32_t i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= m->size || (i && ranks[i] <= ranks[i - 1])) {
            set_error(m,
                      "rank %d: group_create: rank %d (entry %u) is out of range or not "
                      "ascending",
                      m->rank, ranks[i], i);
            return SP_EINVAL;
        }
        member = member || ranks[i] == m->rank;
    }
    if (!member) {
        set_error(m, "rank %d: group_create: this rank is not among the group's %u ranks", m->rank,
                  n);
        return SP_EINVAL;
    }
    int peer;
    int st = check_broken(m, &peer);
    if (st)
        return st;
    l4_op op = {.kind = L4_GROUP_CREATE, .ranks = ranks, .n = n, .group_out = out};
    *out = NULL;
    return post_and_wait(m, &op);
}

static void t_group_destroy(void *ctx, l3x_group *g)
{
    if (!g)
        return;
    l4_op op = {.kind = L4_GROUP_FREE, .group = g};
    post_and_wait(ctx, &op);
}

static l4_op *new_op(sp_mpi *m, l4_kind kind, uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    l4_op *op = calloc(1, sizeof *op);
    if (!op) {
        set_error(m, "rank %d: no memory for a transport operation", m->rank);
        return NULL;
    }
    op->kind = kind;
    op->deadline_ns = deadline_ns;
    op->done = done;
    op->user = user;
    return op;
}

static int post_p2p(sp_mpi *m, l4_kind kind, void *buf, uint64_t bytes, int peer, uint32_t tag,
                    uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    const char *what = kind == L4_SEND ? "isend" : "irecv";
    if (!done || (!buf && bytes) || peer < 0 || peer >= m->size || tag >= L4_TAG_LIMIT ||
        bytes / L4_BLOCK_BYTES > INT_MAX) {
        set_error(m, "rank %d: %s: bad arguments (peer %d of %d, tag %u, %llu bytes)", m->rank,
                  what, peer, m->size, tag, (unsigned long long)bytes);
        return SP_EINVAL;
    }
    int bpeer;
    int st = check_broken(m, &bpeer);
    if (st)
        return st;
    l4_op *op = new_op(m, kind, deadline_ns, done, user);
    if (!op)
        return SP_ENOMEM;
    op->buf = buf;
    op->bytes = bytes;
    op->peer = peer;
    op->tag = tag;
    post(m, op);
    return 0;
}

static int t_isend(void *ctx, const void *buf, uint64_t bytes, int peer, uint32_t tag,
                   uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    return post_p2p(ctx, L4_SEND, (void *)buf, bytes, peer, tag, deadline_ns, done, user);
}

static int t_irecv(void *ctx, void *buf, uint64_t bytes, int peer, uint32_t tag,
                   uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    return post_p2p(ctx, L4_RECV, buf, bytes, peer, tag, deadline_ns, done, user);
}

static int t_iallreduce(void *ctx, l3x_group *g, void *buf, uint64_t count, int dtype, int op,
                        uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    sp_mpi *m = ctx;
    if (!g || !done || (!buf && count) || count > INT_MAX) {
        set_error(m, "rank %d: iallreduce: bad arguments (%llu elements)", m->rank,
                  (unsigned long long)count);
        return SP_EINVAL;
    }
    if (dtype != SP_DTYPE_F32 && dtype != SP_DTYPE_F16 && dtype != SP_DTYPE_I32) {
        set_error(m, "rank %d: iallreduce: dtype %s is not f32, f16 or i32", m->rank,
                  sp_dtype_name(dtype));
        return SP_EDTYPE;
    }
    if (op != SP_L3_SUM && op != SP_L3_MAX) {
        set_error(m, "rank %d: iallreduce: op %d is not SUM or MAX", m->rank, op);
        return SP_EINVAL;
    }
    int bpeer;
    int st = check_broken(m, &bpeer);
    if (st)
        return st;
    l4_op *o = new_op(m, L4_ALLREDUCE, deadline_ns, done, user);
    if (!o)
        return SP_ENOMEM;
    o->group = g;
    o->buf = buf;
    o->bytes = count;
    o->dtype = dtype;
    o->op = op;
    post(m, o);
    return 0;
}

static int t_agree(void *ctx, const l3x_outcome *mine, l3x_outcome *first, uint64_t deadline_ns)
{
    sp_mpi *m = ctx;
    if (!mine || !first) {
        set_error(m, "rank %d: agree: NULL outcome", m->rank);
        return SP_EINVAL;
    }
    /* Runs on a broken transport too: it is how the other ranks hear of it. */
    l4_op op = {.kind = L4_AGREE, .mine = mine, .first = first, .deadline_ns = deadline_ns};
    op.seq = ++m->agree_seq;
    return post_and_wait(m, &op);
}

/* ---- open / close --------------------------------------------------------------------- */

int sp_mpi_open(int *argc, char ***argv, sp_mpi **out, char *err, size_t err_len)
{
    if (!out) {
        if (err && err_len)
            snprintf(err, err_len, "sp_mpi_open: out is NULL");
        return SP_EINVAL;
    }
    *out = NULL;
    sp_mpi *m = calloc(1, sizeof *m);
    if (!m) {
        if (err && err_len)
            snprintf(err, err_len, "sp_mpi_open: no memory");
        return SP_ENOMEM;
    }
    pthread_mutex_init(&m->err_lock, NULL);
    m->comm = MPI_COMM_NULL;
    m->f16.type = MPI_DATATYPE_NULL;
    m->f16.sum = m->f16.max = MPI_OP_NULL;
    int st = 0;
    const char *what = "";
    int inited = 0, rc = MPI_SUCCESS, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        what = "MPI_Init_thread";
        rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
        m->initialized_here = rc == MPI_SUCCESS;
    } else {
        what = "MPI_Query_thread";
        rc = MPI_Query_thread(&provided);
    }
    if (rc == MPI_SUCCESS && provided < MPI_THREAD_SERIALIZED) {
        snprintf(m->last_error, sizeof m->last_error,
                 "MPI gives thread level %d, simpler needs MPI_THREAD_SERIALIZED (%d) or better: "
                 "its progress thread makes the MPI calls",
                 provided, MPI_THREAD_SERIALIZED);
        st = SP_ESYS;
        goto fail;
    }
    if (rc == MPI_SUCCESS) {
        what = "MPI_Comm_dup(MPI_COMM_WORLD)";
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
    }
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(m->comm, &m->rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(m->comm, &m->size);
    if (rc == MPI_SUCCESS) {
        int *ub = NULL, flag = 0;
        what = "MPI_TAG_UB";
        rc = MPI_Comm_get_attr(m->comm, MPI_TAG_UB, &ub, &flag);
        if (rc == MPI_SUCCESS && (!flag || *ub < L4_TAG_AGREE)) {
            snprintf(m->last_error, sizeof m->last_error,
                     "MPI's MPI_TAG_UB (%d) is below the %d simpler's tags need", flag ? *ub : -1,
                     L4_TAG_AGREE);
            st = SP_ESYS;
            goto fail;
        }
    }
    if (rc == MPI_SUCCESS) {
        what = "the f16 datatype and operations";
        rc = l4_f16_create(&m->f16);
    }
    if (rc != MPI_SUCCESS) {
        st = mpi_fail(m, rc, -1, what);
        goto fail;
    }
    atomic_init(&m->posted, NULL);
    atomic_init(&m->stop, 0);
    atomic_init(&m->broken_status, 0);
    atomic_init(&m->broken_peer, -1);
    int prc = pthread_create(&m->thread, NULL, progress_main, m);
    if (prc) {
        snprintf(m->last_error, sizeof m->last_error,
                 "rank %d: cannot start the MPI progress thread: %s", m->rank, strerror(prc));
        st = SP_ESYS;
        goto fail;
    }
    m->thread_started = true;
    m->table = (sp_l3_transport){
        .ctx = m,
        .rank = t_rank,
        .size = t_size,
        .group_create = t_group_create,
        .group_destroy = t_group_destroy,
        .isend = t_isend,
        .irecv = t_irecv,
        .iallreduce = t_iallreduce,
        .agree = t_agree,
        .last_error = t_last_error,
    };
    *out = m;
    return 0;
fail:
    if (err && err_len)
        snprintf(err, err_len, "%s", m->last_error);
    sp_mpi_close(m);
    return st;
}

const sp_l3_transport *sp_mpi_transport(sp_mpi *m)
{
    return m ? &m->table : NULL;
}

int sp_mpi_rank(const sp_mpi *m)
{
    return m ? m->rank : -1;
}

int sp_mpi_size(const sp_mpi *m)
{
    return m ? m->size : 0;
}

void sp_mpi_close(sp_mpi *m)
{
    if (!m)
        return;
    if (m->thread_started) {
        atomic_store_explicit(&m->stop, 1, memory_order_release);
        sp__waitword_add(&m->word, 1);
        pthread_join(m->thread, NULL);
    }
    /* From here the caller's thread makes the MPI calls (serialized: the
     * progress thread is gone). */
    /* Give operations that timed out a moment to finish (a late peer's
     * part may be on its way) before deciding whether MPI can finalize. */
    uint64_t until = sp_now_ns() + L4_CLOSE_GRACE_NS;
    for (test_zombies(m); m->zombies && sp_now_ns() < until; test_zombies(m)) {
        static const sp__wait_policy nap = {.spin_ns = 0, .yield_ns = 0};
        sp__waitword_wait_ne(&m->word, sp__waitword_load(&m->word), &nap, sp_now_ns() + 1000000,
                             NULL);
    }
    bool stuck = m->zombies != NULL;
    while (m->zombies) { /* MPI finishes or drops them at finalize */
        l4_zombie *z = m->zombies;
        m->zombies = z->next;
        MPI_Request_free(&z->req);
        free(z);
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        l4_f16_free(&m->f16);
        if (m->comm != MPI_COMM_NULL)
            MPI_Comm_free(&m->comm);
    }
    if (m->initialized_here && !finalized) {
        if (stuck) {
            /* A request a peer never took part in would hang
             * MPI_Finalize: leave MPI as it is; the job ends when the
             * processes exit (mpirun ends the others). */
            fprintf(stderr,
                    "simpler error: rank %d: not finalizing MPI, a timed-out operation is still "
                    "outstanding (%s)\n",
                    m->rank, m->broken_msg);
        } else {
            MPI_Finalize();
        }
    }
    pthread_mutex_destroy(&m->err_lock);
    free(m);
}
