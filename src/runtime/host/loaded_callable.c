/* Registering a callable on a device: validate, copy, probe every binary in
 * a child process (common/load_probe.h), load the orchestration (host side,
 * its config function under the crash guard) and the kernels (device side),
 * and upload the table of kernel entry points the schedulers index. */

#include "runtime/host/loaded_callable.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/elf_check.h"
#include "common/fault.h"
#include "common/load_probe.h"
#include "simpler/status.h"

int rt_loaded_callable_kernel(const rt_loaded_callable *lc, int32_t func_id)
{
    if (func_id < 0)
        return -1;
    if (func_id < SP_FUNC_ID_DIRECT)
        return lc->by_func_id[func_id] - 1;
    for (uint32_t i = 0; i < lc->kernel_count; i++)
        if (lc->kernels[i].func_id == func_id)
            return (int)i;
    return -1;
}

void rt_loaded_callable_unload(const sp_host_api *api, rt_loaded_callable *lc)
{
    if (!lc)
        return;
    if (lc->kernel_table)
        sp_host_free(api, lc->kernel_table);
    for (uint32_t i = 0; i < lc->kernel_count; i++)
        if (lc->kernels[i].image)
            sp_host_kernel_unload(api, lc->kernels[i].image);
    free(lc->kernels);
    sp__shared_object_close(lc->orch);
    free(lc->blob);
    free(lc);
}

/* The config function runs on a scratch of three pages: the struct in the
 * middle of the second, canary bytes around it, the first and the last
 * inaccessible. A write past the struct changes a canary (caught after the
 * call), one further faults (caught by the guard). */
#define CONFIG_CANARY 0xa5

/* Returns the signal that ended the call, 0 if it returned. The guard is
 * one-off: it registers this thread (and lends it an alternate stack) for
 * the call's length only. */
__attribute__((noinline)) static int call_config(sp_orch_config_fn fn, sp_orch_config *cfg)
{
    if (sp__fault_install() != SP_OK) {
        fn(cfg);
        return 0;
    }
    sp__fault_guard g;
    if (SP_FAULT_TRY(&g))
        fn(cfg);
    sp__fault_end(&g);
    sp__fault_uninstall();
    return g.sig;
}

static int run_config(rt_loaded_callable *lc, char *err, size_t err_len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        snprintf(err, err_len, "callable %u: cannot map a scratch page for the config: %s", lc->id,
                 strerror(errno));
        return SP_ESYS;
    }
    mprotect(m, page, PROT_NONE);
    mprotect(m + 2 * page, page, PROT_NONE);
    uint8_t *mid = m + page;
    memset(mid, CONFIG_CANARY, page);
    sp_orch_config *cfg = (sp_orch_config *)(void *)(mid + page / 2);
    memset(cfg, 0, sizeof *cfg);
    cfg->abi_version = SP_ORCH_ABI_VERSION;
    int sig = call_config(lc->orch_config, cfg);
    int rc = SP_OK;
    if (sig) {
        snprintf(err, err_len, "callable %u: orchestration config '%s' crashed with %s", lc->id,
                 lc->view.orch_config, sp__fault_name(sig));
        rc = SP_EORCH_CRASH;
    } else {
        const uint8_t *lo = mid, *hi = mid + page;
        const uint8_t *s = (const uint8_t *)cfg, *e = s + sizeof *cfg;
        for (const uint8_t *p = lo; p < hi && rc == SP_OK; p++) {
            if ((p < s || p >= e) && *p != CONFIG_CANARY) {
                snprintf(err, err_len,
                         "callable %u: orchestration config '%s' wrote outside its %zu-byte "
                         "sp_orch_config (byte %+td from its start changed)",
                         lc->id, lc->view.orch_config, sizeof *cfg, p - s);
                rc = SP_EORCH_CRASH;
            }
        }
    }
    if (rc == SP_OK)
        lc->config = *cfg;
    munmap(m, 3 * page);
    return rc;
}

static int load_orchestration(rt_loaded_callable *lc, char *err, size_t err_len)
{
    const sp_callable_header *h = lc->view.header;
    char why[256] = "";
    int rc = sp__shared_object_open(lc->view.base + h->orch.offset, h->orch.size, &lc->orch, why,
                                    sizeof why);
    if (rc) {
        snprintf(err, err_len, "callable %u: orchestration: %s", lc->id, why);
        return rc;
    }
    void *fn;
    rc = sp__shared_object_entry(lc->orch, lc->view.orch_entry, &fn, why, sizeof why);
    if (rc) {
        snprintf(err, err_len, "callable %u: orchestration entry: %s", lc->id, why);
        return rc;
    }
    lc->orch_entry = (sp_orch_entry_fn)fn;
    if (lc->view.orch_config) {
        rc = sp__shared_object_entry(lc->orch, lc->view.orch_config, &fn, why, sizeof why);
        if (rc) {
            snprintf(err, err_len, "callable %u: orchestration config: %s", lc->id, why);
            return rc;
        }
        lc->orch_config = (sp_orch_config_fn)fn;
        rc = run_config(lc, err, err_len);
        if (rc)
            return rc;
        /* ABI 1 configs knew no replay fields: every scalar shapes. */
        if (lc->config.abi_version == 1) {
            lc->config.replay = 0;
            lc->config.shaping_scalars[0] = lc->config.shaping_scalars[1] = 0;
        } else if (lc->config.abi_version != SP_ORCH_ABI_VERSION) {
            snprintf(err, err_len, "callable %u: orchestration config reports ABI %u, expected %u",
                     lc->id, lc->config.abi_version, SP_ORCH_ABI_VERSION);
            return SP_EABI;
        }
    }
    return SP_OK;
}

static int load_kernels(const sp_host_api *api, rt_loaded_callable *lc, char *err, size_t err_len)
{
    uint32_t n = lc->view.header->kernel_count;
    lc->kernels = calloc(n ? n : 1, sizeof *lc->kernels);
    sp_kernel_fn *table = lc->kernels ? calloc(n ? n : 1, sizeof *table) : NULL;
    if (!table) {
        snprintf(err, err_len, "callable %u: no host memory for the table of %u kernels", lc->id,
                 n);
        return SP_ENOMEM;
    }
    lc->kernel_count = n; /* only now: unload walks kernels[0..kernel_count) */
    int rc = SP_OK;
    for (uint32_t i = 0; i < lc->kernel_count && rc == SP_OK; i++) {
        const sp_callable_kernel *ck = &lc->view.kernels[i];
        rt_loaded_kernel *k = &lc->kernels[i];
        k->func_id = ck->func_id;
        k->core_type = ck->core_type;
        k->entry = sp_callable_string(&lc->view, ck->entry);
        k->signature = sp_callable_string(&lc->view, ck->signature);
        if (!k->signature)
            k->signature = "";
        rc = sp_host_kernel_load(api, lc->view.base + ck->binary.offset, ck->binary.size, k->entry,
                                 &k->image, &k->fn);
        if (rc) {
            snprintf(err, err_len, "callable %u: kernel func_id %d ('%s') failed to load: %s%s",
                     lc->id, k->func_id, k->entry, sp_status_name(rc),
                     rc == SP_EKERNEL_ENTRY ? " (the entry must be a function its own binary "
                                              "defines)"
                                            : "");
            break;
        }
        table[i] = k->fn;
        if (k->func_id < SP_FUNC_ID_DIRECT)
            lc->by_func_id[k->func_id] = (int16_t)(i + 1);
    }
    if (rc == SP_OK) {
        uint64_t bytes = (uint64_t)(lc->kernel_count ? lc->kernel_count : 1) * sizeof *table;
        rc = sp_host_malloc(api, bytes, &lc->kernel_table);
        if (rc == SP_OK)
            rc = sp_host_copy_to_device(api, lc->kernel_table, table, bytes);
        if (rc)
            snprintf(err, err_len, "callable %u: kernel table upload failed: %s", lc->id,
                     sp_status_name(rc));
    }
    free(table);
    return rc;
}

/* ---- the probe: every binary loaded, checked and unloaded in a helper ---- */

/* Loading in a helper process costs one spawn per registration; a
 * constructor that never returns is killed after this long without
 * progress. */
#define LOAD_PROBE_STALL_MS 10000u

static void binary_name(const rt_loaded_callable *lc, size_t index, char *buf, size_t len)
{
    if (index == 0) {
        snprintf(buf, len, "orchestration '%s'", lc->view.orch_entry);
        return;
    }
    const sp_callable_kernel *k = &lc->view.kernels[index - 1];
    snprintf(buf, len, "kernel func_id %d ('%s')", k->func_id,
             sp_callable_string(&lc->view, k->entry));
}

static int probe_binaries(rt_loaded_callable *lc, char *err, size_t err_len)
{
    size_t n = 1 + (size_t)lc->view.header->kernel_count;
    sp__load_probe_item *items = calloc(n, sizeof *items);
    if (!items) {
        snprintf(err, err_len, "callable %u: out of memory", lc->id);
        return SP_ENOMEM;
    }
    /* What registration will resolve and run in-process: the entries and
     * the orchestration's config function. */
    const sp_callable_header *h = lc->view.header;
    items[0] =
        (sp__load_probe_item){lc->view.base + h->orch.offset, h->orch.size, lc->view.orch_entry,
                              lc->view.orch_config, SP_ORCH_ABI_VERSION};
    for (size_t i = 1; i < n; i++) {
        const sp_callable_kernel *k = &lc->view.kernels[i - 1];
        items[i] = (sp__load_probe_item){lc->view.base + k->binary.offset, k->binary.size,
                                         sp_callable_string(&lc->view, k->entry), NULL, 0};
    }
    /* Malformed ELF is refused here, before any helper is started. */
    char why[256];
    for (size_t i = 0; i < n; i++) {
        if (sp__elf_check(items[i].bytes, items[i].size, why, sizeof why) != SP_OK) {
            char name[320];
            binary_name(lc, i, name, sizeof name);
            snprintf(err, err_len, "callable %u: %s: not a well-formed shared object: %s", lc->id,
                     name, why);
            free(items);
            return SP_EKERNEL_LOAD;
        }
    }
    sp__load_probe_verdict v;
    int failed = sp__load_probe(items, n, LOAD_PROBE_STALL_MS, &v);
    free(items);
    if (!failed)
        return SP_OK;
    char name[320];
    binary_name(lc, v.index, name, sizeof name);
    /* A crash of the orchestration's own code is SP_EORCH_CRASH, like one
     * during a run; a kernel that cannot be loaded is SP_EKERNEL_LOAD. */
    int crash = v.index == 0 ? SP_EORCH_CRASH : SP_EKERNEL_LOAD;
    const char *phase = sp__load_probe_phase_name(v.phase);
    if (v.index == 0 && v.phase == SP_PROBE_CHECKING)
        phase = "in its config function";
    switch (v.kind) {
    case SP_PROBE_REFUSED:
        snprintf(err, err_len, "callable %u: %s: %s", lc->id, name, v.why);
        return v.status;
    case SP_PROBE_SIGNAL:
        snprintf(err, err_len,
                 "callable %u: %s crashed with SIG%s %s (found by loading it in a "
                 "child process first)",
                 lc->id, name, sigabbrev_np(v.code) ? sigabbrev_np(v.code) : "?", phase);
        return crash;
    case SP_PROBE_EXITED:
        snprintf(err, err_len,
                 "callable %u: %s ended the process with exit status %d %s (found "
                 "by loading it in a child process first)",
                 lc->id, name, v.code, phase);
        return crash;
    case SP_PROBE_STALLED:
        snprintf(err, err_len, "callable %u: %s made no progress for %u ms %s (an endless loop?)",
                 lc->id, name, LOAD_PROBE_STALL_MS, phase);
        return crash;
    case SP_PROBE_THREAD:
        snprintf(err, err_len,
                 "callable %u: %s started a thread %s; a thread in a callable would "
                 "outlive its unloading, so it is refused",
                 lc->id, name, phase);
        return SP_EKERNEL_LOAD;
    default:
        snprintf(err, err_len, "callable %u: cannot probe its binaries: %s", lc->id, v.why);
        return v.status ? v.status : SP_ESYS;
    }
}

int rt_loaded_callable_load(const sp_host_api *api, uint32_t id, const void *blob, size_t size,
                            rt_loaded_callable **out, char *err, size_t err_len)
{
    *out = NULL;
    rt_loaded_callable *lc = calloc(1, sizeof *lc);
    if (!lc)
        return SP_ENOMEM;
    lc->id = id;
    lc->blob = malloc(size ? size : 1);
    if (!lc->blob) {
        free(lc);
        return SP_ENOMEM;
    }
    memcpy(lc->blob, blob, size);
    char why[256] = "";
    int rc = sp_callable_validate(lc->blob, size, &lc->view, why, sizeof why);
    if (rc) {
        snprintf(err, err_len, "callable %u: %s", id, why);
        rt_loaded_callable_unload(api, lc);
        return rc;
    }
    rc = probe_binaries(lc, err, err_len);
    if (rc == SP_OK)
        rc = load_orchestration(lc, err, err_len);
    if (rc == SP_OK)
        rc = load_kernels(api, lc, err, err_len);
    if (rc) {
        rt_loaded_callable_unload(api, lc);
        return rc;
    }
    *out = lc;
    return SP_OK;
}
