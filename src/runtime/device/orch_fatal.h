/* What sp_orch_fatal reports, on both runtimes: the orchestration's own code
 * when it is a named failure status, SP_EORCH_FATAL for anything else (0, a
 * positive number, or a negative one no status has), so the caller never
 * sees a code sp_status_name cannot name. */
#ifndef SP_RUNTIME_ORCH_FATAL_H
#define SP_RUNTIME_ORCH_FATAL_H

#include "simpler/status.h"

static inline int rt_orch_fatal_status(int status)
{
    switch (status) {
#define SP_ORCH_FATAL_CASE(name, value, hint) case name:
        SP_STATUS_LIST(SP_ORCH_FATAL_CASE)
#undef SP_ORCH_FATAL_CASE
        return status < 0 ? status : SP_EORCH_FATAL;
    default:
        return SP_EORCH_FATAL;
    }
}

#endif
