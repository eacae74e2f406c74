/* The orchestration under the crash guard and a watchdog timer. The timer
 * is the thread's own (a thread-targeted POSIX timer sending the guard's
 * interrupt), so nothing else has to watch the orchestration: hbg runs it
 * on the caller's thread, tmr on the chip's orchestrator thread. Three
 * system calls per run (create, set, delete), none per task. */
#include "runtime/shared/orch_guard.h"

#include <stdatomic.h>

#include "common/fault.h"
#include "common/log.h"
#include "simpler/status.h"

__attribute__((noinline)) int sp_orch_guarded_call(sp_orch_entry_fn entry, sp_orch *o,
                                                   const sp_args *args, uint64_t timeout_ns)
{
    sp_fault_guard g;
    uint32_t token = sp_fault_new_token();
    /* The interrupt counts while this holds the token: cleared before the
     * timer goes, so a signal it sent at the last moment is dropped. */
    _Atomic uint32_t cancel = token;
    sp_fault_watchdog wd = {.armed = false};
    if (timeout_ns && sp_fault_watchdog_start(&wd, token, timeout_ns) != SP_OK)
        SP_WARN("cannot start the orchestration's watchdog timer: it runs without one");
    if (SP_FAULT_TRY_FOR(&g, &cancel, token))
        entry(o, args);
    atomic_store_explicit(&cancel, 0, memory_order_seq_cst);
    sp_fault_end(&g);
    sp_fault_watchdog_stop(&wd);
    return g.sig;
}
