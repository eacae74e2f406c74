/* The async lane under load, as a plain program (no test framework) so it
 * runs under ThreadSanitizer too (`make test-tsan`): the caller prepares
 * one run (staging, the whole host graph build and upload in its pipeline
 * slot) while the lane thread executes and finalizes the other, over and
 * over, on both runtimes, with two different workloads alternating between
 * the slots. Every result is checked against its golden. A data race between
 * a prepare bound to one slot and the execution of the other is what TSan
 * reports here; wrong results are what the checks report. Prints
 * "N passed, M failed". */
#include <stdio.h>
#include <string.h>

#include "example.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#define ROUNDS 12

static int passed, failed;

static void expect(int ok, const char *what, const char *detail)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL: %s: %s\n", what, detail);
}

static int setup(ex_instance *inst, const char *example, const char *case_name)
{
    char err[EX_ERR_LEN];
    const ex_example *ex = ex_find(example);
    if (!ex || ex_instance_init(inst, ex, case_name, NULL, err, sizeof err) ||
        ex->setup(inst, err, sizeof err)) {
        fprintf(stderr, "setup %s/%s: %s\n", example, case_name, ex ? err : "no such example");
        return -1;
    }
    return 0;
}

static void lane_race(const char *runtime)
{
    char module[512], err[1024];
    snprintf(module, sizeof module, SP_MODULE_DIR "/libsimpler_%s_sim.so", runtime);
    sp_worker *w;
    if (sp_worker_open(module, NULL, &w, err, sizeof err) != SP_OK) {
        expect(0, "open", err);
        return;
    }
    int ok = sp_worker_register_callable_file(w, 0, SP_BUILD_DIR "/examples/paged_attention.spc") ==
                 SP_OK &&
             sp_worker_register_callable_file(w, 1, SP_BUILD_DIR "/examples/bgemm.spc") == SP_OK;
    expect(ok, "register", sp_worker_last_error(w));
    ex_instance inst[2];
    memset(inst, 0, sizeof inst);
    if (!ok || setup(&inst[0], "paged_attention", "varlen") || setup(&inst[1], "bgemm", "small")) {
        sp_worker_close(w);
        failed++;
        return;
    }
    expect(sp_worker_lane_depth(w) == 2, "lane depth", "expected 2");
    sp_run_handle h[2];
    int rc = sp_worker_submit(w, 0, &inst[0].args, NULL, &h[0]);
    expect(rc == SP_OK, "submit", sp_worker_last_error(w));
    for (int i = 1; i <= ROUNDS && rc == SP_OK; i++) {
        int next = i & 1, prev = (i - 1) & 1;
        if (i < ROUNDS)
            rc = sp_worker_submit(w, (uint32_t)next, &inst[next].args, NULL, &h[next]);
        int wrc = sp_worker_wait(w, &h[prev], NULL);
        expect(wrc == SP_OK, "wait", sp_worker_last_error(w));
        double max_err;
        char why[EX_ERR_LEN] = "";
        expect(inst[prev].example->check(&inst[prev], &max_err, why, sizeof why) == 0,
               inst[prev].example->name, why);
        /* The next use of this slot's args starts from its inputs again. */
        ex_instance_free(&inst[prev]);
        memset(&inst[prev], 0, sizeof inst[prev]);
        if (setup(&inst[prev], prev ? "bgemm" : "paged_attention", prev ? "small" : "varlen"))
            rc = SP_EINVAL;
    }
    expect(rc == SP_OK, "lane", sp_worker_last_error(w));
    ex_instance_free(&inst[0]);
    ex_instance_free(&inst[1]);
    sp_worker_close(w);
}

int main(void)
{
    lane_race("hbg");
    lane_race("tmr");
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
