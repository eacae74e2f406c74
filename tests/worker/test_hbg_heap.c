/* host_build_graph sizes a run's heap from its graph (issue 14): with
 * sp_call_config.heap_bytes left 0, a graph whose outputs outgrow the
 * 64 MiB default is measured and built again with a heap that holds them,
 * bounded by the device's free memory; the bank keeps the larger heap, so
 * the next run of it is built once. A heap_bytes the caller gives is the
 * limit, as before; and a graph that needs more than the device has free
 * fails naming what it needs, what is free and the setting to raise.
 *
 * The graph: paged_attention with 256 heads over 1024-token blocks, one
 * sequence of 65536 tokens: 64 blocks whose 1 MiB score tiles (and the
 * rest) are 66 MiB of runtime-allocated outputs, from 0.5 MiB of input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "example.h"
#include "simpler/log.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define OLD_DEFAULT_HEAP (64ull << 20)

static const char *const big[] = {"heads=256", "head_dim=1", "block_size=1024",
                                  "context_lens=65536", NULL};

static int rebuilds;
static void count_rebuilds(int level, const char *line, void *user)
{
    (void)user;
    if (level == SP_LOG_DEBUG && strstr(line, "built again"))
        rebuilds++;
}

static sp_worker *open_hbg(uint64_t memory_bytes)
{
    sp_worker_options o = {.module_dir = SP_MODULE_DIR, .log_sink = count_rebuilds};
    o.settings.memory_bytes = memory_bytes;
    o.settings.pipeline_depth = 1; /* one bank: the second run finds the heap grown */
    o.settings.log_level = 1 + SP_LOG_DEBUG;
    sp_worker *w = NULL;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open_runtime("hbg", NULL, &o, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(
        sp_worker_register_callable_file(w, 0, SP_BUILD_DIR "/examples/paged_attention.spc"), SP_OK,
        "%s", sp_worker_last_error(w));
    return w;
}

static void setup_big(ex_instance *inst)
{
    const ex_example *ex = ex_find("paged_attention");
    cr_assert_not_null(ex);
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(ex_instance_init(inst, ex, "small", big, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ex->setup(inst, err, sizeof err), 0, "%s", err);
}

static void assert_exact(const ex_instance *inst)
{
    double max_err = 0;
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(inst->example->check(inst, &max_err, err, sizeof err), 0, "%s", err);
}

Test(hbg_heap, outputs_past_the_old_default_heap_pass_and_the_grown_heap_is_kept, .timeout = 240)
{
    ex_instance inst;
    setup_big(&inst);
    sp_worker *w = open_hbg(0);
    sp_run_stats st;
    int rc = sp_worker_run(w, 0, &inst.args, NULL, &st);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_exact(&inst);
    cr_assert_eq(st.tasks, 257);
    cr_assert_eq(rebuilds, 1, "the first run is measured, then built again");
    /* The bank kept the heap the graph needed: built once this time. */
    memset((void *)(uintptr_t)inst.args.tensors[ex_arg_index(&inst, "out")].addr, 0,
           inst.args.tensors[ex_arg_index(&inst, "out")].buf_bytes);
    rc = sp_worker_run(w, 0, &inst.args, NULL, NULL);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_exact(&inst);
    cr_assert_eq(rebuilds, 1, "the second run was built twice");
    sp_worker_close(w);
    ex_instance_free(&inst);
}

Test(hbg_heap, a_heap_the_caller_gives_is_the_limit, .timeout = 240)
{
    ex_instance inst;
    setup_big(&inst);
    sp_worker *w = open_hbg(0);
    sp_call_config cfg = {.heap_bytes = OLD_DEFAULT_HEAP};
    int rc = sp_worker_run(w, 0, &inst.args, &cfg, NULL);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_EDEVMEM, "%s: %s", sp_status_name(rc), msg);
    cr_assert(strstr(msg, "does not fit the 67108864-byte heap") != NULL, "%s", msg);
    cr_assert(strstr(msg, "sp_call_config.heap_bytes") != NULL, "%s", msg);
    cr_assert_eq(rebuilds, 0);
    /* The worker runs on: the same graph with the heap left to it. */
    rc = sp_worker_run(w, 0, &inst.args, NULL, NULL);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    assert_exact(&inst);
    sp_worker_close(w);
    ex_instance_free(&inst);
}

Test(hbg_heap, a_graph_the_device_cannot_hold_names_its_need_and_the_limit, .timeout = 240)
{
    ex_instance inst;
    setup_big(&inst);
    sp_worker *w = open_hbg(100ull << 20); /* 64 MiB of default heap leave ~35 free */
    int rc = sp_worker_run(w, 0, &inst.args, NULL, NULL);
    const char *msg = sp_worker_last_error(w);
    cr_assert_eq(rc, SP_EDEVMEM, "%s: %s", sp_status_name(rc), msg);
    cr_assert(strstr(msg, "the graph's outputs need ") != NULL, "%s", msg);
    cr_assert(strstr(msg, "bytes free") != NULL, "%s", msg);
    cr_assert(strstr(msg, "memory_bytes") != NULL, "%s", msg);
    cr_assert_eq(rebuilds, 0);
    sp_worker_close(w);
    ex_instance_free(&inst);
}
