/* Where sp_worker_open_runtime looks for modules (issue 14): the caller's
 * module_dir alone when given, else SIMPLER_MODULE_PATH's directories in
 * order, then beside libsimpler. This test links the worker statically, so
 * "beside libsimpler" is build/bin (no modules there): a search that misses
 * the given directories fails, and SP_EMODULE names every place it looked.
 * (Each Criterion test runs in its own process: setenv stays in it.) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simpler/status.h"
#include "simpler/worker.h"

static char empty_dir[64];

static void make_empty_dir(void)
{
    snprintf(empty_dir, sizeof empty_dir, "/tmp/sp_module_path_XXXXXX");
    cr_assert_not_null(mkdtemp(empty_dir));
    unsetenv("SIMPLER_MODULE_PATH");
}

static void remove_empty_dir(void)
{
    rmdir(empty_dir);
}

TestSuite(module_path, .init = make_empty_dir, .fini = remove_empty_dir, .timeout = 60);

static int open_hbg(const sp_worker_options *o, char *err, size_t len)
{
    sp_worker *w = NULL;
    int rc = sp_worker_open_runtime("hbg", NULL, o, &w, err, len);
    if (rc == SP_OK) {
        cr_assert_not_null(w);
        sp_worker_close(w);
    } else {
        cr_assert_null(w);
    }
    return rc;
}

Test(module_path, an_empty_module_dir_is_refused_naming_it)
{
    sp_worker_options o = {.module_dir = empty_dir};
    char err[2048] = "", want[128];
    /* SIMPLER_MODULE_PATH is not consulted when the caller names a dir. */
    setenv("SIMPLER_MODULE_PATH", SP_MODULE_DIR, 1);
    cr_assert_eq(open_hbg(&o, err, sizeof err), SP_EMODULE, "%s", err);
    snprintf(want, sizeof want, "%s/libsimpler_hbg_sim.so (options.module_dir)", empty_dir);
    cr_assert(strstr(err, want) != NULL, "%s", err);
    cr_assert(strstr(err, "SIMPLER_MODULE_PATH") != NULL, "the hint names the setting: %s", err);
}

Test(module_path, an_empty_module_path_is_refused_naming_every_place)
{
    char path[512], err[2048] = "", want[128];
    snprintf(path, sizeof path, "%s::/nonexistent/sp_modules", empty_dir);
    setenv("SIMPLER_MODULE_PATH", path, 1);
    cr_assert_eq(open_hbg(NULL, err, sizeof err), SP_EMODULE, "%s", err);
    snprintf(want, sizeof want, "%s/libsimpler_hbg_sim.so (SIMPLER_MODULE_PATH)", empty_dir);
    cr_assert(strstr(err, want) != NULL, "%s", err);
    cr_assert(strstr(err, "/nonexistent/sp_modules/libsimpler_hbg_sim.so (SIMPLER_MODULE_PATH)"),
              "%s", err);
    /* and the defaults after it: <dir of the worker>/simpler, then the dir */
    cr_assert(strstr(err, "/simpler/libsimpler_hbg_sim.so (installed)") != NULL, "%s", err);
    cr_assert(strstr(err, "(beside libsimpler)") != NULL, "%s", err);
}

Test(module_path, the_module_path_is_searched_in_order)
{
    char path[512], err[2048] = "";
    snprintf(path, sizeof path, "%s:%s", empty_dir, SP_MODULE_DIR);
    setenv("SIMPLER_MODULE_PATH", path, 1);
    cr_assert_eq(open_hbg(NULL, err, sizeof err), SP_OK, "%s", err);
}

Test(module_path, the_module_dir_opens_the_build_modules)
{
    sp_worker_options o = {.module_dir = SP_MODULE_DIR};
    char err[2048] = "";
    setenv("SIMPLER_MODULE_PATH", empty_dir, 1);
    cr_assert_eq(open_hbg(&o, err, sizeof err), SP_OK, "%s", err);
}

Test(module_path, without_a_setting_the_worker_looks_beside_itself)
{
    /* Statically linked here: beside build/bin/, where no module is. */
    char err[2048] = "";
    cr_assert_eq(open_hbg(NULL, err, sizeof err), SP_EMODULE, "%s", err);
    cr_assert(strstr(err, "/bin/simpler/libsimpler_hbg_sim.so (installed)") != NULL, "%s", err);
}
