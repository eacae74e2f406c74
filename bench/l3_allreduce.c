/* bench_l3_allreduce (issue 17): the in-process allreduce of the L3 layer.
 *
 * sp_l3_allreduce (SUM, f32) over a domain of 2 and 4 chips, 4 KiB to
 * 64 MiB per member, each size an L3 run of that one collective (median of
 * R runs; the collective's time alone is what the run adds over an empty
 * run, measured too). The floor beside it: the same reduction done by hand
 * on host buffers in one thread (sum the other members into the first,
 * copy the result back to them), the least memory traffic an allreduce
 * over members in one address space needs. bench/l4_allreduce.c compares
 * with MPI between ranks.
 *
 *   bench_l3_allreduce [--rounds R] [--max-mib M] [--runtime hbg|tmr] [--quick]
 *
 * The module is found beside this executable (<bindir>/../lib). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "common/paths.h"
#include "simpler/l3.h"
#include "simpler/status.h"

#define MAX_ROUNDS 101

typedef struct ar_bench {
    sp_l3_domain *dom;
    uint64_t count;
} ar_bench;

static int orch_allreduce(sp_l3_run *r, void *user)
{
    const ar_bench *b = user;
    sp_l3_allreduce(r, b->dom, 0, b->count, SP_DTYPE_F32, SP_L3_SUM);
    return sp_l3_run_error(r);
}

static int orch_empty(sp_l3_run *r, void *user)
{
    (void)user;
    return sp_l3_run_error(r);
}

/* The floor: one thread, n host buffers of `count` floats. */
static uint64_t floor_ns(float **buf, int n, uint64_t count)
{
    const uint64_t t0 = now_ns();
    for (int m = 1; m < n; m++) {
        float *restrict d = buf[0];
        const float *restrict s = buf[m];
        for (uint64_t i = 0; i < count; i++)
            d[i] += s[i];
    }
    for (int m = 1; m < n; m++)
        memcpy(buf[m], buf[0], count * sizeof(float));
    return now_ns() - t0;
}

static int bench_chips(const char *runtime, const char *lib, int chips, uint64_t max_bytes,
                       int rounds)
{
    sp_l3_options opt = {0};
    opt.chips = (uint32_t)chips;
    opt.runtime = runtime;
    opt.worker.module_dir = lib;
    sp_l3 *l3 = NULL;
    char err[640] = "";
    int rc = sp_l3_open(&opt, &l3, err, sizeof err);
    if (rc != SP_OK) {
        fprintf(stderr, "bench_l3_allreduce: sp_l3_open(%d chips): %s\n", chips, err);
        return rc;
    }
    int ids[SP_L3_MAX_CHIPS];
    for (int c = 0; c < chips; c++)
        ids[c] = c;
    ar_bench b = {0};
    float *host[SP_L3_MAX_CHIPS] = {0};
    if ((rc = sp_l3_domain_create(l3, ids, (uint32_t)chips, max_bytes, &b.dom)) != SP_OK) {
        fprintf(stderr, "bench_l3_allreduce: domain: %s\n", sp_l3_last_error(l3));
        goto out;
    }
    for (int c = 0; c < chips; c++) {
        if (!(host[c] = malloc(max_bytes))) {
            rc = SP_ENOMEM;
            goto out;
        }
        for (uint64_t i = 0; i < max_bytes / sizeof(float); i++)
            host[c][i] = (float)(c + 1);
        sp_l3_tensor w;
        if ((rc = sp_l3_domain_view(b.dom, (uint32_t)c, 0, SP_DTYPE_F32,
                                    (int64_t)(max_bytes / sizeof(float)), &w)) != SP_OK ||
            (rc = sp_l3_write(l3, &w, host[c], max_bytes)) != SP_OK) {
            fprintf(stderr, "bench_l3_allreduce: window %d: %s\n", c, sp_l3_last_error(l3));
            goto out;
        }
    }
    static uint64_t v[3][MAX_ROUNDS];
    for (uint64_t bytes = 4096; rc == SP_OK && bytes <= max_bytes; bytes *= 4) {
        b.count = bytes / sizeof(float);
        /* Fewer rounds for the big sizes: a 64 MiB allreduce is tens of ms. */
        const int n = bytes >= (16u << 20) && rounds > 5 ? 5 : rounds;
        for (int i = 0; rc == SP_OK && i < n; i++) {
            sp_l3_stats st;
            rc = sp_l3_run_orch(l3, orch_allreduce, &b, &st);
            v[0][i] = st.wall_ns;
            if (rc == SP_OK)
                rc = sp_l3_run_orch(l3, orch_empty, &b, &st);
            v[1][i] = st.wall_ns;
            v[2][i] = floor_ns(host, chips, b.count);
        }
        if (rc != SP_OK) {
            fprintf(stderr, "bench_l3_allreduce: %d chips, %llu bytes: %s\n", chips,
                    (unsigned long long)bytes, sp_l3_last_error(l3));
            break;
        }
        const double run = median_us(v[0], n), empty = median_us(v[1], n);
        const double fl = median_us(v[2], n), coll = run - empty > 0 ? run - empty : 0.0;
        char size[32];
        if (bytes >= (1u << 20))
            snprintf(size, sizeof size, "%llu MiB", (unsigned long long)(bytes >> 20));
        else
            snprintf(size, sizeof size, "%llu KiB", (unsigned long long)(bytes >> 10));
        printf("%5d %8s %11.1f %11.1f %9.2f %11.1f %9.2f %7.2f\n", chips, size, run, coll,
               coll > 0 ? (double)bytes / coll / 1e3 : 0.0, fl,
               fl > 0 ? (double)bytes / fl / 1e3 : 0.0, fl > 0 ? coll / fl : 0.0);
        fflush(stdout);
    }
out:
    for (int c = 0; c < chips; c++)
        free(host[c]);
    sp_l3_domain_destroy(b.dom);
    sp_l3_close(l3);
    return rc;
}

int main(int argc, char **argv)
{
    int rounds = 0, quick = 0, max_mib = 64;
    const char *runtime = "hbg";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--rounds") == 0 && v)
            rounds = atoi(v), i++;
        else if (strcmp(argv[i], "--max-mib") == 0 && v)
            max_mib = atoi(v), i++;
        else if (strcmp(argv[i], "--runtime") == 0 && v)
            runtime = v, i++;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--rounds R] [--max-mib M] [--runtime hbg|tmr] [--quick]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!rounds)
        rounds = quick ? 3 : 15;
    if (quick && max_mib > 1)
        max_mib = 1;
    if (rounds < 1 || rounds > MAX_ROUNDS || max_mib < 1 || max_mib > 256)
        return 2;
    char lib[PATH_MAX];
    if (sp__path_beside_exe(lib, sizeof lib, "../lib")) {
        fprintf(stderr, "bench_l3_allreduce: path too long\n");
        return 1;
    }
    printf("bench_l3_allreduce: sp_l3_allreduce f32 SUM in one process (%s on sim), medians; "
           "coll = run - empty run; floor = one thread summing host buffers + copying back\n",
           runtime);
    printf("%5s %8s %11s %11s %9s %11s %9s %7s\n", "chips", "size", "run us", "coll us", "GB/s",
           "floor us", "GB/s", "x floor");
    int rc = SP_OK;
    for (int chips = 2; rc == SP_OK && chips <= 4; chips += 2)
        rc = bench_chips(runtime, lib, chips, (uint64_t)max_mib << 20, rounds);
    return rc == SP_OK ? 0 : 1;
}
