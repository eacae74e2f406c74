/* Level 3 and level 4 (DESIGN §13): one host orchestration over several
 * chips. An sp_l3 opens N chips in this process (each its own device,
 * memory and runtime context: one sp_worker per chip) and, with a
 * transport (simpler/mpi.h), the chips of every rank of an MPI job. An L3
 * orchestration is a host C function that submits chip tasks (a registered
 * callable run on one chip), copies between chips' memories and
 * collectives over a communication domain; the dependencies between them
 * are derived from their tensor accesses with the rules of a chip's
 * orchestration (RAW, WAW, WAR over overlapping byte ranges of one buffer),
 * and independent work on different chips runs concurrently. Every failure
 * is a negative status with a message (sp_l3_last_error). */
#ifndef SIMPLER_L3_H
#define SIMPLER_L3_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/export.h"
#include "simpler/types.h"
#include "simpler/worker.h"

#define SP_L3_MAX_CHIPS 64        /* chips of one sp_l3, all ranks together */
#define SP_L3_HOST (-1)           /* the chip index of a tensor in host memory */
#define SP_L3_MAX_TASK_TENSORS 16 /* tensor arguments of one chip task */
#define SP_L3_MAX_TASK_SCALARS 16 /* scalar arguments of one chip task */
#define SP_L3_MAX_DOMAIN_CHIPS SP_L3_MAX_CHIPS

typedef struct sp_l3 sp_l3;               /* the chips, their workers, the L3 scheduler */
typedef struct sp_l3_run sp_l3_run;       /* one L3 run, handed to its orchestration */
typedef struct sp_l3_domain sp_l3_domain; /* a communication domain (collectives) */
/* How ranks reach each other (level 4): simpler/mpi.h gives one over
 * Open MPI. Opaque here. */
typedef struct sp_l3_transport sp_l3_transport;

/* sp_l3_options.flags */
/* A chip task whose tensor lives on another chip (or on the host) is
 * refused with SP_EL3_PLACEMENT instead of getting a copy inserted. */
#define SP_L3_EXPLICIT_TRANSFERS 0x1u

typedef struct sp_l3_options {
    /* Chips this process opens (1..SP_L3_MAX_CHIPS); with a transport,
     * chips per rank: rank r holds global chips [r * chips, (r+1) * chips). */
    uint32_t chips;
    uint32_t flags; /* SP_L3_* */
    /* The runtime of every chip ("hbg" or "tmr"; NULL: "hbg"), and per
     * local chip an override (NULL entries: `runtime`). */
    const char *runtime;
    const char *chip_runtime[SP_L3_MAX_CHIPS];
    const char *platform; /* NULL: "sim" */
    /* Template of each chip's worker options: device_id is replaced by
     * first_device + the local chip index; settings, module_dir, log sink
     * and timeouts apply to every chip. */
    sp_worker_options worker;
    int first_device;
    /* NULL: this process is the whole machine (level 3). Else the ranks
     * of the transport each run the same orchestration (level 4). */
    const sp_l3_transport *transport;
    /* Level 4: how long a rank waits for another rank's part of a
     * transfer, a collective or the end-of-run agreement before it fails
     * the run with SP_ERANK_TIMEOUT naming that rank; 0: 60 000 ms. */
    uint64_t rank_timeout_ms;
} sp_l3_options;

/* Open the chips (and, with a transport, agree with the other ranks).
 * 0, or the failing chip's worker status with the chip named in `err`. */
SP_EXPORT int sp_l3_open(const sp_l3_options *opt, sp_l3 **out, char *err, size_t err_len);
/* Close every chip (sp_worker_close each) and free the tensors. NULL: nothing. */
SP_EXPORT void sp_l3_close(sp_l3 *l3);
/* Chips in all (every rank's), this process's rank and the rank count
 * (0 and 1 without a transport), and whether global chip `chip` is in this
 * process. */
SP_EXPORT uint32_t sp_l3_chip_count(const sp_l3 *l3);
SP_EXPORT int sp_l3_rank(const sp_l3 *l3);
SP_EXPORT int sp_l3_rank_count(const sp_l3 *l3);
SP_EXPORT int sp_l3_chip_is_local(const sp_l3 *l3, int chip);
/* The worker of local chip `chip` (NULL for a remote or bad index): for
 * device_info, traces, graph cache; do not close it. */
SP_EXPORT sp_worker *sp_l3_chip_worker(sp_l3 *l3, int chip);
/* Register a callable blob under `id` on every local chip; 0 or the first
 * chip's failure, the chip named in the last error. */
SP_EXPORT int sp_l3_register_callable(sp_l3 *l3, uint32_t id, const void *blob, size_t size);
SP_EXPORT int sp_l3_register_callable_file(sp_l3 *l3, uint32_t id, const char *path);

/* ---- tensors -----------------------------------------------------------------
 * An L3 tensor names a buffer on one chip (or on the host) and a view of
 * it. Buffers made outside a run live until freed or sp_l3_close (weights,
 * caches); those made inside a run (sp_l3_run_tensor) are freed when the
 * run ends. Under level 4 every rank makes the same tensors in the same
 * order (it runs the same program); only the owning rank has the memory. */
typedef struct sp_l3_tensor {
    uint32_t buffer; /* the sp_l3's buffer id (generation-checked) */
    int32_t chip;    /* global chip index, or SP_L3_HOST */
    /* dtype, ndim, shape, strides, offset (elements, into the buffer);
     * view.addr is the buffer's device address on its chip (0 on a rank
     * that does not hold it), or the host address for SP_L3_HOST. */
    sp_tensor view;
} sp_l3_tensor;

/* A contiguous tensor of `dtype` and `shape` on `chip` (device memory on
 * its worker, sp_worker_device_alloc). 0, SP_EINVAL / SP_EDEVMEM. */
SP_EXPORT int sp_l3_tensor_alloc(sp_l3 *l3, int chip, int dtype, int ndim, const int64_t *shape,
                                 sp_l3_tensor *out);
/* A tensor over caller host memory (chip SP_L3_HOST) that must stay valid
 * while runs use it. */
SP_EXPORT int sp_l3_tensor_host(sp_l3 *l3, void *host, int dtype, int ndim, const int64_t *shape,
                                sp_l3_tensor *out);
/* Free a tensor's buffer (every view of it dies): 0, SP_EBUSY during a
 * run that uses it, SP_ESTALE for a freed one. */
SP_EXPORT int sp_l3_tensor_free(sp_l3 *l3, const sp_l3_tensor *t);
/* Copy the whole contiguous view between host memory and a chip tensor,
 * outside runs (on a rank that does not hold the tensor: 0, nothing done).
 * SP_EINVAL for a non-contiguous view, SP_EBUSY during a run. */
SP_EXPORT int sp_l3_write(sp_l3 *l3, const sp_l3_tensor *t, const void *host, uint64_t bytes);
SP_EXPORT int sp_l3_read(sp_l3 *l3, const sp_l3_tensor *t, void *host, uint64_t bytes);
/* Views: rows [start, start+len) of dimension `dim` (sp_tensor_slice). */
SP_EXPORT int sp_l3_tensor_slice(const sp_l3_tensor *in, int dim, int64_t start, int64_t len,
                                 sp_l3_tensor *out);

/* ---- the L3 orchestration ----------------------------------------------------
 * Called once per run on the caller's thread; what it submits starts as soon
 * as its dependencies are done, while it goes on submitting. A submit call
 * returns a task id (>= 0) or a negative status; after a failure the run's
 * error is set and later submits return it (check once at the end). */
typedef int (*sp_l3_orch_fn)(sp_l3_run *r, void *user);

typedef struct sp_l3_arg {
    sp_l3_tensor tensor;
    uint8_t dir; /* SP_IN, SP_OUT_EXISTING, SP_INOUT (SP_OUT: as OUT_EXISTING) */
} sp_l3_arg;

/* A chip task: callable `id` on global chip `chip` over `args` (its run's
 * tensors in order) and `scalars`; `config` (NULL: defaults) is that chip
 * run's config. A tensor on another chip gets a copy inserted before (IN,
 * INOUT) and after (OUT, INOUT), unless SP_L3_EXPLICIT_TRANSFERS. */
SP_EXPORT int64_t sp_l3_submit(sp_l3_run *r, int chip, uint32_t id, const sp_l3_arg *args,
                               uint32_t arg_count, const uint64_t *scalars, uint32_t scalar_count,
                               const sp_call_config *config);
/* A copy of `src`'s view into `dst`'s (same dtype and element count, both
 * contiguous), any chips or the host; a task like any other. */
SP_EXPORT int64_t sp_l3_copy(sp_l3_run *r, const sp_l3_tensor *dst, const sp_l3_tensor *src);
/* A tensor for this run only, on `chip`, freed when the run ends. */
SP_EXPORT int sp_l3_run_tensor(sp_l3_run *r, int chip, int dtype, int ndim, const int64_t *shape,
                               sp_l3_tensor *out);
/* The sp_l3 of a run, its first error (0 if none), and a named failure of
 * the run from the orchestration. */
SP_EXPORT sp_l3 *sp_l3_run_l3(sp_l3_run *r);
SP_EXPORT int sp_l3_run_error(const sp_l3_run *r);
SP_EXPORT int sp_l3_run_fail(sp_l3_run *r, int status, const char *msg);

/* ---- communication domains and collectives -----------------------------------
 * A domain is an ordered set of chips (members 0..n-1) with a symmetric
 * window of the same size on each: a u8 tensor per member. Collectives
 * work on byte offsets into the windows and are tasks: they depend on the
 * chip tasks that touch the ranges they read and write and overlap
 * everything else. Made outside runs; every rank makes the same domains. */
typedef enum sp_l3_reduce_op {
    SP_L3_SUM = 1,
    SP_L3_MAX = 2,
} sp_l3_reduce_op;

SP_EXPORT int sp_l3_domain_create(sp_l3 *l3, const int *chips, uint32_t n, uint64_t window_bytes,
                                  sp_l3_domain **out);
SP_EXPORT void sp_l3_domain_destroy(sp_l3_domain *d);
SP_EXPORT uint32_t sp_l3_domain_size(const sp_l3_domain *d);
/* Member i's window as a tensor of `dtype` with `count` elements at byte
 * `offset` (for chip-task arguments). SP_EBOUNDS past the window. */
SP_EXPORT int sp_l3_domain_view(const sp_l3_domain *d, uint32_t member, uint64_t offset, int dtype,
                                int64_t count, sp_l3_tensor *out);

/* In place on every member: [offset, +count elements) becomes the
 * reduction over members (SUM or MAX; F32, F16, I32). */
SP_EXPORT int64_t sp_l3_allreduce(sp_l3_run *r, sp_l3_domain *d, uint64_t offset, uint64_t count,
                                  int dtype, sp_l3_reduce_op op);
/* Member i's `count` elements at in_off land at out_off + i * count * esize
 * on every member. */
SP_EXPORT int64_t sp_l3_allgather(sp_l3_run *r, sp_l3_domain *d, uint64_t in_off, uint64_t out_off,
                                  uint64_t count, int dtype);
/* Each member holds n blocks of `count` at in_off; member i gets block i
 * reduced over members at out_off. */
SP_EXPORT int64_t sp_l3_reduce_scatter(sp_l3_run *r, sp_l3_domain *d, uint64_t in_off,
                                       uint64_t out_off, uint64_t count, int dtype,
                                       sp_l3_reduce_op op);
/* Member `root`'s [offset, +count) is copied to every other member. */
SP_EXPORT int64_t sp_l3_broadcast(sp_l3_run *r, sp_l3_domain *d, uint32_t root, uint64_t offset,
                                  uint64_t count, int dtype);
/* Block j (of n, `count` elements each, at in_off) of member i lands as
 * block i at out_off on member j. */
SP_EXPORT int64_t sp_l3_alltoall(sp_l3_run *r, sp_l3_domain *d, uint64_t in_off, uint64_t out_off,
                                 uint64_t count, int dtype);

/* ---- running -------------------------------------------------------------------- */
typedef struct sp_l3_stats {
    uint64_t wall_ns;     /* sp_l3_run_orch, end to end */
    uint64_t orch_ns;     /* in the orchestration function */
    uint32_t chip_tasks;  /* chip tasks run by this process */
    uint32_t copies;      /* copies (submitted and inserted) done by this process */
    uint32_t collectives; /* collectives this process took part in */
    uint32_t cancelled;   /* tasks not run because a producer failed */
    uint64_t bytes_moved; /* by copies and collectives, this process's share */
    /* The first failure: global chip (SP_L3_HOST if none or not a chip),
     * rank, the task id and the chip run's status (0 if none). */
    int32_t failed_chip;
    int32_t failed_rank;
    int64_t failed_task;
    int32_t failed_status;
    uint32_t reserved;
} sp_l3_stats;

/* Run `orch` once: submit, run every task, wait for all (also after a
 * failure: the other chips drain; a failed task's dependents are cancelled).
 * 0, or the first failure's status (a chip run's, a copy's, the
 * orchestration's), SP_ERANK when another rank's part failed, or
 * SP_ERANK_TIMEOUT; the message names the chip, the task and the rank.
 * Every chip stays usable for the next run. `stats` may be NULL. */
SP_EXPORT int sp_l3_run_orch(sp_l3 *l3, sp_l3_orch_fn orch, void *user, sp_l3_stats *stats);

/* Text of the last failure ("" if none). */
SP_EXPORT const char *sp_l3_last_error(const sp_l3 *l3);

#endif
