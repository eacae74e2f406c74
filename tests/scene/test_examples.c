/* Every example and every case of the registry, end to end on both
 * runtimes (host_build_graph and tensormap_and_ringbuffer) through the worker
 * API: the outputs match the example's golden, and the task and edge counts
 * match where the example states them. Cases that need a live read of a
 * kernel's output are refused by hbg (SP_ESTATE) and pass on tmr. On tmr the
 * heaviest workloads also stream through a 64-slot window and a small heap.
 * Then the copy fallback for control tensors (a backend without host-map)
 * gives bit-identical results, and the host-map path is shown to be the one
 * taken when the backend has it. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"
#include "platform/device.h"
#include "runtime/host/staging.h"
#include "runtime/host_build_graph/host/hbg_build.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

enum { RT_HBG = 0, RT_TMR = 1, RT_COUNT = 2 };
static const char *const rt_module[RT_COUNT] = {HBG_MODULE, TMR_MODULE};
static const char *const rt_name[RT_COUNT] = {"hbg", "tmr"};

typedef struct case_ref {
    int runtime;
    int example;
    int index;
} case_ref;

/* One run of an example case: worker, instance, status and stats. */
typedef struct scene_run {
    sp_worker *w;
    ex_instance inst;
    const ex_example *ex;
    const ex_case *c;
    sp_call_config cfg;
    sp_run_stats stats;
    int rc;
} scene_run;

static void scene_open_on(scene_run *s, int runtime, const ex_example *ex, const ex_case *c)
{
    char err[1024] = "";
    memset(s, 0, sizeof *s);
    s->ex = ex;
    s->c = c;
    int rc = sp_worker_open(rt_module[runtime], NULL, &s->w, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "worker open: %s", err);
    char path[512];
    snprintf(path, sizeof path, SP_BUILD_DIR "/examples/%s.spc", ex->name);
    rc = sp_worker_register_callable_file(s->w, 1, path);
    cr_assert_eq(rc, SP_OK, "register %s: %s", path, sp_worker_last_error(s->w));
    rc = ex_instance_init(&s->inst, ex, c->name, NULL, err, sizeof err);
    cr_assert_eq(rc, 0, "%s/%s: %s", ex->name, c->name, err);
    rc = ex->setup(&s->inst, err, sizeof err);
    cr_assert_eq(rc, 0, "%s/%s setup: %s", ex->name, c->name, err);
}

static void scene_open(scene_run *s, const ex_example *ex, const ex_case *c)
{
    scene_open_on(s, RT_HBG, ex, c);
}

static void scene_run_once(scene_run *s)
{
    s->rc = sp_worker_run(s->w, 1, &s->inst.args, &s->cfg, &s->stats);
}

/* The run passed: golden, and the stated task / edge counts. */
static void scene_assert_pass(const scene_run *s)
{
    const char *name = s->ex->name, *cs = s->c->name;
    cr_assert_eq(s->rc, SP_OK, "%s/%s: %s: %s", name, cs, sp_status_name(s->rc),
                 sp_worker_last_error(s->w));
    double max_err = 0;
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(s->ex->check(&s->inst, &max_err, err, sizeof err), 0, "%s/%s: %s", name, cs, err);
    cr_assert_gt(s->stats.tasks, 0, "%s/%s: no tasks reported", name, cs);
    if (s->inst.expect_tasks >= 0)
        cr_assert_eq(s->stats.tasks, (uint64_t)s->inst.expect_tasks, "%s/%s: tasks", name, cs);
    if (s->inst.expect_edges >= 0)
        cr_assert_eq(s->stats.edges, (uint64_t)s->inst.expect_edges, "%s/%s: edges", name, cs);
}

static void scene_close(scene_run *s)
{
    ex_instance_free(&s->inst);
    sp_worker_close(s->w);
    s->w = NULL;
}

static void free_cases(struct criterion_test_params *p)
{
    cr_free(p->params);
}

ParameterizedTestParameters(examples, every_case)
{
    int n;
    const ex_example *const *all = ex_registry(&n);
    size_t total = 0;
    for (int e = 0; e < n; e++)
        total += (size_t)all[e]->case_count * RT_COUNT;
    case_ref *refs = cr_malloc(total * sizeof *refs);
    size_t k = 0;
    for (int rt = 0; rt < RT_COUNT; rt++)
        for (int e = 0; e < n; e++)
            for (int c = 0; c < all[e]->case_count; c++)
                refs[k++] = (case_ref){.runtime = rt, .example = e, .index = c};
    return cr_make_param_array(case_ref, refs, total, free_cases);
}

ParameterizedTest(case_ref *ref, examples, every_case, .timeout = 120)
{
    int n;
    const ex_example *ex = ex_registry(&n)[ref->example];
    const ex_case *c = &ex->cases[ref->index];
    scene_run s;
    scene_open_on(&s, ref->runtime, ex, c);
    scene_run_once(&s);
    if (c->needs_live_read && ref->runtime == RT_HBG) {
        /* hbg runs the whole orchestration before launch: refused by name. */
        cr_assert_eq(s.rc, SP_ESTATE, "%s/%s needs a live read: expected SP_ESTATE, got %s",
                     ex->name, c->name, sp_status_name(s.rc));
        cr_assert_not_null(strstr(sp_worker_last_error(s.w), "host_build_graph"), "%s",
                           sp_worker_last_error(s.w));
    } else {
        scene_assert_pass(&s);
    }
    cr_log_info("%s %s/%s: %llu tasks", rt_name[ref->runtime], ex->name, c->name,
                (unsigned long long)s.stats.tasks);
    scene_close(&s);
}

/* tmr's ring stress: a 64-slot task window and a heap of a few MiB. Tasks
 * retire while the orchestration runs, so the edge count may drop (edges to
 * retired producers are not needed); the results and task count may not. */
static void ring_stress(const char *example, const char *case_name)
{
    const ex_example *ex = ex_find(example);
    cr_assert_not_null(ex);
    const ex_case *c = NULL;
    for (int i = 0; i < ex->case_count; i++)
        if (strcmp(ex->cases[i].name, case_name) == 0)
            c = &ex->cases[i];
    cr_assert_not_null(c);
    scene_run s;
    scene_open_on(&s, RT_TMR, ex, c);
    s.cfg.task_window = 64;
    s.cfg.heap_bytes = 4ull << 20;
    s.inst.expect_edges = -1;
    scene_run_once(&s);
    scene_assert_pass(&s);
    scene_close(&s);
}

Test(examples, tmr_paged_attention_large_in_a_64_slot_window, .timeout = 120)
{
    ring_stress("paged_attention", "large");
}

Test(examples, tmr_bgemm_in_a_64_slot_window, .timeout = 120)
{
    ring_stress("bgemm", "default");
}

/* The registry is what the parameterised test walks: make sure it is not
 * empty and that the workloads the issue names are in it. */
Test(examples, registry_lists_the_workloads)
{
    const char *names[] = {"vector_example",  "matmul_diamond", "bgemm",
                           "paged_attention", "dummy_chain",    "control_rw"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        cr_assert_not_null(ex_find(names[i]), "no example %s", names[i]);
    const ex_example *pa = ex_find("paged_attention");
    const char *pa_cases[] = {"small", "varlen", "large"};
    for (size_t i = 0; i < 3; i++) {
        int found = 0;
        for (int c = 0; c < pa->case_count; c++)
            found |= strcmp(pa->cases[c].name, pa_cases[i]) == 0;
        cr_assert(found, "paged_attention has no case %s", pa_cases[i]);
    }
}

/* Run `example`/`case_name` with host-map, then on a fresh device without
 * one: the orchestration reads its control tensors by copies, and every
 * output is bit-identical, with the same graph. */
static void same_results_without_host_map(const char *example, const char *case_name)
{
    const ex_example *ex = ex_find(example);
    cr_assert_not_null(ex);
    const ex_case *c = NULL;
    for (int i = 0; i < ex->case_count; i++)
        if (strcmp(ex->cases[i].name, case_name) == 0)
            c = &ex->cases[i];
    cr_assert_not_null(c);

    unsetenv("SIMPLER_SIM_NO_HOST_MAP");
    scene_run mapped;
    scene_open(&mapped, ex, c);
    scene_run_once(&mapped);
    scene_assert_pass(&mapped);
    sp_worker_close(mapped.w); /* the last reference: the device goes away */
    mapped.w = NULL;

    cr_assert_eq(setenv("SIMPLER_SIM_NO_HOST_MAP", "1", 1), 0);
    scene_run copied;
    scene_open(&copied, ex, c);
    scene_run_once(&copied);
    scene_assert_pass(&copied);
    cr_assert_eq(copied.stats.tasks, mapped.stats.tasks);
    cr_assert_eq(copied.stats.edges, mapped.stats.edges);
    for (uint32_t i = 0; i < mapped.inst.args.tensor_count; i++) {
        const sp_tensor *a = &mapped.inst.args.tensors[i], *b = &copied.inst.args.tensors[i];
        cr_assert_eq(a->buf_bytes, b->buf_bytes);
        cr_assert_eq(memcmp((const void *)(uintptr_t)a->addr, (const void *)(uintptr_t)b->addr,
                            a->buf_bytes),
                     0, "%s/%s: argument %s differs without host-map", example, case_name,
                     mapped.inst.arg_names[i]);
    }
    scene_close(&copied);
    ex_instance_free(&mapped.inst);
}

Test(examples, paged_attention_small_without_host_map)
{
    same_results_without_host_map("paged_attention", "small");
}

Test(examples, bgemm_small_without_host_map)
{
    same_results_without_host_map("bgemm", "small");
}

/* ---- which path reads control tensors ------------------------------------
 * The observable: the number of copy_from_device calls. A host API that
 * counts them wraps the sim's table; staging (as hbg's prepare does it) and
 * the orchestration ops' tensor_read then run over it. With host-map the
 * reads are served from the map (no copy); without, by one copy each. */

static const sp_host_api_functions *sim_fns;
static int copies_from_device, host_maps;

static int counting_copy_from(void *ctx, void *dst, uint64_t src, uint64_t bytes)
{
    copies_from_device++;
    return sim_fns->copy_from_device(ctx, dst, src, bytes);
}

static void *counting_map(void *ctx, uint64_t dev_ptr, uint64_t bytes)
{
    void *p = sim_fns->register_device_memory_to_host(ctx, dev_ptr, bytes);
    host_maps += p != NULL;
    return p;
}

/* Stage an i32 control tensor {0, 10, 20, ...} on device `device_id` and
 * read every element through hbg's tensor_read; returns the staging's map. */
static void *read_control_tensor(int device_id, bool no_host_map)
{
    sim_fns = sp_device_host_api_functions();
    static sp_host_api_functions counting;
    counting = *sim_fns;
    counting.copy_from_device = counting_copy_from;
    counting.register_device_memory_to_host = counting_map;
    copies_from_device = host_maps = 0;

    sp_device_options opt;
    memset(&opt, 0, sizeof opt);
    opt.geometry.clusters = 1;
    opt.geometry.aicpu_threads = 2;
    opt.settings.sim.no_host_map = no_host_map;
    sp_device *dev;
    cr_assert_eq(sp_device_open(device_id, &opt, &dev), SP_OK);
    sp_host_api api = {.runner_ctx = dev, .functions = &counting};

    enum { N = 16 };
    int32_t host[N];
    for (int i = 0; i < N; i++)
        host[i] = 10 * i;
    static sp_args args;
    memset(&args, 0, sizeof args);
    int64_t n = N;
    cr_assert_eq(sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)host, SP_DTYPE_I32, 1, &n),
                 SP_OK);
    args.dirs[0] = SP_IN;
    args.tensor_count = 1;
    static rt_staging st;
    char err[256] = "";
    cr_assert_eq(rt_staging_stage(&st, &api, &args, true, false, err, sizeof err), SP_OK, "%s",
                 err);
    void *map = st.t[0].host_map;

    hbg_buffer buf = {.dev = st.t[0].dev, .bytes = st.t[0].bytes, .host_map = map};
    static rt_loaded_callable lc; /* no kernels: only control reads happen */
    static hbg_graph g;
    cr_assert_eq(hbg_graph_init(&g, &api, &lc, 0, 0, &buf, 1, NULL), SP_OK);
    const sp_tensor *ctl = &st.device_args.tensors[0];
    for (int i = 0; i < N; i++)
        cr_assert_eq(sp_tensor_read_int(&g.orch, ctl, i), 10 * i, "element %d", i);
    cr_assert_eq(sp_orch_error(&g.orch), SP_OK, "%s", g.message);
    hbg_graph_free(&g);
    rt_staging_release(&st, &api);
    sp_device_close(dev);
    return map;
}

Test(examples, control_reads_use_the_host_map_when_there_is_one)
{
    void *map = read_control_tensor(0, false);
    cr_assert_not_null(map, "the sim backend has host-map: staging must map control tensors");
    cr_assert_eq(host_maps, 1);
    cr_assert_eq(copies_from_device, 0,
                 "tensor_read copied from the device (%d copies) although "
                 "the tensor is host-mapped",
                 copies_from_device);

    map = read_control_tensor(1, true);
    cr_assert_null(map);
    cr_assert_eq(host_maps, 0);
    cr_assert_eq(copies_from_device, 16, "the copy fallback reads each element by one copy");
}
