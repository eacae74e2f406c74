/* Kernel fault reports, the chip's half: claim the run's report once. */
#include "runtime/device/fault_claim.h"

#include "common/fault.h"
#include "simpler/status.h"

bool rt_fault_report_claim(rt_fault_report *r, uint64_t task, uint32_t core, int32_t kernel,
                           int sig, uint64_t ran_ns)
{
    int32_t expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&r->claimed, &expected, 1, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false;
    r->sig = sig;
    r->task = task;
    r->core = core;
    r->kernel = kernel;
    r->ran_ns = ran_ns;
    return true;
}

int rt_fault_status(int sig)
{
    return sig == SP_FAULT_INTERRUPT || sig == SP_FAULT_ABANDONED ? SP_EKERNEL_TIMEOUT
                                                                  : SP_EKERNEL_FAULT;
}
