/* Opening a runtime module: dlopen, every mandatory symbol by name, and the
 * pipeline contract check. A module that fails any of it is refused here,
 * at load, with the reason — never at its first call. */
#ifndef SP_WORKER_MODULE_LOADER_H
#define SP_WORKER_MODULE_LOADER_H

#include <stddef.h>

#include "simpler/module.h"

typedef struct wk_module_api {
    void *handle;
#define SP_MODULE_FIELD(name) name##_fn name;
    SP_MODULE_SYMBOLS(SP_MODULE_FIELD)
#undef SP_MODULE_FIELD
} wk_module_api;

/* Load and check the module at `path`. 0, or a status with `err` set. */
int wk_module_open(const char *path, wk_module_api *api, char *err, size_t err_len);
void wk_module_close(wk_module_api *api);
/* Check a contract against what this worker accepts; 0 or SP_EABI / SP_ECONTRACT. */
int wk_contract_validate(const sp_pipeline_contract *c, char *err, size_t err_len);

#endif
