/* Registering a callable on a device: validate, copy, load the
 * orchestration (host side) and the kernels (device side), and upload the
 * table of kernel entry points the schedulers index. */
#include "runtime/shared/loaded_callable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"

int sp_loaded_callable_kernel(const sp_loaded_callable *lc, int32_t func_id)
{
    if (func_id < 0)
        return -1;
    if (func_id < SP_FUNC_ID_DIRECT)
        return lc->by_func_id[func_id] - 1;
    for (uint32_t i = 0; i < lc->kernel_count; i++)
        if (lc->kernels[i].func_id == func_id)
            return (int)i;
    return -1;
}

void sp_loaded_callable_unload(sp_device *dev, sp_loaded_callable *lc)
{
    if (!lc)
        return;
    if (lc->kernel_table)
        sp_device_free(dev, lc->kernel_table);
    for (uint32_t i = 0; i < lc->kernel_count; i++)
        if (lc->kernels[i].binary)
            sp_kernel_binary_unload(lc->kernels[i].binary);
    free(lc->kernels);
    sp_shared_object_close(lc->orch);
    free(lc->blob);
    free(lc);
}

static int load_orchestration(sp_loaded_callable *lc, char *err, size_t err_len)
{
    const sp_callable_header *h = lc->view.header;
    char why[256] = "";
    int rc = sp_shared_object_open(lc->view.base + h->orch.offset, h->orch.size, &lc->orch, why,
                                   sizeof why);
    if (rc) {
        snprintf(err, err_len, "callable %u: orchestration: %s", lc->id, why);
        return rc;
    }
    lc->orch_entry = (sp_orch_entry_fn)sp_shared_object_symbol(lc->orch, lc->view.orch_entry);
    if (!lc->orch_entry) {
        snprintf(err, err_len, "callable %u: orchestration has no entry '%s'", lc->id,
                 lc->view.orch_entry);
        return SP_EKERNEL_ENTRY;
    }
    if (lc->view.orch_config) {
        lc->orch_config =
            (sp_orch_config_fn)sp_shared_object_symbol(lc->orch, lc->view.orch_config);
        if (!lc->orch_config) {
            snprintf(err, err_len, "callable %u: orchestration has no config '%s'", lc->id,
                     lc->view.orch_config);
            return SP_EKERNEL_ENTRY;
        }
        lc->config.abi_version = SP_ORCH_ABI_VERSION;
        lc->orch_config(&lc->config);
        if (lc->config.abi_version != SP_ORCH_ABI_VERSION) {
            snprintf(err, err_len, "callable %u: orchestration config reports ABI %u, expected %u",
                     lc->id, lc->config.abi_version, SP_ORCH_ABI_VERSION);
            return SP_EABI;
        }
    }
    return SP_OK;
}

static int load_kernels(sp_device *dev, sp_loaded_callable *lc, char *err, size_t err_len)
{
    uint32_t n = lc->view.header->kernel_count;
    lc->kernels = calloc(n ? n : 1, sizeof *lc->kernels);
    sp_kernel_fn *table = lc->kernels ? calloc(n ? n : 1, sizeof *table) : NULL;
    if (!table) {
        snprintf(err, err_len, "callable %u: no host memory for the table of %u kernels", lc->id,
                 n);
        return SP_ENOMEM;
    }
    lc->kernel_count = n; /* only now: unload walks kernels[0..kernel_count) */
    int rc = SP_OK;
    for (uint32_t i = 0; i < lc->kernel_count && rc == SP_OK; i++) {
        const sp_callable_kernel *ck = &lc->view.kernels[i];
        sp_loaded_kernel *k = &lc->kernels[i];
        k->func_id = ck->func_id;
        k->core_type = ck->core_type;
        k->entry = sp_callable_string(&lc->view, ck->entry);
        k->signature = sp_callable_string(&lc->view, ck->signature);
        if (!k->signature)
            k->signature = "";
        rc = sp_kernel_binary_load(dev, lc->view.base + ck->binary.offset, ck->binary.size,
                                   k->entry, &k->binary);
        if (rc) {
            snprintf(err, err_len, "callable %u: kernel func_id %d ('%s') failed to load: %s",
                     lc->id, k->func_id, k->entry, sp_status_name(rc));
            break;
        }
        k->fn = sp_kernel_binary_entry(k->binary);
        table[i] = k->fn;
        if (k->func_id < SP_FUNC_ID_DIRECT)
            lc->by_func_id[k->func_id] = (int16_t)(i + 1);
    }
    if (rc == SP_OK) {
        uint64_t bytes = (uint64_t)(lc->kernel_count ? lc->kernel_count : 1) * sizeof *table;
        rc = sp_device_malloc(dev, bytes, &lc->kernel_table);
        if (rc == SP_OK)
            rc = sp_device_copy_to(dev, lc->kernel_table, table, bytes);
        if (rc)
            snprintf(err, err_len, "callable %u: kernel table upload failed: %s", lc->id,
                     sp_status_name(rc));
    }
    free(table);
    return rc;
}

int sp_loaded_callable_load(sp_device *dev, uint32_t id, const void *blob, size_t size,
                            sp_loaded_callable **out, char *err, size_t err_len)
{
    *out = NULL;
    sp_loaded_callable *lc = calloc(1, sizeof *lc);
    if (!lc)
        return SP_ENOMEM;
    lc->id = id;
    lc->blob = malloc(size ? size : 1);
    if (!lc->blob) {
        free(lc);
        return SP_ENOMEM;
    }
    memcpy(lc->blob, blob, size);
    char why[256] = "";
    int rc = sp_callable_validate(lc->blob, size, &lc->view, why, sizeof why);
    if (rc) {
        snprintf(err, err_len, "callable %u: %s", id, why);
        sp_loaded_callable_unload(dev, lc);
        return rc;
    }
    rc = load_orchestration(lc, err, err_len);
    if (rc == SP_OK)
        rc = load_kernels(dev, lc, err, err_len);
    if (rc) {
        sp_loaded_callable_unload(dev, lc);
        return rc;
    }
    *out = lc;
    return SP_OK;
}
