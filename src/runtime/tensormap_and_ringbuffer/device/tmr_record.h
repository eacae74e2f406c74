/* tensormap_and_ringbuffer's recorded submit stream (DESIGN §12, replay
 * across runs): the format, and the recorder the orchestrator writes it
 * with. While a recorded run's orchestration runs, every task published,
 * every scope begin / end and every sp_alloc_tensor goes into a bounded
 * device buffer the host gave the run (the bank's image), symbolically:
 * tensors as "run argument i at an offset", "output k of task p", "heap
 * offset" (sp_alloc_tensor) or an absolute address; scalars with their
 * source; the producers the TensorMap derived. Task ids are stream
 * positions: a replay is a whole run, so task p of the record is task p
 * of the replay. A stream that does not fit, or that depends on the run
 * itself (a control read of a value a task produced, a control write), is
 * abandoned: the run goes on, nothing is kept. A predicated task keeps its
 * predicate, its element's address as symbolic as a tensor's. The same
 * buffer, uploaded again, is what a replay streams from. */
#ifndef SP_RUNTIME_TMR_RECORD_H
#define SP_RUNTIME_TMR_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/device/tensormap.h"
#include "simpler/types.h"

#define TMR_REC_MAGIC 0x4d52545244434552ull /* "RECDRTMR" */
#define TMR_REC_MAX_READS 1024u

/* Why a recording was abandoned (tmr_rec_header.abandoned; 0: keepable). */
enum {
    TMR_REC_OK = 0,
    TMR_REC_FULL = 1,          /* the stream outgrew its buffer */
    TMR_REC_READ_PRODUCED = 2, /* a control read of a value a task of the run wrote */
    TMR_REC_WRITE = 3,         /* sp_tensor_write: not replayed */
    /* 4: unused (predicated tasks are recorded, tmr_rec_pred) */
    TMR_REC_READS_FULL = 5,   /* more than TMR_REC_MAX_READS control reads */
    TMR_REC_UNRESOLVED = 6,   /* a tensor argument with no symbolic form */
    TMR_REC_READ_DEVICE = 7,  /* a control read of a device-resident argument */
    TMR_REC_GRAPH_SCALAR = 8, /* SP_SCALAR_GRAPH outside a graph task: its run source unknown */
};

/* The buffer: this header, the stream (stream_cap bytes), then the reads. */
typedef struct tmr_rec_header {
    uint64_t magic;
    uint64_t uid;          /* the stream's identity (content hash), 0: none yet */
    uint64_t stream_bytes; /* used */
    uint64_t stream_cap;
    uint32_t task_count;
    uint32_t read_count;
    uint32_t abandoned; /* TMR_REC_* */
    uint32_t pad;
    uint64_t written[SP_MAX_RUN_TENSORS / 64]; /* run arguments a task of the run writes */
    uint64_t reserved[6];
} tmr_rec_header;
_Static_assert(sizeof(tmr_rec_header) % 64 == 0, "the stream starts 64-byte aligned");

/* One control-tensor read of a staged argument (the host checks it). */
typedef struct tmr_rec_read {
    uint32_t arg;
    uint32_t bytes;
    uint64_t byte_off; /* from the argument's buffer start */
    uint64_t value;
} tmr_rec_read;

/* Stream entries: 8-byte aligned, each starting with its kind and size. */
/* TMR_OP_REGION: the graph tasks' record region carved from the heap's
 * far end (as an sp_alloc_tensor is): a replay carves it too, so every
 * later allocation lands where the recording had it. */
enum {
    TMR_OP_TASK = 1,
    TMR_OP_SCOPE_BEGIN = 2,
    TMR_OP_SCOPE_END = 3,
    TMR_OP_ALLOC = 4,
    TMR_OP_REGION = 5,
};

typedef struct tmr_rec_op {
    uint32_t kind;
    uint32_t bytes; /* the whole entry */
    uint64_t a;     /* SCOPE_BEGIN: mode; ALLOC, REGION: carve bytes */
    uint64_t b;     /* ALLOC: the tensor's buffer bytes (red zones) */
} tmr_rec_op;

/* How a tensor argument resolves at replay. */
enum {
    TMR_ARG_RUN = 0,      /* staged run argument `index`, addr = its base + view.addr */
    TMR_ARG_OWN_OUT = 1,  /* this task's output: carved afresh (view.addr unused) */
    TMR_ARG_PRODUCED = 2, /* argument `index` of task `task` (a runtime-owned output) + view.addr */
    TMR_ARG_STATIC = 3,   /* an sp_alloc_tensor buffer: the heap's base + view.addr */
    TMR_ARG_ABS = 4,      /* view.addr as it is (run-independent) */
};

/* One tensor argument: this, then shape[ndim] and strides[ndim] (int64):
 * the view as the kernel sees it, its address per kind. 56 + 16 * ndim
 * bytes (a 1-D tensor 72, not sp_tensor's 128). */
typedef struct tmr_rec_arg {
    uint8_t kind;
    uint8_t dir;
    uint16_t index; /* RUN: the run argument; PRODUCED: the producer's argument */
    uint8_t ndim;
    uint8_t dtype;
    uint16_t flags;
    int64_t owner_task; /* the view's (PRODUCED: the producer) */
    uint64_t addr;      /* RUN, PRODUCED, STATIC: an offset (see the kinds); ABS: as is */
    uint64_t buf_bytes;
    int64_t offset;
    uint32_t version;
    uint32_t pad;
    uint64_t reserved;
} tmr_rec_arg;

static inline uint64_t tmr_rec_arg_bytes(uint32_t ndim)
{
    return sizeof(tmr_rec_arg) + 16ull * ndim;
}

/* A predicated task's predicate: `element op value` (sp_pred_op, the
 * element's integer dtype), the element's address resolved by `kind` as a
 * tensor argument's is (TMR_ARG_RUN, PRODUCED, STATIC or ABS; `addr` the
 * element's byte offset from what the kind names), and `owner` the
 * creator of a runtime-owned predicate tensor (held, as a submit holds
 * it), else SP_NO_TASK. Its edge is among the task's recorded producers. */
typedef struct tmr_rec_pred {
    uint8_t op;
    uint8_t dtype;
    uint8_t kind;
    uint8_t pad;
    uint16_t index; /* RUN: the run argument; PRODUCED: the producer's argument */
    uint16_t pad2;
    int64_t owner;
    uint64_t addr;
    int64_t value;
} tmr_rec_pred;

/* A task entry: this, then tensor_count tmr_rec_arg, scalar_count u64
 * values, scalar_count u16 sources (padded to 8 bytes), dep_count u64
 * producers ((id << 8) | edge kind), and a tmr_rec_pred if `pred`. */
typedef struct tmr_rec_task {
    uint32_t kind;
    uint32_t bytes;
    uint8_t shape;
    uint8_t tensor_count;
    uint8_t scalar_count;
    uint8_t pred; /* 1: a tmr_rec_pred ends the entry */
    uint32_t block_num;
    int32_t kernel[3];
    uint32_t dep_count;
    uint32_t check_mask;
    uint32_t pad2;
    uint64_t heap_need;
} tmr_rec_task;

/* Bytes of a task entry whose tensors take `arg_bytes` together. */
static inline uint64_t tmr_rec_task_bytes(uint64_t arg_bytes, uint32_t scalars, uint32_t deps,
                                          bool pred)
{
    return sizeof(tmr_rec_task) + arg_bytes + 8ull * scalars + ((2ull * scalars + 7) & ~7ull) +
           8ull * deps + (pred ? sizeof(tmr_rec_pred) : 0);
}

static inline tmr_rec_read *tmr_rec_reads(tmr_rec_header *h)
{
    return (tmr_rec_read *)((char *)(h + 1) + h->stream_cap);
}

static inline char *tmr_rec_stream(tmr_rec_header *h)
{
    return (char *)(h + 1);
}

struct tmr_orch;
struct tmr_task;

/* The recorder: where the next entry goes. */
typedef struct tmr_recorder {
    tmr_rec_header *h;
    uint32_t run_tensors; /* the run's tensor count */
} tmr_recorder;

/* Start recording into `h` (stream_cap set by the host). */
void tmr_record_begin(tmr_recorder *r, tmr_rec_header *h, uint32_t run_tensors);
/* Give the recording up (keeps the first reason). */
void tmr_record_abandon(tmr_recorder *r, uint32_t why);
/* Append the task in slot `t` (filled, its producers `deps`). */
void tmr_record_task(tmr_recorder *r, struct tmr_orch *o, const struct tmr_task *t,
                     const rt_dep_list *deps, const uint16_t *scalar_src);
void tmr_record_op(tmr_recorder *r, uint32_t kind, uint64_t a, uint64_t b);
/* A control read of element bytes [off, off + bytes) of run argument
 * `arg` (arg < 0: not a staged argument) with value `v`. */
void tmr_record_read(tmr_recorder *r, int arg, uint64_t off, uint32_t bytes, const void *v);

#endif
