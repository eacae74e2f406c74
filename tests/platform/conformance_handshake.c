/* Conformance: the per-core handshake, driven the way a runtime drives it: a launched
 * scheduler function dispatches through chip.h and kernels write their
 * evidence into device memory. No dispatch may be lost or run twice, and
 * every core must run kernels as itself (id, type, cluster). */
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>

#include "../kernels/chip_probe.h"
#include "chip_test_support.h"
#include "common/fault.h"
#include "platform/chip.h"

#define DISPATCHES 100000u
#define MAX_OWNED 64

/* Distinct launch results for the ways a scheduler can see the chip wrong. */
enum { BAD_GEOMETRY = 1001, BAD_IDENTITY = 1002, NO_CORES = 1003, BAD_STATE = 1004 };

/* The scheduler's context, in device memory. */
typedef struct count_ctx {
    uint64_t fn;   /* sp_kernel_fn */
    uint64_t args; /* device address of the kernel's argument vector */
    uint64_t tasks;
    uint64_t deadline_ns;
    uint32_t core_type;
} count_ctx;

/* Each scheduler thread owns every count-th core of the wanted type and
 * runs task ids index, index+count, ... on them, keeping all of them busy. */
static int count_scheduler(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    const count_ctx *cc = dev_ctx;
    uint32_t owned[MAX_OWNED], n = 0, of_type = 0;
    for (uint32_t c = 0; c < sp_chip_core_count(chip); c++)
        if (sp_chip_core_type(chip, c) == cc->core_type && of_type++ % count == index &&
            n < MAX_OWNED)
            owned[n++] = c;
    if (n == 0)
        return NO_CORES;

    /* Per core: the last ticket reaped; queues are kept full. */
    uint32_t reaped[MAX_OWNED];
    for (uint32_t i = 0; i < n; i++)
        reaped[i] = sp_chip_core_finished(chip, owned[i]);
    uint32_t depth = sp_chip_core_queue_depth(chip);
    uint64_t next = index, finished = 0;
    uint64_t mine = cc->tasks > index ? (cc->tasks - index + count - 1) / count : 0;
    sp_chip_payload p = {.fn = (sp_kernel_fn)(uintptr_t)cc->fn,
                         .args = (const uint64_t *)(uintptr_t)cc->args,
                         .block_num = 1};
    while (finished < mine) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        bool progress = false;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t fin = sp_chip_core_finished(chip, owned[i]);
            if (fin != reaped[i]) {
                finished += (fin - reaped[i]) & SP_CHIP_TICKET_MASK;
                reaped[i] = fin;
                progress = true;
            }
            while (next < cc->tasks && sp_chip_core_pending(chip, owned[i]) < depth) {
                p.task_id = next;
                next += count;
                sp_chip_dispatch(chip, owned[i], &p);
                progress = true;
            }
        }
        if (!progress && sp_chip_event_wait(chip, snap, cc->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
    }
    return 0;
}

static void run_count_test(sp_core_type type)
{
    /* Two schedulers sharing the chip event, over 2 AIC or 4 AIV cores. */
    sp_device_options opt = {.geometry = {.clusters = 2, .aicpu_threads = 3}};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, &opt, &dev), SP_OK);
    sp_kernel_binary *kb = load_test_kernel(dev, "chip_probe.so", "chip_count");

    uint64_t counts = dev_alloc_zeroed(dev, DISPATCHES * sizeof(uint32_t));
    uint64_t errors = dev_alloc_zeroed(dev, sizeof(uint32_t));
    uint64_t argv[3] = {counts, type, errors};
    uint64_t args = dev_upload(dev, argv, sizeof argv);
    count_ctx cc = {.fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kb),
                    .args = args,
                    .tasks = DISPATCHES,
                    .deadline_ns = DEADLINE_MS(240000),
                    .core_type = type};
    uint64_t ctx = dev_upload(dev, &cc, sizeof cc);

    launch_and_wait(dev, count_scheduler, ctx, 2, 280000);

    uint32_t *host = malloc(DISPATCHES * sizeof(uint32_t));
    cr_assert_not_null(host);
    dev_download(dev, host, counts, DISPATCHES * sizeof(uint32_t));
    uint32_t lost = 0, repeated = 0, first_bad = UINT32_MAX;
    for (uint32_t i = 0; i < DISPATCHES; i++) {
        lost += host[i] == 0;
        repeated += host[i] > 1;
        if (host[i] != 1 && first_bad == UINT32_MAX)
            first_bad = i;
    }
    cr_expect_eq(lost + repeated, 0, "%u dispatches lost, %u run more than once (first: task %u)",
                 lost, repeated, first_bad);
    uint32_t bad_ctx = 0;
    dev_download(dev, &bad_ctx, errors, sizeof bad_ctx);
    cr_expect_eq(bad_ctx, 0, "%u kernels saw a wrong core type or block", bad_ctx);

    free(host);
    cr_assert_eq(sp_device_free(dev, ctx), SP_OK);
    cr_assert_eq(sp_device_free(dev, args), SP_OK);
    cr_assert_eq(sp_device_free(dev, errors), SP_OK);
    cr_assert_eq(sp_device_free(dev, counts), SP_OK);
    sp_kernel_binary_unload(kb);
    sp_device_close(dev);
}

Test(chip_handshake, aic_dispatches_none_lost_or_repeated, .timeout = 290)
{
    run_count_test(SP_CORE_AIC);
}

Test(chip_handshake, aiv_dispatches_none_lost_or_repeated, .timeout = 290)
{
    run_count_test(SP_CORE_AIV);
}

/* Every core once, all in flight together, each with a distinct payload. */
typedef struct report_ctx {
    uint64_t fn;
    uint64_t args;
    uint64_t deadline_ns;
} report_ctx;

static int report_scheduler(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index, (void)count;
    const report_ctx *rc = dev_ctx;
    uint32_t cores = sp_chip_core_count(chip), clusters = sp_chip_cluster_count(chip);
    if (cores != clusters * 3)
        return BAD_GEOMETRY;
    for (uint32_t c = 0; c < cores; c++) {
        uint32_t want_cluster = c < clusters ? c : (c - clusters) / 2;
        sp_core_type want_type = c < clusters ? SP_CORE_AIC : SP_CORE_AIV;
        if (sp_chip_core_type(chip, c) != want_type ||
            sp_chip_core_cluster(chip, c) != want_cluster)
            return BAD_IDENTITY;
        if (!sp_chip_core_idle(chip, c) || sp_chip_core_state(chip, c) != SP_CORE_IDLE)
            return BAD_STATE;
    }
    for (uint32_t c = 0; c < cores; c++) {
        sp_chip_payload p = {.fn = (sp_kernel_fn)(uintptr_t)rc->fn,
                             .args = (const uint64_t *)(uintptr_t)rc->args,
                             .task_id = c,
                             .block_idx = 3 * c + 1,
                             .block_num = c + 7,
                             .sub_block = c % 3};
        sp_chip_dispatch(chip, c, &p);
    }
    for (;;) {
        uint32_t snap = sp_chip_event_snapshot(chip);
        uint32_t idle = 0;
        while (idle < cores && sp_chip_core_idle(chip, idle))
            idle++;
        if (idle == cores)
            return 0;
        if (sp_chip_event_wait(chip, snap, rc->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
    }
}

static void run_report_test(sp_geometry g)
{
    sp_device_options opt = {.geometry = g};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, &opt, &dev), SP_OK);
    uint32_t cores = sp_device_core_count(dev);
    cr_assert_eq(cores, g.clusters * 3);
    sp_kernel_binary *kb = load_test_kernel(dev, "chip_probe.so", "chip_report_ctx");

    uint64_t records = dev_alloc_zeroed(dev, cores * sizeof(chip_ctx_record));
    uint64_t args = dev_upload(dev, &records, sizeof records);
    report_ctx rc = {.fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kb),
                     .args = args,
                     .deadline_ns = DEADLINE_MS(60000)};
    uint64_t ctx = dev_upload(dev, &rc, sizeof rc);
    launch_and_wait(dev, report_scheduler, ctx, 1, 90000);

    chip_ctx_record *r = calloc(cores, sizeof *r);
    cr_assert_not_null(r);
    dev_download(dev, r, records, cores * sizeof *r);
    for (uint32_t c = 0; c < cores; c++) {
        bool aic = c < g.clusters;
        uint32_t cluster = aic ? c : (c - g.clusters) / 2;
        cr_expect_eq(r[c].seen, 1, "core %u ran its kernel %llu times", c,
                     (unsigned long long)r[c].seen);
        cr_expect_eq(r[c].core_id, c, "core %u reported id %u", c, r[c].core_id);
        cr_expect_eq(r[c].core_type, aic ? SP_CORE_AIC : SP_CORE_AIV, "core %u reported type %u", c,
                     r[c].core_type);
        cr_expect_eq(r[c].cluster_id, cluster, "core %u reported cluster %u, want %u", c,
                     r[c].cluster_id, cluster);
        cr_expect_eq(r[c].task_id, c);
        cr_expect_eq(r[c].block_idx, 3 * c + 1);
        cr_expect_eq(r[c].block_num, c + 7);
        cr_expect_eq(r[c].sub_block, c % 3);
    }
    free(r);
    sp_device_free(dev, ctx);
    sp_device_free(dev, args);
    sp_device_free(dev, records);
    sp_kernel_binary_unload(kb);
    sp_device_close(dev);
}

Test(chip_handshake, every_core_reports_its_ctx_default_geometry, .timeout = 120)
{
    run_report_test(sp_geometry_default(1));
}

Test(chip_handshake, every_core_reports_its_ctx_a2a3, .timeout = 120)
{
    run_report_test(sp_geometry_a2a3());
}

/* A kernel held running by a gate: the core goes PENDING/RUNNING -> IDLE,
 * and is not idle while its kernel runs. */
typedef struct gate_ctx {
    uint64_t fn;
    uint64_t args;
    uint64_t gate; /* device address of the uint32 gate */
    uint64_t deadline_ns;
} gate_ctx;

static int gate_scheduler(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index, (void)count;
    const gate_ctx *gc = dev_ctx;
    uint32_t core = sp_chip_core_count(chip) - 1; /* an AIV lane */
    sp_chip_payload p = {.fn = (sp_kernel_fn)(uintptr_t)gc->fn,
                         .args = (const uint64_t *)(uintptr_t)gc->args,
                         .block_num = 1};
    sp_chip_dispatch(chip, core, &p);
    /* The ACK does not bump the event: poll the state, yielding, to a deadline. */
    sp_core_state s;
    while ((s = sp_chip_core_state(chip, core)) == SP_CORE_PENDING) {
        if (sp_now_ns() > gc->deadline_ns)
            return SP_ETIMEOUT;
        sched_yield();
    }
    if (s != SP_CORE_RUNNING || sp_chip_core_idle(chip, core))
        return BAD_STATE;
    uint32_t snap = sp_chip_event_snapshot(chip);
    if (sp_chip_core_idle(chip, core))
        return BAD_STATE; /* the gate is still closed */
    __atomic_store_n((uint32_t *)(uintptr_t)gc->gate, 77u, __ATOMIC_RELEASE);
    while (!sp_chip_core_idle(chip, core)) {
        if (sp_chip_event_wait(chip, snap, gc->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
        snap = sp_chip_event_snapshot(chip);
    }
    return sp_chip_core_state(chip, core) == SP_CORE_IDLE ? 0 : BAD_STATE;
}

Test(chip_handshake, core_state_follows_ack_and_fin, .timeout = 60)
{
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, NULL, &dev), SP_OK);
    sp_kernel_binary *kb = load_test_kernel(dev, "chip_probe.so", "chip_gate");
    uint64_t gate = dev_alloc_zeroed(dev, 2 * sizeof(uint32_t));
    uint64_t argv[2] = {gate, gate + sizeof(uint32_t)};
    uint64_t args = dev_upload(dev, argv, sizeof argv);
    gate_ctx gc = {.fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kb),
                   .args = args,
                   .gate = gate,
                   .deadline_ns = DEADLINE_MS(30000)};
    uint64_t ctx = dev_upload(dev, &gc, sizeof gc);
    launch_and_wait(dev, gate_scheduler, ctx, 1, 45000);
    uint32_t out[2];
    dev_download(dev, out, gate, sizeof out);
    cr_expect_eq(out[1], 77u, "the kernel's store is visible after FIN");
    sp_device_free(dev, ctx);
    sp_device_free(dev, args);
    sp_device_free(dev, gate);
    sp_kernel_binary_unload(kb);
    sp_device_close(dev);
}

/* A core's queue: payloads dispatched behind a running kernel wait, then run
 * in ticket order without the scheduler; tickets are consecutive and the
 * finished ticket moves only as they finish. Posted ones (sp_chip_post)
 * count as pending at once and run the same way once rung together. */
typedef struct queue_ctx {
    uint64_t gate_fn, gate_args, gate;
    uint64_t order_fn, order_args;
    uint64_t deadline_ns;
    uint64_t post;      /* queue them with sp_chip_post and one sp_chip_ring */
    uint32_t result[4]; /* host-visible: depth, first ticket, finished while held, last */
} queue_ctx;

enum { NOT_QUEUED = 1005, BAD_TICKET = 1006 };

static int queue_scheduler(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index, (void)count;
    queue_ctx *qc = dev_ctx;
    uint32_t core = sp_chip_core_count(chip) - 1;
    uint32_t depth = sp_chip_core_queue_depth(chip);
    uint32_t before = sp_chip_core_finished(chip, core);
    sp_chip_payload gate = {.fn = (sp_kernel_fn)(uintptr_t)qc->gate_fn,
                            .args = (const uint64_t *)(uintptr_t)qc->gate_args,
                            .block_num = 1};
    uint32_t first = sp_chip_dispatch(chip, core, &gate);
    if (first != ((before + 1) & SP_CHIP_TICKET_MASK))
        return BAD_TICKET;
    for (uint32_t k = 1; k < depth; k++) {
        sp_chip_payload p = {.fn = (sp_kernel_fn)(uintptr_t)qc->order_fn,
                             .args = (const uint64_t *)(uintptr_t)qc->order_args,
                             .task_id = 100 + k,
                             .block_num = 1};
        uint32_t t = qc->post ? sp_chip_post(chip, core, &p) : sp_chip_dispatch(chip, core, &p);
        if (t != ((first + k) & SP_CHIP_TICKET_MASK))
            return BAD_TICKET;
    }
    if (qc->post) {
        if (sp_chip_core_pending(chip, core) != depth)
            return NOT_QUEUED;
        sp_chip_ring(chip, core);
        sp_chip_ring(chip, core); /* nothing new posted: harmless */
    }
    if (sp_chip_core_pending(chip, core) != depth || sp_chip_core_idle(chip, core))
        return NOT_QUEUED;
    qc->result[2] = sp_chip_core_finished(chip, core) == before; /* held by the gate */
    __atomic_store_n((uint32_t *)(uintptr_t)qc->gate, 5u, __ATOMIC_RELEASE);
    uint32_t snap = sp_chip_event_snapshot(chip);
    while (!sp_chip_core_idle(chip, core)) {
        if (sp_chip_event_wait(chip, snap, qc->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
        snap = sp_chip_event_snapshot(chip);
    }
    qc->result[0] = depth;
    qc->result[1] = first;
    qc->result[3] = sp_chip_core_finished(chip, core);
    for (uint32_t k = 0; k < depth; k++)
        if (sp_chip_core_fault(chip, core, (first + k) & SP_CHIP_TICKET_MASK) != 0)
            return BAD_STATE;
    return 0;
}

static void run_queue_test(uint32_t depth, bool post)
{
    sp_device_options opt = {.settings = {.sim = {.core_queue = depth}}};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, &opt, &dev), SP_OK);
    sp_kernel_binary *kg = load_test_kernel(dev, "chip_probe.so", "chip_gate");
    sp_kernel_binary *ko = load_test_kernel(dev, "chip_probe.so", "chip_order");
    uint64_t gate = dev_alloc_zeroed(dev, 2 * sizeof(uint32_t));
    uint64_t gate_argv[2] = {gate, gate + sizeof(uint32_t)};
    uint64_t gate_args = dev_upload(dev, gate_argv, sizeof gate_argv);
    uint64_t log = dev_alloc_zeroed(dev, 16 * sizeof(uint32_t));
    uint64_t order_argv[2] = {log, log + 12 * sizeof(uint32_t)};
    uint64_t order_args = dev_upload(dev, order_argv, sizeof order_argv);
    queue_ctx qc = {.gate_fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kg),
                    .gate_args = gate_args,
                    .gate = gate,
                    .order_fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(ko),
                    .order_args = order_args,
                    .deadline_ns = DEADLINE_MS(30000),
                    .post = post};
    uint64_t ctx = dev_upload(dev, &qc, sizeof qc);
    launch_and_wait(dev, queue_scheduler, ctx, 1, 45000);
    queue_ctx back;
    dev_download(dev, &back, ctx, sizeof back);
    cr_expect_eq(back.result[0], depth, "the chip holds %u payloads per core", depth);
    cr_expect_eq(back.result[2], 1u, "nothing finished while the first kernel ran");
    cr_expect_eq(back.result[3], (back.result[1] + depth - 1) & SP_CHIP_TICKET_MASK);
    uint32_t order[16];
    dev_download(dev, order, log, sizeof order);
    cr_expect_eq(order[12], depth - 1, "every queued payload ran once");
    for (uint32_t k = 1; k < depth; k++)
        cr_expect_eq(order[k - 1], 100 + k, "queued payload %u ran in ticket order", k);
    sp_device_free(dev, ctx);
    sp_device_free(dev, order_args);
    sp_device_free(dev, log);
    sp_device_free(dev, gate_args);
    sp_device_free(dev, gate);
    sp_kernel_binary_unload(ko);
    sp_kernel_binary_unload(kg);
    sp_device_close(dev);
}

Test(chip_handshake, queued_payloads_run_in_ticket_order, .timeout = 60)
{
    run_queue_test(4, false);
    run_queue_test(8, false);
}

Test(chip_handshake, posted_payloads_run_in_ticket_order_once_rung, .timeout = 60)
{
    run_queue_test(4, true);
    run_queue_test(8, true);
    run_queue_test(2, true);
}

Test(chip_handshake, a_queue_of_one_still_runs_everything, .timeout = 60)
{
    run_queue_test(1, false);
}

/* A chained payload (SP_PAYLOAD_CHAINED: a consumer queued behind its
 * producer) does not run when the payload ahead of it on its core faulted:
 * it finishes with SP_FAULT_UPSTREAM, and so does a chained one behind it;
 * an unchained payload after them runs as usual, and so does a chained one
 * behind a payload that ran clean. */
typedef struct chained_ctx {
    uint64_t crash_fn, order_fn, order_args;
    uint64_t deadline_ns;
    int32_t fault[5]; /* host-visible: each ticket's fault */
} chained_ctx;

static int chained_scheduler(sp_chip *chip, void *dev_ctx, uint32_t index, uint32_t count)
{
    (void)index, (void)count;
    chained_ctx *cc = dev_ctx;
    uint32_t core = sp_chip_core_count(chip) - 1;
    sp_chip_payload crash = {.fn = (sp_kernel_fn)(uintptr_t)cc->crash_fn, .block_num = 1};
    sp_chip_payload p[5] = {crash};
    for (int k = 1; k < 5; k++)
        p[k] = (sp_chip_payload){.fn = (sp_kernel_fn)(uintptr_t)cc->order_fn,
                                 .args = (const uint64_t *)(uintptr_t)cc->order_args,
                                 .task_id = 100 + (uint64_t)k,
                                 .block_num = 1,
                                 .flags = k == 3 ? 0 : SP_PAYLOAD_CHAINED};
    uint32_t first = 0;
    for (int k = 0; k < 5; k++) {
        /* One at a time: the test holds for a queue of any depth. */
        while (sp_chip_core_pending(chip, core) >= sp_chip_core_queue_depth(chip)) {
            uint32_t snap = sp_chip_event_snapshot(chip);
            if (sp_chip_core_pending(chip, core) >= sp_chip_core_queue_depth(chip) &&
                sp_chip_event_wait(chip, snap, cc->deadline_ns) == SP_ETIMEOUT)
                return SP_ETIMEOUT;
        }
        uint32_t t = sp_chip_dispatch(chip, core, &p[k]);
        if (k == 0)
            first = t;
    }
    uint32_t snap = sp_chip_event_snapshot(chip);
    while (!sp_chip_core_idle(chip, core)) {
        if (sp_chip_event_wait(chip, snap, cc->deadline_ns) == SP_ETIMEOUT)
            return SP_ETIMEOUT;
        snap = sp_chip_event_snapshot(chip);
    }
    for (uint32_t k = 0; k < 5; k++)
        cc->fault[k] = sp_chip_core_fault(chip, core, (first + k) & SP_CHIP_TICKET_MASK);
    return 0;
}

static void run_chained_test(uint32_t depth)
{
    sp_device_options opt = {.settings = {.sim = {.core_queue = depth}}};
    sp_device *dev = NULL;
    cr_assert_eq(sp_device_open(0, &opt, &dev), SP_OK);
    sp_kernel_binary *kc = load_test_kernel(dev, "fault_kernels.so", "fault_segv");
    sp_kernel_binary *ko = load_test_kernel(dev, "chip_probe.so", "chip_order");
    uint64_t log = dev_alloc_zeroed(dev, 16 * sizeof(uint32_t));
    uint64_t order_argv[2] = {log, log + 12 * sizeof(uint32_t)};
    uint64_t order_args = dev_upload(dev, order_argv, sizeof order_argv);
    chained_ctx cc = {.crash_fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(kc),
                      .order_fn = (uint64_t)(uintptr_t)sp_kernel_binary_entry(ko),
                      .order_args = order_args,
                      .deadline_ns = DEADLINE_MS(30000)};
    uint64_t ctx = dev_upload(dev, &cc, sizeof cc);
    launch_and_wait(dev, chained_scheduler, ctx, 1, 45000);
    chained_ctx back;
    dev_download(dev, &back, ctx, sizeof back);
    cr_expect_eq(back.fault[0], SIGSEGV, "depth %u: the crash is reported", depth);
    cr_expect_eq(back.fault[1], SP_FAULT_UPSTREAM, "depth %u: chained behind a crash", depth);
    cr_expect_eq(back.fault[2], SP_FAULT_UPSTREAM, "depth %u: chained behind a skip", depth);
    cr_expect_eq(back.fault[3], 0, "depth %u: unchained", depth);
    cr_expect_eq(back.fault[4], 0, "depth %u: chained behind a clean run", depth);
    uint32_t order[16];
    dev_download(dev, order, log, sizeof order);
    cr_expect_eq(order[12], 2u, "depth %u: only the two payloads after a clean one ran", depth);
    cr_expect_eq(order[0], 103u);
    cr_expect_eq(order[1], 104u);
    sp_device_free(dev, ctx);
    sp_device_free(dev, order_args);
    sp_device_free(dev, log);
    sp_kernel_binary_unload(ko);
    sp_kernel_binary_unload(kc);
    sp_device_close(dev);
}

Test(chip_handshake, a_chained_payload_does_not_run_after_a_fault, .timeout = 60)
{
    run_chained_test(1);
    run_chained_test(4);
    run_chained_test(8);
}
