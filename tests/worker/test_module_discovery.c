/* Module discovery (issue 13): sp_worker_open_runtime finds a runtime's
 * module by name, libsimpler_<runtime>_<platform>.so in the module
 * directory; a name that could leave that directory, or a module that does
 * not exist, is refused by name. sp_worker_device_info describes the device
 * the module opened. (This test links the worker statically, so it names
 * the module directory; the CLI's test covers the default, the directory
 * of libsimpler.so: tests/cli/check_cli_worker.py.) */
#include <criterion/criterion.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/worker.h"

static sp_worker *open_rt(const char *rt, const char *platform, int device_id, int want)
{
    sp_worker_options o = {.device_id = device_id, .module_dir = SP_MODULE_DIR};
    sp_worker *w = NULL;
    char err[1024] = "";
    int rc = sp_worker_open_runtime(rt, platform, &o, &w, err, sizeof err);
    cr_assert_eq(rc, want, "%s/%s: %s: %s", rt ? rt : "(null)", platform ? platform : "(null)",
                 sp_status_name(rc), err);
    if (want != SP_OK)
        cr_assert_null(w);
    return w;
}

Test(discovery, both_runtimes_are_found_by_name)
{
    const char *rts[] = {"hbg", "tmr"};
    for (int i = 0; i < 2; i++) {
        sp_worker *w = open_rt(rts[i], i ? "sim" : NULL, 3, SP_OK);
        sp_device_info d;
        cr_assert_eq(sp_worker_device_info(w, &d), SP_OK, "%s", sp_worker_last_error(w));
        cr_assert_str_eq(d.platform, "sim");
        cr_assert_eq(d.device_id, 3);
        cr_assert_eq(d.core_count, d.geometry.clusters * d.geometry.lanes);
        cr_assert_gt(d.memory_bytes, 0);
        cr_assert_eq(d.abandoned_cores, 0);
        sp_worker_close(w);
    }
}

Test(discovery, a_missing_module_is_refused_naming_the_file)
{
    sp_worker_options o = {.module_dir = SP_MODULE_DIR};
    sp_worker *w = NULL;
    char err[1024] = "";
    cr_assert_eq(sp_worker_open_runtime("nope", NULL, &o, &w, err, sizeof err), SP_EMODULE);
    cr_assert(strstr(err, SP_MODULE_DIR "/libsimpler_nope_sim.so") != NULL, "%s", err);
    cr_assert_eq(sp_worker_open_runtime("hbg", "cuda", &o, &w, err, sizeof err), SP_EMODULE);
    cr_assert(strstr(err, "libsimpler_hbg_cuda.so") != NULL, "%s", err);
    cr_assert_null(w);
}

Test(discovery, a_name_that_is_not_a_plain_word_is_refused)
{
    const char *bad[] = {
        "", "../hbg", "hbg/x", "HBG", "hbg.so", "a b", "a_name_that_is_far_too_long_for_it"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        open_rt(bad[i], NULL, 0, SP_EINVAL);
        open_rt("hbg", bad[i], 0, SP_EINVAL);
    }
    open_rt(NULL, NULL, 0, SP_EINVAL);
    /* NULL out and err are refused or ignored, never written through. */
    sp_worker_options o = {.module_dir = SP_MODULE_DIR};
    cr_assert_eq(sp_worker_open_runtime("hbg", NULL, &o, NULL, NULL, 0), SP_EINVAL);
}

Test(discovery, device_info_refuses_null)
{
    sp_device_info d;
    cr_assert_eq(sp_worker_device_info(NULL, &d), SP_EINVAL);
    sp_worker *w = open_rt("hbg", NULL, 0, SP_OK);
    cr_assert_eq(sp_worker_device_info(w, NULL), SP_EINVAL);
    sp_worker_close(w);
}
