/* Running an orchestration entry, on either runtime: under the crash
 * guard (a fault in it fails the run, not the process) and under a
 * watchdog (one that runs past its timeout is interrupted). */
#ifndef SP_RUNTIME_ORCH_GUARD_H
#define SP_RUNTIME_ORCH_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "simpler/orchestration.h"

/* Call entry(o, args) on the calling thread; after `timeout_ns` (0: no
 * watchdog) a timer interrupts it. Returns 0 when it returned, else the
 * signal that ended it (SP_FAULT_INTERRUPT: the watchdog). `still_mine`
 * (may be NULL) is asked, once the entry is over and before `o` is touched
 * again, whether the run still belongs to this thread; if not (the thread
 * was given up), SP_FAULT_ABANDONED is returned and `o` is left as it is. */
int rt_orch_guarded_call(sp_orch_entry_fn entry, sp_orch *o, const sp_args *args,
                         uint64_t timeout_ns, bool (*still_mine)(void *), void *arg);

#endif
