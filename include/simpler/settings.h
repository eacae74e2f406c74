/* Settings: every knob of a device and of the runtime as a field, 0 meaning
 * "the default". The worker fills the fields a caller left 0 from the
 * environment (sp_settings_from_env, the one place that reads it) and
 * passes them down through the module ABI to the device; no layer below
 * reads the environment. Two devices opened with different settings each
 * keep their own. */
#ifndef SIMPLER_SETTINGS_H
#define SIMPLER_SETTINGS_H

#include <stdint.h>

#include "simpler/export.h"

/* A field whose meaningful value is 0 (spin_ns: never spin) asks for it
 * with SP_SETTING_ZERO; 0 itself is "the default". */
#define SP_SETTING_ZERO UINT64_MAX

/* The sim backend's own settings (ignored by other backends). */
typedef struct sp_sim_settings {
    uint32_t no_host_map; /* 1: behave like a backend without host-map (copies instead) */
    uint32_t core_queue;  /* payloads a core holds at once, 1..64; 0: 64 */
    uint64_t cpus;        /* host CPUs the chip's threads may use (bit i = CPU i); 0: all */
    uint64_t spin_ns;     /* spin before yielding; 0: 2000; SP_SETTING_ZERO: never spin */
    uint64_t yield_ns;    /* yield before parking; 0: the chip's default; SP_SETTING_ZERO: never */
    /* 1: the device view is PROT_NONE outside launches, so host code that
     * dereferences a device address faults (a checking mode: two page-table
     * changes per launch, and a fault per page touched after each; make
     * test turns it on). 0: the view stays open, no page-table work. */
    uint32_t protect;
    uint32_t reserved; /* 0 */
} sp_sim_settings;

typedef struct sp_settings {
    int32_t log_level;          /* 0: default (warn); else 1 + SP_LOG_* (debug 1 .. off 5) */
    uint32_t check;             /* 1: runs default to the checking mode (SP_CALL_CHECK) */
    uint64_t kernel_timeout_ms; /* a run's default kernel timeout, 1..604800000; 0: 30 000 */
    uint64_t orch_timeout_ms;   /* the default orchestration timeout; 0: the runtime's default */
    uint32_t pipeline_depth;    /* runs in flight at once, 1..2; 0: what the module allows */
    uint32_t graph_cache_count; /* recorded graphs a worker keeps, LRU; 0: 16 */
    uint64_t memory_bytes;      /* device memory; 0: 1 GiB */
    uint64_t graph_cache_bytes; /* host bytes those graphs may hold; 0: 256 MiB */
    sp_sim_settings sim;
} sp_settings;

/* Fill the fields of `s` that are 0 from the SIMPLER_* environment
 * variables (docs/USAGE.md lists them); a malformed value is ignored with
 * a warning naming it. The only function of simpler that reads the
 * environment: sp_worker_open calls it on its copy of the options. */
SP_EXPORT void sp_settings_from_env(sp_settings *s);

#endif
