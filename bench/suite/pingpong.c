/* The physical floor of the suite: two threads handing a cache line back
 * and forth (release store, acquire spin with a pause), the cost of telling
 * another core "here is a task" and hearing "done". Prints the median round
 * trip of 5 batches of n round trips as a suite RESULT line.
 *
 *   bench_suite_pingpong [--n N]       (default 100000) */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

#define BATCHES 5

typedef struct pingpong {
    alignas(64) _Atomic uint32_t ping;
    alignas(64) _Atomic uint32_t pong;
    alignas(64) uint32_t n;
} pingpong;

static void spin_until(_Atomic uint32_t *word, uint32_t want)
{
    while (atomic_load_explicit(word, memory_order_acquire) != want)
        __builtin_ia32_pause();
}

static void *pong_main(void *arg)
{
    pingpong *pp = arg;
    for (uint32_t i = 1; i <= pp->n; i++) {
        spin_until(&pp->ping, i);
        atomic_store_explicit(&pp->pong, i, memory_order_release);
    }
    return NULL;
}

/* ns per round trip of one batch, measured on the pinging thread. */
static double batch(uint32_t n)
{
    static pingpong pp;
    atomic_store(&pp.ping, 0);
    atomic_store(&pp.pong, 0);
    pp.n = n;
    pthread_t b;
    if (pthread_create(&b, NULL, pong_main, &pp))
        return 0;
    uint64_t t0 = suite_now_ns();
    for (uint32_t i = 1; i <= n; i++) {
        atomic_store_explicit(&pp.ping, i, memory_order_release);
        spin_until(&pp.pong, i);
    }
    double ns = (double)(suite_now_ns() - t0) / n;
    pthread_join(b, NULL);
    return ns;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    uint32_t n = 100000;
    if (argc == 3 && strcmp(argv[1], "--n") == 0)
        n = (uint32_t)strtoul(argv[2], NULL, 10);
    if (n == 0)
        return 2;
    double v[BATCHES];
    for (int i = 0; i < BATCHES; i++)
        v[i] = batch(n);
    qsort(v, BATCHES, sizeof v[0], cmp);
    suite_opts o = {.workload = "pingpong", .n = n};
    char extra[64];
    snprintf(extra, sizeof extra, "batch_min_ns=%.1f", v[0]);
    suite_result(&o, "pingpong", "raw", 1, (uint64_t)(v[BATCHES / 2] + 0.5), extra);
    return 0;
}
