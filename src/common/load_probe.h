/* Loading untrusted shared objects in a throw-away process first. Code in
 * an object runs as soon as it is loaded (constructors), when it is
 * unloaded (destructors), and in whatever the caller calls right after (a
 * config function). In-process, a constructor that faults cannot be jumped
 * out of safely (the loader's lock stays held, so the next dlopen, dlsym or
 * dlclose of any other thread hangs), and one that calls exit, aborts,
 * never returns or starts a thread cannot be survived at all. So the caller
 * first has a fresh process (the helper SP_LOAD_PROBE_HELPER, started with
 * posix_spawn) load each object, resolve and run what the caller will,
 * and unload it; the helper reports how far it got, and the caller names
 * what killed it. Only then does the caller load the objects for real.
 *
 * The helper is a new program, not a fork of the caller: a fork copies
 * only the forking thread, so a lock another thread held at that moment
 * (a sanitizer's allocator, a user's allocator or library) stays held in
 * the child forever and its first malloc hangs. */
#ifndef SP_COMMON_LOAD_PROBE_H
#define SP_COMMON_LOAD_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* The helper's file name. It lives in the directory of the library that
 * links common/load_probe.c (the platform library: build/lib in the build
 * tree, <prefix>/lib/simpler installed). */
#define SP_LOAD_PROBE_HELPER "simpler-load-probe"

/* One object and what is done to it once it is loaded. */
typedef struct sp__load_probe_item {
    const void *bytes;
    size_t size;
    /* A function the object itself defines (sp__shared_object_entry), or
     * NULL for none. */
    const char *entry;
    /* Then a function the object defines that is called as
     * void config(void *page): page is 4 KiB of zeros whose first 4 bytes
     * hold config_abi (an orchestration's config function and its
     * sp_orch_config). NULL for none. */
    const char *config;
    uint32_t config_abi;
} sp__load_probe_item;

typedef enum sp__load_probe_kind {
    SP_PROBE_PASSED = 0,
    SP_PROBE_REFUSED,  /* open or check returned `status` with `why` */
    SP_PROBE_SIGNAL,   /* the helper died of signal `code` */
    SP_PROBE_EXITED,   /* the helper exited with `code` (exit() in the object) */
    SP_PROBE_STALLED,  /* no progress within the stall time: killed */
    SP_PROBE_THREAD,   /* loading it left a thread running */
    SP_PROBE_NO_CHILD, /* the helper could not be started: `status` SP_ESYS, why in `why` */
} sp__load_probe_kind;

typedef enum sp__load_probe_phase {
    SP_PROBE_LOADING = 0, /* constructors and the loader */
    SP_PROBE_CHECKING,    /* resolving the entry, running the config function */
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

/* Probe `count` objects in one helper process, in order, stopping at the
 * first that fails. `stall_ms` bounds the time one step may take before
 * the helper is killed. Returns 0 when all passed, else -1 with the verdict
 * filled. */
int sp__load_probe(const sp__load_probe_item *items, size_t count, unsigned stall_ms,
                   sp__load_probe_verdict *v);

/* The helper's side: read the items sp__load_probe packed into descriptor
 * `in`, probe them, report on descriptor `out`, and _exit. */
__attribute__((noreturn)) void sp__load_probe_serve(int in, int out);

/* "while it was loaded (...)", "while its entry points were checked", ... */
const char *sp__load_probe_phase_name(sp__load_probe_phase phase);

#endif
