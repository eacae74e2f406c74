/* The host side of host_build_graph: the orchestration runs on the host
 * against these ops; every submit validates its task, derives its
 * producers through the shared TensorMap and appends it to a growing graph.
 * The graph is then laid out as one image (hbg_image_write). */
#ifndef SP_RUNTIME_HBG_BUILD_H
#define SP_RUNTIME_HBG_BUILD_H

#include <stdint.h>

#include "runtime/shared/loaded_callable.h"
#include "runtime/shared/task_check.h"
#include "runtime/shared/tensormap.h"
#include "simpler/host_api.h"
#include "simpler/orchestration.h"

typedef struct hbg_build_task {
    uint8_t shape;
    uint8_t tensor_count;
    uint8_t scalar_count;
    uint8_t pad;
    uint32_t block_num;
    int32_t kernel[3];
    uint32_t args_begin; /* tensors (descriptor indices) then scalars */
    uint64_t deps_begin; /* producers in graph.deps */
    uint32_t dep_count;
} hbg_build_task;

typedef struct hbg_dep {
    uint32_t producer;
    uint32_t kind; /* sp_edge_kind */
} hbg_dep;

/* A device buffer the orchestration may name: staged run arguments. */
typedef struct hbg_buffer {
    uint64_t dev;
    uint64_t bytes;
    void *host_map; /* NULL: backend has no host-map, use copies */
} hbg_buffer;

#define HBG_MAX_SCOPE_DEPTH 64

typedef struct hbg_graph {
    sp_orch orch; /* first: the orchestration's sp_orch * is a hbg_graph * */
    const sp_host_api *api;
    const sp_loaded_callable *callable;

    hbg_build_task *tasks;
    uint32_t task_count, task_cap;
    hbg_dep *deps; /* producers of each task, task by task */
    uint64_t dep_count, dep_cap;
    uint64_t *args;
    uint64_t arg_count, arg_cap;
    sp_tensor *tensors;
    uint32_t tensor_count, tensor_cap;
    uint64_t edges_by_kind[SP_EDGE_KINDS];

    sp_tensormap map;
    void *map_mem;
    sp_dep_list scratch;

    /* Runtime-allocated tensors: bump allocation in the bank's heap. */
    uint64_t heap_base, heap_bytes, heap_used;
    const hbg_buffer *buffers; /* staged run arguments */
    uint32_t buffer_count;
    hbg_buffer heap_buffer;                     /* the heap, as a buffer reached by copies */
    sp_device_range ranges[SP_MAX_RUN_TENSORS]; /* the staged buffers, for validation */

    uint8_t scope_mode[HBG_MAX_SCOPE_DEPTH];
    uint32_t scope_depth;

    int error;
    char message[256];
} hbg_graph;

/* Set up an empty graph over `api`'s heap [heap_base, +heap_bytes). */
int hbg_graph_init(hbg_graph *g, const sp_host_api *api, const sp_loaded_callable *lc,
                   uint64_t heap_base, uint64_t heap_bytes, const hbg_buffer *buffers,
                   uint32_t buffer_count);
void hbg_graph_free(hbg_graph *g);
/* Record the first error (later ones are dropped); returns `status`. */
int hbg_graph_fail(hbg_graph *g, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After the orchestration returned: close open scopes, count ready tasks. */
int hbg_graph_finish(hbg_graph *g);
uint64_t hbg_graph_edge_count(const hbg_graph *g);

#endif
