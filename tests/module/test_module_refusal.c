/* The worker refuses broken runtime modules at load, with the reason: a
 * stale ABI version (SP_EABI), a missing mandatory symbol
 * (SP_EMODULE_SYMBOL), each kind of bad pipeline contract (SP_ECONTRACT) and
 * a path that is no module (SP_EMODULE). The modules are built from
 * tests/modules/ into SP_TEST_MODULE_DIR. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "simpler/worker.h"
#include "worker/module_loader.h"

#define MODULE(name) SP_TEST_MODULE_DIR "/" name ".so"

static char err[1024];

/* Open `path` with the worker: must fail with `status`, and err must name
 * every string in the NULL-terminated `needles`. */
static void expect_refused(const char *path, int status, const char *const *needles)
{
    sp_worker *w = (sp_worker *)0x1;
    err[0] = '\0';
    int rc = sp_worker_open(path, NULL, &w, err, sizeof err);
    cr_assert_eq(rc, status, "open %s: %s (%s), expected %s", path, sp_status_name(rc), err,
                 sp_status_name(status));
    cr_assert_null(w, "a refused open leaves no worker");
    for (int i = 0; needles && needles[i]; i++)
        cr_assert_not_null(strstr(err, needles[i]), "message '%s' does not name '%s'", err,
                           needles[i]);
}

static void expect_bad_contract(const char *mutation, const char *reason)
{
    cr_assert_eq(setenv("SP_TEST_BAD_CONTRACT", mutation, 1), 0);
    const char *needles[] = {"bad_contract.so", "refused", reason, NULL};
    expect_refused(MODULE("bad_contract"), SP_ECONTRACT, needles);
}

Test(module_refusal, stale_abi_version)
{
    char got[64], want[64];
    snprintf(got, sizeof got, "ABI version %u", SP_PIPELINE_ABI_VERSION - 1);
    snprintf(want, sizeof want, "accepts %u", SP_PIPELINE_ABI_VERSION);
    const char *needles[] = {"stale_abi.so", got, want, NULL};
    expect_refused(MODULE("stale_abi"), SP_EABI, needles);
}

Test(module_refusal, missing_symbol)
{
    const char *needles[] = {"missing_symbol.so", "'simpler_wait_run'", NULL};
    expect_refused(MODULE("missing_symbol"), SP_EMODULE_SYMBOL, needles);
}

Test(module_refusal, no_such_module)
{
    const char *needles[] = {"/nonexistent/libsimpler_none.so", "cannot load", NULL};
    expect_refused("/nonexistent/libsimpler_none.so", SP_EMODULE, needles);
}

Test(module_refusal, not_a_shared_object)
{
    /* A file that exists but is no module: this test's own source tree file. */
    const char *needles[] = {"cannot load", NULL};
    expect_refused(SP_TEST_MODULE_DIR "/../CMakeCache.txt", SP_EMODULE, needles);
}

/* The control: unbroken, the same module passes symbol and contract checks,
 * so each refusal below comes from its one broken field. */
Test(module_refusal, bad_contract_module_is_valid_unbroken)
{
    unsetenv("SP_TEST_BAD_CONTRACT");
    wk_module_api api;
    err[0] = '\0';
    int rc = wk_module_open(MODULE("bad_contract"), &api, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), err);
    cr_assert_not_null(api.simpler_run);
    wk_module_close(&api);
}

Test(module_refusal, contract_depth_zero)
{
    expect_bad_contract("depth0", "pipeline depth 0 outside 1..2");
}

Test(module_refusal, contract_depth_three)
{
    expect_bad_contract("depth3", "pipeline depth 3 outside 1..2");
}

Test(module_refusal, contract_resource_count_nine)
{
    expect_bad_contract("count9", "resource count 9 above 8");
}

Test(module_refusal, contract_unknown_kind)
{
    expect_bad_contract("kind", "resource 3 has unknown kind 77");
}

Test(module_refusal, contract_unknown_class)
{
    expect_bad_contract("class", "resource 3 has unknown class 9");
}

Test(module_refusal, contract_reserved_nonzero)
{
    expect_bad_contract("reserved", "reserved field is 1, must be 0");
}

Test(module_refusal, contract_resource_reserved_nonzero)
{
    expect_bad_contract("resource_reserved", "resource 1 reserved field is non-zero");
}

Test(module_refusal, contract_heap_not_exec_handle)
{
    expect_bad_contract("heap_class", "must be exec-handle");
}

/* And the real module is accepted (the refusals are not the worker
 * refusing everything). */
Test(module_refusal, hbg_module_is_accepted)
{
    sp_worker *w = NULL;
    int rc = sp_worker_open(SP_MODULE_DIR "/libsimpler_hbg_sim.so", NULL, &w, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "%s: %s", sp_status_name(rc), err);
    const sp_pipeline_contract *c = sp_worker_contract(w);
    cr_assert_eq(c->abi_version, SP_PIPELINE_ABI_VERSION);
    sp_worker_close(w);
}
