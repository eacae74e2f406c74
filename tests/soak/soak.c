/* The soak test (`make soak`; not part of `make test`): SOAK_RUNS runs
 * (default 10^4) mixing both runtimes (one worker each, in one process),
 * both lanes (synchronous sp_worker_run, and two runs in flight through
 * sp_worker_submit / submit / wait / wait), every example of the registry
 * at its small cases, and an injected fault every ~100 runs: a crashing
 * kernel (SP_EKERNEL_FAULT) or a hanging one stopped by a short timeout
 * (SP_EKERNEL_TIMEOUT), each kind on each runtime and lane. Every result is
 * checked against its golden, every fault by its status and its name in
 * the message. Resident memory and open descriptors are sampled after the
 * warm-up and at the end; growth past a small tolerance fails the soak.
 * Prints the figures and "N passed, M failed". */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "example.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define MAX_WORKLOADS 32
#define FAULT_ID 200    /* callable id of the fault callable */
#define FAULT_EVERY 100 /* runs between injected faults */
#define HANG_TIMEOUT_US 20000
#define RSS_TOLERANCE (4ll << 20) /* allocator noise, not a leak per run */

enum { F_SEGV = 1, F_HANG = 4 };

/* One example case; two instances so that two runs of it can be in flight. */
typedef struct workload {
    const ex_example *ex;
    const char *case_name;
    int tmr_only;
    ex_instance inst[2];
    void *initial[2][SP_MAX_RUN_TENSORS]; /* non-IN args as set up, restored per run */
} workload;

/* Parameters that keep a case small (default cases are already small
 * except these). */
static const char *const *shrink(const char *example)
{
    static const char *const matmul[] = {"n=32", NULL};
    if (strcmp(example, "matmul_diamond") == 0)
        return matmul;
    return NULL;
}

static workload wl[MAX_WORKLOADS];
static int nwl;
static sp_worker *workers[2];
static const char *const rt_names[2] = {"hbg", "tmr"};
static long passed, failed, faults_injected;

static void fail(const char *what, const char *detail)
{
    failed++;
    if (failed <= 20)
        fprintf(stderr, "FAIL: %s: %s\n", what, detail);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static long long rss_bytes(void)
{
    long long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%lld %lld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory stream's own descriptor */
}

static int instance_setup(workload *k, int i)
{
    char err[EX_ERR_LEN] = "";
    ex_instance *inst = &k->inst[i];
    if (ex_instance_init(inst, k->ex, k->case_name, shrink(k->ex->name), err, sizeof err) ||
        k->ex->setup(inst, err, sizeof err)) {
        fprintf(stderr, "setup %s/%s: %s\n", k->ex->name, k->case_name, err);
        return -1;
    }
    for (uint32_t a = 0; a < inst->args.tensor_count; a++) {
        if (inst->args.dirs[a] == SP_IN)
            continue;
        size_t bytes = inst->args.tensors[a].buf_bytes;
        k->initial[i][a] = malloc(bytes);
        if (!k->initial[i][a])
            return -1;
        memcpy(k->initial[i][a], (void *)(uintptr_t)inst->args.tensors[a].addr, bytes);
    }
    return 0;
}

/* Outputs back to what setup made (zeros for OUT), so a run that writes
 * nothing cannot pass on an earlier run's results. */
static void instance_reset(workload *k, int i)
{
    const sp_args *a = &k->inst[i].args;
    for (uint32_t t = 0; t < a->tensor_count; t++)
        if (k->initial[i][t])
            memcpy((void *)(uintptr_t)a->tensors[t].addr, k->initial[i][t],
                   a->tensors[t].buf_bytes);
}

static void instance_check(workload *k, int i, int rc, int rt)
{
    char what[160], why[EX_ERR_LEN] = "";
    snprintf(what, sizeof what, "%s/%s on %s", k->ex->name, k->case_name, rt_names[rt]);
    if (rc != SP_OK) {
        fail(what, sp_worker_last_error(workers[rt]));
        return;
    }
    double max_err;
    if (k->ex->check(&k->inst[i], &max_err, why, sizeof why) != 0) {
        fail(what, why);
        return;
    }
    passed++;
}

static int workloads_init(void)
{
    int count;
    const ex_example *const *reg = ex_registry(&count);
    for (int e = 0; e < count; e++) {
        for (int c = 0; c < reg[e]->case_count; c++) {
            if (strcmp(reg[e]->cases[c].name, "large") == 0)
                continue; /* minutes, not hours: small cases only */
            if (nwl == MAX_WORKLOADS)
                return -1;
            workload *k = &wl[nwl++];
            k->ex = reg[e];
            k->case_name = reg[e]->cases[c].name;
            k->tmr_only = reg[e]->cases[c].needs_live_read;
            if (instance_setup(k, 0) || instance_setup(k, 1))
                return -1;
        }
    }
    return 0;
}

static void workloads_free(void)
{
    for (int k = 0; k < nwl; k++)
        for (int i = 0; i < 2; i++) {
            ex_instance_free(&wl[k].inst[i]);
            for (int a = 0; a < SP_MAX_RUN_TENSORS; a++)
                free(wl[k].initial[i][a]);
        }
}

/* The fault callable of tests/scene/test_faults.c: a marking task, the
 * faulting one (func_id = mode), another marking task. */
static int register_fault_callable(sp_worker *w)
{
    const char *k = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    sp_callable_kernel_spec ks[3] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_mark"},
        {.func_id = F_SEGV, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_segv"},
        {.func_id = F_HANG, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_hang"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_orch.so",
                             .orch_entry = "fault_orch",
                             .kernels = ks,
                             .kernel_count = 3};
    void *blob;
    size_t size;
    char err[512];
    if (sp_callable_build(&spec, &blob, &size, err, sizeof err) != SP_OK) {
        fprintf(stderr, "fault callable: %s\n", err);
        return -1;
    }
    int rc = sp_worker_register_callable(w, FAULT_ID, blob, size);
    free(blob);
    return rc;
}

typedef struct fault_run {
    uint64_t y[4];
    sp_args args;
    sp_call_config cfg;
    uint64_t mode;
} fault_run;

static void fault_prepare(fault_run *f, uint64_t mode)
{
    memset(f, 0, sizeof *f);
    int64_t n = 4;
    sp_tensor_init(&f->args.tensors[0], (uint64_t)(uintptr_t)f->y, SP_DTYPE_U64, 1, &n);
    f->args.dirs[0] = SP_INOUT;
    f->args.tensor_count = 1;
    f->args.scalars[0] = mode;
    f->args.scalar_count = 1;
    f->cfg.timeout_us = mode == F_HANG ? HANG_TIMEOUT_US : 0;
    f->mode = mode;
}

/* The fault must come back as its status, named in the message with the kernel. */
static void fault_check(const fault_run *f, int rc, int rt)
{
    int want = f->mode == F_HANG ? SP_EKERNEL_TIMEOUT : SP_EKERNEL_FAULT;
    const char *entry = f->mode == F_HANG ? "fault_hang" : "fault_segv";
    const char *msg = sp_worker_last_error(workers[rt]);
    faults_injected++;
    if (rc == want && strstr(msg, sp_status_name(want)) && strstr(msg, entry)) {
        passed++;
        return;
    }
    char detail[800];
    snprintf(detail, sizeof detail, "got %s, want %s: %s", sp_status_name(rc), sp_status_name(want),
             msg);
    fail(f->mode == F_HANG ? "injected timeout" : "injected crash", detail);
}

static uint64_t rng = 0x5eed;

/* A workload runnable on runtime rt. */
static int pick(int rt)
{
    for (;;) {
        int k = (int)(ex_rand_u64(&rng) % (uint64_t)nwl);
        if (rt == 1 || !wl[k].tmr_only)
            return k;
    }
}

/* One synchronous run; `fault` 0 or the fault mode to inject instead. */
static void run_sync(int rt, uint64_t fault)
{
    sp_worker *w = workers[rt];
    if (fault) {
        fault_run f;
        fault_prepare(&f, fault);
        fault_check(&f, sp_worker_run(w, FAULT_ID, &f.args, &f.cfg, NULL), rt);
        return;
    }
    int k = pick(rt);
    instance_reset(&wl[k], 0);
    instance_check(&wl[k], 0, sp_worker_run(w, (uint32_t)k, &wl[k].inst[0].args, NULL, NULL), rt);
}

/* Two runs in flight: the second is prepared while the first executes.
 * With `fault`, the first one faults and the second must still pass. */
static void run_pair(int rt, uint64_t fault)
{
    sp_worker *w = workers[rt];
    int k0 = pick(rt), k1 = pick(rt);
    fault_run f;
    sp_run_handle h0, h1;
    int rc0, rc1;
    if (fault) {
        fault_prepare(&f, fault);
        rc0 = sp_worker_submit(w, FAULT_ID, &f.args, &f.cfg, &h0);
    } else {
        instance_reset(&wl[k0], 0);
        rc0 = sp_worker_submit(w, (uint32_t)k0, &wl[k0].inst[0].args, NULL, &h0);
    }
    if (rc0 != SP_OK) {
        fail("submit", sp_worker_last_error(w));
        return;
    }
    instance_reset(&wl[k1], 1);
    rc1 = sp_worker_submit(w, (uint32_t)k1, &wl[k1].inst[1].args, NULL, &h1);
    rc0 = sp_worker_wait(w, &h0, NULL);
    if (fault)
        fault_check(&f, rc0, rt);
    else
        instance_check(&wl[k0], 0, rc0, rt);
    if (rc1 == SP_OK)
        rc1 = sp_worker_wait(w, &h1, NULL);
    instance_check(&wl[k1], 1, rc1, rt);
}

int main(void)
{
    const char *env = getenv("SOAK_RUNS");
    long runs = env && *env ? strtol(env, NULL, 10) : 10000;
    if (runs < 10) {
        fprintf(stderr, "SOAK_RUNS must be at least 10\n");
        return 2;
    }
    long warmup = runs >= 5000 ? 1000 : runs / 5;
    char err[1024];
    for (int rt = 0; rt < 2; rt++) {
        char module[512];
        snprintf(module, sizeof module, SP_MODULE_DIR "/libsimpler_%s_sim.so", rt_names[rt]);
        if (sp_worker_open(module, NULL, &workers[rt], err, sizeof err) != SP_OK) {
            fprintf(stderr, "open %s: %s\n", module, err);
            return 1;
        }
        if (register_fault_callable(workers[rt]) != SP_OK) {
            fprintf(stderr, "fault callable: %s\n", sp_worker_last_error(workers[rt]));
            return 1;
        }
    }
    if (workloads_init()) {
        fprintf(stderr, "cannot set up the workloads\n");
        return 1;
    }
    for (int k = 0; k < nwl; k++) {
        char spc[512];
        snprintf(spc, sizeof spc, SP_BUILD_DIR "/examples/%s.spc", wl[k].ex->name);
        for (int rt = 0; rt < 2; rt++)
            if (sp_worker_register_callable_file(workers[rt], (uint32_t)k, spc) != SP_OK) {
                fprintf(stderr, "%s: %s\n", spc, sp_worker_last_error(workers[rt]));
                return 1;
            }
        printf("workload %2d: %s/%s%s\n", k, wl[k].ex->name, wl[k].case_name,
               wl[k].tmr_only ? " (tmr only)" : "");
    }
    printf("soak: %ld runs, both runtimes, both lanes, a fault every %d runs\n", runs, FAULT_EVERY);
    fflush(stdout);

    double t0 = now_s(), t_warm = t0;
    long long rss_warm = 0;
    int fds_warm = 0;
    long done = 0, next_fault = FAULT_EVERY / 2, fault_no = 0;
    while (done < runs) {
        if (done >= warmup && !rss_warm) {
            rss_warm = rss_bytes();
            fds_warm = open_fds();
            t_warm = now_s();
            printf("after warm-up (%ld runs): rss %.1f MiB, open fds %d\n", done,
                   rss_warm / 1048576.0, fds_warm);
            fflush(stdout);
        }
        uint64_t fault = 0;
        int rt, lane;
        if (done >= next_fault) {
            /* Fault f: kind alternates; runtime every 2; lane every 4, so
             * every 8 faults cover each kind on each runtime and lane. */
            fault = fault_no % 2 ? F_HANG : F_SEGV;
            rt = (int)(fault_no / 2 % 2);
            lane = (int)(fault_no / 4 % 2);
            fault_no++;
            next_fault += FAULT_EVERY;
        } else {
            uint64_t r = ex_rand_u64(&rng);
            rt = (int)(r & 1);
            lane = (int)(r >> 1 & 1);
        }
        if (lane) {
            run_pair(rt, fault);
            done += 2;
        } else {
            run_sync(rt, fault);
            done += 1;
        }
        if (done % 2000 < (lane ? 2 : 1)) {
            printf("  %6ld runs  %.1f s  rss %.1f MiB  fds %d  failed %ld\n", done, now_s() - t0,
                   rss_bytes() / 1048576.0, open_fds(), failed);
            fflush(stdout);
        }
    }
    double t_end = now_s();
    long long rss_end = rss_bytes();
    int fds_end = open_fds();
    printf("end (%ld runs): rss %.1f MiB, open fds %d\n", done, rss_end / 1048576.0, fds_end);
    printf("rss growth after warm-up: %+.1f KiB (tolerance %lld KiB); fd growth: %+d\n",
           (rss_end - rss_warm) / 1024.0, RSS_TOLERANCE / 1024, fds_end - fds_warm);
    printf("duration: %.1f s (%.1f s after warm-up), %.2f ms per run; faults injected: %ld\n",
           t_end - t0, t_end - t_warm, (t_end - t0) * 1e3 / (double)done, faults_injected);
#ifdef __SANITIZE_ADDRESS__
    /* ASan's quarantine keeps freed memory resident (up to 256 MiB) by
     * design; its leak checker at exit is the leak test there. */
    printf("(AddressSanitizer build: resident memory is reported, not checked)\n");
#else
    if (rss_warm <= 0 || rss_end - rss_warm > RSS_TOLERANCE)
        fail("resident memory", "grew after warm-up beyond the tolerance");
#endif
    if (fds_warm < 0 || fds_end != fds_warm)
        fail("open file descriptors", "count changed after warm-up");
    for (int rt = 0; rt < 2; rt++)
        sp_worker_close(workers[rt]);
    workloads_free();
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}
