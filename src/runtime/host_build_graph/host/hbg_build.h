/* The host side of host_build_graph: the orchestration runs on the host
 * against these ops; every submit validates its task, derives its
 * producers through the shared TensorMap and appends it to a growing graph.
 * The graph is then laid out as one image (hbg_image_write). The graph's
 * arrays live in a store the caller keeps across runs (a pipeline slot's
 * host scratch), so a build in steady state neither allocates nor faults
 * in fresh pages. */
#ifndef SP_RUNTIME_HBG_BUILD_H
#define SP_RUNTIME_HBG_BUILD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/device/sched_pass.h"
#include "runtime/device/subgraph.h"
#include "runtime/device/task_check.h"
#include "runtime/device/tensormap.h"
#include "runtime/host/dev_callable_write.h"
#include "runtime/host/loaded_callable.h"
#include "runtime/host_build_graph/device/hbg_image.h"
#include "runtime/runtime.h"
#include "simpler/host_api.h"
#include "simpler/orchestration.h"

typedef struct hbg_build_task {
    uint8_t shape;
    uint8_t tensor_count;
    uint8_t scalar_count;
    uint8_t pred_op; /* sp_pred_op; SP_PRED_NONE: not predicated */
    uint32_t block_num;
    int32_t kernel[3];
    uint32_t args_begin;   /* tensors (descriptor indices) then scalars */
    uint32_t dep_count;    /* producers, in graph.deps from deps_begin */
    uint32_t fanout_count; /* consumers: counted as they are submitted */
    uint64_t deps_begin;
    uint32_t check_mask; /* checking mode: tensor arguments with red zones it may write */
    uint8_t pred_dtype;  /* a predicated task's words precede args_begin (HBG_PRED_WORDS) */
    uint8_t pad2[3];
} hbg_build_task;

typedef struct hbg_dep {
    uint32_t producer;
    uint32_t kind; /* rt_edge_kind */
} hbg_dep;

/* A device buffer the orchestration may name: staged run arguments. */
typedef struct hbg_buffer {
    uint64_t dev;
    uint64_t bytes;
    void *host_map; /* NULL: backend has no host-map, use copies */
    bool device;    /* SP_TENSOR_DEVICE: the caller's buffer, no red zones */
} hbg_buffer;

#define HBG_MAX_SCOPE_DEPTH 64

/* The graph's store: host buffers that keep their size and their pages from
 * one build to the next. Buffer HBG_STORE_IMAGE is the staging of the image
 * (hbg_image_write), which holds the tensor descriptors from the start of
 * the build, at HBG_IMAGE_TENSORS_OFF; the others hold the graph's arrays. */
enum {
    HBG_STORE_IMAGE = 0,
    HBG_STORE_TASKS,
    HBG_STORE_DEPS,
    HBG_STORE_ARGS,
    HBG_STORE_MAP,
    HBG_STORE_STATE,    /* hbg_store_state */
    HBG_STORE_CALLABLE, /* the callable's device view, for rt_task_validate */
    HBG_STORE_GRAPHS,   /* graph-task records (rt_subgraph), reserved at the first one */
    HBG_STORE_BUFFERS,
};
_Static_assert(HBG_STORE_BUFFERS <= SP_HOST_SCRATCH_SLOT_BUFFERS, "a slot holds the store");

/* What a store remembers of the last build besides its arrays. */
typedef struct hbg_store_state {
    uint32_t map_entries; /* TensorMap entries the last build needed */
} hbg_store_state;

typedef struct hbg_graph {
    sp_orch orch; /* first: the orchestration's sp_orch * is a hbg_graph * */
    const sp_host_api *api;
    const rt_loaded_callable *callable;

    rt_task_check check; /* the run's constant facts for rt_task_validate */
    rt_lane_memo memo[SP_LANE_MEMO_SLOTS];
    rt_view_memo view;
    rt_range home[SP_MAX_TASK_TENSORS]; /* the check's verdict: each argument's buffer */
    rt_task_pred pred;                  /* the check's verdict: the task's predicate */
    uint32_t pred_tasks;                /* predicated tasks in the graph */
    bool redzones; /* checking mode: heap outputs between red zones, verified by the chip */

    /* Arrays in the store; a capacity counts elements. */
    rt_host_scratch *store; /* HBG_STORE_BUFFERS buffers */
    hbg_build_task *tasks;
    uint32_t task_count, task_cap;
    hbg_dep *deps; /* producers of each task, task by task */
    uint64_t dep_count, dep_cap;
    uint64_t *args;
    uint64_t arg_count, arg_cap;
    sp_tensor *tensors; /* in the image's staging */
    uint32_t tensor_count, tensor_cap;
    uint64_t queue_blocks[SP_QUEUES]; /* blocks each ready queue will ever hold */

    rt_tensormap map;  /* in store[HBG_STORE_MAP] */
    uint32_t map_peak; /* most live entries so far */
    rt_dep_list scratch;

    /* Runtime-allocated tensors: bump allocation in the bank's heap. */
    uint64_t heap_base, heap_bytes, heap_used;
    /* heap_auto (sp_call_config.heap_bytes 0): the heap is sized from the
     * graph. An output past its end gets an address beyond it (the graph
     * is then never launched) and the build goes on, heap_used counting
     * what the whole graph needs; hbg_graph_finish fails with SP_EDEVMEM
     * (heap_short) and hbg_runtime.c rebuilds with a heap that fits. */
    bool heap_auto, heap_short;
    uint32_t control_writes;   /* tensor_write calls: a rebuild would repeat them */
    struct hbg_recording *rec; /* replay: the build is recorded (hbg_replay.h); NULL: not */
    const hbg_buffer *buffers; /* staged run arguments */
    uint32_t buffer_count;
    hbg_buffer heap_buffer;              /* the heap, as a buffer reached by copies */
    rt_range ranges[SP_MAX_RUN_TENSORS]; /* the staged buffers, for validation */

    uint8_t scope_mode[HBG_MAX_SCOPE_DEPTH];
    uint32_t scope_depth;
    rt_subgraph subgraph; /* graph tasks recorded in this build */

    /* The graph limit (sp_call_config.graph_tasks / graph_bytes), and the
     * store's capacities when the build began: a failed build gives back
     * what it grew (hbg_graph_give_back). */
    uint32_t max_tasks;
    uint64_t max_bytes;
    size_t start_cap[HBG_STORE_BUFFERS];

    int error;
    char message[256];
    char check_msg[256]; /* rt_task_validate's reason */
    /* sp_orch is single-threaded: the thread that runs the entry, and the
     * calls refused from any other (counted there, turned into the build's
     * error by the entry's thread: only it writes the fields above). */
    pthread_t owner;
    _Atomic uint32_t foreign_calls;
    _Atomic(const char *) foreign_op;             /* the first refused call's op */
    rt_host_scratch own_store[HBG_STORE_BUFFERS]; /* the store when the caller has none */
} hbg_graph;

/* Set up an empty graph over `api`'s heap [heap_base, +heap_bytes), its
 * arrays in `store` (HBG_STORE_BUFFERS buffers kept by the caller across
 * builds; NULL: the graph's own, freed by hbg_graph_free). 0 or SP_ENOMEM. */
int hbg_graph_init(hbg_graph *g, const sp_host_api *api, const rt_loaded_callable *lc,
                   uint64_t heap_base, uint64_t heap_bytes, const hbg_buffer *buffers,
                   uint32_t buffer_count, rt_host_scratch *store);
/* The run's graph limit; 0 keeps a default (SP_DEFAULT_GRAPH_TASKS / _BYTES). */
void hbg_graph_set_limits(hbg_graph *g, uint32_t max_tasks, uint64_t max_bytes);
/* After a failed build: free every store buffer the build grew, so a
 * runaway graph does not keep its memory until the context goes. */
void hbg_graph_give_back(hbg_graph *g);
/* Done with the graph: the store keeps its buffers (the graph's own are freed). */
void hbg_graph_free(hbg_graph *g);
/* Record the first error (later ones are dropped); returns `status`. */
int hbg_graph_fail(hbg_graph *g, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After the orchestration returned: close open scopes, count ready tasks. */
int hbg_graph_finish(hbg_graph *g);
uint64_t hbg_graph_edge_count(const hbg_graph *g);

#endif
