/* Stable status codes. Every failure in simpler is one of these: a negative
 * number that never changes meaning, a short name and a one-line hint. */
#ifndef SIMPLER_STATUS_H
#define SIMPLER_STATUS_H

#include "simpler/export.h"

/* X(name, value, hint). Values are stable: append, never renumber. */
#define SP_STATUS_LIST(X)                                                                          \
    X(SP_OK, 0, "success")                                                                         \
    X(SP_EINVAL, -1, "an argument is NULL, out of range or malformed; check the call's inputs")    \
    X(SP_ENOMEM, -2, "host memory allocation failed; free host memory or lower sizes")             \
    X(SP_EDEVMEM, -3, "device memory exhausted; free buffers or start the device with more")       \
    X(SP_EBADPTR, -4, "pointer is not a live device allocation; pass an address malloc returned")  \
    X(SP_EDOUBLEFREE, -5, "device buffer was already freed; free each allocation once")            \
    X(SP_EBOUNDS, -6, "range falls outside one live device allocation; check offset and size")     \
    X(SP_EMAPPED, -7, "buffer is still host-mapped; unregister the host map before freeing")       \
    X(SP_ESLOT, -8, "pipeline slot or arena bank out of range; use one below the pipeline depth")  \
    X(SP_EKERNEL_LOAD, -9, "kernel binary could not be loaded; pass a valid shared object")        \
    X(SP_EKERNEL_ENTRY, -10, "kernel entry symbol not found; check the entry name in the binary")  \
    X(SP_EDTYPE, -11, "unknown or mismatched dtype; use an SP_DTYPE_* value that fits the buffer") \
    X(SP_EBUSY, -12, "device is busy with a launch; wait for it before starting another")          \
    X(SP_ENOTSUP, -13, "operation not supported by this backend; use the fallback path")           \
    X(SP_ESYS, -14, "an operating-system call failed; see the log line for errno")                 \
    X(SP_EGEOMETRY, -15, "invalid chip geometry; clusters and scheduler threads must be >= 1")     \
    X(SP_ETIMEOUT, -16, "a wait ran past its deadline; raise the timeout or check for a hang")     \
    X(SP_ESTATE, -17, "operation not allowed in the object's current state; check call order")     \
    X(SP_ESHAPE, -18, "tensor shape, strides or view out of range; check dims against the buffer") \
    X(SP_EBLOB, -19, "callable blob is malformed; rebuild it with simpler_add_callable")           \
    X(SP_ECALLABLE, -20, "unknown or duplicate callable id; register it once before running")      \
    X(SP_EMODULE, -21, "runtime module could not be loaded; check the path and dlerror text")      \
    X(SP_EMODULE_SYMBOL, -22,                                                                      \
      "a required symbol is not exported (a module's simpler_*, a callable's entry); check the "   \
      "name")                                                                                      \
    X(SP_EABI, -23, "ABI version mismatch; rebuild the module or orchestration with this simpler") \
    X(SP_ECONTRACT, -24, "pipeline contract is invalid; check depth, kinds, classes and reserved") \
    X(SP_EARGCOUNT, -25, "run has fewer arguments than the orchestration's config asks for")       \
    X(SP_EORCH_FATAL, -26, "the orchestration reported a fatal error; see its message")            \
    X(SP_ETASK_ARGS, -27, "task arguments invalid: count, direction or tensor; see the message")   \
    X(SP_EFUNC_ID, -28, "task names a func_id the callable has no kernel for; check the callable") \
    X(SP_EGRAPH_LIMIT, -29, "graph exceeds a runtime limit (tasks, edges, image); raise or split") \
    X(SP_EDEP, -30, "explicit dependency names no earlier task; pass an id a submit returned")     \
    X(SP_ESCOPE, -31, "scope begin/end unbalanced or too deep; pair every begin with an end")      \
    X(SP_ESCOPE_DEADLOCK, -32,                                                                     \
      "a scope holds more tasks than the task window; close scopes sooner or raise task_window")   \
    X(SP_EHEAP_TOO_SMALL, -33,                                                                     \
      "one task's outputs exceed the heap ring; raise heap_bytes or split the task")               \
    X(SP_EHEAP_DEADLOCK, -34,                                                                      \
      "what open scopes keep alive does not fit the heap; close scopes sooner or raise "           \
      "heap_bytes")                                                                                \
    X(SP_ESTALL, -35, "no progress before the backstop deadline; look for a hung kernel")          \
    X(SP_ECONTROL_WAIT, -36, "a control-tensor access waited for a producer that never finished")  \
    X(SP_ETENSOR_RETIRED, -37,                                                                     \
      "tensor's creator was retired and its buffer reused; use it sooner or hold it in a scope")   \
    X(SP_EWINDOW_DEADLOCK, -38,                                                                    \
      "the task window cannot hold the tasks whose outputs are still needed; raise task_window")   \
    X(SP_ESTALE, -39,                                                                              \
      "run handle is stale or was already waited for; use the one submit returned")                \
    X(SP_EDUPLICATE, -40, "run id or dispatch id already in flight; give each run its own ids")    \
    X(SP_EUNUSABLE, -41,                                                                           \
      "device unusable after a half-started launch; destroy and re-create the context")            \
    X(SP_ELAUNCH, -42, "launch failed before the device side started; the run is still prepared")  \
    X(SP_ELAUNCH_PARTIAL, -43,                                                                     \
      "launch failed after part of the device side started; the device is now unusable")           \
    X(SP_EKERNEL_FAULT, -44,                                                                       \
      "a kernel crashed (SIGSEGV/SIGBUS/SIGFPE/SIGILL, or SIGABRT/SIGTERM it raised itself: "      \
      "abort, assert); see the task and func_id in the message")                                   \
    X(SP_EKERNEL_TIMEOUT, -45,                                                                     \
      "a kernel ran past the timeout and was stopped; raise timeout_us or fix the kernel")         \
    X(SP_EORCH_CRASH, -46, "the orchestration crashed; see the signal and phase in the message")   \
    X(SP_EKERNEL_OVERRUN, -47,                                                                     \
      "a kernel wrote outside a tensor it was given; see the task, kernel and tensor named")       \
    X(SP_EORCH_THREAD, -48,                                                                        \
      "sp_orch was called from a thread other than the entry's; submit from that thread only")     \
    X(SP_EARG_SIGNATURE, -49,                                                                      \
      "run arguments do not match the callable's declared signature; see the argument named")      \
    X(SP_EREPLAY_MISS, -50,                                                                        \
      "replay-only run but no graph is recorded for this key; run once with SP_CALL_REPLAY_AUTO")  \
    X(SP_EPREDICATE, -51,                                                                          \
      "task predicate invalid: tensor, element, dtype, op or an OUT the skip would leave unset")   \
    X(SP_EGRAPH_TASK, -52,                                                                         \
      "graph task invalid: boundary, key or body; see the message for the argument or task")       \
    X(SP_EL3_PLACEMENT, -53,                                                                       \
      "a chip task names a tensor on another chip with explicit transfers; add sp_l3_copy")        \
    X(SP_ERANK, -54, "another rank's part of the run failed; the message names the rank and why")  \
    X(SP_ERANK_TIMEOUT, -55,                                                                       \
      "another rank did not answer within rank_timeout_ms; it died or hangs (named in message)")

typedef enum sp_status {
#define SP_STATUS_ENUM(name, value, hint) name = value,
    SP_STATUS_LIST(SP_STATUS_ENUM)
#undef SP_STATUS_ENUM
} sp_status;

/* Name of a status code ("SP_EDEVMEM"); "SP_E?" for an unknown code. */
SP_EXPORT const char *sp_status_name(int status);
/* One-line hint on what to do about a status; a generic line for unknown codes. */
SP_EXPORT const char *sp_status_hint(int status);

#endif
