/* Launch / poll / wait of a run's device side, shared by both runtimes. */
#include "runtime/host/device_run.h"

#include <stdio.h>

#include "common/wait.h"
#include "simpler/module.h"
#include "simpler/status.h"

int sp_device_run_launch(sp_device_run *d, sp_device_main fn, void *dev_ctx, uint32_t threads,
                         char *err, size_t err_len)
{
    uint64_t deadline = 0;
    int rc;
    /* The device runs one launch at a time; another context's (on the same
     * device) ends on its own, so wait for it rather than fail. */
    for (;;) {
        d->launch_ns = sp_now_ns(); /* before the launch: it may dispatch at once */
        rc = sp_device_launch_recorded(d->dev, fn, dev_ctx, threads, &d->rec);
        if (rc != SP_EBUSY)
            break;
        if (!deadline)
            deadline = d->launch_ns + SP_DEVICE_RUN_BUSY_WAIT_NS;
        if (sp_device_wait_idle(d->dev, deadline) == SP_EBUSY) {
            snprintf(err, err_len,
                     "device launch of %u thread(s): another launch still runs on the device "
                     "after %llu s",
                     threads, (unsigned long long)(SP_DEVICE_RUN_BUSY_WAIT_NS / 1000000000ull));
            return SP_EBUSY;
        }
    }
    if (rc) {
        snprintf(err, err_len, "device launch of %u thread(s): %s", threads, sp_status_name(rc));
        return rc;
    }
    d->launched = 1;
    return SP_OK;
}

static int settle(sp_device_run *d, int result)
{
    d->done = 1;
    d->result = result;
    d->device_ns = sp_now_ns() - d->launch_ns;
    return result;
}

int sp_device_run_poll(sp_device_run *d)
{
    if (d->done)
        return d->result;
    int result = 0;
    int rc = sp_device_poll_recorded(d->dev, &d->rec, &result);
    if (rc == SP_EBUSY)
        return SP_RUN_NOT_READY;
    return settle(d, rc ? rc : result);
}

int sp_device_run_wait(sp_device_run *d, uint64_t deadline_ns)
{
    if (d->done)
        return d->result;
    int rc = sp_device_wait_recorded(d->dev, &d->rec, deadline_ns);
    if (rc == SP_ETIMEOUT)
        return rc;
    return settle(d, rc);
}
