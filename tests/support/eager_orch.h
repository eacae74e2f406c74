/* A reference executor for orchestrations with no runtime at all: every
 * submit runs its kernels at once on the calling thread (each block, each
 * MIX lane, in order), so a program's results depend only on its
 * orchestration and kernels. Tests use it to prove an example's
 * orchestration + kernels + golden agree before (and independently of) a
 * real runtime.
 *
 * Memory is host memory: tensor addr is a host pointer. Fresh outputs and
 * sp_alloc_tensor buffers are malloc'ed and filled with 0xff bytes (NaN /
 * -1), and eager_orch_run does the same to the run's pure OUT tensors, as a
 * real runtime never stages them in: a kernel that reads an output before
 * writing it fails its check here rather than by luck on a device.
 *
 * sp_submit_graph calls the body at once (its tasks are submitted one by
 * one, as a runtime that records must match). A predicated task (sp_task
 * abi >= 2) is evaluated at its submit, when every earlier task has run:
 * false retires it without running (counted in tasks and skipped_tasks,
 * its outputs untouched); a fresh OUT argument, a non-integer predicate
 * tensor or an element outside it is refused with SP_EPREDICATE. */
#ifndef SP_TESTS_EAGER_ORCH_H
#define SP_TESTS_EAGER_ORCH_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/kernel.h"
#include "simpler/orchestration.h"

#define EAGER_MAX_KERNELS 64

typedef struct eager_kernel {
    int32_t func_id;
    uint32_t core_type;
    sp_kernel_fn fn;
    void *handle; /* dlopen handle, NULL for a function added directly */
} eager_kernel;

typedef struct eager_orch {
    sp_orch base; /* first: the ops see an eager_orch through sp_orch * */
    eager_kernel kernels[EAGER_MAX_KERNELS];
    int kernel_count;
    void *orch_handle;
    sp_orch_entry_fn entry;
    sp_orch_config_fn config;

    int64_t tasks;         /* submitted, dummies included */
    int64_t dummy_tasks;   /* of which dummies */
    int64_t blocks_run;    /* kernel invocations (blocks x lanes) */
    int64_t skipped_tasks; /* predicated tasks whose predicate was false */
    int64_t graph_tasks;   /* sp_submit_graph calls */
    int scope_depth;
    int error; /* first error, 0 if none */
    char msg[512];

    void **allocs; /* buffers to free */
    size_t alloc_count, alloc_cap;
} eager_orch;

/* Zero `eo` and bind its ops. */
void eager_orch_init(eager_orch *eo);
/* Free every buffer and close every handle. */
void eager_orch_free(eager_orch *eo);
/* Add a kernel function directly; 0 or SP_EINVAL (duplicate or full). */
int eager_orch_add_kernel(eager_orch *eo, int32_t func_id, uint32_t core_type, sp_kernel_fn fn);
/* dlopen `path` and add its symbol `entry` as func_id; 0 or a status. */
int eager_orch_load_kernel(eager_orch *eo, int32_t func_id, uint32_t core_type, const char *path,
                           const char *entry);
/* dlopen an orchestration; config may be NULL or "-" for none. 0 or a status. */
int eager_orch_load_orchestration(eager_orch *eo, const char *path, const char *entry,
                                  const char *config);
/* Load an example's manifest.txt (examples/CMakeLists.txt writes it):
 * the orchestration and every kernel. 0 or a status (message in eo->msg). */
int eager_orch_load_manifest(eager_orch *eo, const char *manifest_path);
/* Run the loaded orchestration on `args` (host tensors, modified in place:
 * pure OUT tensors are poisoned first). Checks the config's argument
 * counts. Returns the first error (0 if none); eo->msg explains it. */
int eager_orch_run(eager_orch *eo, sp_args *args);

#endif
