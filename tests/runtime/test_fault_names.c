/* The host half of a run's device-side failure reports: a kernel fault and
 * a red-zone overrun are named with the device they happened on ("device
 * 3: task 7: kernel 'k_add' ..."), so two devices of one process are told
 * apart, together with the task, the kernel's entry and func_id and what
 * ended it. The device half (the claim) keeps the first report only. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/fault.h"
#include "platform/device.h"
#include "runtime/device/fault_claim.h"
#include "runtime/device/redzone_check.h"
#include "runtime/host/fault_report.h"
#include "runtime/host/redzone.h"
#include "simpler/status.h"

static sp_device *dev;
static sp_host_api api;
static rt_loaded_kernel kernels[2];
static rt_loaded_callable lc;

static void open_device(int id)
{
    sp_device_options opt;
    memset(&opt, 0, sizeof opt);
    opt.geometry.clusters = 1;
    opt.geometry.aicpu_threads = 2;
    cr_assert_eq(sp_device_open(id, &opt, &dev), SP_OK);
    cr_assert_eq(sp_device_bind_host_api(dev, 0, 0, &api), SP_OK);
    kernels[0] = (rt_loaded_kernel){.func_id = 4, .entry = "k_add", .signature = ""};
    kernels[1] = (rt_loaded_kernel){.func_id = 9, .entry = "k_mul", .signature = ""};
    memset(&lc, 0, sizeof lc);
    lc.kernels = kernels;
    lc.kernel_count = 2;
}

static void close_device(void)
{
    sp_device_close(dev);
}

Test(fault_names, crash_names_device_task_and_kernel)
{
    open_device(3);
    rt_fault_report r;
    memset(&r, 0, sizeof r);
    cr_assert(rt_fault_report_claim(&r, 7, 2, 1, SIGSEGV, 1000));
    cr_assert_not(rt_fault_report_claim(&r, 8, 0, 0, SIGBUS, 1),
                  "the first fault keeps the report");
    char msg[512];
    cr_assert_eq(rt_fault_report_format(&api, &r, &lc, msg, sizeof msg), SP_EKERNEL_FAULT);
    cr_assert(strncmp(msg, "device 3: ", 10) == 0, "got: %s", msg);
    cr_assert(strstr(msg, "task 7") && strstr(msg, "'k_mul'") && strstr(msg, "func_id 9") &&
                  strstr(msg, "core 2"),
              "got: %s", msg);
    close_device();
}

Test(fault_names, timeout_names_device)
{
    open_device(1);
    rt_fault_report r;
    memset(&r, 0, sizeof r);
    cr_assert(rt_fault_report_claim(&r, 5, 0, 0, SP_FAULT_INTERRUPT, 50000000));
    cr_assert_eq(rt_fault_status(SP_FAULT_INTERRUPT), SP_EKERNEL_TIMEOUT);
    char msg[512];
    cr_assert_eq(rt_fault_report_format(&api, &r, &lc, msg, sizeof msg), SP_EKERNEL_TIMEOUT);
    cr_assert(strncmp(msg, "device 1: task 5: kernel 'k_add'", 32) == 0, "got: %s", msg);
    cr_assert(strstr(msg, "was stopped"), "got: %s", msg);
    close_device();
}

Test(fault_names, overrun_names_device)
{
    open_device(2);
    rt_overrun_report r;
    memset(&r, 0, sizeof r);
    int32_t k[3] = {0, -1, -1};
    cr_assert(rt_overrun_claim(&r, 11, k, 1, 70, 64));
    char msg[512];
    cr_assert_eq(rt_overrun_format(&api, &r, &lc, msg, sizeof msg), SP_EKERNEL_OVERRUN);
    cr_assert(strncmp(msg, "device 2: task 11: kernel 'k_add'", 33) == 0, "got: %s", msg);
    cr_assert(strstr(msg, "tensor argument 1") && strstr(msg, "red zone"), "got: %s", msg);
    close_device();
}

Test(fault_names, no_description_no_prefix)
{
    /* A value with no platform behind it (no describe entry) still formats. */
    sp_host_api_functions none;
    memset(&none, 0, sizeof none);
    sp_host_api bare = {.functions = &none};
    memset(&lc, 0, sizeof lc);
    rt_fault_report r;
    memset(&r, 0, sizeof r);
    cr_assert(rt_fault_report_claim(&r, 1, 0, -1, SIGFPE, 0));
    char msg[256];
    cr_assert_eq(rt_fault_report_format(&bare, &r, &lc, msg, sizeof msg), SP_EKERNEL_FAULT);
    cr_assert(strncmp(msg, "task 1: kernel '?'", 18) == 0, "got: %s", msg);
}
