/* sp_callable_build: packs files or in-memory bytes deterministically, and
 * refuses NULL arguments, invalid fields, duplicate func_ids and unreadable
 * files with the status and reason a caller can act on. */
#include <errno.h>
#include <unistd.h>

#include "callable_test_support.h"

static uint8_t bytes_a[600], bytes_b[FAKE_ELF_MIN];

static sp_callable_kernel_spec kernel_specs[2];

/* A valid spec: orch from a file, two in-memory kernels. Tests break one field. */
static sp_callable_spec valid_spec(void)
{
    fill_pattern(bytes_a, sizeof bytes_a, 11, "ka");
    fill_pattern(bytes_b, sizeof bytes_b, 12, "kb");
    kernel_specs[0] = (sp_callable_kernel_spec){.func_id = 2,
                                                .core_type = SP_CORE_AIC,
                                                .bytes = bytes_a,
                                                .size = sizeof bytes_a,
                                                .entry = "ka",
                                                .signature = "ios"};
    kernel_specs[1] = (sp_callable_kernel_spec){.func_id = 3,
                                                .core_type = SP_CORE_AIV,
                                                .bytes = bytes_b,
                                                .size = sizeof bytes_b,
                                                .entry = "kb"};
    return (sp_callable_spec){.orch_path = ORCH_SO,
                              .orch_entry = "orch_noop",
                              .kernels = kernel_specs,
                              .kernel_count = 2};
}

/* Build `spec`, expect `status` and an err mentioning `needle`. */
static void expect_build(const sp_callable_spec *spec, int status, const char *needle)
{
    void *blob = (void *)1;
    size_t size = 1;
    char err[512] = "";
    int rc = sp_callable_build(spec, &blob, &size, err, sizeof err);
    cr_assert_eq(rc, status, "expected %s, got %s (%s)", sp_status_name(status), sp_status_name(rc),
                 err);
    cr_assert_null(blob, "a failed build hands out no blob");
    cr_assert_eq(size, 0);
    cr_assert_not_null(strstr(err, needle), "error \"%s\" does not mention \"%s\"", err, needle);
}

Test(callable_build, valid_spec_builds_a_valid_blob)
{
    sp_callable_spec spec = valid_spec();
    void *blob;
    size_t size;
    char err[512];
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    sp_callable_view v;
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    assert_view_inside(&v, size);
    cr_assert_null(v.orch_config, "no config given: none recorded");
    cr_assert_eq(v.header->orch_config, SP_CALLABLE_NO_STRING);
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[0].signature), "ios");
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[1].signature), "", "NULL signature: empty");
    cr_assert_eq(memcmp((uint8_t *)blob + v.kernels[0].binary.offset, bytes_a, sizeof bytes_a), 0);
    cr_assert_eq(memcmp((uint8_t *)blob + v.kernels[1].binary.offset, bytes_b, sizeof bytes_b), 0);
    free(blob);
}

Test(callable_build, file_and_bytes_give_identical_blobs)
{
    size_t orch_size;
    void *orch = read_whole(ORCH_SO, &orch_size);
    sp_callable_spec spec = valid_spec();
    void *a, *b;
    size_t na, nb;
    cr_assert_eq(sp_callable_build(&spec, &a, &na, NULL, 0), SP_OK);
    spec.orch_path = NULL;
    spec.orch_bytes = orch;
    spec.orch_size = orch_size;
    cr_assert_eq(sp_callable_build(&spec, &b, &nb, NULL, 0), SP_OK);
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(a, b, na), 0, "packing is deterministic and source-independent");
    free(a);
    free(b);
    free(orch);
}

Test(callable_build, zero_kernels_is_a_valid_callable)
{
    sp_callable_spec spec = valid_spec();
    spec.kernel_count = 0;
    spec.kernels = NULL;
    spec.orch_config = "orch_noop_config";
    void *blob;
    size_t size;
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, NULL, 0), SP_OK);
    sp_callable_view v;
    cr_assert_eq(sp_callable_validate(blob, size, &v, NULL, 0), SP_OK);
    cr_assert_eq(v.header->kernel_count, 0);
    cr_assert_str_eq(v.orch_config, "orch_noop_config");
    free(blob);
}

Test(callable_build, null_arguments_are_einval)
{
    sp_callable_spec spec = valid_spec();
    void *blob;
    size_t size;
    char err[256];
    cr_assert_eq(sp_callable_build(NULL, &blob, &size, err, sizeof err), SP_EINVAL);
    cr_assert_not_null(strstr(err, "must not be NULL"));
    cr_assert_eq(sp_callable_build(&spec, NULL, &size, err, sizeof err), SP_EINVAL);
    cr_assert_eq(sp_callable_build(&spec, &blob, NULL, NULL, 0), SP_EINVAL);

    spec.orch_entry = NULL;
    expect_build(&spec, SP_EINVAL, "orchestration entry is NULL");
    spec = valid_spec();
    spec.kernels = NULL;
    expect_build(&spec, SP_EINVAL, "kernels is NULL");
    spec = valid_spec();
    spec.orch_path = NULL;
    expect_build(&spec, SP_EINVAL, "orchestration binary is missing");
    spec = valid_spec();
    kernel_specs[1].bytes = NULL;
    expect_build(&spec, SP_EINVAL, "kernel func_id 3: binary is missing");
    spec = valid_spec();
    kernel_specs[0].entry = NULL;
    expect_build(&spec, SP_EINVAL, "kernel func_id 2 entry is NULL");
}

Test(callable_build, invalid_fields_are_einval)
{
    sp_callable_spec spec = valid_spec();
    kernel_specs[0].func_id = -4;
    expect_build(&spec, SP_EINVAL, "func_id -4 is negative");
    spec = valid_spec();
    kernel_specs[1].core_type = 7;
    expect_build(&spec, SP_EINVAL, "core_type 7");
    spec = valid_spec();
    kernel_specs[1].signature = "iq";
    expect_build(&spec, SP_EINVAL, "signature \"iq\" has a character other than");
    spec = valid_spec();
    kernel_specs[1].signature = "iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii"; /* 33 tensors */
    expect_build(&spec, SP_EINVAL, "more than 32 tensor arguments");
    spec = valid_spec();
    kernel_specs[1].signature = "sssssssssssssssss"; /* 17 scalars */
    expect_build(&spec, SP_EINVAL, "more than 16 scalar arguments");
    spec = valid_spec();
    kernel_specs[0].entry = "";
    expect_build(&spec, SP_EINVAL, "entry \"\" is empty");
    spec = valid_spec();
    spec.orch_entry = "has space";
    expect_build(&spec, SP_EINVAL, "not a letter, digit or '_'");
    spec = valid_spec();
    spec.orch_config = "1st";
    expect_build(&spec, SP_EINVAL, "orchestration config \"1st\" does not start");
    char long_name[300];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    spec = valid_spec();
    spec.orch_entry = long_name;
    expect_build(&spec, SP_EINVAL, "longer than 255");
    spec = valid_spec();
    spec.kernel_count = SP_CALLABLE_MAX_KERNELS + 1;
    expect_build(&spec, SP_EINVAL, "exceed the maximum 1024");
}

Test(callable_build, duplicate_func_id_is_eblob)
{
    sp_callable_spec spec = valid_spec();
    kernel_specs[1].func_id = 2;
    expect_build(&spec, SP_EBLOB, "func_id 2 appears twice (kernels[0] and kernels[1])");
}

Test(callable_build, unreadable_files_are_esys_with_path_and_reason)
{
    sp_callable_spec spec = valid_spec();
    spec.orch_path = SP_TEST_KERNEL_DIR "/no_such_orch.so";
    expect_build(&spec, SP_ESYS, "orchestration binary '" SP_TEST_KERNEL_DIR "/no_such_orch.so'");
    expect_build(&spec, SP_ESYS, strerror(ENOENT));

    spec = valid_spec();
    kernel_specs[1].path = "/nonexistent/dir/k.so";
    expect_build(&spec, SP_ESYS, "kernel func_id 3 binary '/nonexistent/dir/k.so': ");

    spec = valid_spec();
    spec.orch_path = SP_TEST_KERNEL_DIR; /* a directory */
    expect_build(&spec, SP_ESYS, strerror(EISDIR));
}

Test(callable_build, empty_file_is_einval)
{
    char path[] = "/tmp/simpler_empty_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    sp_callable_spec spec = valid_spec();
    kernel_specs[0].path = path;
    expect_build(&spec, SP_EINVAL, "is empty");
    unlink(path);
}

/* Issue 14: a typo'd entry used to pack with exit 0 and fail only at
 * registration. Every entry and config must be a function its object
 * exports; the refusal names the symbol and the file. Real objects (GNU
 * hash, what the toolchain writes) and the fake one (SysV hash). */
Test(callable_build, symbols_the_object_does_not_export_are_refused)
{
    sp_callable_spec spec = valid_spec();
    spec.orch_entry = "orch_nop";
    expect_build(&spec, SP_EMODULE_SYMBOL, "orchestration entry 'orch_nop': " ORCH_SO);
    expect_build(&spec, SP_EMODULE_SYMBOL, "does not export 'orch_nop'");
    spec = valid_spec();
    spec.orch_config = "orch_noop_cfg";
    expect_build(&spec, SP_EMODULE_SYMBOL, "orchestration config 'orch_noop_cfg'");
    spec = valid_spec();
    kernel_specs[1].entry = "kc";
    expect_build(&spec, SP_EMODULE_SYMBOL,
                 "kernel func_id 3 entry 'kc': the binary given in memory does not export 'kc'");
    /* Defined by a library it links, not by the object: not its export. */
    spec = valid_spec();
    spec.orch_entry = "memcpy";
    expect_build(&spec, SP_EMODULE_SYMBOL, "does not export 'memcpy'");
    /* Exported data is not an entry. */
    spec = valid_spec();
    spec.orch_path = SP_TEST_KERNEL_DIR "/fault_load.so";
    spec.orch_entry = "fault_load_orch";
    kernel_specs[0].path = SP_TEST_KERNEL_DIR "/fault_load.so";
    kernel_specs[0].entry = "fault_load_data";
    expect_build(&spec, SP_EMODULE_SYMBOL, "'fault_load_data' is exported but is not a function");

    /* The real names pack. */
    spec = valid_spec();
    spec.orch_config = "orch_noop_config";
    void *blob;
    size_t size;
    char err[512];
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    free(blob);
}

/* A hidden symbol is in .symtab, not .dynsym: the loader cannot find it. */
Test(callable_build, a_fake_object_without_the_name_is_refused)
{
    static uint8_t none[FAKE_ELF_MIN];
    fill_elf(none, sizeof none, 5, NULL);
    sp_callable_spec spec = valid_spec();
    kernel_specs[1].bytes = none;
    kernel_specs[1].size = sizeof none;
    expect_build(&spec, SP_EMODULE_SYMBOL, "does not export 'kb'");
}

Test(callable_build, argument_signature_is_packed_or_refused)
{
    sp_callable_spec spec = valid_spec();
    spec.orch_args = "a:in:f32[m,k], b:in:f16[k,n], c:out:f32[m,n], alpha:scalar:f64";
    void *blob;
    size_t size;
    char err[512];
    cr_assert_eq(sp_callable_build(&spec, &blob, &size, err, sizeof err), SP_OK, "%s", err);
    sp_callable_view v;
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    cr_assert_str_eq(v.orch_args, spec.orch_args, "stored as given");
    free(blob);
    spec.orch_args = "a:in:f32[m,k],a:out:f32";
    expect_build(&spec, SP_EINVAL, "orchestration argument signature: signature entry 2");
    spec.orch_args = "a:sideways:f32";
    expect_build(&spec, SP_EINVAL, "DIR \"sideways\"");
}
