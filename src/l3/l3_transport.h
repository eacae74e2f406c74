/* How the ranks of a level-4 job reach each other: the table the L3 layer
 * calls for cross-rank copies, collectives and the end-of-run agreement.
 * libsimpler_mpi (src/l4/) implements it over Open MPI; the L3 layer never
 * names MPI. Non-blocking operations complete through `done`, called once,
 * from the transport's own progress thread (or inline when the operation
 * finishes at once); no call blocks a chip's scheduler. Each operation has
 * a deadline (an sp_now_ns time, 0 = none): past it the transport
 * completes it with SP_ERANK_TIMEOUT and the peer it waited for. */
#ifndef SP_L3_TRANSPORT_H
#define SP_L3_TRANSPORT_H

#include <stdint.h>

#include "simpler/l3.h"

/* done(user, status, peer): status 0 or negative; peer the rank at fault
 * (-1 when none or not known). */
typedef void (*l3x_done_fn)(void *user, int status, int peer);

/* A set of ranks a collective spans (opaque; the transport's). */
typedef struct l3x_group l3x_group;

/* One rank's outcome of a run, for the end-of-run agreement. */
typedef struct l3x_outcome {
    int32_t status; /* 0 or the rank's first failure */
    int32_t rank;
    int32_t chip; /* global chip, SP_L3_HOST if none */
    int32_t reserved;
    int64_t task;
    char message[200];
} l3x_outcome;

struct sp_l3_transport {
    void *ctx;
    int (*rank)(void *ctx);
    int (*size)(void *ctx);
    /* A group of `n` ranks (ascending, the caller among them): called by
     * every member, in the same order as the other members' calls. */
    int (*group_create)(void *ctx, const int *ranks, uint32_t n, l3x_group **out);
    void (*group_destroy)(void *ctx, l3x_group *g);
    /* Point to point; `tag` < 2^20 (the L3 layer uses task ids modulo it;
     * messages between one pair with one tag match in posting order). */
    int (*isend)(void *ctx, const void *buf, uint64_t bytes, int peer, uint32_t tag,
                 uint64_t deadline_ns, l3x_done_fn done, void *user);
    int (*irecv)(void *ctx, void *buf, uint64_t bytes, int peer, uint32_t tag, uint64_t deadline_ns,
                 l3x_done_fn done, void *user);
    /* In place over the group: `count` elements of `dtype` (SP_DTYPE_F32,
     * F16, I32), `op` an sp_l3_reduce_op. Every member posts it in the
     * same order. */
    int (*iallreduce)(void *ctx, l3x_group *g, void *buf, uint64_t count, int dtype, int op,
                      uint64_t deadline_ns, l3x_done_fn done, void *user);
    /* Blocking, every rank: each gives its outcome, all get the failing
     * rank's with the lowest rank (status 0 when none failed). 0, or
     * SP_ERANK_TIMEOUT with `first->rank` the rank that did not answer. */
    int (*agree)(void *ctx, const l3x_outcome *mine, l3x_outcome *first, uint64_t deadline_ns);
    /* The transport's last failure text ("" if none). */
    const char *(*last_error)(void *ctx);
};

#endif
