/* One L3 run: the tasks an orchestration submits (chip tasks, copies,
 * collectives), their dependencies (RAW, WAW, WAR over overlapping byte
 * ranges of one buffer, as a chip's TensorMap derives them) and their
 * execution by one driver thread per local chip while the orchestration
 * goes on submitting.
 *
 * Task records and edges live in chunks that never move, reused run after
 * run, so the per-task path allocates nothing. The orchestration thread is
 * the only writer of records and edges; a producer's successor list and its
 * `done` flag change under a per-task spin flag, so an edge is either
 * added before the producer completes (and released by it) or not at all.
 * A ready task goes to its driver through a lock-free MPSC queue and a
 * waitword wake. Completions may come from drivers or from the transport's
 * progress thread: everything they touch is atomic. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l3/l3_internal.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

static inline l3_task *task_at(sp_l3 *l3, uint32_t i)
{
    return &l3->chunks[i >> L3_CHUNK_SHIFT][i & (L3_CHUNK - 1)];
}

static inline l3_edge *edge_at(sp_l3 *l3, uint32_t i)
{
    return &l3->edge_chunks[i >> L3_EDGE_CHUNK_SHIFT][i & (L3_EDGE_CHUNK - 1)];
}

static inline void task_lock(l3_task *t)
{
    while (atomic_flag_test_and_set_explicit(&t->lock, memory_order_acquire))
        sp__cpu_relax();
}

static inline void task_unlock(l3_task *t)
{
    atomic_flag_clear_explicit(&t->lock, memory_order_release);
}

/* ---- failures ----------------------------------------------------------------- */

/* Record the run's first failure (later ones only count). */
static void run_failed(sp_l3_run *r, int status, int chip, int rank, int64_t task, const char *fmt,
                       ...) __attribute__((format(printf, 6, 7)));
static void run_failed(sp_l3_run *r, int status, int chip, int rank, int64_t task, const char *fmt,
                       ...)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong_explicit(&r->error, &expect, status, memory_order_acq_rel,
                                                 memory_order_acquire))
        return;
    /* Only the winner writes these; they are read after the run drained. */
    r->failed_chip = chip;
    r->failed_rank = rank;
    r->failed_task = task;
    r->failed_status = status;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(r->err, sizeof r->err, "%s: ", sp_status_name(status));
    if (n > 0 && (size_t)n < sizeof r->err)
        vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
}

/* A refused submit: the sp_l3's error, the run's first failure; returns status. */
static int submit_fail(sp_l3_run *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int submit_fail(sp_l3_run *r, int status, const char *fmt, ...)
{
    sp_l3 *l3 = r->l3;
    va_list ap;
    va_start(ap, fmt);
    char msg[L3_ERR_LEN];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    l3_fail(l3, status, "%s", msg);
    run_failed(r, status, SP_L3_HOST, l3->rank, -1, "%s", msg);
    return status;
}

/* ---- ready queues --------------------------------------------------------------- */

static void queue_init(l3_driver *d)
{
    atomic_store_explicit(&d->q_stub.qnext, NULL,
                          memory_order_relaxed); /* before the driver thread starts */
    d->q_head = &d->q_stub;
    atomic_store_explicit(&d->q_tail, &d->q_stub,
                          memory_order_relaxed); /* before the driver thread starts */
}

static void queue_push(l3_driver *d, l3_task *t)
{
    atomic_store_explicit(&t->qnext, NULL,
                          memory_order_relaxed); /* published by the exchange below */
    l3_task *prev = atomic_exchange_explicit(&d->q_tail, t, memory_order_acq_rel);
    atomic_store_explicit(&prev->qnext, t, memory_order_release);
}

/* The consumer side (the driver alone). NULL when empty, or while a push is
 * half done (its wake follows, so the driver looks again). */
static l3_task *queue_pop(l3_driver *d)
{
    l3_task *head = d->q_head;
    l3_task *next = atomic_load_explicit(&head->qnext, memory_order_acquire);
    if (head == &d->q_stub) {
        if (!next)
            return NULL;
        d->q_head = next;
        head = next;
        next = atomic_load_explicit(&next->qnext, memory_order_acquire);
    }
    if (next) {
        d->q_head = next;
        return head;
    }
    if (atomic_load_explicit(&d->q_tail, memory_order_acquire) != head)
        return NULL;
    queue_push(d, &d->q_stub);
    next = atomic_load_explicit(&head->qnext, memory_order_acquire);
    if (next) {
        d->q_head = next;
        return head;
    }
    return NULL;
}

/* ---- lanes ------------------------------------------------------------------------
 * A chip's runs not yet waited for hold a claim on its lane (at most
 * `depth`) and one of its argument slots. Whoever makes a chip task ready
 * on an idle chip (the orchestration thread, a driver) submits it at once
 * in its own thread, as the single-chip worker's caller would, and hands
 * the run to the chip's driver only for the wait: the driver's wake-up
 * then overlaps the run instead of preceding it. */

static bool lane_claim(l3_driver *d, bool only_idle)
{
    /* seq_cst: pairs with deferred_wait's release-then-look (driver_main). */
    uint32_t v = atomic_load_explicit(&d->lane_used, memory_order_seq_cst);
    do {
        if (only_idle ? v != 0 : v >= d->depth)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&d->lane_used, &v, v + 1, memory_order_seq_cst,
                                                    memory_order_seq_cst));
    return true;
}

static uint32_t slot_claim(l3_driver *d)
{
    uint32_t m =
        atomic_load_explicit(&d->slot_free, memory_order_relaxed); /* a guess; the CAS decides */
    for (;;) {
        /* A lane claim guarantees a free slot (one per claim). */
        uint32_t s = (uint32_t)__builtin_ctz(m);
        if (atomic_compare_exchange_weak_explicit(&d->slot_free, &m, m & ~(1u << s),
                                                  memory_order_acq_rel, memory_order_relaxed))
            return s;
    }
}

static void lane_release(l3_driver *d, uint32_t slot)
{
    atomic_fetch_or_explicit(&d->slot_free, 1u << slot, memory_order_release);
    atomic_fetch_sub_explicit(&d->lane_used, 1, memory_order_seq_cst); /* see lane_claim */
}

static void complete(sp_l3 *l3, l3_task *t, int status, bool direct);

/* Submit chip task `t` (its lane claimed) to its chip's worker: 0, or the
 * submit's failure (then `t` is complete). */
static int chip_start(sp_l3 *l3, l3_driver *d, l3_task *t)
{
    uint32_t s = slot_claim(d);
    sp_args *a = d->slot[s];
    uint32_t n = t->u.chip.ntens;
    a->tensor_count = n;
    a->scalar_count = t->u.chip.nscal;
    memcpy(a->dirs, t->u.chip.dir, n);
    memcpy(a->tensors, t->u.chip.t, n * sizeof(sp_tensor));
    memcpy(a->scalars, t->u.chip.sc, t->u.chip.nscal * sizeof(uint64_t));
    sp_worker *w = l3->w[d->local];
    int rc = sp_worker_submit(w, t->u.chip.callable, a, t->u.chip.has_cfg ? &t->u.chip.cfg : NULL,
                              &t->u.chip.h);
    if (rc) {
        lane_release(d, s);
        sp__waitword_add(&d->wake, 1); /* its driver may wait for the lane */
        run_failed(t->run, rc, t->chip, l3->rank, t->id, "chip %d task %lld (callable %u): %s",
                   t->chip, (long long)t->id, t->u.chip.callable, sp_worker_last_error(w));
        atomic_fetch_add_explicit(&t->run->chip_tasks, 1, memory_order_relaxed); /* a count */
        complete(l3, t, rc, true);
        return rc;
    }
    t->u.chip.slot = s;
    t->u.chip.submitted = 1;
    return SP_OK;
}

/* `direct`: the caller's thread may submit a chip task itself (not the
 * transport's progress thread, which must not prepare runs). */
static void make_ready(sp_l3 *l3, l3_task *t, bool direct)
{
    l3_driver *d = &l3->drv[t->drv];
    if (direct && t->kind == L3_CHIP &&
        !atomic_load_explicit(
            &t->cancel, memory_order_relaxed) && /* set before the waits decrement that readied t */
        lane_claim(d, true)) {
        if (chip_start(l3, d, t) != SP_OK)
            return;
    }
    queue_push(d, t);
    sp__waitword_add(&d->wake, 1);
}

/* ---- completion ------------------------------------------------------------------- */

static void complete(sp_l3 *l3, l3_task *t, int status, bool direct)
{
    sp_l3_run *r = t->run;
    atomic_store_explicit(&t->status, status, memory_order_relaxed); /* published by `done` */
    task_lock(t);
    atomic_store_explicit(&t->done, 1, memory_order_release);
    uint32_t e = t->succ;
    task_unlock(t);
    while (e) {
        l3_edge *ed = edge_at(l3, e - 1);
        l3_task *s = task_at(l3, ed->task);
        e = ed->next;
        if (status)
            atomic_store_explicit(&s->cancel, 1, memory_order_relaxed); /* ordered by waits */
        if (atomic_fetch_sub_explicit(&s->waits, 1, memory_order_acq_rel) == 1)
            make_ready(l3, s, direct);
    }
    if (atomic_fetch_sub_explicit(&r->pending, 1, memory_order_acq_rel) == 1)
        sp__waitword_add(&r->drained, 1);
}

static void comm_done(void *user, int status, int peer)
{
    l3_task *t = user;
    sp_l3_run *r = t->run;
    sp_l3 *l3 = r->l3;
    if (status < 0)
        run_failed(r, status, t->chip, peer >= 0 ? peer : l3->rank, t->id,
                   "rank %d: %s task %lld with rank %d (chip %d): %s", l3->rank,
                   t->kind == L3_SEND   ? "send of copy"
                   : t->kind == L3_RECV ? "receive of copy"
                                        : "collective",
                   (long long)t->id, peer, t->chip,
                   l3->tr && l3->tr->last_error ? l3->tr->last_error(l3->tr->ctx) : "");
    if (t->kind == L3_COLL) {
        atomic_fetch_add_explicit(&r->collectives, 1, memory_order_relaxed); /* a count */
        atomic_fetch_add_explicit(&r->bytes_moved, t->u.coll.x.bytes_moved,
                                  memory_order_relaxed); /* a sum, read after the run drained */
    } else {
        atomic_fetch_add_explicit(&r->copies, 1, memory_order_relaxed); /* a count */
        atomic_fetch_add_explicit(&r->bytes_moved, t->u.copy.bytes,
                                  memory_order_relaxed); /* a sum, read after the run drained */
    }
    complete(l3, t, status < 0 ? status : 0, false);
}

/* ---- execution on a driver -------------------------------------------------------- */

static int copy_local(l3_task *t)
{
    uint64_t n = t->u.copy.bytes;
    if (t->u.copy.dst && t->u.copy.src) {
        memmove(t->u.copy.dst, t->u.copy.src, n);
        return SP_OK;
    }
    /* A backend without host-map: bounce through host memory. */
    uint8_t *bounce = t->u.copy.src;
    int rc = SP_OK;
    if (!bounce) {
        bounce = malloc(n ? n : 1);
        if (!bounce)
            return SP_ENOMEM;
        rc = sp_worker_copy_from_device(t->u.copy.src_w, bounce, t->u.copy.src_dev, n);
    }
    if (rc == SP_OK) {
        if (t->u.copy.dst)
            memmove(t->u.copy.dst, bounce, n);
        else
            rc = sp_worker_copy_to_device(t->u.copy.dst_w, t->u.copy.dst_dev, bounce, n);
    }
    if (bounce != t->u.copy.src)
        free(bounce);
    return rc;
}

/* The driver's runs in flight (each holds a lane claim) and the chip tasks
 * ready while its lane is full. */
typedef struct drv_state {
    l3_task *fl[L3_MAX_LANE];
    uint32_t nfl, fl_head;
    l3_task *wait_head, *wait_tail;
} drv_state;

static void fl_add(l3_driver *d, drv_state *ds, l3_task *t)
{
    ds->fl[(ds->fl_head + ds->nfl) % d->depth] = t;
    ds->nfl++;
}

static void chip_finish(sp_l3 *l3, l3_driver *d, drv_state *ds)
{
    l3_task *t = ds->fl[ds->fl_head];
    ds->fl_head = (ds->fl_head + 1) % d->depth;
    ds->nfl--;
    sp_worker *w = l3->w[d->local];
    int rc = sp_worker_wait(w, &t->u.chip.h, NULL);
    lane_release(d, t->u.chip.slot);
    if (rc)
        run_failed(t->run, rc, t->chip, l3->rank, t->id, "chip %d task %lld (callable %u): %s",
                   t->chip, (long long)t->id, t->u.chip.callable, sp_worker_last_error(w));
    atomic_fetch_add_explicit(&t->run->chip_tasks, 1, memory_order_relaxed); /* a count */
    complete(l3, t, rc, true);
}

/* A ready chip task on its own driver: start it if the lane has room. */
static bool chip_try(sp_l3 *l3, l3_driver *d, drv_state *ds, l3_task *t)
{
    if (!lane_claim(d, false))
        return false;
    if (chip_start(l3, d, t) == SP_OK)
        fl_add(d, ds, t);
    return true;
}

/* Run `t` on its driver: chip runs go in flight, the rest finish here or
 * through the transport. */
static void execute(sp_l3 *l3, l3_driver *d, drv_state *ds, l3_task *t)
{
    sp_l3_run *r = t->run;
    if (t->kind == L3_CHIP && t->u.chip.submitted) {
        fl_add(d, ds, t);
        return;
    }
    /* cancel: set before the waits decrement that readied t (relaxed is enough) */
    if (atomic_load_explicit(&t->cancel, memory_order_relaxed) && !t->comm) {
        atomic_fetch_add_explicit(&r->cancelled, 1, memory_order_relaxed); /* a count */
        complete(l3, t, L3_CANCELLED, true);
        return;
    }
    switch (t->kind) {
    case L3_CHIP:
        if (ds->wait_head || !chip_try(l3, d, ds, t)) {
            atomic_store_explicit(&t->qnext, NULL, memory_order_relaxed); /* driver-private now */
            if (ds->wait_tail)
                atomic_store_explicit(&ds->wait_tail->qnext, t,
                                      memory_order_relaxed); /* driver-private list */
            else
                ds->wait_head = t;
            ds->wait_tail = t;
        }
        return;
    case L3_COPY: {
        int rc = copy_local(t);
        if (rc)
            run_failed(r, rc, t->chip, l3->rank, t->id, "copy task %lld of %llu bytes (chip %d)",
                       (long long)t->id, (unsigned long long)t->u.copy.bytes, t->chip);
        atomic_fetch_add_explicit(&r->copies, 1, memory_order_relaxed); /* a count */
        atomic_fetch_add_explicit(&r->bytes_moved, t->u.copy.bytes,
                                  memory_order_relaxed); /* a sum, read after the run drained */
        complete(l3, t, rc, true);
        return;
    }
    case L3_SEND:
    case L3_RECV: {
        uint64_t deadline = sp_now_ns() + l3->rank_timeout_ns;
        uint32_t tag = (uint32_t)(t->id % L3_TAG_MOD);
        int rc = t->kind == L3_SEND ? l3->tr->isend(l3->tr->ctx, t->u.copy.src, t->u.copy.bytes,
                                                    t->u.copy.peer, tag, deadline, comm_done, t)
                                    : l3->tr->irecv(l3->tr->ctx, t->u.copy.dst, t->u.copy.bytes,
                                                    t->u.copy.peer, tag, deadline, comm_done, t);
        if (rc)
            comm_done(t, rc, t->u.copy.peer);
        return;
    }
    case L3_COLL: {
        t->u.coll.c->deadline_ns = sp_now_ns() + l3->rank_timeout_ns;
        memset(&t->u.coll.x, 0, sizeof t->u.coll.x);
        int rc = l3_coll_start(&t->u.coll.x, t->u.coll.c, comm_done, t);
        if (rc)
            comm_done(t, rc, -1);
        return;
    }
    }
}

static void *driver_main(void *arg)
{
    l3_driver *d = arg;
    sp_l3 *l3 = d->l3;
    drv_state ds;
    memset(&ds, 0, sizeof ds);
    for (;;) {
        /* Say whether a lane released by another thread must wake us
         * before looking at the lane (seq_cst: see deferred_wait). */
        atomic_store_explicit(&d->lane_wanted, ds.wait_head != NULL, memory_order_seq_cst);
        uint32_t seen = sp__waitword_load(&d->wake);
        l3_task *t = queue_pop(d);
        if (t) {
            execute(l3, d, &ds, t);
            continue;
        }
        if (ds.wait_head) {
            l3_task *w = ds.wait_head;
            if (chip_try(l3, d, &ds, w)) {
                ds.wait_head =
                    atomic_load_explicit(&w->qnext, memory_order_relaxed); /* driver-private list */
                if (!ds.wait_head)
                    ds.wait_tail = NULL;
                continue;
            }
        }
        if (ds.nfl) {
            /* Nothing else to start: finish the oldest run. */
            chip_finish(l3, d, &ds);
            continue;
        }
        /* Idle, or the lane is full with runs submitted elsewhere (the
         * orchestration thread's, not handed over yet): their hand-over or
         * their end bumps `wake`. */
        if (!ds.wait_head && atomic_load_explicit(&l3->stop, memory_order_acquire))
            break;
        sp__waitword_wait_ne(&d->wake, seen, &sp__wait_default, 0, NULL);
    }
    return NULL;
}

int l3_drivers_start(sp_l3 *l3, char *err, size_t err_len)
{
    l3->chunks = calloc(L3_MAX_CHUNKS, sizeof *l3->chunks);
    l3->edge_chunks = calloc(L3_MAX_CHUNKS, sizeof *l3->edge_chunks);
    l3->drv = calloc(l3->local_chips, sizeof *l3->drv);
    if (!l3->chunks || !l3->edge_chunks || !l3->drv) {
        snprintf(err, err_len, "the L3 scheduler's tables");
        return SP_ENOMEM;
    }
    for (uint32_t i = 0; i < l3->local_chips; i++) {
        l3_driver *d = &l3->drv[i];
        d->l3 = l3;
        d->local = (int)i;
        queue_init(d);
        atomic_store_explicit(&d->lane_used, 0, memory_order_relaxed); /* before the thread */
        uint32_t depth = sp_worker_lane_depth(l3->w[i]);
        d->depth = depth < 1 ? 1 : depth > L3_MAX_LANE ? L3_MAX_LANE : depth;
        atomic_store_explicit(&d->slot_free, (1u << d->depth) - 1u,
                              memory_order_relaxed); /* before the driver thread starts */
        for (uint32_t s = 0; s < d->depth; s++) {
            d->slot[s] = calloc(1, sizeof(sp_args));
            if (!d->slot[s]) {
                snprintf(err, err_len, "chip %d's run arguments", l3->first_chip + (int)i);
                return SP_ENOMEM;
            }
        }
        if (pthread_create(&d->thread, NULL, driver_main, d)) {
            snprintf(err, err_len, "chip %d's driver thread", l3->first_chip + (int)i);
            return SP_ESYS;
        }
        d->started = true;
    }
    return SP_OK;
}

void l3_drivers_stop(sp_l3 *l3)
{
    if (!l3->drv)
        return;
    atomic_store_explicit(&l3->stop, 1, memory_order_release);
    for (uint32_t i = 0; i < l3->local_chips; i++) {
        l3_driver *d = &l3->drv[i];
        if (d->started) {
            sp__waitword_add(&d->wake, 1);
            pthread_join(d->thread, NULL);
            d->started = false;
        }
        for (uint32_t s = 0; s < L3_MAX_LANE; s++) {
            free(d->slot[s]);
            d->slot[s] = NULL;
        }
    }
}

void l3_runs_free(sp_l3 *l3)
{
    if (l3->chunks)
        for (uint32_t i = 0; i < L3_MAX_CHUNKS && l3->chunks[i]; i++)
            free(l3->chunks[i]);
    if (l3->edge_chunks)
        for (uint32_t i = 0; i < L3_MAX_CHUNKS && l3->edge_chunks[i]; i++)
            free(l3->edge_chunks[i]);
    free(l3->chunks);
    free(l3->edge_chunks);
    free(l3->run.run_bufs);
    for (uint32_t i = 0; i < l3->run.colls_cap; i++)
        free(l3->run.coll_mem[i]);
    free(l3->run.coll_mem);
    free(l3->run.colls);
    l3->chunks = NULL;
    l3->edge_chunks = NULL;
}

/* ---- building tasks ---------------------------------------------------------------- */

/* The record for the next task id (consumed whether or not this rank runs
 * it); NULL when the run is at its task limit. */
static l3_task *task_new(sp_l3_run *r, uint8_t kind, int chip, int drv)
{
    sp_l3 *l3 = r->l3;
    uint32_t i = r->ntasks;
    uint32_t c = i >> L3_CHUNK_SHIFT;
    if (c >= L3_MAX_CHUNKS)
        return NULL;
    if (!l3->chunks[c]) {
        l3->chunks[c] = calloc(L3_CHUNK, sizeof(l3_task));
        if (!l3->chunks[c])
            return NULL;
    }
    r->ntasks++;
    l3_task *t = task_at(l3, i);
    t->run = r;
    t->id = i;
    t->kind = kind;
    t->comm = 0;
    t->chip = chip;
    t->drv = (int16_t)drv;
    atomic_store_explicit(&t->waits, 1, memory_order_relaxed); /* published by the push */
    atomic_store_explicit(&t->cancel, 0,
                          memory_order_relaxed); /* t is not visible to other threads yet */
    atomic_flag_clear_explicit(&t->lock, memory_order_relaxed);
    atomic_store_explicit(&t->done, 0, memory_order_relaxed);
    atomic_store_explicit(&t->status, 0, memory_order_relaxed);
    t->succ = 0;
    return t;
}

/* Consume a task id this rank does not run. */
static int64_t task_skip(sp_l3_run *r)
{
    return r->ntasks++;
}

static int add_edge(sp_l3_run *r, l3_task *p, l3_task *t)
{
    sp_l3 *l3 = r->l3;
    task_lock(p);
    if (atomic_load_explicit(&p->done, memory_order_acquire)) {
        int st = atomic_load_explicit(&p->status,
                                      memory_order_relaxed); /* published by done's release */
        task_unlock(p);
        if (st)
            atomic_store_explicit(&t->cancel, 1, memory_order_relaxed); /* t is not queued yet */
        return SP_OK;
    }
    uint32_t e = r->nedges;
    uint32_t c = e >> L3_EDGE_CHUNK_SHIFT;
    if (c >= L3_MAX_CHUNKS) {
        task_unlock(p);
        return SP_EGRAPH_LIMIT;
    }
    if (!l3->edge_chunks[c]) {
        l3->edge_chunks[c] = malloc(L3_EDGE_CHUNK * sizeof(l3_edge));
        if (!l3->edge_chunks[c]) {
            task_unlock(p);
            return SP_ENOMEM;
        }
    }
    r->nedges++;
    l3_edge *ed = edge_at(l3, e);
    ed->task = (uint32_t)t->id;
    ed->next = p->succ;
    p->succ = e + 1;
    atomic_fetch_add_explicit(&t->waits, 1, memory_order_relaxed); /* t is not queued yet */
    task_unlock(p);
    return SP_OK;
}

/* Task `t` accesses [lo, hi) of buffer `b`: edges from the earlier tasks
 * whose accesses conflict (RAW, WAR, WAW), and the access recorded. Entries
 * of tasks done without failure, and entries a write covers, are dropped:
 * what depends on them from now on depends on something after them. */
static int add_access(sp_l3_run *r, l3_task *t, l3_buffer *b, uint64_t lo, uint64_t hi, bool write)
{
    sp_l3 *l3 = r->l3;
    if (b->acc_seq != r->seq) {
        b->acc_seq = r->seq;
        b->nacc = 0;
    }
    b->run_seq = r->seq;
    uint32_t k = 0;
    for (uint32_t i = 0; i < b->nacc; i++) {
        l3_access a = b->acc[i];
        if (a.task == (uint32_t)t->id) {
            b->acc[k++] = a;
            continue;
        }
        l3_task *p = task_at(l3, a.task);
        if (atomic_load_explicit(&p->done, memory_order_acquire) &&
            atomic_load_explicit(&p->status, memory_order_relaxed) ==
                0) /* published by done's release */
            continue;
        bool overlap = a.lo < hi && lo < a.hi;
        if (overlap && (write || a.write)) {
            int rc = add_edge(r, p, t);
            if (rc)
                return rc;
            if (write && lo <= a.lo && a.hi <= hi)
                continue;
        }
        b->acc[k++] = a;
    }
    b->nacc = k;
    if (b->nacc == b->acc_cap) {
        uint32_t cap = b->acc_cap ? 2 * b->acc_cap : 8;
        l3_access *na = realloc(b->acc, cap * sizeof *na);
        if (!na)
            return SP_ENOMEM;
        b->acc = na;
        b->acc_cap = cap;
    }
    b->acc[b->nacc++] = (l3_access){.task = (uint32_t)t->id, .write = write, .lo = lo, .hi = hi};
    return SP_OK;
}

/* Release the submit's hold: the task runs once its producers are done. */
/* A chip task the orchestration thread submitted itself keeps with it
 * until its next call into the run (then its driver waits for it) or the
 * end of the run (then it waits itself, as the single-chip worker's
 * caller would: no thread hop on the way back). */
static void deferred_flush(sp_l3_run *r)
{
    for (uint32_t i = 0; i < r->ndeferred; i++) {
        l3_task *t = r->deferred[i];
        l3_driver *d = &r->l3->drv[t->drv];
        queue_push(d, t);
        sp__waitword_add(&d->wake, 1);
    }
    r->ndeferred = 0;
}

static void deferred_wait(sp_l3_run *r)
{
    sp_l3 *l3 = r->l3;
    while (r->ndeferred) {
        l3_task *t = r->deferred[--r->ndeferred];
        l3_driver *d = &l3->drv[t->drv];
        sp_worker *w = l3->w[d->local];
        int rc = sp_worker_wait(w, &t->u.chip.h, NULL);
        lane_release(d, t->u.chip.slot);
        /* Wake the driver only if it waits for this lane. seq_cst on both
         * sides (lane_release / lane_claim, driver_main's lane_wanted): in
         * their one order either the driver sees the lane free, or this
         * sees lane_wanted. */
        if (atomic_load_explicit(&d->lane_wanted, memory_order_seq_cst))
            sp__waitword_add(&d->wake, 1);
        if (rc)
            run_failed(r, rc, t->chip, l3->rank, t->id, "chip %d task %lld (callable %u): %s",
                       t->chip, (long long)t->id, t->u.chip.callable, sp_worker_last_error(w));
        atomic_fetch_add_explicit(&r->chip_tasks, 1, memory_order_relaxed); /* a count */
        complete(l3, t, rc, true);
    }
}

static void task_commit(sp_l3_run *r, l3_task *t)
{
    sp_l3 *l3 = r->l3;
    atomic_fetch_add_explicit(&r->pending, 1, memory_order_relaxed); /* before the task can end */
    if (atomic_fetch_sub_explicit(&t->waits, 1, memory_order_acq_rel) != 1)
        return;
    l3_driver *d = &l3->drv[t->drv];
    if (t->kind == L3_CHIP &&
        !atomic_load_explicit(&t->cancel,
                              memory_order_relaxed) && /* t is not visible to other threads yet */
        r->ndeferred < SP_L3_MAX_CHIPS &&
        lane_claim(d, true)) {
        if (chip_start(l3, d, t) == SP_OK)
            r->deferred[r->ndeferred++] = t;
        return;
    }
    make_ready(l3, t, true);
}

/* A task whose dependency bookkeeping failed: it must still complete. */
static int task_abort(sp_l3_run *r, l3_task *t, int rc, const char *what)
{
    submit_fail(r, rc, "%s task %lld: dependency tables: %s", what, (long long)t->id,
                sp_status_hint(rc));
    atomic_store_explicit(&t->cancel, 1, memory_order_relaxed); /* t is not queued yet */
    task_commit(r, t);
    return rc;
}

/* Is this rank where an end of a copy is? A host end is on the rank of
 * the other end (every rank has a host; the chip's rank uses its own). */
static int end_rank(sp_l3 *l3, int chip, int other)
{
    if (chip >= 0)
        return l3_rank_of(l3, chip);
    return other >= 0 ? l3_rank_of(l3, other) : l3->rank;
}

/* A copy of `bytes` from byte `soff` of buffer `src` to byte `doff` of
 * `dst` (both checked by the caller): a local copy, a send, a receive, or
 * nothing here. Returns the task id or a status. */
static int64_t copy_task(sp_l3_run *r, uint32_t dst, uint64_t doff, uint32_t src, uint64_t soff,
                         uint64_t bytes)
{
    sp_l3 *l3 = r->l3;
    l3_buffer *db = l3_buffer_get(l3, dst), *sb = l3_buffer_get(l3, src);
    int dr = end_rank(l3, db->chip, sb->chip), sr = end_rank(l3, sb->chip, db->chip);
    bool dl = dr == l3->rank, sl = sr == l3->rank;
    if (!dl && !sl)
        return task_skip(r);
    uint8_t kind = dl && sl ? L3_COPY : sl ? L3_SEND : L3_RECV;
    int chip = dl && db->chip >= 0 ? db->chip : sb->chip;
    int drv = chip >= 0 ? l3_local(l3, chip) : 0;
    if (kind == L3_SEND)
        chip = sb->chip, drv = sb->chip >= 0 ? l3_local(l3, sb->chip) : 0;
    if (kind == L3_RECV)
        chip = db->chip, drv = db->chip >= 0 ? l3_local(l3, db->chip) : 0;
    l3_task *t = task_new(r, kind, chip, drv);
    if (!t)
        return submit_fail(r, SP_EGRAPH_LIMIT, "copy: a run holds at most %u tasks",
                           L3_MAX_CHUNKS * L3_CHUNK);
    t->comm = kind != L3_COPY;
    t->u.copy.bytes = bytes;
    t->u.copy.peer = kind == L3_SEND ? dr : kind == L3_RECV ? sr : l3->rank;
    t->u.copy.dst = dl && db->host ? db->host + doff : NULL;
    t->u.copy.src = sl && sb->host ? sb->host + soff : NULL;
    t->u.copy.dst_w = dl && db->chip >= 0 ? l3->w[l3_local(l3, db->chip)] : NULL;
    t->u.copy.src_w = sl && sb->chip >= 0 ? l3->w[l3_local(l3, sb->chip)] : NULL;
    t->u.copy.dst_dev = db->dev + doff;
    t->u.copy.src_dev = sb->dev + soff;
    if ((kind == L3_SEND && !t->u.copy.src) || (kind == L3_RECV && !t->u.copy.dst)) {
        /* Cross-rank transfers read and write host-mapped memory. */
        submit_fail(r, SP_ENOTSUP,
                    "copy task %lld: chip %d has no host-map for a transfer to "
                    "another rank",
                    (long long)t->id, chip);
        atomic_store_explicit(&t->cancel, 1, memory_order_relaxed); /* t is not queued yet */
        t->comm = 0;
        task_commit(r, t);
        return SP_ENOTSUP;
    }
    int rc = SP_OK;
    if (sl)
        rc = add_access(r, t, sb, soff, soff + bytes, false);
    if (!rc && dl)
        rc = add_access(r, t, db, doff, doff + bytes, true);
    if (rc)
        return task_abort(r, t, rc, "copy");
    int64_t id = t->id;
    task_commit(r, t);
    return id;
}

static int64_t after_failure(sp_l3_run *r, int64_t id)
{
    int e = atomic_load_explicit(&r->error, memory_order_acquire);
    return e && id >= 0 ? e : id;
}

static bool run_ok(sp_l3_run *r)
{
    return r && r->l3 && r->l3->in_run && r == &r->l3->run;
}

/* After a failure, level 3 refuses more work. Level 4 goes on building
 * (every rank takes part in every transfer, so no peer waits for a part
 * that never comes; only what depends on the failure is cancelled) and
 * the submit returns the failure all the same (after_failure). */
static int refused(sp_l3_run *r)
{
    int e = atomic_load_explicit(&r->error, memory_order_acquire);
    return e && !r->l3->tr ? e : 0;
}

/* Every submit's first step: the orchestration thread's held runs go to
 * their drivers, then a run that refuses more work says so. 0 or a status. */
static int submit_begin(sp_l3_run *r)
{
    if (!run_ok(r))
        return SP_EINVAL;
    deferred_flush(r);
    return refused(r);
}

SP_EXPORT int64_t sp_l3_copy(sp_l3_run *r, const sp_l3_tensor *dst, const sp_l3_tensor *src)
{
    int e = submit_begin(r);
    if (e)
        return e;
    sp_l3 *l3 = r->l3;
    if (!dst || !src)
        return submit_fail(r, SP_EINVAL, "copy: NULL %s", dst ? "source" : "destination");
    const sp_l3_tensor *ts[2] = {dst, src};
    for (int i = 0; i < 2; i++) {
        const sp_l3_tensor *t = ts[i];
        const char *side = i ? "source" : "destination";
        l3_buffer *b = l3_buffer_get(l3, t->buffer);
        if (!b)
            return submit_fail(r, SP_ESTALE, "copy: the %s's buffer %u (chip %d) was freed", side,
                               t->buffer, t->chip);
        if (b->chip != t->chip)
            return submit_fail(r, SP_EINVAL, "copy: the %s says chip %d, its buffer %u is on %d",
                               side, t->chip, t->buffer, b->chip);
        uint64_t lo, hi;
        if (!sp_tensor_is_contiguous(&t->view) || sp_tensor_byte_extent(&t->view, &lo, &hi) ||
            hi > b->bytes)
            return submit_fail(r, SP_ESHAPE,
                               "copy: the %s view of buffer %u (chip %d) is not a contiguous view "
                               "inside its %llu bytes",
                               side, t->buffer, t->chip, (unsigned long long)b->bytes);
    }
    if (dst->view.dtype != src->view.dtype)
        return submit_fail(r, SP_EDTYPE, "copy: %s into %s (buffers %u, %u)",
                           sp_dtype_name(src->view.dtype), sp_dtype_name(dst->view.dtype),
                           src->buffer, dst->buffer);
    int64_t n = sp_tensor_numel(&src->view);
    if (n != sp_tensor_numel(&dst->view))
        return submit_fail(r, SP_ESHAPE, "copy: %lld elements into %lld (buffers %u, %u)",
                           (long long)n, (long long)sp_tensor_numel(&dst->view), src->buffer,
                           dst->buffer);
    uint64_t es = sp_tensor_elem_size(&src->view);
    uint64_t doff = (uint64_t)dst->view.offset * es, soff = (uint64_t)src->view.offset * es;
    if (dst->buffer == src->buffer && doff < soff + (uint64_t)n * es &&
        soff < doff + (uint64_t)n * es)
        return submit_fail(r, SP_EINVAL, "copy: source and destination overlap in buffer %u",
                           dst->buffer);
    return after_failure(r, copy_task(r, dst->buffer, doff, src->buffer, soff, (uint64_t)n * es));
}

SP_EXPORT int sp_l3_run_tensor(sp_l3_run *r, int chip, int dtype, int ndim, const int64_t *shape,
                               sp_l3_tensor *out)
{
    if (!run_ok(r))
        return SP_EINVAL;
    deferred_flush(r);
    sp_l3 *l3 = r->l3;
    if (chip < 0 || (uint32_t)chip >= l3->total_chips)
        return submit_fail(r, SP_EINVAL, "run tensor: chip %d of %u", chip, l3->total_chips);
    if (r->nrun_bufs == r->run_bufs_cap) {
        uint32_t cap = r->run_bufs_cap ? 2 * r->run_bufs_cap : 16;
        uint32_t *nb = realloc(r->run_bufs, cap * sizeof *nb);
        if (!nb)
            return submit_fail(r, SP_ENOMEM, "run tensor: %u run tensors", cap);
        r->run_bufs = nb;
        r->run_bufs_cap = cap;
    }
    int rc = l3_tensor_make(l3, chip, NULL, dtype, ndim, shape, out, "run tensor");
    if (rc) {
        run_failed(r, rc, chip, l3->rank, -1, "%s", l3->err);
        return rc;
    }
    l3_buffer_get(l3, out->buffer)->run_local = 1;
    r->run_bufs[r->nrun_bufs++] = out->buffer;
    return SP_OK;
}

static bool dir_ok(uint8_t d)
{
    return d == SP_IN || d == SP_OUT || d == SP_INOUT || d == SP_OUT_EXISTING;
}

SP_EXPORT int64_t sp_l3_submit(sp_l3_run *r, int chip, uint32_t id, const sp_l3_arg *args,
                               uint32_t arg_count, const uint64_t *scalars, uint32_t scalar_count,
                               const sp_call_config *config)
{
    int e = submit_begin(r);
    if (e)
        return e;
    sp_l3 *l3 = r->l3;
    if (chip < 0 || (uint32_t)chip >= l3->total_chips)
        return submit_fail(r, SP_EINVAL, "submit of callable %u: chip %d of %u", id, chip,
                           l3->total_chips);
    if (arg_count > SP_L3_MAX_TASK_TENSORS || scalar_count > SP_L3_MAX_TASK_SCALARS ||
        (arg_count && !args) || (scalar_count && !scalars))
        return submit_fail(r, SP_EINVAL,
                           "submit of callable %u on chip %d: %u tensors (at most %d), %u scalars "
                           "(at most %d)%s",
                           id, chip, arg_count, SP_L3_MAX_TASK_TENSORS, scalar_count,
                           SP_L3_MAX_TASK_SCALARS, arg_count && !args ? ", NULL args" : "");
    int bchip[SP_L3_MAX_TASK_TENSORS];
    uint64_t lo[SP_L3_MAX_TASK_TENSORS], hi[SP_L3_MAX_TASK_TENSORS];
    for (uint32_t i = 0; i < arg_count; i++) {
        const sp_l3_tensor *t = &args[i].tensor;
        l3_buffer *b = l3_buffer_get(l3, t->buffer);
        if (!b)
            return submit_fail(r, SP_ESTALE,
                               "submit of callable %u on chip %d: argument %u: buffer %u (chip %d) "
                               "was freed or never made",
                               id, chip, i, t->buffer, t->chip);
        if (b->chip != t->chip)
            return submit_fail(r, SP_EINVAL,
                               "submit of callable %u on chip %d: argument %u says chip %d, its "
                               "buffer %u is on chip %d",
                               id, chip, i, t->chip, t->buffer, b->chip);
        if (!dir_ok(args[i].dir))
            return submit_fail(r, SP_ETASK_ARGS,
                               "submit of callable %u on chip %d: argument %u: direction %u", id,
                               chip, i, args[i].dir);
        if (sp_tensor_byte_extent(&t->view, &lo[i], &hi[i]) || hi[i] > b->bytes)
            return submit_fail(r, SP_ESHAPE,
                               "submit of callable %u on chip %d: argument %u: the view leaves "
                               "buffer %u (%llu bytes)",
                               id, chip, i, t->buffer, (unsigned long long)b->bytes);
        if (b->chip != chip && (l3->flags & SP_L3_EXPLICIT_TRANSFERS))
            return submit_fail(r, SP_EL3_PLACEMENT,
                               "submit of callable %u on chip %d: argument %u (buffer %u) lives on "
                               "%s %d and transfers are explicit (SP_L3_EXPLICIT_TRANSFERS)",
                               id, chip, i, t->buffer, b->chip < 0 ? "the host" : "chip", b->chip);
        bchip[i] = b->chip;
    }
    /* Arguments on another chip or the host: a run buffer on `chip` and a
     * copy of the view's bytes in (and out after, for written ones). */
    uint32_t local_buf[SP_L3_MAX_TASK_TENSORS];
    sp_tensor views[SP_L3_MAX_TASK_TENSORS];
    for (uint32_t i = 0; i < arg_count; i++) {
        views[i] = args[i].tensor.view;
        local_buf[i] = args[i].tensor.buffer;
        if (bchip[i] == chip)
            continue;
        uint32_t nb;
        int rc = l3_buffer_new(l3, chip, hi[i] - lo[i], NULL, &nb);
        if (rc) {
            run_failed(r, rc, chip, l3->rank, -1, "%s", l3->err);
            return rc;
        }
        if (r->nrun_bufs == r->run_bufs_cap) {
            uint32_t cap = r->run_bufs_cap ? 2 * r->run_bufs_cap : 16;
            uint32_t *nbv = realloc(r->run_bufs, cap * sizeof *nbv);
            if (!nbv) {
                l3_buffer_release(l3, nb);
                return submit_fail(r, SP_ENOMEM, "inserted copy: %u run buffers", cap);
            }
            r->run_bufs = nbv;
            r->run_bufs_cap = cap;
        }
        r->run_bufs[r->nrun_bufs++] = nb;
        l3_buffer *rb = l3_buffer_get(l3, nb);
        rb->run_local = 1;
        size_t es = sp_tensor_elem_size(&views[i]);
        views[i].offset -= (int64_t)(lo[i] / es);
        local_buf[i] = nb;
        bool in = args[i].dir == SP_IN || args[i].dir == SP_INOUT ||
                  !sp_tensor_is_contiguous(&args[i].tensor.view);
        if (in) {
            int64_t cid = copy_task(r, nb, 0, args[i].tensor.buffer, lo[i], hi[i] - lo[i]);
            if (cid < 0)
                return cid;
        }
    }
    int li = l3_local(l3, chip);
    int64_t tid;
    if (li < 0) {
        tid = task_skip(r);
    } else {
        l3_task *t = task_new(r, L3_CHIP, chip, li);
        if (!t)
            return submit_fail(r, SP_EGRAPH_LIMIT, "submit: a run holds at most %u tasks",
                               L3_MAX_CHUNKS * L3_CHUNK);
        t->u.chip.callable = id;
        t->u.chip.ntens = arg_count;
        t->u.chip.nscal = scalar_count;
        t->u.chip.has_cfg = config != NULL;
        t->u.chip.submitted = 0;
        if (config)
            t->u.chip.cfg = *config;
        if (scalar_count)
            memcpy(t->u.chip.sc, scalars, scalar_count * sizeof(uint64_t));
        int rc = SP_OK;
        for (uint32_t i = 0; i < arg_count && !rc; i++) {
            l3_buffer *b = l3_buffer_get(l3, local_buf[i]);
            sp_tensor *v = &t->u.chip.t[i];
            *v = views[i];
            v->addr = b->dev;
            v->buf_bytes = b->bytes;
            v->owner_task = SP_NO_TASK;
            v->flags |= SP_TENSOR_DEVICE;
            /* The chip run gets the direction as given: a device-resident
             * SP_OUT is written in place like SP_OUT_EXISTING, and a callable
             * whose signature says `out` runs unchanged as a chip task. */
            uint8_t d = args[i].dir;
            t->u.chip.dir[i] = d;
            uint64_t vlo, vhi;
            sp_tensor_byte_extent(v, &vlo, &vhi);
            rc = add_access(r, t, b, vlo, vhi, d != SP_IN);
        }
        if (rc)
            return task_abort(r, t, rc, "chip");
        tid = t->id;
        task_commit(r, t);
    }
    for (uint32_t i = 0; i < arg_count; i++) {
        if (local_buf[i] == args[i].tensor.buffer || args[i].dir == SP_IN)
            continue;
        int64_t cid = copy_task(r, args[i].tensor.buffer, lo[i], local_buf[i], 0, hi[i] - lo[i]);
        if (cid < 0)
            return cid;
    }
    return after_failure(r, tid);
}

/* ---- collectives --------------------------------------------------------------------- */

/* The descriptor for the run's next collective, zeroed: kept from run to
 * run, so a collective allocates only the first time its slot is used.
 * NULL when there is no memory for the slot. */
static l3_coll *coll_slot(sp_l3_run *r)
{
    if (r->ncolls == r->colls_cap) {
        uint32_t cap = r->colls_cap ? 2 * r->colls_cap : 16;
        l3_task **nc = realloc(r->colls, cap * sizeof *nc);
        if (!nc)
            return NULL;
        r->colls = nc;
        l3_coll **nm = realloc(r->coll_mem, cap * sizeof *nm);
        if (!nm)
            return NULL;
        memset(nm + r->colls_cap, 0, (cap - r->colls_cap) * sizeof *nm);
        r->coll_mem = nm;
        r->colls_cap = cap;
    }
    l3_coll **c = &r->coll_mem[r->ncolls];
    if (!*c && !(*c = malloc(sizeof **c)))
        return NULL;
    memset(*c, 0, sizeof **c);
    return *c;
}

static int64_t coll_submit(sp_l3_run *r, sp_l3_domain *d, l3_coll_kind kind, uint32_t root,
                           uint64_t in_off, uint64_t out_off, uint64_t count, int dtype, int op)
{
    static const char *const names[] = {"",          "allreduce", "allgather", "reduce_scatter",
                                        "broadcast", "alltoall"};
    int e = submit_begin(r);
    if (e)
        return e;
    sp_l3 *l3 = r->l3;
    if (!d || d->l3 != l3)
        return submit_fail(r, SP_EINVAL, "%s: %s domain", names[kind],
                           d ? "another sp_l3's" : "a NULL");
    l3_coll *c = coll_slot(r);
    if (!c)
        return submit_fail(r, SP_ENOMEM, "%s: %u collectives", names[kind], r->ncolls + 1);
    c->kind = kind;
    c->dtype = dtype;
    c->op = op;
    c->n = d->n;
    c->root = root;
    c->in_off = in_off;
    c->out_off = out_off;
    c->count = count;
    c->window_bytes = d->window_bytes;
    c->my_rank = l3->rank;
    int first_local = -1;
    for (uint32_t m = 0; m < d->n; m++) {
        int li = l3_local(l3, d->chips[m]);
        l3_buffer *b = l3_buffer_get(l3, d->win[m].buffer);
        c->win[m] = li >= 0 && b ? b->host : NULL;
        c->rank[m] = l3_rank_of(l3, d->chips[m]);
        if (li >= 0 && first_local < 0)
            first_local = (int)m;
    }
    c->transport = d->spans_ranks ? l3->tr : NULL;
    c->group = d->spans_ranks ? d->group : NULL;
    c->tag = (uint32_t)(r->ntasks % L3_TAG_MOD);
    char why[256] = "";
    int rc = l3_coll_check(c, why, sizeof why);
    if (rc)
        return submit_fail(r, rc, "%s over %u chips: %s", names[kind], d->n, why);
    if (first_local < 0)
        return task_skip(r);
    for (uint32_t m = 0; m < d->n; m++)
        if (l3_local(l3, d->chips[m]) >= 0 && !c->win[m])
            return submit_fail(r, SP_ENOTSUP, "%s: chip %d's window has no host-map", names[kind],
                               d->chips[m]);
    int chip0 = d->chips[first_local];
    l3_task *t = task_new(r, L3_COLL, chip0, l3_local(l3, chip0));
    if (!t)
        return submit_fail(r, SP_EGRAPH_LIMIT, "%s: a run holds at most %u tasks", names[kind],
                           L3_MAX_CHUNKS * L3_CHUNK);
    t->comm = d->spans_ranks;
    t->u.coll.c = c;
    memset(&t->u.coll.x, 0, sizeof t->u.coll.x);
    r->colls[r->ncolls++] = t;
    rc = SP_OK;
    for (uint32_t m = 0; m < d->n && !rc; m++) {
        if (l3_local(l3, d->chips[m]) < 0)
            continue;
        l3_buffer *b = l3_buffer_get(l3, d->win[m].buffer);
        uint64_t rlo, rhi, wlo, whi;
        l3_coll_ranges(c, m, &rlo, &rhi, &wlo, &whi);
        if (rhi > rlo)
            rc = add_access(r, t, b, rlo, rhi, false);
        if (!rc && whi > wlo)
            rc = add_access(r, t, b, wlo, whi, true);
    }
    /* A domain's allreduces across ranks go through the transport's
     * iallreduce, which every rank must post in the same order (MPI's rule
     * for collectives on one communicator): chain them in submission order
     * by a write of the byte past the window, which nothing else touches;
     * else two that become ready in different orders on two ranks are
     * mismatched. */
    if (!rc && d->spans_ranks && kind == L3_COLL_ALLREDUCE)
        rc = add_access(r, t, l3_buffer_get(l3, d->win[first_local].buffer), d->window_bytes,
                        d->window_bytes + 1, true);
    if (rc)
        return task_abort(r, t, rc, names[kind]);
    int64_t id = t->id;
    task_commit(r, t);
    return id;
}

SP_EXPORT int64_t sp_l3_allreduce(sp_l3_run *r, sp_l3_domain *d, uint64_t offset, uint64_t count,
                                  int dtype, sp_l3_reduce_op op)
{
    return after_failure(
        r, coll_submit(r, d, L3_COLL_ALLREDUCE, 0, offset, offset, count, dtype, (int)op));
}

SP_EXPORT int64_t sp_l3_allgather(sp_l3_run *r, sp_l3_domain *d, uint64_t in_off, uint64_t out_off,
                                  uint64_t count, int dtype)
{
    return after_failure(r,
                         coll_submit(r, d, L3_COLL_ALLGATHER, 0, in_off, out_off, count, dtype, 0));
}

SP_EXPORT int64_t sp_l3_reduce_scatter(sp_l3_run *r, sp_l3_domain *d, uint64_t in_off,
                                       uint64_t out_off, uint64_t count, int dtype,
                                       sp_l3_reduce_op op)
{
    return after_failure(
        r, coll_submit(r, d, L3_COLL_REDUCE_SCATTER, 0, in_off, out_off, count, dtype, (int)op));
}

SP_EXPORT int64_t sp_l3_broadcast(sp_l3_run *r, sp_l3_domain *d, uint32_t root, uint64_t offset,
                                  uint64_t count, int dtype)
{
    return after_failure(
        r, coll_submit(r, d, L3_COLL_BROADCAST, root, offset, offset, count, dtype, 0));
}

SP_EXPORT int64_t sp_l3_alltoall(sp_l3_run *r, sp_l3_domain *d, uint64_t in_off, uint64_t out_off,
                                 uint64_t count, int dtype)
{
    return after_failure(r,
                         coll_submit(r, d, L3_COLL_ALLTOALL, 0, in_off, out_off, count, dtype, 0));
}

/* ---- the run --------------------------------------------------------------------------- */

SP_EXPORT sp_l3 *sp_l3_run_l3(sp_l3_run *r)
{
    return r ? r->l3 : NULL;
}

SP_EXPORT int sp_l3_run_error(const sp_l3_run *r)
{
    return r ? atomic_load_explicit(&((sp_l3_run *)r)->error, memory_order_acquire) : SP_EINVAL;
}

SP_EXPORT int sp_l3_run_fail(sp_l3_run *r, int status, const char *msg)
{
    if (!r || !r->l3)
        return SP_EINVAL;
    if (status >= 0)
        status = SP_EORCH_FATAL;
    run_failed(r, status, SP_L3_HOST, r->l3->rank, -1, "the L3 orchestration (rank %d): %s",
               r->l3->rank, msg ? msg : "failed");
    return status;
}

static void wait_drained(sp_l3_run *r)
{
    for (;;) {
        uint32_t g = sp__waitword_load(&r->drained);
        if (atomic_load_explicit(&r->pending, memory_order_acquire) == 0)
            return;
        sp__waitword_wait_ne(&r->drained, g, &sp__wait_default, 0, NULL);
    }
}

SP_EXPORT int sp_l3_run_orch(sp_l3 *l3, sp_l3_orch_fn orch, void *user, sp_l3_stats *stats)
{
    if (!l3)
        return SP_EINVAL;
    if (!orch)
        return l3_fail(l3, SP_EINVAL, "sp_l3_run_orch: NULL orchestration");
    if (l3->in_run)
        return l3_fail(l3, SP_EBUSY, "sp_l3_run_orch: a run is in progress");
    uint64_t t0 = sp_now_ns();
    sp_l3_run *r = &l3->run;
    r->l3 = l3;
    r->seq = ++l3->run_seq;
    r->ntasks = 0;
    r->nedges = 0;
    atomic_store_explicit(&r->pending, 0, memory_order_relaxed); /* no run is going on */
    atomic_store_explicit(&r->error, 0,
                          memory_order_relaxed); /* no run is going on: drivers are idle */
    r->err[0] = '\0';
    r->failed_chip = SP_L3_HOST;
    r->failed_rank = -1;
    r->failed_task = -1;
    r->failed_status = 0;
    atomic_store_explicit(&r->chip_tasks, 0, memory_order_relaxed);
    atomic_store_explicit(&r->copies, 0, memory_order_relaxed);
    atomic_store_explicit(&r->collectives, 0, memory_order_relaxed);
    atomic_store_explicit(&r->cancelled, 0, memory_order_relaxed);
    atomic_store_explicit(&r->bytes_moved, 0, memory_order_relaxed);
    r->nrun_bufs = 0;
    r->ncolls = 0;
    r->ndeferred = 0;
    l3->in_run = true;
    int orc = orch(r, user);
    uint64_t t1 = sp_now_ns();
    if (orc < 0)
        run_failed(r, orc, SP_L3_HOST, l3->rank, -1, "the L3 orchestration returned %s (rank %d)",
                   sp_status_name(orc), l3->rank);
    deferred_wait(r);
    wait_drained(r);
    for (uint32_t i = 0; i < r->ncolls; i++) {
        l3_task *t = r->colls[i];
        l3_coll_exec_release(&t->u.coll.x);
        t->u.coll.c = NULL; /* its descriptor stays in coll_mem for the next run */
    }
    l3->in_run = false;
    for (uint32_t i = 0; i < r->nrun_bufs; i++)
        l3_buffer_release(l3, r->run_bufs[i]);
    int status = atomic_load_explicit(&r->error, memory_order_acquire);
    char msg[L3_ERR_LEN];
    snprintf(msg, sizeof msg, "%s", r->err);
    if (l3->tr) {
        l3x_outcome mine = {.status = status,
                            .rank = l3->rank,
                            .chip = r->failed_chip,
                            .task = r->failed_task},
                    first;
        memset(&first, 0, sizeof first);
        snprintf(mine.message, sizeof mine.message, "%s", status ? msg : "");
        int arc = l3->tr->agree(l3->tr->ctx, &mine, &first, sp_now_ns() + l3->rank_timeout_ns);
        if (arc != SP_OK) {
            if (!status) {
                status = arc;
                r->failed_rank = first.rank;
                r->failed_status = arc;
                snprintf(msg, sizeof msg,
                         "%s: rank %d did not answer the end-of-run agreement within %llu ms "
                         "(this rank %d)",
                         sp_status_name(arc), first.rank,
                         (unsigned long long)(l3->rank_timeout_ns / 1000000u), l3->rank);
            }
        } else if (!status && first.status) {
            status = SP_ERANK;
            r->failed_rank = first.rank;
            r->failed_chip = first.chip;
            r->failed_task = first.task;
            r->failed_status = first.status;
            snprintf(msg, sizeof msg, "SP_ERANK: rank %d failed (chip %d, task %lld, %s): %s",
                     first.rank, first.chip, (long long)first.task, sp_status_name(first.status),
                     first.message);
        }
    }
    if (status)
        snprintf(l3->err, sizeof l3->err, "%s", msg);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->wall_ns = sp_now_ns() - t0;
        stats->orch_ns = t1 - t0;
        stats->chip_tasks = atomic_load_explicit(
            &r->chip_tasks,
            memory_order_relaxed); /* the run drained: completions happened before */
        stats->copies = atomic_load_explicit(&r->copies, memory_order_relaxed);
        stats->collectives = atomic_load_explicit(&r->collectives, memory_order_relaxed);
        stats->cancelled = atomic_load_explicit(&r->cancelled, memory_order_relaxed);
        stats->bytes_moved = atomic_load_explicit(&r->bytes_moved, memory_order_relaxed);
        stats->failed_chip = status ? r->failed_chip : SP_L3_HOST;
        stats->failed_rank = status ? r->failed_rank : -1;
        stats->failed_task = status ? r->failed_task : -1;
        stats->failed_status = status ? r->failed_status : 0;
    }
    return status;
}
