/* An orchestration / kernel object whose own code misbehaves outside any
 * run (issue 12 item 6), for tests/callable/test_callable_register.c.
 * SP_TEST_LOAD_FAULT picks what its constructor or destructor does:
 * ctor_segv, ctor_exit, ctor_abort, ctor_loop, ctor_thread, dtor_segv
 * (unset: nothing). Its config functions misbehave by name; the one named
 * _in_parent faults only in the process whose pid is SP_TEST_PARENT_PID, so
 * registration's load probe (a child) passes it and the in-process crash
 * guard is what catches it. Built without sanitizers (fault_*). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simpler/kernel.h"
#include "simpler/orchestration.h"

/* volatile: the compiler cannot see the address is invalid. */
static void segfault(void)
{
    volatile uintptr_t bad = 16;
    *(volatile int *)bad = 1;
}

static int mode_is(const char *m)
{
    const char *v = getenv("SP_TEST_LOAD_FAULT");
    return v && strcmp(v, m) == 0;
}

static void *idle_thread(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

__attribute__((constructor)) static void on_load(void)
{
    if (mode_is("ctor_segv"))
        segfault();
    if (mode_is("ctor_exit"))
        exit(3);
    if (mode_is("ctor_abort"))
        abort();
    if (mode_is("ctor_loop"))
        for (volatile int spin = 1; spin;) {
        }
    if (mode_is("ctor_thread")) {
        pthread_t t;
        pthread_create(&t, NULL, idle_thread, NULL);
    }
}

__attribute__((destructor)) static void on_unload(void)
{
    if (mode_is("dtor_segv"))
        segfault();
}

SP_ORCH_EXPORT int fault_load_data[4] = {1, 2, 3, 4}; /* not a function */

SP_ORCHESTRATION(fault_load_orch)
{
    (void)o;
    (void)args;
}

SP_ORCH_CONFIG(fault_load_config_ok)
{
    cfg->abi_version = SP_ORCH_ABI_VERSION;
}

SP_ORCH_CONFIG(fault_load_config_segv)
{
    (void)cfg;
    segfault();
}

/* 64 floats past the struct. */
SP_ORCH_CONFIG(fault_load_config_overrun)
{
    cfg->abi_version = SP_ORCH_ABI_VERSION;
    volatile float *past = (volatile float *)(cfg + 1);
    for (int i = 0; i < 64; i++)
        past[i] = 1.0f;
}

static int in_parent(void)
{
    const char *p = getenv("SP_TEST_PARENT_PID");
    return p && atol(p) == (long)getpid();
}

SP_ORCH_CONFIG(fault_load_config_segv_in_parent)
{
    cfg->abi_version = SP_ORCH_ABI_VERSION;
    if (in_parent())
        segfault();
}

/* A write a page past the struct: registration puts it half a page into
 * its scratch page, so this lands in the inaccessible page after it. */
SP_ORCH_CONFIG(fault_load_config_far_in_parent)
{
    cfg->abi_version = SP_ORCH_ABI_VERSION;
    if (in_parent())
        ((volatile char *)cfg)[sysconf(_SC_PAGESIZE)] = 1;
}

SP_KERNEL(fault_load_kernel)
{
    (void)ctx;
    (void)args;
}
