/* The host half of a run both runtimes share: launch / poll / wait of the
 * device side, the trace header, and finalize. */
#include "runtime/host/host_run.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/wait.h"
#include "simpler/module.h"
#include "simpler/status.h"

void rt_host_run_init(rt_host_run *h, const rt_prepare *p, const sp_geometry *geo)
{
    h->api = p->api;
    h->clusters = geo->clusters;
    h->callable = p->callable;
    h->err = p->err;
    h->err_len = p->err_len;
}

int rt_host_run_launch(rt_host_run *h, sp_launch_fn fn, void *dev_ctx, uint32_t threads)
{
    uint64_t deadline = 0;
    int rc;
    /* The device runs one launch at a time; another context's (on the same
     * device) ends on its own, so wait for it rather than fail. */
    for (;;) {
        h->launch_ns = sp_now_ns(); /* before the launch: it may dispatch at once */
        rc = sp_host_launch(h->api, fn, dev_ctx, threads, &h->rec);
        if (rc != SP_EBUSY)
            break;
        if (!deadline)
            deadline = h->launch_ns + RT_LAUNCH_BUSY_WAIT_NS;
        if (sp_host_wait_idle(h->api, deadline) == SP_EBUSY) {
            snprintf(h->err, h->err_len,
                     "device launch of %u thread(s): another launch still runs on the device "
                     "after %llu s",
                     threads, (unsigned long long)(RT_LAUNCH_BUSY_WAIT_NS / 1000000000ull));
            return SP_EBUSY;
        }
    }
    if (rc) {
        snprintf(h->err, h->err_len, "device launch of %u thread(s): %s", threads,
                 sp_status_name(rc));
        return rc;
    }
    h->launched = 1;
    return SP_OK;
}

static int settle(rt_host_run *h, int result)
{
    h->done = 1;
    h->result = result;
    h->device_ns = sp_now_ns() - h->launch_ns;
    return result;
}

int rt_host_run_poll(rt_host_run *h)
{
    if (h->done)
        return h->result;
    int result = 0;
    int rc = sp_host_launch_poll(h->api, &h->rec, &result);
    if (rc == SP_EBUSY)
        return SP_RUN_NOT_READY;
    return settle(h, rc ? rc : result);
}

int rt_host_run_wait(rt_host_run *h, uint64_t deadline_ns)
{
    if (h->done)
        return h->result;
    int rc = sp_host_launch_wait(h->api, &h->rec, deadline_ns);
    if (rc == SP_ETIMEOUT) {
        snprintf(h->err, h->err_len, "run did not complete before its deadline");
        return rc;
    }
    return settle(h, rc);
}

int rt_describe(const rt_prepare *p, sp_device_info *out)
{
    int rc = sp_host_describe(p->api, out);
    if (rc)
        snprintf(p->err, p->err_len, "describing the device: %s", sp_status_name(rc));
    return rc;
}

int rt_host_run_trace(rt_host_run *h, uint32_t sched_threads, sp_run_trace *io)
{
    io->sched_threads = sched_threads;
    io->clusters = h->clusters;
    io->launch_ns = h->launch_ns;
    io->done_ns = h->launch_ns + h->device_ns;
    return rt_trace_dev_read(&h->trace, h->api, io);
}

int rt_run_finalize(rt_run *r, int completed_ok)
{
    rt_host_run *h = (rt_host_run *)(void *)r;
    int rc = SP_OK;
    if (completed_ok)
        rc = rt_staging_copy_back(&h->staging, h->api, h->err, h->err_len);
    rt_staging_release(&h->staging, h->api);
    rt_trace_dev_free(&h->trace, h->api);
    free(r);
    return rc;
}
