/* The collectives' data movement (l3_coll.h): the checks, the byte ranges
 * each member's window reads and writes, and the execution.
 *
 * Level 3 (every member in this process): direct window-to-window memcpy
 * and l3_reduce over the host-mapped windows, no host bounce buffer; done
 * is called inline. Level 4 (members on other ranks): this rank's members
 * are combined locally, blocks cross ranks through the transport, and the
 * last transport completion places what arrived and calls done.
 *
 * Layout, with B = count * dtype size bytes (a block):
 *   ALLREDUCE       in place at in_off, B           (out_off unused)
 *   ALLGATHER       reads  [in_off, +B)    writes [out_off, +n*B)
 *   REDUCE_SCATTER  reads  [in_off, +n*B)  writes [out_off, +B)
 *   BROADCAST       root reads, others write [in_off, +B) (out_off unused)
 *   ALLTOALL        reads  [in_off, +n*B)  writes [out_off, +n*B)
 * count 0 is a valid no-op (a program whose split leaves a member nothing
 * need not special-case it): nothing read or written, done(0) at once.
 *
 * x->bytes_moved counts every byte this process wrote into a window: each
 * memcpy or reduction destination and each block received into one (an
 * accumulator written n-1 times counts n-1 times); scratch is not counted. */
#include "l3/l3_coll.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/tensor.h"

/* Allreduce works through the block in pieces that stay in L2 while every
 * member's piece is reduced into member 0's and copied back out. */
#define L3_COLL_CHUNK_BYTES (64u << 10)
#define L3_TAG_LIMIT (1u << 20)

static const char *kind_name(int kind)
{
    switch (kind) {
    case L3_COLL_ALLREDUCE:
        return "allreduce";
    case L3_COLL_ALLGATHER:
        return "allgather";
    case L3_COLL_REDUCE_SCATTER:
        return "reduce_scatter";
    case L3_COLL_BROADCAST:
        return "broadcast";
    case L3_COLL_ALLTOALL:
        return "alltoall";
    default:
        return "collective";
    }
}

static int is_reduction(int kind)
{
    return kind == L3_COLL_ALLREDUCE || kind == L3_COLL_REDUCE_SCATTER;
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t err_len, int status,
                                                      const char *fmt, ...)
{
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* Bytes read at in_off and written at out_off on a member (0: the kind
 * does not use out_off; its writes are at in_off). */
static void spans(const l3_coll *c, uint64_t block, uint64_t *in_len, uint64_t *out_len)
{
    uint64_t all = block * c->n;
    switch (c->kind) {
    case L3_COLL_ALLGATHER:
        *in_len = block, *out_len = all;
        return;
    case L3_COLL_REDUCE_SCATTER:
        *in_len = all, *out_len = block;
        return;
    case L3_COLL_ALLTOALL:
        *in_len = all, *out_len = all;
        return;
    default: /* ALLREDUCE, BROADCAST: in place */
        *in_len = block, *out_len = 0;
        return;
    }
}

int l3_coll_check(const l3_coll *c, char *err, size_t err_len)
{
    if (!c)
        return fail(err, err_len, SP_EINVAL, "collective: NULL description");
    const char *k = kind_name(c->kind);
    if (c->kind < L3_COLL_ALLREDUCE || c->kind > L3_COLL_ALLTOALL)
        return fail(err, err_len, SP_EINVAL, "collective: unknown kind %d", (int)c->kind);
    if (c->n < 1 || c->n > SP_L3_MAX_DOMAIN_CHIPS)
        return fail(err, err_len, SP_EINVAL, "%s: domain of %u members (1..%d)", k, c->n,
                    SP_L3_MAX_DOMAIN_CHIPS);
    size_t es = sp_dtype_size(c->dtype);
    if (!es)
        return fail(err, err_len, SP_EDTYPE, "%s: unknown dtype %d", k, c->dtype);
    if (is_reduction(c->kind)) {
        if (c->dtype != SP_DTYPE_F32 && c->dtype != SP_DTYPE_F16 && c->dtype != SP_DTYPE_I32)
            return fail(err, err_len, SP_EDTYPE, "%s: dtype %s cannot be reduced (f32, f16, i32)",
                        k, sp_dtype_name(c->dtype));
        if (c->op != SP_L3_SUM && c->op != SP_L3_MAX)
            return fail(err, err_len, SP_EINVAL, "%s: unknown reduce op %d (SP_L3_SUM, SP_L3_MAX)",
                        k, c->op);
    }
    if (c->kind == L3_COLL_BROADCAST && c->root >= c->n)
        return fail(err, err_len, SP_EINVAL, "broadcast: root %u is not a member (domain of %u)",
                    c->root, c->n);
    if (c->transport && c->tag >= L3_TAG_LIMIT)
        return fail(err, err_len, SP_EINVAL, "%s: tag %u is not below 2^20", k, c->tag);
    if (c->count > UINT64_MAX / es / c->n)
        return fail(err, err_len, SP_EBOUNDS, "%s: %llu elements overflow a window", k,
                    (unsigned long long)c->count);
    uint64_t block = c->count * es, in_len, out_len;
    spans(c, block, &in_len, &out_len);
    if (c->in_off > c->window_bytes || in_len > c->window_bytes - c->in_off)
        return fail(err, err_len, SP_EBOUNDS,
                    "%s: input [%llu, +%llu) past the window of %llu bytes", k,
                    (unsigned long long)c->in_off, (unsigned long long)in_len,
                    (unsigned long long)c->window_bytes);
    if (out_len && (c->out_off > c->window_bytes || out_len > c->window_bytes - c->out_off))
        return fail(err, err_len, SP_EBOUNDS,
                    "%s: output [%llu, +%llu) past the window of %llu bytes", k,
                    (unsigned long long)c->out_off, (unsigned long long)out_len,
                    (unsigned long long)c->window_bytes);
    /* Blocks are read from the input while others land in the output, on
     * the same member and across members: overlapping ranges would read
     * what the collective already overwrote. */
    if (out_len && block && c->in_off < c->out_off + out_len && c->out_off < c->in_off + in_len)
        return fail(err, err_len, SP_EINVAL,
                    "%s: input [%llu, +%llu) and output [%llu, +%llu) overlap", k,
                    (unsigned long long)c->in_off, (unsigned long long)in_len,
                    (unsigned long long)c->out_off, (unsigned long long)out_len);
    return SP_OK;
}

void l3_coll_ranges(const l3_coll *c, uint32_t m, uint64_t *rd_lo, uint64_t *rd_hi, uint64_t *wr_lo,
                    uint64_t *wr_hi)
{
    *rd_lo = *rd_hi = *wr_lo = *wr_hi = 0;
    if (l3_coll_check(c, NULL, 0) != SP_OK || m >= c->n)
        return;
    uint64_t block = c->count * sp_dtype_size(c->dtype), in_len, out_len;
    spans(c, block, &in_len, &out_len);
    *rd_lo = *rd_hi = c->in_off;
    *wr_lo = *wr_hi = out_len ? c->out_off : c->in_off;
    if (!block)
        return;
    switch (c->kind) {
    case L3_COLL_ALLREDUCE:
        *rd_hi = *wr_hi = c->in_off + block;
        return;
    case L3_COLL_BROADCAST:
        /* the root only reads, the others only write */
        if (m == c->root)
            *rd_hi = c->in_off + block;
        else
            *wr_hi = c->in_off + block;
        return;
    default:
        *rd_hi = c->in_off + in_len;
        *wr_hi = c->out_off + out_len;
        return;
    }
}

/* ---- execution ------------------------------------------------------------ */

static int member_is_local(const l3_coll *c, uint32_t m)
{
    return c->transport ? c->rank[m] == c->my_rank : 1;
}

/* The first of this process's members (n if none). */
static uint32_t first_local(const l3_coll *c)
{
    for (uint32_t m = 0; m < c->n; m++)
        if (member_is_local(c, m))
            return m;
    return c->n;
}

/* Whether member m is the lowest-numbered member on its rank: iterating
 * those visits each rank holding members once, in member order. */
static int first_of_rank(const l3_coll *c, uint32_t m)
{
    for (uint32_t p = 0; p < m; p++)
        if (c->rank[p] == c->rank[m])
            return 0;
    return 1;
}

static uint64_t block_bytes(const l3_coll *c)
{
    return c->count * sp_dtype_size(c->dtype);
}

/* Level 3, or the local members of level 4: reduce members `ms` into
 * ms[0]'s range and copy it back out to the others, in cache-sized pieces. */
static void reduce_then_spread(l3_coll_exec *x, const uint32_t *ms, uint32_t k, uint64_t off,
                               int spread)
{
    const l3_coll *c = x->c;
    size_t es = sp_dtype_size(c->dtype);
    uint64_t step = L3_COLL_CHUNK_BYTES / es;
    for (uint64_t e = 0; e < c->count; e += step) {
        uint64_t len = c->count - e < step ? c->count - e : step;
        uint8_t *acc = c->win[ms[0]] + off + e * es;
        for (uint32_t i = 1; i < k; i++)
            l3_reduce(acc, c->win[ms[i]] + off + e * es, len, c->dtype, c->op);
        if (spread)
            for (uint32_t i = 1; i < k; i++)
                memcpy(c->win[ms[i]] + off + e * es, acc, len * es);
    }
    x->bytes_moved += (uint64_t)(k - 1) * block_bytes(c) * (spread ? 2 : 1);
}

static void copy_to_locals_except(l3_coll_exec *x, uint32_t from, uint64_t off, uint64_t bytes)
{
    const l3_coll *c = x->c;
    for (uint32_t m = 0; m < c->n; m++) {
        if (m == from || !member_is_local(c, m))
            continue;
        memcpy(c->win[m] + off, c->win[from] + off, bytes);
        x->bytes_moved += bytes;
    }
}

static void run_local(l3_coll_exec *x)
{
    const l3_coll *c = x->c;
    uint32_t n = c->n;
    uint64_t b = block_bytes(c);
    switch (c->kind) {
    case L3_COLL_ALLREDUCE: {
        uint32_t ms[SP_L3_MAX_DOMAIN_CHIPS];
        for (uint32_t m = 0; m < n; m++)
            ms[m] = m;
        reduce_then_spread(x, ms, n, c->in_off, 1);
        return;
    }
    case L3_COLL_ALLGATHER:
        for (uint32_t d = 0; d < n; d++)
            for (uint32_t s = 0; s < n; s++)
                memcpy(c->win[d] + c->out_off + s * b, c->win[s] + c->in_off, b);
        x->bytes_moved += (uint64_t)n * n * b;
        return;
    case L3_COLL_REDUCE_SCATTER: {
        size_t es = sp_dtype_size(c->dtype);
        uint64_t step = L3_COLL_CHUNK_BYTES / es;
        for (uint32_t d = 0; d < n; d++) {
            uint8_t *out = c->win[d] + c->out_off;
            uint64_t in = c->in_off + d * b;
            for (uint64_t e = 0; e < c->count; e += step) {
                uint64_t len = c->count - e < step ? c->count - e : step;
                memcpy(out + e * es, c->win[0] + in + e * es, len * es);
                for (uint32_t s = 1; s < n; s++)
                    l3_reduce(out + e * es, c->win[s] + in + e * es, len, c->dtype, c->op);
            }
        }
        x->bytes_moved += (uint64_t)n * n * b;
        return;
    }
    case L3_COLL_BROADCAST:
        copy_to_locals_except(x, c->root, c->in_off, b);
        return;
    case L3_COLL_ALLTOALL:
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++)
                memcpy(c->win[j] + c->out_off + i * b, c->win[i] + c->in_off + j * b, b);
        x->bytes_moved += (uint64_t)n * n * b;
        return;
    }
}

/* ---- level 4 ---------------------------------------------------------------
 * Every message of one collective between one pair of ranks carries c->tag:
 * the transport matches messages of one pair and tag in posting order, and
 * both sides post them in the same order (by source member, then
 * destination member), so blocks need no tags of their own and the
 * collective never collides with another task's tag (the scheduler gives
 * each task its own). x->pending counts posted operations plus one guard
 * held while posting, so an operation completing at once cannot finish the
 * collective early; whoever drops it to zero finishes. */

static void record_failure(l3_coll_exec *x, int status, int peer)
{
    int expected = 0;
    if (atomic_compare_exchange_strong_explicit(&x->status, &expected, status, memory_order_acq_rel,
                                                memory_order_acquire))
        atomic_store_explicit(&x->peer, peer, memory_order_release);
}

/* The other ranks' blocks have arrived (or something failed): combine and
 * place them on this rank's members, then report. */
static void finish_remote(l3_coll_exec *x)
{
    const l3_coll *c = x->c;
    int status = atomic_load_explicit(&x->status, memory_order_acquire);
    int peer = atomic_load_explicit(&x->peer, memory_order_acquire);
    uint64_t b = block_bytes(c);
    uint32_t l0 = first_local(c);
    x->phase = 2;
    if (status == SP_OK) {
        switch (c->kind) {
        case L3_COLL_ALLREDUCE:
            copy_to_locals_except(x, l0, c->in_off, b);
            break;
        case L3_COLL_ALLGATHER:
            /* blocks from other ranks landed in l0's output only */
            for (uint32_t s = 0; s < c->n; s++) {
                if (member_is_local(c, s))
                    continue;
                copy_to_locals_except(x, l0, c->out_off + s * b, b);
            }
            break;
        case L3_COLL_BROADCAST:
            if (!member_is_local(c, c->root))
                copy_to_locals_except(x, l0, c->in_off, b);
            break;
        case L3_COLL_REDUCE_SCATTER: {
            /* the other ranks' partials, in the order they were received
             * into, past the partials this rank sent (when it had more
             * than one member to combine) */
            uint32_t k = 0, remote = 0;
            for (uint32_t m = 0; m < c->n; m++)
                member_is_local(c, m) ? k++ : remote++;
            const uint8_t *slot = x->scratch + (k > 1 ? (uint64_t)remote * b : 0);
            for (uint32_t d = 0; d < c->n; d++) {
                if (!member_is_local(c, d))
                    continue;
                for (uint32_t s = 0; s < c->n; s++) {
                    if (!first_of_rank(c, s) || c->rank[s] == c->my_rank)
                        continue;
                    l3_reduce(c->win[d] + c->out_off, slot, c->count, c->dtype, c->op);
                    x->bytes_moved += b;
                    slot += b;
                }
            }
            break;
        }
        case L3_COLL_ALLTOALL:
            break; /* every block was received in place */
        }
    }
    l3x_done_fn done = x->done;
    void *user = x->user;
    /* the exec may be released from inside done: nothing touches x after */
    done(user, status, status == SP_OK ? -1 : peer);
}

static void op_done(void *user, int status, int peer)
{
    l3_coll_exec *x = user;
    if (status < 0)
        record_failure(x, status, peer);
    if (atomic_fetch_sub_explicit(&x->pending, 1, memory_order_acq_rel) == 1)
        finish_remote(x);
}

static void post_send(l3_coll_exec *x, const void *buf, uint64_t bytes, int peer)
{
    const l3_coll *c = x->c;
    const sp_l3_transport *t = c->transport;
    atomic_fetch_add_explicit(&x->pending, 1, memory_order_relaxed); /* the guard keeps it > 0 */
    int rc = t->isend(t->ctx, buf, bytes, peer, c->tag, c->deadline_ns, op_done, x);
    if (rc < 0)
        op_done(x, rc, peer); /* not posted: the transport will not call back */
}

static void post_recv(l3_coll_exec *x, void *buf, uint64_t bytes, int peer)
{
    const l3_coll *c = x->c;
    const sp_l3_transport *t = c->transport;
    atomic_fetch_add_explicit(&x->pending, 1, memory_order_relaxed); /* the guard keeps it > 0 */
    int rc = t->irecv(t->ctx, buf, bytes, peer, c->tag, c->deadline_ns, op_done, x);
    if (rc < 0)
        op_done(x, rc, peer);
}

static int start_remote(l3_coll_exec *x)
{
    const l3_coll *c = x->c;
    const sp_l3_transport *t = c->transport;
    uint32_t n = c->n;
    uint64_t b = block_bytes(c);
    uint32_t l0 = first_local(c);
    uint32_t locals[SP_L3_MAX_DOMAIN_CHIPS], k = 0;
    for (uint32_t m = 0; m < n; m++)
        if (member_is_local(c, m))
            locals[k++] = m;

    if (c->kind == L3_COLL_REDUCE_SCATTER) {
        /* partials for remote destinations (when more than one member here
         * contributes), then one receive slot per local destination and
         * other rank */
        uint64_t slots = 0;
        for (uint32_t m = 0; m < n; m++) {
            if (!member_is_local(c, m) && k > 1)
                slots++;
            if (first_of_rank(c, m) && c->rank[m] != c->my_rank)
                slots += k;
        }
        if (slots) {
            if (slots > UINT64_MAX / b || !(x->scratch = malloc(slots * b)))
                return SP_ENOMEM;
            x->scratch_bytes = slots * b;
        }
    }

    x->phase = 1;
    atomic_store_explicit(&x->pending, 1, memory_order_relaxed); /* the posting guard */
    switch (c->kind) {
    case L3_COLL_ALLREDUCE: {
        reduce_then_spread(x, locals, k, c->in_off, 0);
        atomic_fetch_add_explicit(&x->pending, 1, memory_order_relaxed);
        int rc = t->iallreduce(t->ctx, c->group, c->win[l0] + c->in_off, c->count, c->dtype, c->op,
                               c->deadline_ns, op_done, x);
        if (rc < 0)
            op_done(x, rc, -1);
        break;
    }
    case L3_COLL_ALLGATHER:
        for (uint32_t i = 0; i < k; i++)
            for (uint32_t j = 0; j < k; j++)
                memcpy(c->win[locals[j]] + c->out_off + locals[i] * b,
                       c->win[locals[i]] + c->in_off, b);
        x->bytes_moved += (uint64_t)k * k * b;
        /* each local block once to every other rank, in member order */
        for (uint32_t i = 0; i < k; i++)
            for (uint32_t r = 0; r < n; r++)
                if (first_of_rank(c, r) && c->rank[r] != c->my_rank)
                    post_send(x, c->win[locals[i]] + c->in_off, b, c->rank[r]);
        for (uint32_t s = 0; s < n; s++)
            if (!member_is_local(c, s)) {
                post_recv(x, c->win[l0] + c->out_off + s * b, b, c->rank[s]);
                x->bytes_moved += b;
            }
        break;
    case L3_COLL_BROADCAST:
        if (member_is_local(c, c->root)) {
            copy_to_locals_except(x, c->root, c->in_off, b);
            for (uint32_t r = 0; r < n; r++)
                if (first_of_rank(c, r) && c->rank[r] != c->my_rank)
                    post_send(x, c->win[c->root] + c->in_off, b, c->rank[r]);
        } else {
            post_recv(x, c->win[l0] + c->in_off, b, c->rank[c->root]);
            x->bytes_moved += b;
        }
        break;
    case L3_COLL_REDUCE_SCATTER: {
        uint8_t *slot = x->scratch;
        /* this rank's partial of every remote member's block */
        for (uint32_t d = 0; d < n; d++) {
            if (member_is_local(c, d))
                continue;
            uint64_t in = c->in_off + d * b;
            if (k == 1) {
                post_send(x, c->win[l0] + in, b, c->rank[d]);
                continue;
            }
            memcpy(slot, c->win[locals[0]] + in, b);
            for (uint32_t i = 1; i < k; i++)
                l3_reduce(slot, c->win[locals[i]] + in, c->count, c->dtype, c->op);
            post_send(x, slot, b, c->rank[d]);
            slot += b;
        }
        /* the local members' own blocks now; the other ranks' partials
         * are added when they are all in (finish_remote) */
        for (uint32_t j = 0; j < k; j++) {
            uint32_t d = locals[j];
            uint64_t in = c->in_off + d * b;
            memcpy(c->win[d] + c->out_off, c->win[locals[0]] + in, b);
            for (uint32_t i = 1; i < k; i++)
                l3_reduce(c->win[d] + c->out_off, c->win[locals[i]] + in, c->count, c->dtype,
                          c->op);
            x->bytes_moved += (uint64_t)k * b;
            for (uint32_t s = 0; s < n; s++)
                if (first_of_rank(c, s) && c->rank[s] != c->my_rank) {
                    post_recv(x, slot, b, c->rank[s]);
                    slot += b;
                }
        }
        break;
    }
    case L3_COLL_ALLTOALL:
        /* in (source, destination) member order on both sides */
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < n; j++) {
                int li = member_is_local(c, i), lj = member_is_local(c, j);
                if (li && lj) {
                    memcpy(c->win[j] + c->out_off + i * b, c->win[i] + c->in_off + j * b, b);
                    x->bytes_moved += b;
                } else if (li) {
                    post_send(x, c->win[i] + c->in_off + j * b, b, c->rank[j]);
                } else if (lj) {
                    post_recv(x, c->win[j] + c->out_off + i * b, b, c->rank[i]);
                    x->bytes_moved += b;
                }
            }
        break;
    }
    op_done(x, SP_OK, -1); /* drop the posting guard */
    return SP_OK;
}

int l3_coll_start(l3_coll_exec *x, const l3_coll *c, l3x_done_fn done, void *user)
{
    if (!x || !c || !done)
        return SP_EINVAL;
    memset(x, 0, sizeof *x);
    x->c = c;
    x->done = done;
    x->user = user;
    atomic_init(&x->pending, 0);
    atomic_init(&x->status, SP_OK);
    atomic_init(&x->peer, -1);
    int rc = l3_coll_check(c, NULL, 0);
    if (rc != SP_OK)
        return rc;
    int remote = 0, any_local = 0;
    for (uint32_t m = 0; m < c->n; m++) {
        if (member_is_local(c, m)) {
            if (!c->win[m])
                return SP_EINVAL; /* a member of this process without its window */
            any_local = 1;
        } else {
            remote = 1;
        }
    }
    if (remote && (!c->transport->isend || !c->transport->irecv ||
                   (c->kind == L3_COLL_ALLREDUCE && (!c->group || !c->transport->iallreduce))))
        return SP_EINVAL;
    if (c->count == 0 || !any_local) {
        done(user, SP_OK, -1);
        return SP_OK;
    }
    if (!remote) {
        run_local(x);
        x->phase = 2;
        done(user, SP_OK, -1);
        return SP_OK;
    }
    return start_remote(x);
}

void l3_coll_exec_release(l3_coll_exec *x)
{
    if (!x)
        return;
    free(x->scratch);
    x->scratch = NULL;
    x->scratch_bytes = 0;
}
