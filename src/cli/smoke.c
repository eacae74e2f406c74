/* `simpler smoke`: exercise the sim chip end to end and say what happened:
 * allocate device memory, copy in and out, host-map a buffer and check it
 * is coherent with the device view, load a kernel from bytes and run it on
 * every core through a launched scheduler. Exit 0 only if all checks hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "common/paths.h"
#include "platform/chip.h"
#include "platform/device.h"
#include "simpler/status.h"

typedef struct smoke_launch {
    sp_kernel_fn fn;
    const uint64_t *args; /* device memory */
} smoke_launch;

/* Device side: each scheduler thread dispatches to the cores it owns. */
static int smoke_main(sp_chip *chip, void *dev_ctx, uint32_t ti, uint32_t tn)
{
    const smoke_launch *l = dev_ctx;
    uint32_t n = sp_chip_core_count(chip);
    for (uint32_t core = ti; core < n; core += tn) {
        sp_chip_payload p = {.fn = l->fn, .args = l->args, .task_id = core, .block_num = 1};
        sp_chip_dispatch(chip, core, &p);
    }
    for (uint32_t core = ti; core < n; core += tn)
        while (!sp_chip_core_idle(chip, core)) {
            uint32_t snap = sp_chip_event_snapshot(chip);
            if (!sp_chip_core_idle(chip, core))
                sp_chip_event_wait(chip, snap, 0);
        }
    return 0;
}

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return p;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "smoke: FAIL: " __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                                 \
            failed = 1;                                                                            \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

int cli_smoke(int argc, char **argv)
{
    sp_device_options opt = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--a2a3") == 0)
            opt.geometry = sp_geometry_a2a3();
        else {
            fprintf(stderr, "simpler smoke: unknown option '%s' (known: --a2a3)\n", argv[i]);
            return 2;
        }
    }
    int failed = 0, rc;
    sp_device *dev = NULL;
    uint64_t buf = 0, slots = 0, argv_dev = 0, launch_dev = 0;
    void *map = NULL, *kbytes = NULL;
    uint32_t *marks = NULL;
    sp_kernel_binary *kb = NULL;

    rc = sp_device_open(0, &opt, &dev);
    CHECK(rc == 0, "open device 0: %s", sp_status_name(rc));
    const sp_geometry *g = sp_device_geometry(dev);
    uint32_t cores = sp_device_core_count(dev);
    printf("device 0: sim, %u clusters (%u cores), %u AICPU threads, %llu MiB device "
           "memory\n",
           g->clusters, cores, g->aicpu_threads,
           (unsigned long long)(sp_device_memory_bytes(dev) >> 20));

    /* Memory: allocate, copy in, copy out. */
    enum { N = 4096 };
    uint32_t host[N], back[N];
    for (int i = 0; i < N; i++)
        host[i] = (uint32_t)i * 2654435761u;
    rc = sp_device_malloc(dev, sizeof host, &buf);
    CHECK(rc == 0, "malloc: %s", sp_status_name(rc));
    rc = sp_device_copy_to(dev, buf, host, sizeof host);
    CHECK(rc == 0, "copy to device: %s", sp_status_name(rc));
    rc = sp_device_copy_from(dev, back, buf, sizeof back);
    CHECK(rc == 0 && memcmp(host, back, sizeof host) == 0, "copy round trip differs");
    printf("memory: allocated %zu bytes at device 0x%llx, copied in and out: identical\n",
           sizeof host, (unsigned long long)buf);

    /* Host-map: a second view of the same pages at another address. */
    map = sp_device_host_map(dev, buf, sizeof host);
    CHECK(map != NULL, "host-map returned NULL");
    CHECK((uint64_t)(uintptr_t)map != buf, "host-map address equals the device address");
    ((uint32_t *)map)[7] = 0xfeedbeef;
    rc = sp_device_copy_from(dev, back, buf, sizeof back);
    CHECK(rc == 0 && back[7] == 0xfeedbeef, "write through the host-map not seen by the device");
    printf("host-map: device 0x%llx is host %p; a write through it is visible on the device\n",
           (unsigned long long)buf, map);
    sp_device_host_unmap(dev, buf);
    map = NULL;

    /* A kernel from bytes, on every core. */
    char path[4096];
    CHECK(sp_path_beside_exe(path, sizeof path, "../lib/sp_smoke_kernel.so") == 0,
          "cannot find the simpler executable");
    size_t ksize;
    kbytes = read_file(path, &ksize);
    CHECK(kbytes != NULL, "cannot read %s", path);
    rc = sp_kernel_binary_load(dev, kbytes, ksize, "smoke_mark", &kb);
    CHECK(rc == 0, "kernel load: %s", sp_status_name(rc));
    printf("kernel: loaded 'smoke_mark' from %zu bytes in memory (no temp file)\n", ksize);

    rc = sp_device_malloc(dev, cores * sizeof(uint32_t), &slots);
    CHECK(rc == 0, "malloc slots: %s", sp_status_name(rc));
    sp_device_memset(dev, slots, 0, cores * sizeof(uint32_t));
    uint64_t kargs[1] = {slots};
    rc = sp_device_malloc(dev, sizeof kargs, &argv_dev);
    CHECK(rc == 0, "malloc args");
    sp_device_copy_to(dev, argv_dev, kargs, sizeof kargs);
    smoke_launch l = {.fn = sp_kernel_binary_entry(kb), .args = (const uint64_t *)argv_dev};
    rc = sp_device_malloc(dev, sizeof l, &launch_dev);
    CHECK(rc == 0, "malloc launch block");
    sp_device_copy_to(dev, launch_dev, &l, sizeof l);
    rc = sp_device_launch(dev, smoke_main, (void *)(uintptr_t)launch_dev, g->aicpu_threads);
    CHECK(rc == 0, "launch: %s", sp_status_name(rc));
    rc = sp_device_wait(dev, 0);
    CHECK(rc == 0, "launch result: %s", sp_status_name(rc));
    marks = calloc(cores, sizeof *marks);
    CHECK(marks != NULL, "%s: no host memory for %u cores' marks", sp_status_name(SP_ENOMEM),
          cores);
    sp_device_copy_from(dev, marks, slots, cores * sizeof(uint32_t));
    uint32_t aic = 0, aiv = 0;
    for (uint32_t c = 0; c < cores; c++) {
        uint32_t type = c < g->clusters ? SP_CORE_AIC : SP_CORE_AIV;
        CHECK(marks[c] == ((c + 1) | (type << 16)), "core %u did not run the kernel (slot %#x)", c,
              marks[c]);
        if (type == SP_CORE_AIC)
            aic++;
        else
            aiv++;
    }
    printf("launch: %u AICPU thread(s) dispatched the kernel to all %u cores (%u AIC, %u "
           "AIV); each reported its id and type\n",
           g->aicpu_threads, cores, aic, aiv);
    printf("smoke: PASS\n");
out:
    free(marks);
    free(kbytes);
    if (kb)
        sp_kernel_binary_unload(kb);
    if (dev) {
        if (map)
            sp_device_host_unmap(dev, buf);
        if (buf)
            sp_device_free(dev, buf);
        if (slots)
            sp_device_free(dev, slots);
        if (argv_dev)
            sp_device_free(dev, argv_dev);
        if (launch_dev)
            sp_device_free(dev, launch_dev);
        sp_device_close(dev);
    }
    return failed;
}
