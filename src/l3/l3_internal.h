/* The L3 layer's internal state (simpler/l3.h): the chips' workers, the
 * buffer table, the per-chip drivers and one run's task records. l3.c owns
 * open/close and the buffers, l3_run.c the tasks, their dependencies and
 * their execution. */
#ifndef SP_L3_INTERNAL_H
#define SP_L3_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/wait.h"
#include "l3/l3_coll.h"
#include "l3/l3_transport.h"
#include "simpler/l3.h"

#define L3_ERR_LEN 512
#define L3_TAG_MOD (1u << 20)
/* Buffer ids: the index in the low bits, a generation above, so a freed
 * id names nothing instead of the buffer that reuses its slot. */
#define L3_BUF_INDEX_BITS 20u
#define L3_BUF_INDEX_MASK ((1u << L3_BUF_INDEX_BITS) - 1u)
#define L3_BUF_GEN_MASK ((1u << (32u - L3_BUF_INDEX_BITS)) - 1u)
/* Task records come in chunks that never move (drivers and the transport
 * hold pointers to them); chunks stay with the sp_l3 for the next run. */
#define L3_CHUNK_SHIFT 8u
#define L3_CHUNK (1u << L3_CHUNK_SHIFT)
#define L3_MAX_CHUNKS 16384u /* a run's most tasks: L3_MAX_CHUNKS * L3_CHUNK */
#define L3_EDGE_CHUNK_SHIFT 10u
#define L3_EDGE_CHUNK (1u << L3_EDGE_CHUNK_SHIFT)
#define L3_MAX_LANE 4u

/* One access of a task to a byte range of a buffer, for dependencies. */
typedef struct l3_access {
    uint32_t task;
    uint32_t write;
    uint64_t lo, hi;
} l3_access;

typedef struct l3_buffer {
    uint32_t gen;
    uint8_t live;
    uint8_t run_local;  /* made by sp_l3_run_tensor: freed at the run's end */
    uint8_t host_owned; /* SP_L3_HOST: caller memory */
    uint8_t mapped;     /* `host` is a host-map of `dev` (unmap before free) */
    int32_t chip;       /* global chip, or SP_L3_HOST */
    uint64_t dev;       /* device address on its chip's worker (0: remote or host) */
    uint64_t bytes;
    uint8_t *host;    /* the bytes in this process: host-map, caller memory, or NULL */
    uint64_t run_seq; /* the last run that used it (SP_EBUSY for free during it) */
    l3_access *acc;   /* this run's accesses (valid while acc_seq == run seq) */
    uint32_t nacc, acc_cap;
    uint64_t acc_seq;
    uint32_t next_free;
} l3_buffer;

typedef enum l3_kind {
    L3_CHIP = 1,
    L3_COPY = 2, /* both ends in this process */
    L3_SEND = 3, /* source here, destination on another rank */
    L3_RECV = 4, /* destination here, source on another rank */
    L3_COLL = 5,
} l3_kind;

/* A cancelled task's status: not a failure of its own (positive, never
 * returned to a caller). */
#define L3_CANCELLED 1

typedef struct l3_task l3_task;
struct l3_task {
    l3_task *_Atomic qnext; /* the driver's ready queue link */
    sp_l3_run *run;
    int64_t id;
    uint8_t kind;
    uint8_t comm;            /* takes part in cross-rank communication: never cancelled */
    int16_t drv;             /* the local driver that runs it */
    int32_t chip;            /* global chip it runs on (copies: the local end; SP_L3_HOST) */
    _Atomic int32_t waits;   /* producers not done, + 1 while being submitted */
    _Atomic uint32_t cancel; /* a producer failed or was cancelled */
    atomic_flag lock;        /* guards succ and done's transition */
    _Atomic uint32_t done;
    _Atomic int status; /* 0, a failure, or L3_CANCELLED; valid once done */
    uint32_t succ;      /* first edge (index + 1 into the run's edges), 0: none */
    union {
        struct {
            uint32_t callable;
            uint32_t ntens, nscal;
            uint32_t has_cfg;
            uint32_t submitted; /* handed to its driver already submitted (h, slot) */
            uint32_t slot;
            sp_run_handle h;
            sp_call_config cfg;
            uint8_t dir[SP_L3_MAX_TASK_TENSORS];
            uint64_t sc[SP_L3_MAX_TASK_SCALARS];
            sp_tensor t[SP_L3_MAX_TASK_TENSORS];
        } chip;
        struct {
            uint8_t *dst, *src; /* host-mapped ends (NULL: bounce through a worker copy) */
            sp_worker *dst_w, *src_w;
            uint64_t dst_dev, src_dev;
            uint64_t bytes;
            int peer;
        } copy;
        struct {
            l3_coll *c; /* owned by the run (freed at its end) */
            l3_coll_exec x;
        } coll;
    } u;
};

typedef struct l3_edge {
    uint32_t next; /* index + 1, 0: end */
    uint32_t task;
} l3_edge;

/* One driver per local chip: runs its chip's tasks through the worker's
 * async lane, and the copies and collectives that land on it. */
typedef struct l3_driver {
    _Alignas(SP_CACHE_LINE) sp__waitword wake;          /* bumped on every push */
    _Alignas(SP_CACHE_LINE) _Atomic uint32_t lane_used; /* runs submitted, not waited */
    _Atomic uint32_t slot_free;                         /* bit s: slot[s] is free */
    /* 1 while the driver holds a chip task waiting for a lane: only then
     * does a lane released elsewhere wake it (a woken idle driver would
     * spin and yield on a CPU the chips need). */
    _Atomic uint32_t lane_wanted;
    _Alignas(SP_CACHE_LINE) l3_task *_Atomic q_tail;
    l3_task *q_head;
    l3_task q_stub;
    sp_l3 *l3;
    int local;
    uint32_t depth; /* runs in flight at once on the worker */
    pthread_t thread;
    bool started;
    sp_args *slot[L3_MAX_LANE];
} l3_driver;

struct sp_l3_run {
    sp_l3 *l3;
    uint64_t seq;
    /* Task records and edges: the orchestration thread is their one writer. */
    uint32_t ntasks;
    uint32_t nedges;
    _Alignas(SP_CACHE_LINE) _Atomic uint32_t pending; /* tasks submitted, not done */
    /* Bumped each time `pending` reaches 0: the end-of-run wait sleeps on
     * this, not on every completion. */
    _Alignas(SP_CACHE_LINE) sp__waitword drained;
    _Alignas(SP_CACHE_LINE) _Atomic int error; /* first failure (0: none) */
    char err[L3_ERR_LEN];
    int32_t failed_chip, failed_rank;
    int64_t failed_task;
    int32_t failed_status;
    _Atomic uint32_t chip_tasks, copies, collectives, cancelled;
    _Atomic uint64_t bytes_moved;
    /* Buffers made in this run (freed at its end) and collectives. */
    uint32_t *run_bufs;
    uint32_t nrun_bufs, run_bufs_cap;
    l3_task **colls;
    /* coll_mem[i]: the descriptor of the run's i-th collective, allocated
     * once and kept for the next runs (tasks point at it until the end). */
    l3_coll **coll_mem;
    uint32_t ncolls, colls_cap;
    /* Chip runs the orchestration thread submitted and still holds. */
    l3_task *deferred[SP_L3_MAX_CHIPS];
    uint32_t ndeferred;
};

struct sp_l3 {
    uint32_t local_chips; /* chips of this process */
    uint32_t total_chips; /* every rank's */
    uint32_t flags;
    int rank, nranks;
    int first_chip; /* global index of local chip 0 */
    const sp_l3_transport *tr;
    uint64_t rank_timeout_ns;
    sp_worker *w[SP_L3_MAX_CHIPS];
    l3_driver *drv;
    _Atomic uint32_t stop;
    sp_l3_domain *domains;
    /* Buffers. */
    l3_buffer *bufs;
    uint32_t nbufs, bufs_cap, free_head; /* free_head: index + 1, 0: none */
    /* Runs. */
    uint64_t run_seq;
    bool in_run;
    sp_l3_run run;
    /* Fixed directories (never reallocated: other threads index them). */
    l3_task **chunks;      /* L3_MAX_CHUNKS */
    l3_edge **edge_chunks; /* L3_MAX_CHUNKS */
    char err[L3_ERR_LEN];
};

struct sp_l3_domain {
    sp_l3 *l3;
    uint32_t n;
    uint64_t window_bytes;
    int chips[SP_L3_MAX_DOMAIN_CHIPS];
    sp_l3_tensor win[SP_L3_MAX_DOMAIN_CHIPS];
    bool member;               /* a member chip is in this process */
    bool spans_ranks;          /* members on more than one rank: the group is used */
    l3x_group *group;          /* the transport's group of the members' ranks */
    sp_l3_domain *next, *prev; /* the sp_l3's domains (sp_l3_close frees what is left) */
};

/* The error text of the sp_l3 (printf-style); returns `status`. */
int l3_fail(sp_l3 *l3, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The buffer an id names, or NULL (SP_ESTALE semantics: freed or never made). */
l3_buffer *l3_buffer_get(sp_l3 *l3, uint32_t id);
/* A new buffer record (memory on its chip if local); 0 and *id, or a status. */
int l3_buffer_new(sp_l3 *l3, int chip, uint64_t bytes, void *host, uint32_t *id);
/* A tensor on a new buffer (l3.c's alloc and host tensors, run tensors);
 * 0 or a status with the sp_l3's error set naming `what`. */
int l3_tensor_make(sp_l3 *l3, int chip, void *host, int dtype, int ndim, const int64_t *shape,
                   sp_l3_tensor *out, const char *what);
/* Free a buffer's memory and its record. */
int l3_buffer_release(sp_l3 *l3, uint32_t id);
/* Local index of a global chip in this process, or -1. */
static inline int l3_local(const sp_l3 *l3, int chip)
{
    int i = chip - l3->first_chip;
    return (chip >= 0 && i >= 0 && (uint32_t)i < l3->local_chips) ? i : -1;
}
static inline int l3_rank_of(const sp_l3 *l3, int chip)
{
    return chip < 0 ? l3->rank : chip / (int)l3->local_chips;
}

/* Drivers (l3_run.c). */
int l3_drivers_start(sp_l3 *l3, char *err, size_t err_len);
void l3_drivers_stop(sp_l3 *l3);
void l3_runs_free(sp_l3 *l3);

#endif
