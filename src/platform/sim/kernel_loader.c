/* Kernel shared objects from bytes, without temp files: the sim "device"
 * loads a kernel with the common memfd loader (common/shared_object.h) and
 * resolves its entry. Each load is its own copy of the object. */
#include <stdlib.h>

#include "common/log.h"
#include "common/shared_object.h"
#include "platform/sim/sim_device.h"
#include "simpler/status.h"

struct sp_kernel_image {
    sp__shared_object *so;
    sp_kernel_fn entry;
};

int sp_kernel_binary_load(sp_device *dev, const void *bytes, size_t size, const char *entry,
                          sp_kernel_binary **out)
{
    int dev_id = dev ? dev->id : -1;
    if (!out)
        return SP_EINVAL;
    *out = NULL;
    if (!bytes || !size || !entry || !*entry) {
        SP_ERROR("device %d: kernel load needs bytes, a size and an entry name", dev_id);
        return SP_EINVAL;
    }
    sp_kernel_binary *kb = calloc(1, sizeof *kb);
    if (!kb)
        return SP_ENOMEM;
    char why[256] = "";
    int rc = sp__shared_object_open(bytes, size, &kb->so, why, sizeof why);
    if (rc) {
        SP_ERROR("device %d: kernel '%s': %s", dev_id, entry, why);
        free(kb);
        return rc;
    }
    void *fn;
    rc = sp__shared_object_entry(kb->so, entry, &fn, why, sizeof why);
    if (rc) {
        SP_ERROR("device %d: kernel entry (%zu-byte binary): %s", dev_id, size, why);
        sp__shared_object_close(kb->so);
        free(kb);
        return rc;
    }
    kb->entry = (sp_kernel_fn)fn;
    *out = kb;
    return SP_OK;
}

sp_kernel_fn sp_kernel_binary_entry(const sp_kernel_binary *kb)
{
    return kb ? kb->entry : NULL;
}

void sp_kernel_binary_unload(sp_kernel_binary *kb)
{
    if (!kb)
        return;
    sp__shared_object_close(kb->so);
    free(kb);
}
