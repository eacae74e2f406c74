/* Runtime module loading and contract validation. */
#include "worker/module_loader.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "simpler/status.h"

int wk_contract_validate(const sp_pipeline_contract *c, char *err, size_t err_len)
{
    if (!c) {
        snprintf(err, err_len, "module returned no pipeline contract");
        return SP_ECONTRACT;
    }
    if (c->abi_version != SP_PIPELINE_ABI_VERSION) {
        snprintf(err, err_len, "module ABI version %u, this worker accepts %u only", c->abi_version,
                 SP_PIPELINE_ABI_VERSION);
        return SP_EABI;
    }
    if (c->pipeline_depth < 1 || c->pipeline_depth > SP_PIPELINE_MAX_DEPTH) {
        snprintf(err, err_len, "pipeline depth %u outside 1..%d", c->pipeline_depth,
                 SP_PIPELINE_MAX_DEPTH);
        return SP_ECONTRACT;
    }
    if (c->resource_count > SP_PIPELINE_MAX_RESOURCES) {
        snprintf(err, err_len, "resource count %u above %u", c->resource_count,
                 SP_PIPELINE_MAX_RESOURCES);
        return SP_ECONTRACT;
    }
    if (c->reserved) {
        snprintf(err, err_len, "contract reserved field is %u, must be 0", c->reserved);
        return SP_ECONTRACT;
    }
    int arena_kinds = 0;
    for (uint32_t i = 0; i < c->resource_count; i++) {
        const sp_pipeline_resource *r = &c->resources[i];
        if (r->kind < SP_RESOURCE_HEAP || r->kind > SP_RESOURCE_CORE_STREAM) {
            snprintf(err, err_len, "resource %u has unknown kind %u", i, r->kind);
            return SP_ECONTRACT;
        }
        if (r->resource_class < SP_CLASS_HOST_PER_RUN ||
            r->resource_class > SP_CLASS_DEVICE_SCRATCH) {
            snprintf(err, err_len, "resource %u has unknown class %u", i, r->resource_class);
            return SP_ECONTRACT;
        }
        if (r->reserved) {
            snprintf(err, err_len, "resource %u reserved field is non-zero", i);
            return SP_ECONTRACT;
        }
        for (uint32_t j = 0; j < i; j++)
            if (c->resources[j].kind == r->kind) {
                snprintf(err, err_len, "resource kind %u listed twice", r->kind);
                return SP_ECONTRACT;
            }
        bool arena = r->kind == SP_RESOURCE_HEAP || r->kind == SP_RESOURCE_SHARED_MEMORY ||
                     r->kind == SP_RESOURCE_RUNTIME_IMAGE;
        if (arena) {
            /* One arena bank serves heap, shared memory and image together. */
            if (r->resource_class != SP_CLASS_EXEC_HANDLE) {
                snprintf(err, err_len,
                         "resource %u (kind %u) must be exec-handle: one arena bank serves "
                         "heap, shared memory and image together",
                         i, r->kind);
                return SP_ECONTRACT;
            }
            arena_kinds++;
        }
    }
    if (arena_kinds != 0 && arena_kinds != 3) {
        snprintf(err, err_len,
                 "arena bank lists %d of heap / shared memory / image; all three "
                 "or none",
                 arena_kinds);
        return SP_ECONTRACT;
    }
    return SP_OK;
}

int wk_module_open(const char *path, wk_module_api *api, char *err, size_t err_len)
{
    memset(api, 0, sizeof *api);
    if (!path) {
        snprintf(err, err_len, "no module path");
        return SP_EINVAL;
    }
    api->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!api->handle) {
        const char *why = dlerror();
        snprintf(err, err_len, "cannot load module '%s': %s", path, why ? why : "unknown");
        return SP_EMODULE;
    }
#define SP_MODULE_RESOLVE(name)                                                                    \
    api->name = (name##_fn)dlsym(api->handle, #name);                                              \
    if (!api->name) {                                                                              \
        snprintf(err, err_len, "module '%s' lacks mandatory symbol '%s'", path, #name);            \
        wk_module_close(api);                                                                      \
        return SP_EMODULE_SYMBOL;                                                                  \
    }
    SP_MODULE_SYMBOLS(SP_MODULE_RESOLVE)
#undef SP_MODULE_RESOLVE
    char why[256];
    int rc = wk_contract_validate(api->simpler_get_pipeline_contract(), why, sizeof why);
    if (rc) {
        snprintf(err, err_len, "module '%s' refused: %s", path, why);
        wk_module_close(api);
        return rc;
    }
    return SP_OK;
}

void wk_module_close(wk_module_api *api)
{
    if (api->handle)
        dlclose(api->handle);
    memset(api, 0, sizeof *api);
}
