/* Kernels that end by a signal their own thread raises: abort(), a failed
 * assert() (which is abort() after a message) and raise(SIGTERM). Built
 * without sanitizers (tests/CMakeLists.txt: fault_*), and with assert()
 * kept in a release build. */
#undef NDEBUG
#include <assert.h>
#include <signal.h>
#include <stdlib.h>

#include "simpler/kernel.h"

SP_KERNEL(fault_abort)
{
    (void)args, (void)ctx;
    abort();
}

/* args[1] is 1 (fault_orch passes it): the assertion fails. */
SP_KERNEL(fault_assert)
{
    (void)ctx;
    assert(args[1] == 12345 && "a kernel's failed assert");
}

SP_KERNEL(fault_term)
{
    (void)args, (void)ctx;
    raise(SIGTERM);
}
