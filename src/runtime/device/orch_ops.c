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
