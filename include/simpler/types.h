/* Core value types shared by the host, the runtimes and the kernels:
 * dtypes, the tensor descriptor, argument directions and limits, run
 * arguments and the per-call configuration. All are fixed-size PODs. */
#ifndef SIMPLER_TYPES_H
#define SIMPLER_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/export.h"

/* ---- dtypes ------------------------------------------------------------ */
typedef enum sp_dtype {
    SP_DTYPE_INVALID = 0,
    SP_DTYPE_F32 = 1,
    SP_DTYPE_F16 = 2,
    SP_DTYPE_BF16 = 3,
    SP_DTYPE_F64 = 4,
    SP_DTYPE_I8 = 5,
    SP_DTYPE_U8 = 6,
    SP_DTYPE_I16 = 7,
    SP_DTYPE_U16 = 8,
    SP_DTYPE_I32 = 9,
    SP_DTYPE_U32 = 10,
    SP_DTYPE_I64 = 11,
    SP_DTYPE_U64 = 12,
    SP_DTYPE_BOOL = 13,
    SP_DTYPE_COUNT
} sp_dtype;

/* Sizes and names: sp_dtype_size / sp_dtype_name in simpler/tensor.h. */

/* ---- tensors ----------------------------------------------------------- */
#define SP_MAX_DIMS 5
#define SP_NO_TASK (-1)

/* Tensor flags. */
#define SP_TENSOR_RUNTIME_OWNED 0x1u /* allocated by the runtime for a task output */

/* A view of device memory. `addr` is the device address of the whole
 * buffer, `buf_bytes` its size; the view starts `offset` elements into it
 * and walks `shape` with `strides` (both in elements). */
typedef struct sp_tensor {
    uint64_t addr;
    uint64_t buf_bytes;
    int64_t offset;
    int64_t owner_task; /* task that created it, SP_NO_TASK if none */
    int64_t shape[SP_MAX_DIMS];
    int64_t strides[SP_MAX_DIMS];
    uint32_t version;
    uint8_t dtype;
    uint8_t ndim;
    uint16_t flags;
    uint64_t reserved;
} sp_tensor;

_Static_assert(sizeof(sp_tensor) == 128, "sp_tensor is a 128-byte POD");

/* ---- argument directions and limits ------------------------------------ */
typedef enum sp_dir {
    SP_DIR_INVALID = 0,
    SP_IN = 1,           /* read */
    SP_OUT = 2,          /* written, runtime-allocated (fresh buffer) */
    SP_INOUT = 3,        /* read and written */
    SP_OUT_EXISTING = 4, /* written into an existing buffer */
    SP_NO_DEP = 5,       /* accessed, but only the creator edge is derived */
} sp_dir;

#define SP_MAX_TASK_TENSORS 32
#define SP_MAX_TASK_SCALARS 16
#define SP_MAX_RUN_TENSORS 256
#define SP_MAX_RUN_SCALARS 128

/* Arguments of one run: tensors first, then u64 scalars. For a run submitted
 * from the host, tensor `addr` is the host address of the data to stage. */
typedef struct sp_args {
    uint32_t tensor_count;
    uint32_t scalar_count;
    uint8_t dirs[SP_MAX_RUN_TENSORS];
    sp_tensor tensors[SP_MAX_RUN_TENSORS];
    uint64_t scalars[SP_MAX_RUN_SCALARS];
} sp_args;

/* ---- per-call configuration -------------------------------------------- */
/* Zero in any field means "the default". Copied with one memcpy. */
typedef struct sp_call_config {
    uint32_t clusters;      /* clusters to use (<= device geometry) */
    uint32_t sched_threads; /* scheduler threads to use */
    uint32_t task_window;   /* tmr: task ring slots, power of two >= 4 */
    uint32_t trace_level;   /* 0 off, 1 tasks, 2 + scheduler phases, 3 + submits */
    uint64_t heap_bytes;    /* tmr: heap ring bytes */
    uint64_t timeout_us;    /* per-task scheduler timeout */
    uint64_t flags;         /* SP_CALL_* */
    uint64_t trace_records; /* tmr: trace buffer records (0: default 2^18); full drops */
    /* hbg: the most host memory the graph build may keep (its task, edge,
     * argument and tensor arrays and its TensorMap), and the most tasks one
     * graph may have; past either the build stops with SP_EGRAPH_LIMIT.
     * 0: SP_DEFAULT_GRAPH_BYTES / SP_DEFAULT_GRAPH_TASKS. tmr streams its
     * graph through the task window; graph_bytes bounds only the submit
     * stream a run with SP_CALL_REPLAY_AUTO records (0: 64 MiB). */
    uint64_t graph_bytes;
    uint32_t graph_tasks;
    uint32_t reserved;
    /* The orchestration's watchdog: an orchestration still running after
     * this long is interrupted and the run fails (SP_EORCH_CRASH, "timed
     * out"). 0: SIMPLER_ORCH_TIMEOUT_MS, else 300 s. */
    uint64_t orch_timeout_us;
    /* The lane's bound on a launched run: a device side not finished this
     * long after its launch fails the run with SP_ESTALL and leaves the
     * worker unusable (it can only be closed). 0: none (the kernel timeout,
     * the abandoning of cores and the orchestration's watchdog end a run). */
    uint64_t run_timeout_us;
} sp_call_config;

#define SP_DEFAULT_GRAPH_BYTES (4ull << 30) /* 4 GiB */
#define SP_DEFAULT_GRAPH_TASKS (1u << 24)   /* 16.7 M tasks */

_Static_assert(sizeof(sp_call_config) == 80, "sp_call_config is an 80-byte POD");

/* sp_call_config.flags. The checking mode puts red zones (guard bytes)
 * around every buffer the runtime places on the device (staged run
 * arguments, runtime-allocated outputs) and verifies those of each buffer a
 * task may write when the task completes: a kernel that wrote outside one
 * fails the run with SP_EKERNEL_OVERRUN. Off by default, or SIMPLER_CHECK=1
 * in the environment turns it on; NO_CHECK keeps it off regardless. */
#define SP_CALL_CHECK 0x1ull
#define SP_CALL_NO_CHECK 0x2ull
/* Graph replay (DESIGN §12), per call: neither bit = off (the
 * orchestration runs and nothing is kept). AUTO: replay the graph recorded
 * for this callable and graph key if there is one, else run the
 * orchestration and record its graph. ONLY: replay, or fail with
 * SP_EREPLAY_MISS when nothing is recorded for the key (nothing runs).
 * The graph key: the callable, the argument geometry (counts, directions,
 * dtypes, shapes, strides, offsets, buffer sizes), the scalars the
 * orchestration declares graph-shaping (all, unless its config says), the
 * values of the control-tensor elements it read, and the config fields
 * that shape a graph (clusters, heap_bytes, task_window, check). */
#define SP_CALL_REPLAY_AUTO 0x4ull
#define SP_CALL_REPLAY_ONLY 0x8ull

#endif
