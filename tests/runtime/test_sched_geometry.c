/* The scheduler pass reads the cluster's shape from the chip's geometry:
 * how many lanes a cluster has, each lane's core kind, which core is which
 * lane. Driven here over a fake chip (fake_chip_common.h and this file:
 * every posted payload finishes at once, and is logged; a pass leaves
 * nothing posted and not rung) with shapes the sim does
 * not build — a two-lane cluster (AIC + AIV) and a cluster with its AIC on
 * the last lane — and the a2a3 one: AIC blocks go to AIC cores only, AIV
 * blocks to AIV cores only, a MIX block takes every lane of one idle
 * cluster with lane l running the task's lane-l kernel, every block runs
 * once. A geometry the pass cannot drive is refused (SP_EGEOMETRY), and
 * task validation follows the same shape: a MIX kernel on a lane the
 * cluster lacks, or a task of a kind no lane has, is SP_ETASK_ARGS. */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/device/sched_pass.h"
#include "runtime/device/task_check.h"
#include "simpler/status.h"

/* ---- a fake chip ---------------------------------------------------------- */

#define FAKE_MAX_LOG 4096

typedef struct dispatch_rec {
    uint32_t core;
    uint64_t task;
    uint32_t block;
    uint32_t sub_block;
} dispatch_rec;

struct sp_chip {
    sp_geometry geo;
    uint32_t finished[RT_SCHED_MAX_CORES];
    uint32_t posted[RT_SCHED_MAX_CORES];
    uint32_t rung[RT_SCHED_MAX_CORES];
    uint32_t rings;
    dispatch_rec log[FAKE_MAX_LOG];
    uint32_t logged;
};

#include "fake_chip_common.h"

uint32_t sp_chip_core_queue_depth(const sp_chip *chip)
{
    (void)chip;
    return 2;
}
uint32_t sp_chip_post(sp_chip *chip, uint32_t core, const sp_chip_payload *p)
{
    cr_assert_lt(chip->logged, FAKE_MAX_LOG);
    chip->log[chip->logged++] = (dispatch_rec){core, p->task_id, p->block_idx, p->sub_block};
    chip->posted[core] = (chip->posted[core] + 1) & SP_CHIP_TICKET_MASK;
    return chip->finished[core] = chip->posted[core];
}
void sp_chip_ring(sp_chip *chip, uint32_t core)
{
    cr_assert_neq(chip->rung[core], chip->posted[core], "core %u rung with nothing posted", core);
    chip->rung[core] = chip->posted[core];
    chip->rings++;
}

/* ---- a runtime of a few tasks ---------------------------------------------- */

#define MAX_TASKS 64

typedef struct fake_rt {
    uint8_t shape[MAX_TASKS];
    uint32_t blocks[MAX_TASKS], handed[MAX_TASKS], done[MAX_TASKS];
    uint32_t queue[SP_QUEUES][MAX_TASKS], qlen[SP_QUEUES], qhead[SP_QUEUES];
    uint32_t mix_lanes; /* lanes a MIX task has a kernel on */
    uint32_t count;
} fake_rt;

static void add_task(fake_rt *r, uint8_t shape, uint32_t blocks)
{
    uint32_t id = r->count++;
    r->shape[id] = shape;
    r->blocks[id] = blocks;
    int q = rt_queue_of_shape(shape);
    r->queue[q][r->qlen[q]++] = id;
}

static bool hook_pop(void *rt, int q, uint64_t *task, uint32_t *block)
{
    fake_rt *r = rt;
    while (r->qhead[q] < r->qlen[q]) {
        uint32_t id = r->queue[q][r->qhead[q]];
        if (r->handed[id] < r->blocks[id]) {
            *task = id;
            *block = r->handed[id]++;
            return true;
        }
        r->qhead[q]++;
    }
    return false;
}

static bool hook_payload(void *rt, uint64_t task, uint32_t block, int lane, sp_chip_payload *p)
{
    fake_rt *r = rt;
    uint8_t shape = r->shape[task];
    bool has = shape == SP_SHAPE_MIX   ? (uint32_t)lane < r->mix_lanes
               : shape == SP_SHAPE_AIC ? lane == SP_LANE_AIC
                                       : lane == SP_LANE_AIV0;
    if (!has)
        return false;
    *p = (sp_chip_payload){.task_id = task,
                           .block_idx = block,
                           .block_num = r->blocks[task],
                           .sub_block = shape == SP_SHAPE_MIX ? (uint32_t)lane : 0};
    return true;
}

static void hook_block_done(void *rt, uint64_t task)
{
    ((fake_rt *)rt)->done[task]++;
}

static const rt_sched_hooks hooks = {
    .pop = hook_pop,
    .payload = hook_payload,
    .block_done = hook_block_done,
    .describe = hook_describe,
    .fault = hook_fault,
    .failed = hook_failed,
};

/* Lane of `core` and its cluster, by the numbering above. */
static void lane_of(const sp_geometry *g, uint32_t core, uint32_t *cluster, uint32_t *lane)
{
    if (core < g->clusters) {
        *cluster = core, *lane = 0;
        return;
    }
    *cluster = (core - g->clusters) / (g->lanes - 1);
    *lane = (core - g->clusters) % (g->lanes - 1) + 1;
}

/* Run the tasks to completion over `geo` with `threads` schedulers taking
 * turns, then check where every block ran. */
static void run_and_check(const sp_geometry *geo, fake_rt *r, uint32_t threads)
{
    static sp_chip chip;
    memset(&chip, 0, sizeof chip);
    chip.geo = *geo;
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_OK);
    static rt_sched s[4];
    for (uint32_t t = 0; t < threads; t++)
        fake_sched_init(&s[t], &chip, t, threads);
    for (int round = 0; round < 1000; round++) {
        bool progress = false;
        for (uint32_t t = 0; t < threads; t++)
            progress |= rt_sched_pass(&s[t], &hooks, r);
        for (uint32_t k = 0; k < RT_SCHED_MAX_CORES; k++)
            cr_assert_eq(chip.rung[k], chip.posted[k], "core %u: posted %u, rung only %u", k,
                         chip.posted[k], chip.rung[k]);
        if (!progress)
            break;
    }
    cr_assert_leq(chip.rings, chip.logged);
    for (uint32_t id = 0; id < r->count; id++)
        cr_assert_eq(r->done[id], r->blocks[id], "task %u: %u of %u blocks done", id, r->done[id],
                     r->blocks[id]);
    for (uint32_t t = 0; t < threads; t++)
        cr_assert_not(rt_sched_busy(&s[t]));
    /* Per MIX (task, block): the lanes it ran on, all in one cluster. */
    uint32_t mix_lanes[MAX_TASKS][8], mix_cluster[MAX_TASKS][8];
    memset(mix_lanes, 0, sizeof mix_lanes);
    uint32_t core_count = geo->clusters * geo->lanes;
    for (uint32_t i = 0; i < chip.logged; i++) {
        const dispatch_rec *d = &chip.log[i];
        cr_assert_lt(d->core, core_count, "dispatch to core %u of %u", d->core, core_count);
        uint32_t cl, lane;
        lane_of(geo, d->core, &cl, &lane);
        uint32_t type = geo->lane_type[lane];
        uint8_t shape = r->shape[d->task];
        if (shape == SP_SHAPE_AIC)
            cr_assert_eq(type, SP_CORE_AIC, "AIC task %llu on an AIV core %u",
                         (unsigned long long)d->task, d->core);
        else if (shape == SP_SHAPE_AIV)
            cr_assert_eq(type, SP_CORE_AIV, "AIV task %llu on an AIC core %u",
                         (unsigned long long)d->task, d->core);
        else {
            cr_assert_eq(d->sub_block, lane, "MIX lane %u ran on lane %u", d->sub_block, lane);
            cr_assert_lt(d->block, 8);
            if (mix_lanes[d->task][d->block])
                cr_assert_eq(mix_cluster[d->task][d->block], cl, "a MIX block split over clusters");
            mix_cluster[d->task][d->block] = cl;
            cr_assert_eq(mix_lanes[d->task][d->block] & (1u << lane), 0, "a MIX lane ran twice");
            mix_lanes[d->task][d->block] |= 1u << lane;
        }
    }
    for (uint32_t id = 0; id < r->count; id++)
        if (r->shape[id] == SP_SHAPE_MIX)
            for (uint32_t b = 0; b < r->blocks[id]; b++)
                cr_assert_eq(mix_lanes[id][b], (1u << r->mix_lanes) - 1,
                             "MIX task %u block %u ran on lanes %#x", id, b, mix_lanes[id][b]);
}

static void workload(fake_rt *r, uint32_t mix_lanes)
{
    memset(r, 0, sizeof *r);
    r->mix_lanes = mix_lanes;
    add_task(r, SP_SHAPE_AIC, 5);
    add_task(r, SP_SHAPE_AIV, 7);
    add_task(r, SP_SHAPE_MIX, 3);
    add_task(r, SP_SHAPE_AIV, 1);
    add_task(r, SP_SHAPE_AIC, 2);
    add_task(r, SP_SHAPE_MIX, 2);
}

Test(sched_geometry, two_lane_cluster)
{
    sp_geometry g = {
        .clusters = 3, .lanes = 2, .lane_type = {SP_CORE_AIC, SP_CORE_AIV}, .aicpu_threads = 2};
    static fake_rt r;
    workload(&r, 2);
    run_and_check(&g, &r, 1);
    workload(&r, 2);
    run_and_check(&g, &r, 2);
}

Test(sched_geometry, aic_on_the_last_lane)
{
    sp_geometry g = {.clusters = 2,
                     .lanes = 3,
                     .lane_type = {SP_CORE_AIV, SP_CORE_AIV, SP_CORE_AIC},
                     .aicpu_threads = 2};
    static fake_rt r;
    workload(&r, 3);
    run_and_check(&g, &r, 1);
}

Test(sched_geometry, a2a3_cluster)
{
    sp_geometry g = {.clusters = 4,
                     .lanes = 3,
                     .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV},
                     .aicpu_threads = 4};
    static fake_rt r;
    workload(&r, 3);
    run_and_check(&g, &r, 3);
}

Test(sched_geometry, refused_geometries)
{
    static sp_chip chip;
    memset(&chip, 0, sizeof chip);
    chip.geo = (sp_geometry){.clusters = 1,
                             .lanes = SP_LANES + 1,
                             .lane_type = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV, SP_CORE_AIV}};
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_EGEOMETRY, "more lanes than a task names");
    chip.geo.lanes = 0;
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_EGEOMETRY, "no lanes");
    chip.geo.lanes = 2;
    chip.geo.lane_type[1] = 7;
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_EGEOMETRY, "an unknown core kind");
    chip.geo.lane_type[1] = SP_CORE_AIV;
    chip.geo.clusters = RT_SCHED_MAX_CLUSTERS + 1;
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_EGEOMETRY, "too many clusters");
    chip.geo.clusters = RT_SCHED_MAX_CLUSTERS;
    cr_assert_eq(rt_sched_geometry_check(&chip), SP_OK);
}

/* ---- validation against the geometry --------------------------------------- */

static rt_dev_kernel kern[3] = {
    {.func_id = 0, .core_type = SP_CORE_AIC, .entry = "aic", .signature = ""},
    {.func_id = 1, .core_type = SP_CORE_AIV, .entry = "aiv", .signature = ""},
    {.func_id = 2, .core_type = SP_CORE_AIV, .entry = "aiv2", .signature = ""},
};

static int validate(const uint32_t *lane_type, uint32_t lanes, sp_task *t, char *msg, size_t len)
{
    static rt_dev_callable dc;
    memset(&dc, 0, sizeof dc);
    dc.kernel_count = 3;
    dc.kernels = kern;
    for (int k = 0; k < 3; k++)
        dc.by_func_id[k] = (int16_t)(k + 1);
    rt_task_check c = {
        .callable = &dc, .msg = msg, .msg_len = len, .lane_type = lane_type, .lanes = lanes};
    int32_t kernel[3];
    return rt_task_validate(&c, 9, t, kernel);
}

Test(sched_geometry, validation_follows_the_cluster)
{
    char msg[256];
    const uint32_t two[2] = {SP_CORE_AIC, SP_CORE_AIV};
    sp_task mix = sp_task_mix(0, 1, 2);
    cr_assert_eq(validate(two, 2, &mix, msg, sizeof msg), SP_ETASK_ARGS,
                 "a MIX kernel on a lane the cluster lacks");
    cr_assert(strstr(msg, "task 9") && strstr(msg, "lane 2"), "got: %s", msg);
    sp_task mix2 = sp_task_mix(0, 1, SP_FUNC_NONE);
    cr_assert_eq(validate(two, 2, &mix2, msg, sizeof msg), SP_OK, "%s", msg);
    cr_assert_eq(validate(NULL, 0, &mix, msg, sizeof msg), SP_OK, "the a2a3 default: %s", msg);

    const uint32_t aic_only[1] = {SP_CORE_AIC};
    sp_task aiv = sp_task_aiv(1);
    cr_assert_eq(validate(aic_only, 1, &aiv, msg, sizeof msg), SP_ETASK_ARGS,
                 "an AIV task where no lane is AIV");
    cr_assert(strstr(msg, "no AIV core"), "got: %s", msg);
    sp_task aic = sp_task_aic(0);
    cr_assert_eq(validate(aic_only, 1, &aic, msg, sizeof msg), SP_OK, "%s", msg);

    /* Lane kinds come from the geometry: AIC on lane 2, AIV on 0 and 1. */
    const uint32_t swapped[3] = {SP_CORE_AIV, SP_CORE_AIV, SP_CORE_AIC};
    sp_task mix3 = sp_task_mix(1, 2, 0);
    cr_assert_eq(validate(swapped, 3, &mix3, msg, sizeof msg), SP_OK, "%s", msg);
    cr_assert_eq(validate(swapped, 3, &mix, msg, sizeof msg), SP_ETASK_ARGS,
                 "an AIC kernel on an AIV lane");
}
