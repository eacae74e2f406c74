/* The worker: the host-side client that loads a runtime module, checks its
 * contract, attaches a device, registers callables and runs them. Every
 * failure is a negative status plus a message (sp_worker_last_error). */
#ifndef SIMPLER_WORKER_H
#define SIMPLER_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/export.h"
#include "simpler/module.h"
#include "simpler/types.h"

typedef struct sp_worker sp_worker;

typedef struct sp_worker_options {
    int device_id;          /* device to attach (default 0) */
    sp_call_config prewarm; /* geometry wishes: clusters, sched_threads (0 = default) */
} sp_worker_options;

/* Load the module at `module_path`, validate it and attach the device.
 * Returns 0, or SP_EMODULE / SP_EMODULE_SYMBOL / SP_EABI / SP_ECONTRACT /
 * a device status, with the reason in `err`. */
SP_EXPORT int sp_worker_open(const char *module_path, const sp_worker_options *opt,
                             sp_worker **out, char *err, size_t err_len);
/* Detach the device and unload the module. NULL is ignored. */
SP_EXPORT void sp_worker_close(sp_worker *w);
/* Register a callable blob under `id`; 0 or a status (message in last error). */
SP_EXPORT int sp_worker_register_callable(sp_worker *w, uint32_t id, const void *blob,
                                          size_t size);
/* Read a callable blob file (.spc) and register it under `id`. */
SP_EXPORT int sp_worker_register_callable_file(sp_worker *w, uint32_t id, const char *path);
/* Unregister callable `id`; 0 or a status. */
SP_EXPORT int sp_worker_unregister_callable(sp_worker *w, uint32_t id);
/* Run callable `id` on `args` synchronously; outputs are copied back into
 * the host buffers of `args`. `stats` (may be NULL) gets the run's figures.
 * Returns 0 or the run's failure status. */
SP_EXPORT int sp_worker_run(sp_worker *w, uint32_t id, const sp_args *args,
                            const sp_call_config *config, sp_run_stats *stats);
/* Text of the last failure on this worker ("" if none). */
SP_EXPORT const char *sp_worker_last_error(const sp_worker *w);
/* The module's pipeline contract (valid while the worker is open). */
SP_EXPORT const sp_pipeline_contract *sp_worker_contract(const sp_worker *w);

#endif
