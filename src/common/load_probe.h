/* Loading untrusted shared objects in a throw-away child first. Code in an
 * object runs as soon as it is loaded (constructors), when it is unloaded
 * (destructors), and in whatever the caller calls right after (a config
 * function). In-process, a constructor that faults cannot be jumped out of
 * safely (the loader's lock stays held, so the next dlopen, dlsym or
 * dlclose of any other thread hangs), and one that calls exit, aborts,
 * never returns or starts a thread cannot be survived at all. So the caller
 * first has a forked child load each object, run its check on it, and
 * unload it; the child reports how far it got, and the parent names what
 * killed it. Only then does the caller load the objects for real. */
#ifndef SP_COMMON_LOAD_PROBE_H
#define SP_COMMON_LOAD_PROBE_H

#include <stddef.h>

#include "common/shared_object.h"

/* What the child does to object `index` once it is loaded (resolve and run
 * things); runs in the child only. Returns 0 or a status with a reason. */
typedef int (*sp__load_probe_check)(void *ctx, size_t index, sp__shared_object *so, char *why,
                                    size_t why_len);

typedef struct sp__load_probe_item {
    const void *bytes;
    size_t size;
} sp__load_probe_item;

typedef enum sp__load_probe_kind {
    SP_PROBE_PASSED = 0,
    SP_PROBE_REFUSED,  /* open or check returned `status` with `why` */
    SP_PROBE_SIGNAL,   /* the child died of signal `code` */
    SP_PROBE_EXITED,   /* the child exited with `code` (exit() in the object) */
    SP_PROBE_STALLED,  /* no progress within the stall time: killed */
    SP_PROBE_THREAD,   /* loading it left a thread running */
    SP_PROBE_NO_CHILD, /* pipe or fork failed: `status` SP_ESYS, errno in `why` */
} sp__load_probe_kind;

typedef enum sp__load_probe_phase {
    SP_PROBE_LOADING = 0, /* constructors and the loader */
    SP_PROBE_CHECKING,    /* the check callback (a config function, say) */
    SP_PROBE_UNLOADING,   /* destructors */
} sp__load_probe_phase;

typedef struct sp__load_probe_verdict {
    sp__load_probe_kind kind;
    int status; /* REFUSED, NO_CHILD */
    int code;   /* SIGNAL: the signal; EXITED: the exit status */
    size_t index;
    sp__load_probe_phase phase;
    char why[256];
} sp__load_probe_verdict;

/* Probe `count` objects in one child, in order, stopping at the first that
 * fails. `stall_ms` bounds the time one object may take before the child is
 * killed. Returns 0 when all passed, else -1 with the verdict filled. */
int sp__load_probe(const sp__load_probe_item *items, size_t count, sp__load_probe_check check,
                   void *ctx, unsigned stall_ms, sp__load_probe_verdict *v);

/* "while loading it (its constructors)", "in its check", "while unloading it (its destructors)". */
const char *sp__load_probe_phase_name(sp__load_probe_phase phase);

#endif
