/* An idle chip costs no CPU: its core and AICPU threads park instead of
 * spinning, both right after the device opens and after a launch. */
#include <criterion/criterion.h>
#include <sys/resource.h>
#include <time.h>

#include "../kernels/chip_probe.h"
#include "chip_test_support.h"
#include "platform/chip.h"

#define WINDOW_NS 500000000ull /* 0.5 s */
#define MAX_CPU_SHARE 0.05

static uint64_t process_cpu_ns(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

/* CPU the whole process burns while this thread sleeps through the window;
 * the sleep is the measurement window, not a stand-in for a condition. */
static void expect_idle(const char *when)
{
    uint64_t cpu0 = process_cpu_ns();
    uint64_t t0 = sp_now_ns();
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)WINDOW_NS};
    while (nanosleep(&ts, &ts) != 0)
        ;
    uint64_t wall = sp_now_ns() - t0;
    uint64_t cpu = process_cpu_ns() - cpu0;
    double share = (double)cpu / (double)wall;
    cr_log_info("%s: %.2f ms CPU in %.0f ms (%.2f%%)", when, cpu / 1e6, wall / 1e6, share * 100);
    cr_expect_lt(share, MAX_CPU_SHARE,
                 "%s: the idle chip used %.1f%% of a CPU (%.2f ms in %.0f ms)", when, share * 100.0,
                 cpu / 1e6, wall / 1e6);
}

typedef struct every_core_ctx {
    uint64_t fn;
    uint64_t args;
    uint64_t deadline_ns;
} every_core_ctx;

/* One kernel on every core, then wait for all of them. */
static int every_core_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)count;
    if (index != 0)
        return 0;
    const every_core_ctx *ec = dev_ctx;
    uint32_t cores = sp_chip_core_count(chip);
    for (uint32_t c = 0; c < cores; c++) {
        sp_chip_payload p = {.fn = (sp_kernel_fn)(uintptr_t)ec->fn,
                             .args = (const uint64_t *)(uintptr_t)ec->args,
                             .task_id = c,
                             .block_num = 1};
        sp_chip_dispatch(chip, c, &p);
    }
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        uint32_t idle = 0;
        while (idle < cores && sp_chip_core_idle(chip, idle))
            idle++;
        if (idle == cores)
            return 0;
        if (sp_chip_event_wait(chip, snap, ec->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
    }
}

static void idle_test(const sp_device_options *opt)
{
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, opt, &dev), SP_OK);
    expect_idle("after open");

    uint32_t cores = sp_device_core_count(dev);
    sp_kernel_binary *kb = load_test_kernel(dev, "chip_probe.so", "chip_report_ctx");
    uint64_t records = dev_alloc_zeroed(dev, cores * sizeof(chip_ctx_record));
    uint64_t args = dev_upload(dev, &records, sizeof records);
    every_core_ctx ec = {.fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kb),
                         .args = args,
                         .deadline_ns = DEADLINE_MS(60000)};
    uint64_t ctx = dev_upload(dev, &ec, sizeof ec);
    uint32_t threads = sp_device_geometry(dev)->aicpu_threads;
    cr_assert_eq(sp_device_launch(dev, every_core_main, (void *)(uintptr_t)ctx, threads), SP_OK);
    cr_assert_eq(sp_device_wait(dev, DEADLINE_MS(90000)), 0);
    chip_ctx_record last;
    dev_download(dev, &last, records + (cores - 1) * sizeof last, sizeof last);
    cr_assert_eq(last.seen, 1, "the launch really ran kernels");
    expect_idle("after a launch");

    sp_device_free(dev, ctx);
    sp_device_free(dev, args);
    sp_device_free(dev, records);
    sp_kernel_binary_unload(kb);
    sp_device_close(dev);
}

Test(chip_idle, default_geometry_parks, .timeout = 60)
{
    idle_test(NULL);
}

Test(chip_idle, larger_chip_parks, .timeout = 60)
{
    sp_device_options opt = {.geometry = {.clusters = 4, .aicpu_threads = 3}};
    idle_test(&opt);
}
