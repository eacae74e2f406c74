/* Fuzz target for registration: the input is a shared object (byte 0 picks
 * its role: even, the orchestration; odd, the kernel) packed with a good
 * partner into a blob whose checksum matches, bypassing the builder's own
 * ELF check, and registered on a host_build_graph device context through
 * the module ABI. Whatever the bytes, registration must end in a named
 * status with a reason, never a signal or exit in this process: damaged
 * ELF is refused by the structure check, what passes it is loaded first in
 * registration's throw-away child (common/load_probe.c).
 *
 * One input per process is libFuzzer's job, not this file's: `make fuzz`
 * runs this target with -fork=1 -ignore_crashes=1, so a crash is recorded
 * in the artifacts and fuzzing goes on. A fork inside the target would hide
 * the child's coverage from the fuzzer (its counters die with it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "worker/module_loader.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_register: invariant broken at line %d: %s\n", __LINE__, #cond);  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static wk_module_api m;
static void *ctx;
static uint8_t *good_orch, *good_kernel;
static size_t good_orch_size, good_kernel_size;

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    CHECK(f);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n > 0 && fseek(f, 0, SEEK_SET) == 0);
    uint8_t *b = malloc((size_t)n);
    CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* At exit, so the device's threads are gone before LeakSanitizer stops the
 * world to scan it (it faults on the sim's live thread state otherwise). */
static void teardown(void)
{
    m.simpler_destroy_device_context(ctx);
    wk_module_close(&m);
    free(good_orch);
    free(good_kernel);
}

static void init_once(void)
{
    if (ctx)
        return;
    char err[512];
    CHECK(wk_module_open(SP_MODULE_DIR "/libsimpler_hbg_sim.so", &m, err, sizeof err) == SP_OK);
    CHECK(m.simpler_bind_logging(4, NULL, NULL) == SP_OK);
    CHECK(m.simpler_create_device_context(&ctx) == SP_OK);
    sp_call_config prewarm = {.clusters = 1, .sched_threads = 1};
    CHECK(m.simpler_init(ctx, 0, &prewarm, NULL) == SP_OK);
    good_orch = read_all(SP_TEST_KERNEL_DIR "/orch_noop.so", &good_orch_size);
    good_kernel = read_all(SP_TEST_KERNEL_DIR "/callable_kernels.so", &good_kernel_size);
    atexit(teardown);
}

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* header | 1 kernel entry | orchestration | kernel | strings, as the builder
 * lays it out, without its ELF check. */
static uint8_t *pack(const uint8_t *orch, size_t orch_size, const uint8_t *kernel,
                     size_t kernel_size, size_t *out)
{
    static const char strings[] = "\0orch_noop\0callable_fill";
    size_t orch_off = align64(sizeof(sp_callable_header) + sizeof(sp_callable_kernel));
    size_t kernel_off = align64(orch_off + orch_size);
    size_t str_off = align64(kernel_off + kernel_size);
    size_t total = str_off + sizeof strings;
    uint8_t *b = calloc(1, total);
    CHECK(b);
    sp_callable_header h = {
        .magic = SP_CALLABLE_MAGIC,
        .version = SP_CALLABLE_VERSION,
        .header_bytes = sizeof h,
        .total_bytes = total,
        .kernel_count = 1,
        .orch_entry = 1,
        .orch_config = SP_CALLABLE_NO_STRING,
        .orch = {orch_off, orch_size},
        .strings = {str_off, sizeof strings},
    };
    sp_callable_kernel k = {.func_id = 0,
                            .core_type = SP_CORE_AIV,
                            .entry = 11,
                            .signature = 0,
                            .binary = {kernel_off, kernel_size}};
    memcpy(b, &h, sizeof h);
    memcpy(b + sizeof h, &k, sizeof k);
    memcpy(b + orch_off, orch, orch_size);
    memcpy(b + kernel_off, kernel, kernel_size);
    memcpy(b + str_off, strings, sizeof strings);
    ((sp_callable_header *)(void *)b)->checksum = sp_callable_checksum(b, total);
    *out = total;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0; /* an empty section is a format error, not this target's */
    init_once();
    int as_kernel = data[0] & 1;
    size_t blob_size;
    uint8_t *blob = as_kernel ? pack(good_orch, good_orch_size, data + 1, size - 1, &blob_size)
                              : pack(data + 1, size - 1, good_kernel, good_kernel_size, &blob_size);
    CHECK(sp_callable_validate(blob, blob_size, NULL, NULL, 0) == SP_OK);
    int rc = m.simpler_register_callable(ctx, 1, blob, blob_size);
    if (rc == SP_OK) {
        CHECK(m.simpler_unregister_callable(ctx, 1) == SP_OK);
    } else {
        CHECK(rc == SP_EKERNEL_LOAD || rc == SP_EKERNEL_ENTRY || rc == SP_EORCH_CRASH ||
              rc == SP_ESYS);
        const char *why = m.simpler_last_error(ctx);
        CHECK(why && why[0]);
    }
    free(blob);
    return 0;
}
