/* The orchestration under the crash guard and a watchdog timer. The timer
 * is the thread's own (a thread-targeted POSIX timer sending the guard's
 * interrupt), so nothing else has to watch the orchestration: hbg runs it
 * on the caller's thread, tmr on the chip's orchestrator thread. Three
 * system calls per run (create, set, delete), none per task. */
#include "runtime/device/orch_guard.h"

#include <stdatomic.h>

#include "common/fault.h"
#include "common/log.h"
#include "runtime/device/orch_ops.h"
#include "simpler/status.h"

/* While the watchdog runs, the orchestration sees a proxy of its ops
 * table: each call defers the interrupt for its length, so a watchdog that
 * fires inside the runtime (a submit half-linked, a wait for room, malloc)
 * ends the orchestration as that call returns, never in its middle. Two
 * stores and one exchange per call, no system call. */
typedef struct guarded_orch {
    sp_orch_ops ops; /* first: o->ops points here while the call runs */
    const sp_orch_ops *real;
    _Atomic uint32_t cancel;
    uint32_t token;
    sp__fault_guard *g;
} guarded_orch;

static guarded_orch *enter(sp_orch *o)
{
    guarded_orch *s = (guarded_orch *)(uintptr_t)o->ops;
    /* Relaxed plus signal fences: only this thread's handler reads it. */
    atomic_store_explicit(&s->cancel, s->token | SP_FAULT_DEFER, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    return s;
}

static void leave(guarded_orch *s)
{
    atomic_signal_fence(memory_order_seq_cst);
    /* One instruction: a signal lands before it (and is marked pending) or
     * after it (and jumps by itself). */
    uint32_t was = atomic_exchange_explicit(&s->cancel, s->token, memory_order_relaxed);
    if (was & SP_FAULT_PENDING)
        sp__fault_jump(s->g, SP_FAULT_INTERRUPT);
}

static int64_t g_submit(sp_orch *o, sp_task *t)
{
    guarded_orch *s = enter(o);
    int64_t r = s->real->submit(o, t);
    leave(s);
    return r;
}

static int g_alloc_tensor(sp_orch *o, sp_tensor *t)
{
    guarded_orch *s = enter(o);
    int r = s->real->alloc_tensor(o, t);
    leave(s);
    return r;
}

static int g_scope_begin(sp_orch *o, int mode)
{
    guarded_orch *s = enter(o);
    int r = s->real->scope_begin(o, mode);
    leave(s);
    return r;
}

static int g_scope_end(sp_orch *o)
{
    guarded_orch *s = enter(o);
    int r = s->real->scope_end(o);
    leave(s);
    return r;
}

static int g_tensor_read(sp_orch *o, const sp_tensor *t, int64_t index, void *out)
{
    guarded_orch *s = enter(o);
    int r = s->real->tensor_read(o, t, index, out);
    leave(s);
    return r;
}

static int g_tensor_write(sp_orch *o, const sp_tensor *t, int64_t index, const void *v)
{
    guarded_orch *s = enter(o);
    int r = s->real->tensor_write(o, t, index, v);
    leave(s);
    return r;
}

static void g_log(sp_orch *o, int level, const char *msg)
{
    guarded_orch *s = enter(o);
    s->real->log(o, level, msg);
    leave(s);
}

static void g_fatal(sp_orch *o, int status, const char *msg)
{
    guarded_orch *s = enter(o);
    s->real->fatal(o, status, msg);
    leave(s);
}

static int g_error(sp_orch *o)
{
    guarded_orch *s = enter(o);
    int r = s->real->error(o);
    leave(s);
    return r;
}

/* Not entered: the real op calls the graph's body, user code the watchdog
 * must be able to interrupt; the body's own calls come back through the
 * guarded ops. */
static int64_t g_submit_graph(sp_orch *o, sp_graph_fn fn, const sp_graph_args *a, uint64_t key)
{
    const guarded_orch *s = (const guarded_orch *)(uintptr_t)o->ops;
    return s->real->submit_graph(o, fn, a, key);
}

static const sp_orch_ops guarded_ops = RT_ORCH_OPS(g, g_submit, g_log);

__attribute__((noinline)) int rt_orch_guarded_call(sp_orch_entry_fn entry, sp_orch *o,
                                                   const sp_args *args, uint64_t timeout_ns,
                                                   bool (*still_mine)(void *), void *arg)
{
    sp__fault_guard g;
    guarded_orch s = {
        .ops = guarded_ops,
        .real = o->ops,
        .token = sp__fault_new_token(),
        .g = &g,
    };
    /* The interrupt counts while this holds the token: cleared before the
     * timer goes, so a signal it sent at the last moment is dropped. */
    atomic_init(&s.cancel, s.token);
    sp__fault_watchdog wd = {.armed = false};
    if (timeout_ns) {
        if (sp__fault_watchdog_start(&wd, s.token, timeout_ns) == SP_OK)
            o->ops = &s.ops;
        else
            SP_WARN("cannot start the orchestration's watchdog timer: it runs without one");
    }
    if (SP_FAULT_TRY_FOR(&g, &s.cancel, s.token))
        entry(o, args);
    atomic_store_explicit(&s.cancel, 0, memory_order_seq_cst);
    sp__fault_end(&g);
    sp__fault_watchdog_stop(&wd);
    if (still_mine && !still_mine(arg))
        return SP_FAULT_ABANDONED; /* `o` may be another run's by now */
    o->ops = s.real;
    return g.sig;
}
