/* Conformance: kernels load from bytes in memory (no temp files): a good binary gives a
 * callable entry, a missing entry and a non-ELF blob give their own codes. */
#include <criterion/criterion.h>
#include <string.h>

#include "chip_test_support.h"
#include "common/log.h"

static sp_device *dev;

static void open_dev(void)
{
    cr_assert_eq(sp_device_open(0, NULL, &dev), SP_OK);
}

static void close_dev(void)
{
    sp_device_close(dev);
}

TestSuite(kernel_loader, .init = open_dev, .fini = close_dev);

/* Call chip_count directly on host memory: it counts task 3 once. */
static void expect_chip_count_works(sp_kernel_fn fn)
{
    uint32_t counts[4] = {0}, errors = 0;
    uint64_t args[3] = {(uint64_t)(uintptr_t)counts, SP_CORE_AIV, (uint64_t)(uintptr_t)&errors};
    sp_kernel_ctx ctx = {.block_num = 1, .core_type = SP_CORE_AIV, .task_id = 3};
    fn(args, &ctx);
    cr_expect_eq(counts[3], 1);
    cr_expect_eq(counts[0] + counts[1] + counts[2], 0);
    cr_expect_eq(errors, 0);
}

Test(kernel_loader, loads_a_kernel_from_bytes)
{
    size_t size;
    void *bytes = read_test_kernel("chip_probe.so", &size);
    sp_kernel_binary *a = NULL, *b = NULL;
    cr_assert_eq(sp_kernel_binary_load(dev, bytes, size, "chip_count", &a), SP_OK);
    cr_assert_not_null(a);
    cr_assert_not_null(sp_kernel_binary_entry(a));
    expect_chip_count_works(sp_kernel_binary_entry(a));

    /* The same bytes again: a second, independent load. */
    cr_assert_eq(sp_kernel_binary_load(dev, bytes, size, "chip_count", &b), SP_OK);
    cr_assert_not_null(b);
    expect_chip_count_works(sp_kernel_binary_entry(b));
    sp_kernel_binary_unload(a);
    expect_chip_count_works(sp_kernel_binary_entry(b));
    sp_kernel_binary_unload(b);

    /* Load-unload cycles do not leak descriptors or mappings (fd reuse). */
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(sp_kernel_binary_load(dev, bytes, size, "chip_report_ctx", &a), SP_OK);
        sp_kernel_binary_unload(a);
    }
    free(bytes);
}

Test(kernel_loader, missing_entry_is_named)
{
    size_t size;
    void *bytes = read_test_kernel("chip_probe.so", &size);
    sp_kernel_binary *kb = (sp_kernel_binary *)&kb;
    cr_expect_eq(sp_kernel_binary_load(dev, bytes, size, "no_such_kernel", &kb), SP_EKERNEL_ENTRY);
    cr_expect_null(kb);
    free(bytes);
}

typedef struct captured {
    char line[1024];
    int errors;
} captured;

static void capture(int level, const char *line, void *user)
{
    captured *c = user;
    if (level >= SP_LOG_ERROR) {
        c->errors++;
        snprintf(c->line, sizeof c->line, "%s", line);
    }
}

Test(kernel_loader, garbage_bytes_do_not_load)
{
    captured log = {0};
    sp__log_set_sink(capture, &log);
    char garbage[4096];
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (char)(i * 131 + 7);
    sp_kernel_binary *kb = (sp_kernel_binary *)&kb;
    cr_expect_eq(sp_kernel_binary_load(dev, garbage, sizeof garbage, "chip_count", &kb),
                 SP_EKERNEL_LOAD);
    cr_expect_null(kb);
    cr_expect_eq(log.errors, 1);
    /* Refused by the ELF structure check before the loader sees it. */
    cr_expect(strstr(log.line, "not an ELF file") != NULL, "logged: %s", log.line);

    /* A real binary cut short is refused too, not crashed on. */
    size_t size;
    void *bytes = read_test_kernel("chip_probe.so", &size);
    cr_expect_eq(sp_kernel_binary_load(dev, bytes, 64, "chip_count", &kb), SP_EKERNEL_LOAD);
    cr_expect_null(kb);
    free(bytes);
    sp__log_set_sink(NULL, NULL);
}

Test(kernel_loader, bad_arguments_are_refused)
{
    sp_kernel_binary *kb = NULL;
    char byte = 0;
    cr_expect_eq(sp_kernel_binary_load(dev, NULL, 10, "x", &kb), SP_EINVAL);
    cr_expect_eq(sp_kernel_binary_load(dev, &byte, 0, "x", &kb), SP_EINVAL);
    cr_expect_eq(sp_kernel_binary_load(dev, &byte, 1, NULL, &kb), SP_EINVAL);
    cr_expect_eq(sp_kernel_binary_load(dev, &byte, 1, "x", NULL), SP_EINVAL);
    cr_expect_null(sp_kernel_binary_entry(NULL));
    sp_kernel_binary_unload(NULL);
}
