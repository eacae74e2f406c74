/* The trace exporters of libsimpler (simpler/trace_export.h) on real
 * traced runs of both runtimes: the Chrome-trace JSON has queued slices and
 * the critical path marked, the SVG has scheduler, orchestrator (tmr) and
 * core lanes with queued strips and the critical path, the DOT is ranked by
 * depth with the critical path in red and turns into a summary past
 * dot_detail_max, the STATS lines are there; bad input gets named statuses.
 * And the worker's trace path (options.trace_path, SIMPLER_TRACE): every
 * run waited for writes its file, "%n" numbers them, and a path that cannot
 * be written is a warning, not a failed run. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "example.h"
#include "simpler/callable.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"
#define WORK_DIR SP_BUILD_DIR "/test_trace_export"

static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    if (size)
        *size = (size_t)n;
    return buf;
}

static size_t count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A per-test file name under WORK_DIR. */
static void work_path(char *out, size_t len, const char *name)
{
    mkdir(WORK_DIR, 0755);
    snprintf(out, len, WORK_DIR "/%d_%s", (int)getpid(), name);
}

/* Open `module` with `opt`, register vector_example under 1. */
static sp_worker *open_vector(const char *module, const sp_worker_options *opt)
{
    char err[1024] = "";
    sp_worker *w;
    cr_assert_eq(sp_worker_open(module, opt, &w, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(
        sp_worker_register_callable_file(w, 1, SP_BUILD_DIR "/examples/vector_example.spc"), SP_OK,
        "%s", sp_worker_last_error(w));
    return w;
}

/* Run vector_example on `w` with `cfg`, check its result. */
static void rerun_vector(sp_worker *w, const sp_call_config *cfg, const char *case_name,
                         sp_run_stats *st)
{
    char err[1024] = "";
    const ex_example *ex = ex_find("vector_example");
    cr_assert_not_null(ex);
    ex_instance inst;
    cr_assert_eq(ex_instance_init(&inst, ex, case_name ? case_name : ex->cases[0].name, NULL, err,
                                  sizeof err),
                 0, "%s", err);
    cr_assert_eq(ex->setup(&inst, err, sizeof err), 0, "%s", err);
    int rc = sp_worker_run(w, 1, &inst.args, cfg, st);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), sp_worker_last_error(w));
    double max_err;
    cr_assert_eq(ex->check(&inst, &max_err, err, sizeof err), 0, "%s", err);
    ex_instance_free(&inst);
}

static sp_worker *run_vector(const char *module, const sp_worker_options *opt,
                             const sp_call_config *cfg, const char *case_name, sp_run_stats *st)
{
    sp_worker *w = open_vector(module, opt);
    rerun_vector(w, cfg, case_name, st);
    return w;
}

/* Every format through sp_worker_write_trace, checked. */
static void exports(const char *module, bool tmr)
{
    sp_call_config cfg = {.trace_level = tmr ? SP_TRACE_SUBMITS : SP_TRACE_SCHED};
    sp_run_stats st;
    sp_worker *w = run_vector(module, NULL, &cfg, NULL, &st);
    cr_assert_eq(st.tasks, 5);
    char json[512], svg[512], dot[512], stats[512];
    work_path(json, sizeof json, tmr ? "tmr.json" : "hbg.json");
    work_path(svg, sizeof svg, tmr ? "tmr.svg" : "hbg.svg");
    work_path(dot, sizeof dot, tmr ? "tmr.dot" : "hbg.dot");
    work_path(stats, sizeof stats, tmr ? "tmr.txt" : "hbg.txt");
    cr_assert_eq(sp_worker_write_trace(w, SP_TRACE_FORMAT_JSON, json), SP_OK, "%s",
                 sp_worker_last_error(w));
    cr_assert_eq(sp_worker_write_trace(w, SP_TRACE_FORMAT_SVG, svg), SP_OK);
    cr_assert_eq(sp_worker_write_trace(w, SP_TRACE_FORMAT_DOT, dot), SP_OK);
    cr_assert_eq(sp_worker_write_trace(w, SP_TRACE_FORMAT_STATS, stats), SP_OK);

    char *j = slurp(json, NULL);
    cr_assert_not_null(j);
    cr_assert_eq(count(j, "\"cat\":\"task\""), 5, "one event per task");
    cr_assert_eq(count(j, "\"ph\":\"s\""), 6, "one flow per edge");
    cr_assert_geq(count(j, "\"cat\":\"queued\""), 1, "queued slices:\n%s", j);
    cr_assert_geq(count(j, "\"critical\":true"), 2, "the critical path marked");
    cr_assert_geq(count(j, "\"cat\":\"critical\""), 2, "critical flows (start and end)");
    cr_assert(strstr(j, "\"name\":\"vec_add\""), "kernel names from the worker's callable");
    cr_assert(strstr(j, "\"scheduler 0\""));
    cr_assert(strstr(j, tmr ? "\"runtime\":\"tmr\"" : "\"runtime\":\"hbg\""));
    if (tmr)
        cr_assert(strstr(j, "\"orchestrator\""));
    cr_assert_eq(count(j, "{"), count(j, "}"), "braces balance");
    cr_assert_eq(count(j, "["), count(j, "]"));
    free(j);

    char *s = slurp(svg, NULL);
    cr_assert_not_null(s);
    cr_assert(strncmp(s, "<?xml", 5) == 0);
    cr_assert(strstr(s, "</svg>\n"));
    cr_assert_eq(count(s, "<rect class=\"task"), 5, "a bar per task");
    cr_assert_geq(count(s, "<rect class=\"task critical\""), 2);
    cr_assert_geq(count(s, "class=\"critical-link\""), 1);
    cr_assert_geq(count(s, "<g class=\"queued\">"), 1, "queued strips");
    cr_assert_geq(count(s, "<g class=\"sched\">"), 1, "scheduler passes at level 2");
    cr_assert(strstr(s, ">scheduler 0</text>"));
    cr_assert(strstr(s, ">cluster 0 AIC</text>"));
    if (tmr) {
        cr_assert(strstr(s, ">orchestrator</text>"));
        cr_assert_eq(count(s, "<g class=\"submit\">"), 5, "a submit mark per task");
    } else {
        cr_assert_null(strstr(s, ">orchestrator</text>"), "hbg has no orchestrator lane");
    }
    free(s);

    char *d = slurp(dot, NULL);
    cr_assert_not_null(d);
    cr_assert(strncmp(d, "digraph", 7) == 0);
    cr_assert_eq(count(d, " -> t"), 6);
    /* vector_example: depths 0 (t0), 1 (t1, t2), 2 (t3), 3 (t4): four ranks. */
    cr_assert_eq(count(d, "rank=same;"), 4, "%s", d);
    cr_assert_geq(count(d, "color=red, penwidth=3"), 3, "critical nodes and edges");
    cr_assert(strstr(d, "vec_add"));
    free(d);

    char *t = slurp(stats, NULL);
    cr_assert_not_null(t);
    cr_assert(strstr(t, "stats: tasks=5 "));
    cr_assert(strstr(t, "depth=4"), "%s", t);
    cr_assert(strstr(t, "stats: edges=6 "));
    cr_assert(strstr(t, "critical_path_us="));
    cr_assert(strstr(t, "tasks_on_path=4"), "%s", t);
    cr_assert(strstr(t, "critical_share="));
    cr_assert(strstr(t, "stats: kernel vec_add count="));
    cr_assert(strstr(t, "total_us="));
    cr_assert(strstr(t, "stats: queued on core"));
    cr_assert(strstr(t, "stats: utilisation AIC="));
    cr_assert(strstr(t, tmr ? "stats: prepare " : "stats: build stage_us="));
    free(t);
    sp_worker_close(w);
}

Test(trace_export, every_format_hbg)
{
    exports(HBG_MODULE, false);
}

Test(trace_export, every_format_tmr)
{
    exports(TMR_MODULE, true);
}

/* Past dot_detail_max the DOT is a summary: groups with counts, the edge
 * counts add up to the run's edges. sp_trace_write directly, with the
 * caller's own view of the callable. */
Test(trace_export, dot_summary_past_the_limit)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    sp_run_stats st;
    sp_worker *w = run_vector(HBG_MODULE, NULL, &cfg, NULL, &st);
    size_t size;
    char *blob = slurp(SP_BUILD_DIR "/examples/vector_example.spc", &size);
    cr_assert_not_null(blob);
    sp_callable_view view;
    cr_assert_eq(sp_callable_validate(blob, size, &view, NULL, 0), SP_OK);
    sp_trace_info info = {.runtime = "hbg", .callable = &view, .stats = &st, .dot_detail_max = 2};
    char dot[512], err[256];
    work_path(dot, sizeof dot, "summary.dot");
    cr_assert_eq(
        sp_trace_write(sp_worker_last_trace(w), &info, SP_TRACE_FORMAT_DOT, dot, err, sizeof err),
        SP_OK, "%s", err);
    char *d = slurp(dot, NULL);
    cr_assert(strstr(d, "dependency summary"), "%s", d);
    cr_assert_eq(count(d, " -> t"), 0, "no per-task edges");
    cr_assert_eq(count(d, "rank=same;"), 4, "one band per depth (4 < 24 bands)");
    unsigned total = 0;
    for (const char *p = d; (p = strstr(p, " -> g"));) {
        p = strstr(p, "label=\"");
        cr_assert_not_null(p);
        total += (unsigned)strtoul(p + 7, NULL, 10);
    }
    cr_assert_eq(total, 6, "the summary's edges stand for the run's 6:\n%s", d);
    cr_assert(strstr(d, "vec_add\\ndepth"), "%s", d);
    cr_assert(strstr(d, "color=red"), "the critical path's groups");
    free(d);
    free(blob);
    sp_worker_close(w);
}

Test(trace_export, bad_input_is_named)
{
    char err[256] = "", path[512];
    work_path(path, sizeof path, "bad.json");
    cr_assert_eq(sp_trace_write(NULL, NULL, SP_TRACE_FORMAT_JSON, path, err, sizeof err),
                 SP_EINVAL);
    cr_assert(strstr(err, "NULL trace"), "%s", err);
    sp_run_trace off = {0};
    cr_assert_eq(sp_trace_write(&off, NULL, SP_TRACE_FORMAT_JSON, path, err, sizeof err),
                 SP_EINVAL);
    cr_assert(strstr(err, "not traced"), "%s", err);
    sp_trace_record rec = {.kind = SP_TRACE_SLICE, .start_ns = 2, .end_ns = 3};
    sp_run_trace one = {.level = 1,
                        .clusters = 1,
                        .sched_threads = 1,
                        .launch_ns = 1,
                        .done_ns = 4,
                        .records = &rec,
                        .record_count = 1,
                        .record_cap = 1};
    cr_assert_eq(sp_trace_write(&one, NULL, 0, path, err, sizeof err), SP_EINVAL);
    cr_assert(strstr(err, "unknown format"), "%s", err);
    cr_assert_eq(sp_trace_write(&one, NULL, 99, path, NULL, 0), SP_EINVAL);
    cr_assert_eq(sp_trace_write(&one, NULL, SP_TRACE_FORMAT_SVG, NULL, err, sizeof err), SP_EINVAL);
    one.record_count = 2; /* more than the buffer holds */
    cr_assert_eq(sp_trace_write(&one, NULL, SP_TRACE_FORMAT_SVG, path, err, sizeof err), SP_EINVAL);
    one.record_count = 1;
    rec.task = UINT64_MAX; /* not a run's: refused, not a table of 2^64 rows */
    cr_assert_eq(sp_trace_write(&one, NULL, SP_TRACE_FORMAT_DOT, path, err, sizeof err), SP_EINVAL);
    cr_assert(strstr(err, "task id"), "%s", err);
    rec.task = 0;
    sp_trace_edge back = {.producer = 0, .consumer = 0};
    one.edges = &back, one.edge_count = one.edge_cap = 1;
    cr_assert_eq(sp_trace_write(&one, NULL, SP_TRACE_FORMAT_DOT, path, err, sizeof err), SP_EINVAL);
    cr_assert(strstr(err, "precede"), "%s", err);
    one.edges = NULL, one.edge_count = one.edge_cap = 0;
    cr_assert_eq(sp_trace_write(&one, NULL, SP_TRACE_FORMAT_JSON, WORK_DIR "/no/such/dir/t.json",
                                err, sizeof err),
                 SP_ESYS);
    cr_assert(strstr(err, "no/such/dir/t.json") && strstr(err, strerror(ENOENT)), "%s", err);
    /* A hand-made trace without a callable: kernels named f<id>. */
    for (int f = SP_TRACE_FORMAT_JSON; f <= SP_TRACE_FORMAT_STATS; f++)
        cr_assert_eq(sp_trace_write(&one, NULL, f, path, err, sizeof err), SP_OK, "%d: %s", f, err);
    cr_assert_eq(sp_trace_write(&one, NULL, SP_TRACE_FORMAT_JSON, path, err, sizeof err), SP_OK);
    char *j = slurp(path, NULL);
    cr_assert(strstr(j, "\"name\":\"f0\""), "%s", j);
    free(j);

    cr_assert_eq(sp_trace_format_of("a/b.json"), SP_TRACE_FORMAT_JSON);
    cr_assert_eq(sp_trace_format_of("x.SVG"), SP_TRACE_FORMAT_SVG);
    cr_assert_eq(sp_trace_format_of("x.dot"), SP_TRACE_FORMAT_DOT);
    cr_assert_eq(sp_trace_format_of("x.stats"), SP_TRACE_FORMAT_STATS);
    cr_assert_eq(sp_trace_format_of("x.txt"), SP_TRACE_FORMAT_STATS);
    cr_assert_eq(sp_trace_format_of("x.png"), 0);
    cr_assert_eq(sp_trace_format_of("dir.json/x"), 0);
    cr_assert_eq(sp_trace_format_of(NULL), 0);

    cr_assert_eq(sp_worker_write_trace(NULL, SP_TRACE_FORMAT_JSON, path), SP_EINVAL);
    sp_run_stats st;
    sp_worker *w = run_vector(HBG_MODULE, NULL, NULL, NULL, &st); /* not traced */
    cr_assert_eq(sp_worker_write_trace(w, SP_TRACE_FORMAT_JSON, path), SP_EINVAL);
    cr_assert(strstr(sp_worker_last_error(w), "not traced"), "%s", sp_worker_last_error(w));
    sp_worker_close(w);
}

/* options.trace_path: runs whose config asks for no trace are traced and
 * written at each wait, numbered by "%n"; the async lane too. */
static void trace_path_numbered(const char *module)
{
    char pattern[512], p0[512], p1[512], p2[512];
    work_path(pattern, sizeof pattern, "run_%n.json");
    work_path(p0, sizeof p0, "run_0.json");
    work_path(p1, sizeof p1, "run_1.json");
    work_path(p2, sizeof p2, "run_2.json");
    unlink(p0), unlink(p1), unlink(p2);
    sp_worker_options opt = {.trace_path = pattern};
    sp_run_stats st;
    sp_worker *w = run_vector(module, &opt, NULL, NULL, &st);
    cr_assert_not_null(sp_worker_last_trace(w), "the run was traced for the trace path");
    const ex_example *ex = ex_find("vector_example");
    char err[256];
    ex_instance inst;
    cr_assert_eq(ex_instance_init(&inst, ex, ex->cases[0].name, NULL, err, sizeof err), 0);
    cr_assert_eq(ex->setup(&inst, err, sizeof err), 0);
    sp_run_handle h;
    cr_assert_eq(sp_worker_submit(w, 1, &inst.args, NULL, &h), SP_OK);
    cr_assert_eq(sp_worker_wait(w, &h, &st), SP_OK);
    ex_instance_free(&inst);
    sp_worker_close(w);
    for (int i = 0; i < 2; i++) {
        char *j = slurp(i ? p1 : p0, NULL);
        cr_assert_not_null(j, "run %d's trace file is missing", i);
        cr_assert_eq(count(j, "\"cat\":\"task\""), 5);
        cr_assert(strstr(j, "\"name\":\"vec_mul\""), "kernel names");
        free(j);
    }
    cr_assert_neq(access(p2, F_OK), 0, "two runs, two files");
}

Test(trace_export, trace_path_numbered_hbg)
{
    trace_path_numbered(HBG_MODULE);
}

Test(trace_export, trace_path_numbered_tmr)
{
    trace_path_numbered(TMR_MODULE);
}

static char warned[1024];

static void capture(int level, const char *line, void *user)
{
    (void)user;
    if (level >= SP_LOG_WARN && !warned[0])
        snprintf(warned, sizeof warned, "%s", line);
}

Test(trace_export, unwritable_trace_path_warns_and_the_run_passes)
{
    sp_worker_options opt = {.trace_path = WORK_DIR "/no/such/dir/t.svg"};
    sp_run_stats st;
    sp_worker *w = open_vector(TMR_MODULE, &opt);
    /* After open: opening binds the module's logging to the process sink. */
    sp__log_set_sink(capture, NULL);
    rerun_vector(w, NULL, NULL, &st); /* asserts the run passes and its result */
    cr_assert_eq(st.tasks, 5);
    sp_worker_close(w);
    sp__log_set_sink(NULL, NULL);
    cr_assert(strstr(warned, "no/such/dir/t.svg") && strstr(warned, "SP_ESYS"), "warning: '%s'",
              warned);
}

/* SIMPLER_TRACE: the same without a code change (each Criterion test runs
 * in its own process, so the variable stays in this one). The extension
 * picks the format. */
Test(trace_export, simpler_trace_environment)
{
    char path[512];
    work_path(path, sizeof path, "env.svg");
    unlink(path);
    cr_assert_eq(setenv("SIMPLER_TRACE", path, 1), 0);
    sp_run_stats st;
    sp_worker *w = run_vector(HBG_MODULE, NULL, NULL, NULL, &st);
    sp_worker_close(w);
    unsetenv("SIMPLER_TRACE");
    char *s = slurp(path, NULL);
    cr_assert_not_null(s, "SIMPLER_TRACE=%s wrote nothing", path);
    cr_assert(strncmp(s, "<?xml", 5) == 0);
    cr_assert_eq(count(s, "<rect class=\"task"), 5);
    free(s);
    /* The caller's trace_path wins over the environment. */
    char mine[512];
    work_path(mine, sizeof mine, "mine.json");
    unlink(path);
    cr_assert_eq(setenv("SIMPLER_TRACE", path, 1), 0);
    sp_worker_options opt = {.trace_path = mine};
    w = run_vector(HBG_MODULE, &opt, NULL, NULL, &st);
    sp_worker_close(w);
    cr_assert_eq(access(mine, F_OK), 0);
    cr_assert_neq(access(path, F_OK), 0);
}

/* "-" writes to stdout (what `simpler run --stats` prints). */
Test(trace_export, stats_to_stdout)
{
    sp_call_config cfg = {.trace_level = SP_TRACE_TASKS};
    sp_run_stats st;
    sp_worker *w = run_vector(TMR_MODULE, NULL, &cfg, NULL, &st);
    char path[512];
    work_path(path, sizeof path, "stdout.txt");
    fflush(stdout);
    int saved = dup(1), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(saved >= 0 && fd >= 0);
    cr_assert_eq(dup2(fd, 1), 1);
    int rc = sp_worker_write_trace(w, SP_TRACE_FORMAT_STATS, "-");
    fflush(stdout);
    dup2(saved, 1);
    close(fd);
    close(saved);
    cr_assert_eq(rc, SP_OK, "%s", sp_worker_last_error(w));
    char *t = slurp(path, NULL);
    cr_assert(strncmp(t, "stats: tasks=5 ", 15) == 0, "%s", t);
    cr_assert(strstr(t, "stats: kernel vec_mul count=1 "), "%s", t);
    free(t);
    sp_worker_close(w);
}
