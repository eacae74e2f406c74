/* What the collective tests share (tests/l3/test_l3_coll.c,
 * test_l3_collectives.c): a reproducible generator, a plain element-by-
 * element reference of every collective, and a fake in-process transport
 * (src/l3/l3_transport.h) for level 4 without MPI. */
#ifndef SP_L3_COLL_REF_H
#define SP_L3_COLL_REF_H

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/wait.h"
#include "l3/l3_coll.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* ---- a reproducible generator ------------------------------------------------ */
static inline uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t h_bits(_Float16 h)
{
    uint16_t u;
    memcpy(&u, &h, sizeof u);
    return u;
}

static inline _Float16 h_from_bits(uint16_t u)
{
    _Float16 h;
    memcpy(&h, &u, sizeof h);
    return h;
}

/* ---- the reference combine (plain, element by element) ------------------------- */

static inline void ref_combine(void *acc, const void *src, int dtype, int op)
{
    switch (dtype) {
    case SP_DTYPE_F32: {
        float a, b;
        memcpy(&a, acc, 4);
        memcpy(&b, src, 4);
        float r = op == SP_L3_SUM ? a + b : (isnan(a) || isnan(b)) ? NAN : (b > a ? b : a);
        memcpy(acc, &r, 4);
        return;
    }
    case SP_DTYPE_F16: {
        _Float16 a, b;
        memcpy(&a, acc, 2);
        memcpy(&b, src, 2);
        _Float16 r = op == SP_L3_SUM                        ? (_Float16)((float)a + (float)b)
                     : (isnan((float)a) || isnan((float)b)) ? (_Float16)NAN
                                                            : (b > a ? b : a);
        memcpy(acc, &r, 2);
        return;
    }
    case SP_DTYPE_I32: {
        int32_t a, b;
        memcpy(&a, acc, 4);
        memcpy(&b, src, 4);
        int32_t r = op == SP_L3_SUM ? (int32_t)((uint32_t)a + (uint32_t)b) : (b > a ? b : a);
        memcpy(acc, &r, 4);
        return;
    }
    default:
        cr_assert_fail("ref_combine: dtype %d", dtype);
    }
}

static inline int same_element(const void *a, const void *b, int dtype)
{
    if (dtype == SP_DTYPE_F32) {
        float x, y;
        memcpy(&x, a, 4);
        memcpy(&y, b, 4);
        if (isnan(x) || isnan(y))
            return isnan(x) && isnan(y);
    } else if (dtype == SP_DTYPE_F16) {
        _Float16 x, y;
        memcpy(&x, a, 2);
        memcpy(&y, b, 2);
        if (isnan((float)x) || isnan((float)y))
            return isnan((float)x) && isnan((float)y);
    }
    return memcmp(a, b, sp_dtype_size(dtype)) == 0;
}

/* Random values of `dtype`: any bit pattern (`wide`) or small integers,
 * whose sums are exact in every dtype and any order. */
static inline void fill(void *p, uint64_t count, int dtype, uint64_t *s, int wide)
{
    size_t es = sp_dtype_size(dtype);
    for (uint64_t i = 0; i < count; i++) {
        uint8_t *e = (uint8_t *)p + i * es;
        int v = (int)(rng_next(s) % 129) - 64;
        if (wide) {
            uint64_t r = rng_next(s);
            memcpy(e, &r, es);
            if (dtype == SP_DTYPE_F32 && i % 3 == 0) {
                float f = (float)(int64_t)(r >> 40) * 0x1p-7f;
                memcpy(e, &f, 4);
            }
        } else if (dtype == SP_DTYPE_F32) {
            float f = (float)v;
            memcpy(e, &f, 4);
        } else if (dtype == SP_DTYPE_F16) {
            _Float16 h = (_Float16)v;
            memcpy(e, &h, 2);
        } else if (dtype == SP_DTYPE_I32) {
            int32_t x = v;
            memcpy(e, &x, 4);
        } else {
            uint64_t r = rng_next(s);
            memcpy(e, &r, es);
        }
    }
}

/* ---- the reference outcome of a collective ------------------------------------------ */

/* What every window must hold after `c`, from their contents before. */
static inline void reference(const l3_coll *c, uint8_t *const *before, uint8_t **after)
{
    uint32_t n = c->n;
    size_t es = sp_dtype_size(c->dtype);
    uint64_t b = c->count * es;
    for (uint32_t m = 0; m < n; m++)
        memcpy(after[m], before[m], c->window_bytes);
    switch (c->kind) {
    case L3_COLL_ALLREDUCE:
        for (uint64_t e = 0; e < c->count; e++) {
            uint8_t acc[8];
            memcpy(acc, before[0] + c->in_off + e * es, es);
            for (uint32_t m = 1; m < n; m++)
                ref_combine(acc, before[m] + c->in_off + e * es, c->dtype, c->op);
            for (uint32_t m = 0; m < n; m++)
                memcpy(after[m] + c->in_off + e * es, acc, es);
        }
        return;
    case L3_COLL_ALLGATHER:
        for (uint32_t d = 0; d < n; d++)
            for (uint32_t s = 0; s < n; s++)
                memcpy(after[d] + c->out_off + s * b, before[s] + c->in_off, b);
        return;
    case L3_COLL_REDUCE_SCATTER:
        for (uint32_t d = 0; d < n; d++)
            for (uint64_t e = 0; e < c->count; e++) {
                uint8_t acc[8];
                memcpy(acc, before[0] + c->in_off + d * b + e * es, es);
                for (uint32_t s = 1; s < n; s++)
                    ref_combine(acc, before[s] + c->in_off + d * b + e * es, c->dtype, c->op);
                memcpy(after[d] + c->out_off + e * es, acc, es);
            }
        return;
    case L3_COLL_BROADCAST:
        for (uint32_t d = 0; d < n; d++)
            memcpy(after[d] + c->in_off, before[c->root] + c->in_off, b);
        return;
    case L3_COLL_ALLTOALL:
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                memcpy(after[j] + c->out_off + i * b, before[i] + c->in_off + j * b, b);
        return;
    }
}

/* Every window as the reference says, element by element (NaN matches NaN). */
static inline void expect_windows(const l3_coll *c, uint8_t *const *got, uint8_t *const *want,
                                  const char *what)
{
    size_t es = sp_dtype_size(c->dtype);
    for (uint32_t m = 0; m < c->n; m++) {
        if (!memcmp(got[m], want[m], c->window_bytes))
            continue;
        for (uint64_t i = 0; i + es <= c->window_bytes; i += es)
            cr_assert(same_element(got[m] + i, want[m] + i, c->dtype),
                      "%s kind %d dtype %d op %d n %u count %llu: member %u byte %llu differs",
                      what, c->kind, c->dtype, c->op, c->n, (unsigned long long)c->count, m,
                      (unsigned long long)i);
    }
}

/* ---- level 4 over a fake in-process transport ---------------------------------------
 * A "world" of ranks in this process. Point to point matches a send with
 * the first posted receive of the same (source, destination, tag), in
 * posting order, as the transport contract says; the copy and both
 * completions happen on the thread of whichever side came second. The
 * allreduce collects the k-th call of every group member and reduces them
 * with the plain reference. */

#define FAKE_MAX_OPS 4096

typedef struct fake_op {
    int live;
    uint64_t seq; /* posting order */
    int is_send;
    int src, dst;
    uint32_t tag;
    void *buf;
    uint64_t bytes;
    l3x_done_fn done;
    void *user;
} fake_op;

/* One allreduce being gathered: the k-th call of every group member. */
typedef struct fake_allreduce {
    uint32_t seq, arrived;
    void *bufs[8];
    l3x_done_fn dones[8];
    void *users[8];
    uint64_t count;
    int dtype, op;
    int mismatch; /* members disagree on count, dtype or op: posted out of order */
} fake_allreduce;

#define FAKE_AR_SLOTS 8 /* allreduces of one group in flight at once */

struct l3x_group {
    int ranks[8];
    uint32_t n;
    uint32_t seq[8]; /* iallreduce calls made by each member */
    fake_allreduce ar[FAKE_AR_SLOTS];
};

typedef struct fake_world {
    pthread_mutex_t lock;
    int size;
    fake_op ops[FAKE_MAX_OPS];
    struct l3x_group groups[4];
    int group_count;
    int refuse_sends_from; /* -1: none; else isend from this rank fails with SP_ESYS */
    _Atomic int posted;
    uint64_t next_seq;
} fake_world;

typedef struct fake_rank {
    fake_world *w;
    int rank;
    sp_l3_transport t;
} fake_rank;

static inline int fake_rank_of(void *ctx)
{
    return ((fake_rank *)ctx)->rank;
}

static inline int fake_size(void *ctx)
{
    return ((fake_rank *)ctx)->w->size;
}

static inline int fake_group_create(void *ctx, const int *ranks, uint32_t n, l3x_group **out)
{
    fake_world *w = ((fake_rank *)ctx)->w;
    pthread_mutex_lock(&w->lock);
    for (int g = 0; g < w->group_count; g++)
        if (w->groups[g].n == n && !memcmp(w->groups[g].ranks, ranks, n * sizeof *ranks)) {
            *out = &w->groups[g];
            pthread_mutex_unlock(&w->lock);
            return 0;
        }
    cr_assert(w->group_count < 4 && n <= 8);
    struct l3x_group *g = &w->groups[w->group_count++];
    memset(g, 0, sizeof *g);
    memcpy(g->ranks, ranks, n * sizeof *ranks);
    g->n = n;
    *out = g;
    pthread_mutex_unlock(&w->lock);
    return 0;
}

static inline void fake_group_destroy(void *ctx, l3x_group *g)
{
    (void)ctx;
    (void)g;
}

static inline int fake_p2p(fake_rank *me, int is_send, void *buf, uint64_t bytes, int peer,
                           uint32_t tag, l3x_done_fn done, void *user)
{
    fake_world *w = me->w;
    cr_assert(tag < (1u << 20), "tag %u", tag);
    cr_assert(peer >= 0 && peer < w->size && peer != me->rank, "peer %d", peer);
    int src = is_send ? me->rank : peer, dst = is_send ? peer : me->rank;
    pthread_mutex_lock(&w->lock);
    if (is_send && w->refuse_sends_from == me->rank) {
        pthread_mutex_unlock(&w->lock);
        return SP_ESYS;
    }
    atomic_fetch_add(&w->posted, 1);
    /* the oldest posted counterpart of this (source, destination, tag) */
    fake_op *match = NULL;
    for (int i = 0; i < FAKE_MAX_OPS; i++) {
        fake_op *o = &w->ops[i];
        if (o->live && o->is_send != is_send && o->src == src && o->dst == dst && o->tag == tag &&
            (!match || o->seq < match->seq))
            match = o;
    }
    if (!match) {
        fake_op *slot = NULL;
        for (int i = 0; i < FAKE_MAX_OPS && !slot; i++)
            if (!w->ops[i].live)
                slot = &w->ops[i];
        cr_assert(slot, "fake transport: too many operations in flight");
        *slot = (fake_op){1, w->next_seq++, is_send, src, dst, tag, buf, bytes, done, user};
        pthread_mutex_unlock(&w->lock);
        return 0;
    }
    fake_op m = *match;
    match->live = 0;
    pthread_mutex_unlock(&w->lock);
    const void *from = is_send ? buf : m.buf;
    void *to = is_send ? m.buf : buf;
    int st = m.bytes == bytes ? 0 : SP_EINVAL;
    if (!st)
        memcpy(to, from, bytes);
    /* the side posted first completes first, like a real receive */
    m.done(m.user, st, st ? peer : -1);
    done(user, st, st ? peer : -1);
    return 0;
}

static inline int fake_isend(void *ctx, const void *buf, uint64_t bytes, int peer, uint32_t tag,
                             uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    (void)deadline_ns;
    return fake_p2p(ctx, 1, (void *)buf, bytes, peer, tag, done, user);
}

static inline int fake_irecv(void *ctx, void *buf, uint64_t bytes, int peer, uint32_t tag,
                             uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    (void)deadline_ns;
    return fake_p2p(ctx, 0, buf, bytes, peer, tag, done, user);
}

static inline int fake_iallreduce(void *ctx, l3x_group *g, void *buf, uint64_t count, int dtype,
                                  int op, uint64_t deadline_ns, l3x_done_fn done, void *user)
{
    (void)deadline_ns;
    fake_rank *me = ctx;
    fake_world *w = me->w;
    pthread_mutex_lock(&w->lock);
    uint32_t idx = g->n;
    for (uint32_t i = 0; i < g->n; i++)
        if (g->ranks[i] == me->rank)
            idx = i;
    cr_assert(idx < g->n, "rank %d is not in the group", me->rank);
    uint32_t seq = g->seq[idx]++;
    fake_allreduce *a = &g->ar[seq % FAKE_AR_SLOTS];
    if (a->arrived == 0) {
        a->seq = seq;
        a->count = count, a->dtype = dtype, a->op = op;
        a->mismatch = 0;
    }
    cr_assert_eq(a->seq, seq, "more than %d allreduces of one group in flight", FAKE_AR_SLOTS);
    /* what MPI would make of collectives posted in different orders on
     * different ranks: garbage or an error; here always an error */
    if (a->count != count || a->dtype != dtype || a->op != op)
        a->mismatch = 1;
    a->bufs[idx] = buf, a->dones[idx] = done, a->users[idx] = user;
    if (++a->arrived < g->n) {
        pthread_mutex_unlock(&w->lock);
        return 0;
    }
    fake_allreduce all = *a;
    uint32_t n = g->n;
    a->arrived = 0;
    pthread_mutex_unlock(&w->lock);
    if (!all.mismatch) {
        size_t es = sp_dtype_size(dtype);
        uint8_t *acc = malloc(count * es);
        memcpy(acc, all.bufs[0], count * es);
        for (uint32_t i = 1; i < n; i++)
            for (uint64_t e = 0; e < count; e++)
                ref_combine(acc + e * es, (uint8_t *)all.bufs[i] + e * es, dtype, op);
        for (uint32_t i = 0; i < n; i++)
            memcpy(all.bufs[i], acc, count * es);
        free(acc);
    }
    for (uint32_t i = 0; i < n; i++)
        all.dones[i](all.users[i], all.mismatch ? SP_EINVAL : 0, -1);
    return 0;
}

/* Complete every operation still waiting on `peer` as a real transport
 * would at its deadline: SP_ERANK_TIMEOUT naming that peer. */
static inline void fake_expire(fake_world *w, int peer)
{
    for (;;) {
        pthread_mutex_lock(&w->lock);
        fake_op *o = NULL;
        for (int i = 0; i < FAKE_MAX_OPS && !o; i++)
            if (w->ops[i].live && (w->ops[i].is_send ? w->ops[i].dst : w->ops[i].src) == peer)
                o = &w->ops[i];
        if (!o) {
            pthread_mutex_unlock(&w->lock);
            return;
        }
        fake_op m = *o;
        o->live = 0;
        pthread_mutex_unlock(&w->lock);
        m.done(m.user, SP_ERANK_TIMEOUT, peer);
    }
}

static inline fake_world *fake_world_new(int size)
{
    fake_world *w = calloc(1, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
    w->size = size;
    w->refuse_sends_from = -1;
    return w;
}

static inline void fake_rank_init(fake_rank *r, fake_world *w, int rank)
{
    r->w = w;
    r->rank = rank;
    r->t = (sp_l3_transport){
        .ctx = r,
        .rank = fake_rank_of,
        .size = fake_size,
        .group_create = fake_group_create,
        .group_destroy = fake_group_destroy,
        .isend = fake_isend,
        .irecv = fake_irecv,
        .iallreduce = fake_iallreduce,
    };
}

/* The fake transport's end-of-run agreement between two ranks in one
 * process: a barrier that hands both the failing outcome of the lower
 * rank; past the deadline it names the other rank. */
#define FAKE_AGREE_RANKS 2
typedef struct fake_agree_world {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int arrived;
    uint64_t gen;
    l3x_outcome out[FAKE_AGREE_RANKS], first;
} fake_agree_world;

typedef struct fake_agree_rank {
    fake_rank f; /* first: the fake's functions take the context as a fake_rank */
    fake_agree_world *aw;
} fake_agree_rank;

static inline int fake_agree(void *ctx, const l3x_outcome *mine, l3x_outcome *first,
                             uint64_t deadline)
{
    fake_agree_rank *r = ctx;
    fake_agree_world *a = r->aw;
    pthread_mutex_lock(&a->lock);
    a->out[r->f.rank] = *mine;
    uint64_t gen = a->gen;
    if (++a->arrived == FAKE_AGREE_RANKS) {
        memset(&a->first, 0, sizeof a->first);
        for (int i = FAKE_AGREE_RANKS - 1; i >= 0; i--)
            if (a->out[i].status)
                a->first = a->out[i];
        a->arrived = 0;
        a->gen++;
        pthread_cond_broadcast(&a->cond);
    }
    int rc = SP_OK;
    while (a->gen == gen) {
        uint64_t now = sp_now_ns();
        if (now >= deadline) {
            a->arrived--;
            memset(first, 0, sizeof *first);
            first->rank = 1 - r->f.rank;
            rc = SP_ERANK_TIMEOUT;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t ns =
            (uint64_t)ts.tv_nsec + (deadline - now < 10000000u ? deadline - now : 10000000u);
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&a->cond, &a->lock, &ts);
    }
    if (rc == SP_OK)
        *first = a->first;
    pthread_mutex_unlock(&a->lock);
    return rc;
}

static inline const char *fake_last_error(void *ctx)
{
    (void)ctx;
    return "fake transport";
}

#endif
