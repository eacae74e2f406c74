/* Conformance: launching device-side code: results, one launch at a time, poll and wait
 * with deadlines, relaunch, and a pool of AICPU threads reused across
 * launches. The launched functions here share a test structure in host
 * memory (a device-side structure, as far as the launch is concerned). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "chip_test_support.h"
#include "platform/chip.h"

#define MAX_THREADS 8

typedef struct launch_probe {
    _Atomic uint32_t calls[MAX_THREADS]; /* calls per thread index */
    _Atomic uint32_t bad_count;          /* calls that saw a wrong thread_count */
    _Atomic uint32_t no_chip;
    uint32_t expect_count;
    pthread_t self[MAX_THREADS];
    int ret[MAX_THREADS]; /* what each index returns */
    sp__waitword gate;    /* index 0 waits for it to become non-zero */
    uint64_t deadline_ns;
} launch_probe;

static int probe_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    launch_probe *p = dev_ctx;
    if (!chip || sp_chip_core_count(chip) == 0)
        atomic_fetch_add(&p->no_chip, 1);
    if (count != p->expect_count || index >= count)
        atomic_fetch_add(&p->bad_count, 1);
    if (index < MAX_THREADS) {
        atomic_fetch_add(&p->calls[index], 1);
        p->self[index] = pthread_self();
    }
    return index < MAX_THREADS ? p->ret[index] : 0;
}

static int gated_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    launch_probe *p = dev_ctx;
    if (index == 0) {
        int timed_out = 0;
        sp__waitword_wait_ne(&p->gate, 0, NULL, p->deadline_ns, &timed_out);
        if (timed_out)
            return SP_ETIMEOUT;
    }
    return probe_main(chip, dev_ctx, index, count);
}

static sp_device *open_dev(uint32_t sched, uint32_t orch)
{
    sp_device_options opt = {.geometry = {.clusters = 1, .aicpu_threads = sched + orch}};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, &opt, &dev), SP_OK);
    return dev;
}

Test(launch, result_is_the_first_nonzero_return)
{
    sp_device *dev = open_dev(2, 1);
    launch_probe p = {.expect_count = 3};
    cr_assert_eq(sp_device_launch(dev, probe_main, &p, 3), SP_OK);
    cr_assert_eq(sp_device_wait(dev, DEADLINE_MS(30000)), 0, "all threads returned 0");
    for (int i = 0; i < 3; i++)
        cr_expect_eq(atomic_load(&p.calls[i]), 1, "thread %d ran %u times", i,
                     atomic_load(&p.calls[i]));
    cr_expect_eq(atomic_load(&p.bad_count), 0);
    cr_expect_eq(atomic_load(&p.no_chip), 0);

    p.ret[1] = -42;
    cr_assert_eq(sp_device_launch(dev, probe_main, &p, 3), SP_OK);
    cr_expect_eq(sp_device_wait(dev, DEADLINE_MS(30000)), -42);
    int result = 0;
    cr_assert_eq(sp_device_poll(dev, &result), SP_OK);
    cr_expect_eq(result, -42);

    /* Two non-zero returns: the result is one of them, never 0 or a blend. */
    p.ret[0] = 5;
    p.ret[2] = 9;
    cr_assert_eq(sp_device_launch(dev, probe_main, &p, 3), SP_OK);
    int rc = sp_device_wait(dev, DEADLINE_MS(30000));
    cr_expect(rc == 5 || rc == -42 || rc == 9, "result %d is one of the returns", rc);

    /* Fewer threads than the pool: only indices 0..threads-1 run. */
    launch_probe q = {.expect_count = 1};
    cr_assert_eq(sp_device_launch(dev, probe_main, &q, 1), SP_OK);
    cr_expect_eq(sp_device_wait(dev, DEADLINE_MS(30000)), 0);
    cr_expect_eq(atomic_load(&q.calls[0]), 1);
    cr_expect_eq(atomic_load(&q.calls[1]) + atomic_load(&q.calls[2]), 0);
    sp_device_close(dev);
}

Test(launch, busy_while_running_then_poll_and_wait)
{
    sp_device *dev = open_dev(1, 1);
    launch_probe p = {.expect_count = 2, .deadline_ns = DEADLINE_MS(60000)};
    p.ret[0] = 7;
    cr_assert_eq(sp_device_launch(dev, gated_main, &p, 2), SP_OK);

    cr_expect_eq(sp_device_launch(dev, probe_main, &p, 1), SP_EBUSY, "one launch at a time");
    int result = 123;
    cr_expect_eq(sp_device_poll(dev, &result), SP_EBUSY);
    cr_expect_eq(result, 123, "poll leaves the result alone while running");
    cr_expect_eq(sp_device_wait(dev, DEADLINE_MS(20)), SP_ETIMEOUT);
    cr_expect_eq(sp_device_wait(dev, sp_now_ns()), SP_ETIMEOUT, "a deadline already past");
    cr_expect_eq(atomic_load(&p.calls[0]), 0, "still held by the gate");

    sp__waitword_store(&p.gate, 1);
    cr_assert_eq(sp_device_wait(dev, DEADLINE_MS(30000)), 7);
    cr_expect_eq(sp_device_poll(dev, &result), SP_OK);
    cr_expect_eq(result, 7);
    cr_expect_eq(sp_device_wait(dev, 0), 7, "waiting again on a finished launch");

    /* Relaunch after completion. */
    launch_probe q = {.expect_count = 2};
    cr_assert_eq(sp_device_launch(dev, probe_main, &q, 2), SP_OK);
    cr_expect_eq(sp_device_wait(dev, 0), 0);
    cr_expect_eq(atomic_load(&q.calls[0]) + atomic_load(&q.calls[1]), 2);
    sp_device_close(dev);
}

Test(launch, nothing_launched_yet)
{
    sp_device *dev = open_dev(1, 1);
    int result = 0;
    cr_expect_eq(sp_device_poll(dev, &result), SP_ESTATE);
    cr_expect_eq(sp_device_wait(dev, DEADLINE_MS(10)), SP_ESTATE);
    sp_device_close(dev);
}

Test(launch, bad_arguments_are_refused)
{
    sp_device *dev = open_dev(2, 1);
    launch_probe p = {.expect_count = 1};
    cr_expect_eq(sp_device_launch(dev, probe_main, &p, 0), SP_EINVAL);
    cr_expect_eq(sp_device_launch(dev, probe_main, &p, 4), SP_EINVAL, "more than sched + orch");
    cr_expect_eq(sp_device_launch(dev, NULL, &p, 1), SP_EINVAL);
    cr_expect_eq(sp_device_launch(NULL, probe_main, &p, 1), SP_EINVAL);
    cr_expect_eq(sp_device_poll(dev, NULL), SP_ESTATE, "refused launches launched nothing");
    cr_assert_eq(sp_device_launch(dev, probe_main, &p, 1), SP_OK);
    cr_expect_eq(sp_device_wait(dev, 0), 0);
    cr_expect_eq(atomic_load(&p.calls[0]), 1);
    sp_device_close(dev);
}

Test(launch, pool_threads_are_reused_across_many_launches, .timeout = 120)
{
    sp_device *dev = open_dev(3, 1);
    launch_probe first = {.expect_count = 4};
    cr_assert_eq(sp_device_launch(dev, probe_main, &first, 4), SP_OK);
    cr_assert_eq(sp_device_wait(dev, DEADLINE_MS(30000)), 0);

    enum { LAUNCHES = 3000 };
    launch_probe p;
    for (uint32_t n = 0; n < LAUNCHES; n++) {
        uint32_t threads = 1 + n % 4;
        memset(&p, 0, sizeof p);
        p.expect_count = threads;
        p.ret[threads - 1] = (int)n + 1;
        cr_assert_eq(sp_device_launch(dev, probe_main, &p, threads), SP_OK, "launch %u", n);
        int rc = sp_device_wait(dev, DEADLINE_MS(30000));
        cr_assert_eq(rc, (int)n + 1, "launch %u returned %d", n, rc);
        for (uint32_t i = 0; i < threads; i++) {
            cr_assert_eq(atomic_load(&p.calls[i]), 1, "launch %u thread %u", n, i);
            cr_assert(pthread_equal(p.self[i], first.self[i]),
                      "launch %u ran index %u on a new thread", n, i);
        }
        cr_assert_eq(atomic_load(&p.bad_count), 0);
    }
    sp_device_close(dev);
}

/* Device memory is open to launched code: a store through a device address
 * made inside the launch is what a copy from the device reads afterwards. */
typedef struct mem_ctx {
    uint64_t buf;
} mem_ctx;

static int store_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)chip, (void)count;
    const mem_ctx *m = dev_ctx;
    ((uint32_t *)(uintptr_t)m->buf)[index] = 0xC0DE0000u + index;
    return 0;
}

Test(launch, launched_code_reaches_device_memory)
{
    sp_device *dev = open_dev(2, 1);
    uint64_t buf = dev_alloc_zeroed(dev, 3 * sizeof(uint32_t));
    mem_ctx m = {.buf = buf};
    uint64_t ctx = dev_upload(dev, &m, sizeof m);
    for (int round = 0; round < 3; round++) {
        cr_assert_eq(sp_device_launch(dev, store_main, (void *)(uintptr_t)ctx, 3), SP_OK);
        cr_assert_eq(sp_device_wait(dev, DEADLINE_MS(30000)), 0);
        uint32_t out[3];
        dev_download(dev, out, buf, sizeof out);
        for (uint32_t i = 0; i < 3; i++)
            cr_expect_eq(out[i], 0xC0DE0000u + i);
        cr_assert_eq(sp_device_memset(dev, buf, 0, sizeof out), SP_OK);
    }
    sp_device_free(dev, ctx);
    sp_device_free(dev, buf);
    sp_device_close(dev);
}
