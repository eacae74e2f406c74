/* The library's log lines go through a sink the host program sets
 * (sp_worker_options.log_sink, issue 14), never to stderr by themselves:
 *
 * - a worker with a sink gets the worker's own lines (what reading the
 *   environment warns about at open) and its module's and device's lines
 *   (a prewarm an already open device cannot meet), and nothing reaches
 *   stderr;
 * - the device's lines go to the newest open worker that gave a sink;
 *   once that worker is closed its sink is never called again, and with no
 *   sink left they go to stderr;
 * - without a sink, a failed run writes nothing to stderr: the failure is
 *   the caller's to report (status and last error), once;
 * - a run's failure message names the run by its id; the runtime's
 *   counters (slot, bank, generation, epoch) are only in a debug line.
 *
 * stderr is redirected to a file for the span a test checks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simpler/log.h"
#include "simpler/status.h"
#include "simpler/worker.h"

typedef struct captured {
    int lines, warnings, debug;
    char all[16384];
} captured;

static void capture(int level, const char *line, void *user)
{
    captured *c = user;
    c->lines++;
    c->warnings += level == SP_LOG_WARN;
    c->debug += level == SP_LOG_DEBUG;
    size_t n = strlen(c->all);
    snprintf(c->all + n, sizeof c->all - n, "%s\n", line);
}

/* stderr into a temp file between begin and end; end returns what came. */
static int saved_fd = -1;
static FILE *err_file;
static char err_text[8192];

static void stderr_begin(void)
{
    fflush(stderr);
    err_file = tmpfile();
    cr_assert_not_null(err_file);
    saved_fd = dup(2);
    cr_assert_geq(saved_fd, 0);
    cr_assert_geq(dup2(fileno(err_file), 2), 0);
}

static const char *stderr_end(void)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    rewind(err_file);
    size_t n = fread(err_text, 1, sizeof err_text - 1, err_file);
    err_text[n] = 0;
    fclose(err_file);
    return err_text;
}

static sp_worker *open_with(int device_id, uint32_t sched_threads, captured *c, int log_level)
{
    sp_worker_options o = {.device_id = device_id,
                           .module_dir = SP_MODULE_DIR,
                           .prewarm = {.sched_threads = sched_threads},
                           .log_sink = c ? capture : NULL,
                           .log_user = c};
    o.settings.log_level = log_level; /* 0: the default (warn), else 1 + level */
    sp_worker *w = NULL;
    char err[1024] = "";
    int rc = sp_worker_open_runtime("hbg", NULL, &o, &w, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "%s", err);
    return w;
}

Test(log_sink, a_workers_sink_gets_its_warnings_and_its_devices_and_stderr_nothing)
{
    static captured a, b;
    unsetenv("SIMPLER_LOG");
    stderr_begin();
    /* The worker's own line: a malformed setting, warned about at open. */
    setenv("SIMPLER_CHECK", "yes", 1);
    sp_worker *wa = open_with(3, 0, &a, 0);
    unsetenv("SIMPLER_CHECK");
    /* The device's line: device 3 is open with its default geometry, so a
     * second worker's larger prewarm cannot be met; the newest sink gets it. */
    sp_worker *wb = open_with(3, 64, &b, 0);
    sp_worker_close(wb);
    sp_worker_close(wa);
    const char *err = stderr_end();
    cr_assert_eq(err[0], 0, "the library wrote to stderr: %s", err);
    cr_assert_eq(a.warnings, 1, "a: %s", a.all);
    cr_assert(strstr(a.all, "SIMPLER_CHECK") != NULL, "a: %s", a.all);
    cr_assert_eq(b.warnings, 1, "b: %s", b.all);
    cr_assert(strstr(b.all, "device 3 was already open") != NULL, "b: %s", b.all);
    cr_assert(strstr(b.all, "prewarm") != NULL, "b: %s", b.all);
}

Test(log_sink, device_lines_go_to_the_newest_open_sink_and_never_to_a_closed_one)
{
    static captured a, b;
    stderr_begin();
    sp_worker *wa = open_with(4, 0, &a, 0);
    sp_worker *wb = open_with(4, 0, &b, 0);
    sp_worker_close(wb); /* b's sink is gone: what follows is a's */
    sp_worker *wc = open_with(4, 64, NULL, 0);
    int b_lines = b.lines;
    cr_assert_eq(a.warnings, 1, "a: %s", a.all);
    cr_assert(strstr(a.all, "device 4 was already open") != NULL, "a: %s", a.all);
    sp_worker_close(wc);
    sp_worker_close(wa);
    /* No sink left: a device line goes to stderr (a second device 4 user
     * with a larger prewarm: open one to keep the device, then another). */
    sp_worker *wd = open_with(4, 0, NULL, 0);
    sp_worker *we = open_with(4, 64, NULL, 0);
    sp_worker_close(we);
    sp_worker_close(wd);
    const char *err = stderr_end();
    cr_assert_eq(b.lines, b_lines, "a closed worker's sink was called: %s", b.all);
    cr_assert(strstr(err, "device 4 was already open") != NULL, "stderr: %s", err);
    cr_assert(strstr(a.all, "simpler warn: ") == a.all, "lines are formatted: %s", a.all);
}

Test(log_sink, a_failed_run_writes_nothing_to_stderr_and_names_the_run_not_its_slot)
{
    stderr_begin();
    sp_worker *w = open_with(5, 0, NULL, 0);
    sp_args none = {0};
    /* Nothing registered under 9: the module refuses the run at prepare. */
    int rc = sp_worker_run(w, 9, &none, NULL, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", sp_worker_last_error(w));
    sp_worker_close(w);
    const char *err = stderr_end();
    cr_assert_eq(rc, SP_ECALLABLE, "%s: %s", sp_status_name(rc), msg);
    cr_assert_eq(err[0], 0, "the library wrote to stderr: %s", err);
    cr_assert(strstr(msg, "run 1") != NULL, "the run is named: %s", msg);
    cr_assert(strstr(msg, "no callable 9") != NULL, "%s", msg);
    cr_assert(strstr(msg, "slot") == NULL && strstr(msg, "generation") == NULL &&
                  strstr(msg, "epoch") == NULL,
              "internal counters in the message: %s", msg);
}

Test(log_sink, the_runs_counters_are_in_a_debug_line)
{
    static captured c;
    sp_worker *w = open_with(6, 0, &c, 1 + SP_LOG_DEBUG);
    sp_args none = {0};
    cr_assert_eq(sp_worker_run(w, 9, &none, NULL, NULL), SP_ECALLABLE);
    sp_worker_close(w);
    cr_assert_geq(c.debug, 1, "%s", c.all);
    cr_assert(strstr(c.all, "run 1: slot 0, bank 0, generation 1") != NULL, "%s", c.all);
}
