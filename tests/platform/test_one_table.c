/* One platform instance per process: the hbg and tmr runtime modules and
 * the process itself link one libsimpler_platform_sim.so, so a device id is
 * one chip to all of them (memory allocated through one module is the
 * device's, seen and freed through the other), the log has one sink and
 * the crash guard one set of signal handlers. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include "memory_test_support.h"
#include "simpler/module.h"

TestSuite(one_table, .init = capture_log);

typedef struct module {
    void *so;
    void *ctx;
    simpler_create_device_context_fn create;
    simpler_destroy_device_context_fn destroy;
    simpler_init_fn init;
    simpler_device_malloc_fn malloc_;
    simpler_device_free_fn free_;
    simpler_device_info_fn info;
} module;

static void *sym(void *so, const char *name)
{
    void *p = dlsym(so, name);
    cr_assert_not_null(p, "%s: %s", name, dlerror());
    return p;
}

static module module_open(const char *file, int device_id)
{
    module m = {.so = dlopen(file, RTLD_NOW | RTLD_LOCAL)};
    cr_assert_not_null(m.so, "%s", dlerror());
    m.create = (simpler_create_device_context_fn)sym(m.so, "simpler_create_device_context");
    m.destroy = (simpler_destroy_device_context_fn)sym(m.so, "simpler_destroy_device_context");
    m.init = (simpler_init_fn)sym(m.so, "simpler_init");
    m.malloc_ = (simpler_device_malloc_fn)sym(m.so, "simpler_device_malloc");
    m.free_ = (simpler_device_free_fn)sym(m.so, "simpler_device_free");
    m.info = (simpler_device_info_fn)sym(m.so, "simpler_device_info");
    cr_assert_eq(m.create(&m.ctx), SP_OK);
    sp_settings s = {.memory_bytes = TEST_MEMORY_BYTES};
    cr_assert_eq(m.init(m.ctx, device_id, NULL, &s), SP_OK, "%s on device %d", file, device_id);
    return m;
}

static void module_close(module *m)
{
    cr_assert_eq(m->destroy(m->ctx), SP_OK);
    dlclose(m->so);
}

static uint64_t committed(const module *m)
{
    sp_device_info info;
    cr_assert_eq(m->info(m->ctx, &info), SP_OK);
    return info.committed_bytes;
}

Test(one_table, a_device_id_is_one_chip_to_every_module)
{
    module hbg = module_open(SP_MODULE_DIR "/libsimpler_hbg_sim.so", 9);
    module tmr = module_open(SP_MODULE_DIR "/libsimpler_tmr_sim.so", 9);
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(9, NULL, &dev), SP_OK);

    uint64_t base = sp_device_committed_bytes(dev);
    cr_assert_eq(committed(&hbg), base);
    cr_assert_eq(committed(&tmr), base);
    uint64_t p = 0;
    cr_assert_eq(hbg.malloc_(hbg.ctx, 1 << 20, &p), SP_OK);
    cr_expect_geq(committed(&tmr), base + (1 << 20), "tmr sees hbg's allocation on device 9");
    cr_expect_eq(committed(&tmr), sp_device_committed_bytes(dev));
    sp_device_info info;
    cr_assert_eq(tmr.info(tmr.ctx, &info), SP_OK);
    cr_expect_eq(info.open_devices, 1, "one device open in the process, not one per module");
    /* The buffer is the device's, not hbg's: tmr frees it. */
    cr_expect_eq(tmr.free_(tmr.ctx, p), SP_OK);
    cr_expect_eq(sp_device_committed_bytes(dev), base);

    sp_device_close(dev);
    module_close(&tmr);
    module_close(&hbg);
}

Test(one_table, modules_log_to_the_process_sink)
{
    module hbg = module_open(SP_MODULE_DIR "/libsimpler_hbg_sim.so", 10);
    capture_reset();
    /* A refusal logged by the platform inside the module's call reaches
     * the sink this process installed (one log, not one per module). */
    cr_assert_neq(hbg.free_(hbg.ctx, 0x1234), SP_OK);
    cr_expect_geq(captured_errors, 1, "the module's platform logged to this process's sink");
    cr_expect(strstr(captured_all, "device 10"), "log: %s", captured_all);
    module_close(&hbg);
}

static void *segv_handler(void)
{
    struct sigaction sa;
    cr_assert_eq(sigaction(SIGSEGV, NULL, &sa), 0);
    return (sa.sa_flags & SA_SIGINFO) ? (void *)sa.sa_sigaction : (void *)sa.sa_handler;
}

Test(one_table, the_crash_guard_is_installed_once)
{
    /* Each module's device installs the guard when its chip starts; with
     * one platform instance the second finds it installed (a copy per
     * module would stack its own handler over the first). */
    module hbg = module_open(SP_MODULE_DIR "/libsimpler_hbg_sim.so", 11);
    void *first = segv_handler();
    cr_assert_neq(first, (void *)SIG_DFL, "the guard is installed while a device is open");
    module tmr = module_open(SP_MODULE_DIR "/libsimpler_tmr_sim.so", 12);
    cr_expect_eq(segv_handler(), first, "the tmr module's device uses the same guard");
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(13, NULL, &dev), SP_OK);
    cr_expect_eq(segv_handler(), first, "and so does this process's own device");
    sp_device_close(dev);
    module_close(&tmr);
    module_close(&hbg);
}
