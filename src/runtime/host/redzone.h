/* The checking mode's red zones, the host's half: the run's checking mode,
 * and the message that names an overrun the chip found
 * (runtime/device/redzone_check.h: the zones, their fill and check). A
 * damaged zone fails the run with SP_EKERNEL_OVERRUN naming the task, its
 * kernel and the argument. */
#ifndef SP_RUNTIME_REDZONE_H
#define SP_RUNTIME_REDZONE_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/device/redzone_check.h"
#include "runtime/host/loaded_callable.h"
#include "simpler/host_api.h"
#include "simpler/types.h"

/* SP_EKERNEL_OVERRUN and a message naming the device (`api`'s), the task,
 * kernel(s), argument and where the damage starts. */
int rt_overrun_format(const sp_host_api *api, const rt_overrun_report *r,
                      const rt_loaded_callable *lc, char *msg, size_t len);
/* The run's checking mode: SP_CALL_CHECK in the config's flags and not
 * SP_CALL_NO_CHECK (settings.check reaches it as SP_CALL_CHECK: the worker
 * and rt_run_defaults fold it in). */
bool rt_check_mode(const sp_call_config *config);

#endif
