/* What both runtimes' orchestration ops share: the log op. */
#include "runtime/device/orch_ops.h"

#include "common/log.h"

void rt_orch_log(sp_orch *o, int level, const char *msg)
{
    (void)o;
    if (level < SP_LOG_DEBUG || level > SP_LOG_ERROR)
        level = SP_LOG_INFO;
    sp__log(level, "orchestration: %s", msg ? msg : "");
}

int64_t rt_orch_submit_graph_direct(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a,
                                    uint64_t key)
{
    (void)key;
    if (!fn || !a || a->tensor_count > SP_MAX_GRAPH_TENSORS ||
        a->scalar_count > SP_MAX_GRAPH_SCALARS) {
        o->ops->fatal(o, SP_EGRAPH_TASK, "submit_graph: NULL body or arguments past the limits");
        return SP_EGRAPH_TASK;
    }
    fn(o, a);
    int rc = o->ops->error(o);
    return rc ? rc : 0;
}
