/* Handshake round trip: one scheduler thread dispatching empty kernels to
 * one core and waiting for each to finish, against the floor it is built
 * on: a raw two-thread cache-line ping-pong with the same spin (acquire
 * loads and a pause), measured in the same run. Prints the medians over
 * several rounds and their ratio.
 *
 *   bench_handshake [tasks_per_round] [rounds]     (default 100000 7)
 *
 * The kernel is a function in this executable: the handshake only sees a
 * function pointer, so loading it from a shared object would change nothing. */
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/wait.h"
#include "platform/chip.h"
#include "platform/device.h"
#include "simpler/status.h"

#define MAX_ROUNDS 64

static void empty_kernel(const uint64_t *args, const sp_kernel_ctx *ctx)
{
    (void)args, (void)ctx;
}

/* ---- raw ping-pong ---------------------------------------------------- */

typedef struct pingpong {
    alignas(SP_CACHE_LINE) _Atomic uint32_t ping;
    alignas(SP_CACHE_LINE) _Atomic uint32_t pong;
    alignas(SP_CACHE_LINE) uint32_t n;
    double ns_per_round_trip;
} pingpong;

static void spin_until(_Atomic uint32_t *word, uint32_t want)
{
    while (atomic_load_explicit(word, memory_order_acquire) != want)
        sp__cpu_relax();
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

static void *ping_main(void *arg)
{
    pingpong *pp = arg;
    uint64_t t0 = sp_now_ns();
    for (uint32_t i = 1; i <= pp->n; i++) {
        atomic_store_explicit(&pp->ping, i, memory_order_release);
        spin_until(&pp->pong, i);
    }
    pp->ns_per_round_trip = (double)(sp_now_ns() - t0) / pp->n;
    return NULL;
}

static double pingpong_round(uint32_t n)
{
    pingpong *pp = aligned_alloc(SP_CACHE_LINE, sizeof *pp);
    if (!pp)
        return 0;
    atomic_init(&pp->ping, 0);
    atomic_init(&pp->pong, 0);
    pp->n = n;
    pthread_t a, b;
    pthread_create(&b, NULL, pong_main, pp);
    pthread_create(&a, NULL, ping_main, pp);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    double r = pp->ns_per_round_trip;
    free(pp);
    return r;
}

/* ---- chip handshake --------------------------------------------------- */

typedef struct chip_round {
    uint32_t n;
    uint32_t core;
    double poll_ns;  /* dispatch, then poll sp_chip_core_idle */
    double event_ns; /* dispatch, then the idle-scheduler pattern: snapshot, check, event wait */
} chip_round;

static int scheduler_main(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index, (void)count;
    chip_round *cr = dev_ctx;
    sp_chip_payload p = {.fn = empty_kernel, .block_num = 1};

    uint64_t t0 = sp_now_ns();
    for (uint32_t i = 0; i < cr->n; i++) {
        p.task_id = i;
        sp_chip_dispatch(chip, cr->core, &p);
        while (!sp_chip_core_idle(chip, cr->core))
            sp__cpu_relax();
    }
    cr->poll_ns = (double)(sp_now_ns() - t0) / cr->n;

    t0 = sp_now_ns();
    for (uint32_t i = 0; i < cr->n; i++) {
        p.task_id = i;
        sp_chip_dispatch(chip, cr->core, &p);
        for (;;) {
            uint32_t snap = sp_chip_event_snapshot(chip);
            if (sp_chip_core_idle(chip, cr->core))
                break;
            sp_chip_event_wait(chip, snap, 0);
        }
    }
    cr->event_ns = (double)(sp_now_ns() - t0) / cr->n;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    uint32_t tasks = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (tasks == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: %s [tasks_per_round >= 1] [rounds 1..%d]\n", argv[0], MAX_ROUNDS);
        return 2;
    }

    /* The smallest chip: 1 cluster, 1 scheduler; the other threads park. */
    sp_device_options opt = {.geometry = {.clusters = 1, .aicpu_threads = 2}};
    sp_device *dev = NULL;
    int rc = sp_device_open(0, &opt, &dev);
    if (rc) {
        fprintf(stderr, "device open: %s\n", sp_status_name(rc));
        return 1;
    }

    double pp[MAX_ROUNDS], poll[MAX_ROUNDS], event[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        /* Interleaved, so drift in the machine's load hits both alike. */
        pp[r] = pingpong_round(tasks);
        chip_round cr = {.n = tasks, .core = 0};
        rc = sp_device_launch(dev, scheduler_main, &cr, 1);
        if (rc == 0)
            rc = sp_device_wait(dev, 0);
        if (rc) {
            fprintf(stderr, "launch: %s\n", sp_status_name(rc));
            sp_device_close(dev);
            return 1;
        }
        poll[r] = cr.poll_ns;
        event[r] = cr.event_ns;
    }
    sp_device_close(dev);

    double m_pp = median(pp, rounds), m_poll = median(poll, rounds),
           m_event = median(event, rounds);
    printf("handshake: 1 scheduler -> 1 core, empty kernel, %u tasks x %d rounds (medians)\n",
           tasks, rounds);
    printf("  raw cache-line ping-pong (2 threads)  %8.1f ns/round trip\n", m_pp);
    printf("  dispatch + poll core_idle             %8.1f ns/task   %.2fx ping-pong\n", m_poll,
           m_poll / m_pp);
    printf("  dispatch + snapshot/idle/event_wait   %8.1f ns/task   %.2fx ping-pong\n", m_event,
           m_event / m_pp);
    return 0;
}
