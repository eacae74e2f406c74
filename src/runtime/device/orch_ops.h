/* The orchestration ops table (simpler/orchestration.h), written once for
 * every runtime: hbg's build, tmr's orchestrator and the watchdog's proxy
 * (orch_guard.c) each name their functions by a common prefix, and the
 * orchestration's log goes to the process log the same way on both. */
#ifndef RT_DEVICE_ORCH_OPS_H
#define RT_DEVICE_ORCH_OPS_H

#include "simpler/orchestration.h"

/* A static const sp_orch_ops over p##_alloc_tensor, p##_scope_begin,
 * p##_scope_end, p##_tensor_read, p##_tensor_write, p##_fatal, p##_error,
 * p##_submit_graph and the given submit and log functions. */
#define RT_ORCH_OPS(p, submit_fn, log_fn)                                                          \
    {                                                                                              \
        .abi_version = SP_ORCH_ABI_VERSION, .submit = submit_fn, .alloc_tensor = p##_alloc_tensor, \
        .scope_begin = p##_scope_begin, .scope_end = p##_scope_end,                                \
        .tensor_read = p##_tensor_read, .tensor_write = p##_tensor_write, .log = log_fn,           \
        .fatal = p##_fatal, .error = p##_error, .submit_graph = p##_submit_graph,                  \
    }

/* The orchestration's sp_orch_log, on either runtime: to the process log,
 * prefixed "orchestration:"; an unknown level logs as info. */
void rt_orch_log(sp_orch *o, int level, const char *msg);

#endif
