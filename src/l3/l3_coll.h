/* The data movement of one collective (sp_l3_allreduce & co.): what each
 * member's window reads and writes (for the dependencies the scheduler
 * derives) and the execution, over the host-mapped windows of this
 * process's members, with the transport for members on other ranks. The
 * scheduler owns the task; this file owns what the task does. */
#ifndef SP_L3_COLL_H
#define SP_L3_COLL_H

#include <stdatomic.h>
#include <stdint.h>

#include "l3/l3_transport.h"
#include "simpler/l3.h"

typedef enum l3_coll_kind {
    L3_COLL_ALLREDUCE = 1,
    L3_COLL_ALLGATHER = 2,
    L3_COLL_REDUCE_SCATTER = 3,
    L3_COLL_BROADCAST = 4,
    L3_COLL_ALLTOALL = 5,
} l3_coll_kind;

/* One collective as submitted: offsets in bytes into every member's
 * window, `count` elements per block (sp_l3.h says what a block is for
 * each kind). ALLREDUCE and BROADCAST work in place at in_off (out_off
 * unused); count 0 is a valid no-op. */
typedef struct l3_coll {
    l3_coll_kind kind;
    int dtype;
    int op;     /* sp_l3_reduce_op, for ALLREDUCE and REDUCE_SCATTER */
    uint32_t n; /* members */
    uint32_t root;
    uint64_t in_off, out_off, count;
    uint64_t window_bytes;
    /* Per member: its window's host address in this process (host-map),
     * NULL for a member on another rank; and the rank that holds it. */
    uint8_t *win[SP_L3_MAX_DOMAIN_CHIPS];
    int rank[SP_L3_MAX_DOMAIN_CHIPS];
    int my_rank;
    /* The transport and the group of the domain's ranks (NULL, NULL at
     * level 3 or when every member is in this process). */
    const sp_l3_transport *transport;
    l3x_group *group;
    uint64_t deadline_ns; /* for transport operations (0 = none) */
    uint32_t tag;         /* distinct per collective of a run, for point to point */
} l3_coll;

/* Check a collective against its domain (dtype, op, kind, offsets and
 * sizes within window_bytes): 0, or SP_EINVAL / SP_EDTYPE / SP_EBOUNDS with
 * the reason in `err`. */
int l3_coll_check(const l3_coll *c, char *err, size_t err_len);

/* The byte ranges [lo, hi) of member m's window the collective reads and
 * writes (hi == lo: none), for dependency derivation. */
void l3_coll_ranges(const l3_coll *c, uint32_t m, uint64_t *rd_lo, uint64_t *rd_hi, uint64_t *wr_lo,
                    uint64_t *wr_hi);

/* One collective in flight in this process: started by the scheduler when
 * the collective's dependencies are done; calls done(user, status, peer)
 * exactly once when this process's part is complete (inline from
 * l3_coll_start for a purely local one, else from the transport's
 * progress thread). Lives in the scheduler's task until then. */
typedef struct l3_coll_exec {
    const l3_coll *c;
    l3x_done_fn done;
    void *user;
    _Atomic uint32_t pending; /* transport operations not yet complete */
    _Atomic int status;
    _Atomic int peer;
    uint32_t phase;
    uint64_t bytes_moved; /* this process's share, for sp_l3_stats */
    uint8_t *scratch;     /* owned; freed by l3_coll_exec_release */
    uint64_t scratch_bytes;
} l3_coll_exec;

/* 0: done has been called (inline) or will be, exactly once; `c` must stay
 * valid until then. Negative (SP_EINVAL: the check fails, a member of this
 * process has no window, remote members without a transport or group;
 * SP_ENOMEM): nothing started, done is not called. */
int l3_coll_start(l3_coll_exec *x, const l3_coll *c, l3x_done_fn done, void *user);
void l3_coll_exec_release(l3_coll_exec *x);

/* dst[i] = dst[i] op src[i] for `count` elements of `dtype` (F32, F16, I32). */
void l3_reduce(void *dst, const void *src, uint64_t count, int dtype, int op);
/* IEEE binary16 <-> float: exact widening; narrowing rounds to nearest
 * even (overflow to inf, NaN to a quiet NaN, subnormals kept). */
float l3_f16_to_float(uint16_t h);
uint16_t l3_f16_from_float(float f);

#endif
