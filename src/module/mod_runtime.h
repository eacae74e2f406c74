/* Which runtime this module drives: the build generates one definition per
 * runtime x platform pair (src/module/mod_runtime.c.in, configured by
 * src/CMakeLists.txt), so a reader following a run from the ABI down finds
 * the table here rather than a symbol the link happened to pick. */
#ifndef SP_MODULE_MOD_RUNTIME_H
#define SP_MODULE_MOD_RUNTIME_H

#include "runtime/runtime.h"

/* The runtime's ops table (hbg_runtime_ops or tmr_runtime_ops). */
const rt_ops *mod_runtime(void);

#endif
