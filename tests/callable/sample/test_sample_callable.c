/* The blob simpler_add_callable produced holds exactly what the CMake call
 * named, and `simpler pack` (which produced it) behaves as documented:
 * byte-identical repacks, --show, and exit codes 1 / 2 with one-line errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"

static void *read_whole(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    cr_assert_gt(n, 0, "%s is empty", path);
    void *buf = malloc((size_t)n);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* Run `simpler <args>`; returns its exit status, output (stdout + stderr) in out. */
static int run_simpler(const char *args, char *out, size_t out_len)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", SP_SIMPLER_EXE, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, out_len - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_assert(WIFEXITED(st), "simpler %s did not exit normally", args);
    return WEXITSTATUS(st);
}

#define PACK_ARGS                                                                                  \
    "--orch '" SP_SAMPLE_ORCH "' --entry sample_orch --config sample_config "                      \
    "--kernel 0:aiv:" SP_SAMPLE_KERNELS ":sample_add:iio "                                         \
    "--kernel 7:aic:" SP_SAMPLE_KERNELS ":sample_scale:xs"

Test(sample_callable, blob_holds_what_cmake_named)
{
    size_t size, orch_size, k_size;
    void *blob = read_whole(SP_SAMPLE_CALLABLE, &size);
    void *orch = read_whole(SP_SAMPLE_ORCH, &orch_size);
    void *k = read_whole(SP_SAMPLE_KERNELS, &k_size);
    sp_callable_view v;
    char err[512];
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    cr_assert_str_eq(v.orch_entry, "sample_orch");
    cr_assert_str_eq(v.orch_config, "sample_config");
    cr_assert_eq(v.header->orch.size, orch_size);
    cr_assert_eq(memcmp((uint8_t *)blob + v.header->orch.offset, orch, orch_size), 0);
    cr_assert_eq(v.header->kernel_count, 2);

    int add = sp_callable_find_kernel(&v, 0), scale = sp_callable_find_kernel(&v, 7);
    cr_assert(add >= 0 && scale >= 0);
    cr_assert_eq(v.kernels[add].core_type, SP_CORE_AIV);
    cr_assert_eq(v.kernels[scale].core_type, SP_CORE_AIC);
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[add].entry), "sample_add");
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[add].signature), "iio");
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[scale].entry), "sample_scale");
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[scale].signature), "xs");
    /* One source, one shared object, packed once per kernel. */
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(v.kernels[i].binary.size, k_size);
        cr_assert_eq(memcmp((uint8_t *)blob + v.kernels[i].binary.offset, k, k_size), 0);
    }
    free(blob);
    free(orch);
    free(k);
}

Test(sample_callable, cli_repack_is_byte_identical)
{
    char out[8192];
    const char *repack = SP_SAMPLE_WORK_DIR "/cli_repack.spc";
    remove(repack);
    int rc =
        run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/cli_repack.spc' " PACK_ARGS, out, sizeof out);
    cr_assert_eq(rc, 0, "simpler pack failed: %s", out);
    size_t a_size, b_size;
    void *a = read_whole(SP_SAMPLE_CALLABLE, &a_size);
    void *b = read_whole(repack, &b_size);
    cr_assert_eq(a_size, b_size);
    cr_assert_eq(memcmp(a, b, a_size), 0);
    free(a);
    free(b);
}

static void assert_one_error(const char *out);

Test(sample_callable, cli_show_prints_the_contents)
{
    char out[8192];
    int rc = run_simpler("pack --show '" SP_SAMPLE_CALLABLE "'", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "2 kernels"), "%s", out);
    cr_assert_not_null(strstr(out, "entry sample_orch, config sample_config"), "%s", out);
    cr_assert_not_null(strstr(out, "sample_add"), "%s", out);
    cr_assert_not_null(strstr(out, "sample_scale"), "%s", out);
    cr_assert_not_null(strstr(out, " aic "), "%s", out);
    cr_assert_not_null(strstr(out, " iio "), "%s", out);
}

Test(sample_callable, cli_show_reports_a_corrupt_blob)
{
    size_t size;
    uint8_t *blob = read_whole(SP_SAMPLE_CALLABLE, &size);
    blob[8] = 99; /* version */
    const char *bad = SP_SAMPLE_WORK_DIR "/corrupt.spc";
    FILE *f = fopen(bad, "wb");
    cr_assert_eq(fwrite(blob, 1, size, f), size);
    fclose(f);
    free(blob);
    char out[8192];
    int rc = run_simpler("pack --show '" SP_SAMPLE_WORK_DIR "/corrupt.spc'", out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "SP_EBLOB"), "%s", out);
    cr_assert_not_null(strstr(out, "version 99 is not supported"), "%s", out);
    assert_one_error(out);
}

/* Issue 14: an error is printed once, "simpler: <STATUS>: <message>", then
 * its hint on the next line, and nothing else. */
static void assert_one_error(const char *out)
{
    const char *first = strstr(out, "simpler: ");
    cr_assert_eq(first, out, "starts with the error: %s", out);
    cr_assert_null(strstr(first + 1, "simpler: "), "printed once: %s", out);
    const char *nl = strchr(out, '\n');
    cr_assert_not_null(nl, "%s", out);
    cr_assert_eq(strncmp(nl + 1, "  hint: ", 8), 0, "then its hint: %s", out);
    cr_assert_eq(strchr(nl + 1, '\n'), out + strlen(out) - 1, "two lines: %s", out);
}

static void write_file(const char *path, const void *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(bytes, 1, size, f), size);
    fclose(f);
}

Test(sample_callable, cli_show_reports_a_flipped_bit)
{
    size_t size;
    uint8_t *blob = read_whole(SP_SAMPLE_CALLABLE, &size);
    blob[size / 2] ^= 0x10; /* inside a binary: the format alone cannot tell */
    write_file(SP_SAMPLE_WORK_DIR "/flipped.spc", blob, size);
    free(blob);
    char out[8192];
    int rc = run_simpler("pack --show '" SP_SAMPLE_WORK_DIR "/flipped.spc'", out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "SP_EBLOB"), "%s", out);
    cr_assert_not_null(strstr(out, "checksum"), "%s", out);
}

/* Issue 12 item 5: an orchestration cut to 4000 bytes packed with exit 0
 * and --show called the blob valid. */
Test(sample_callable, cli_pack_refuses_a_truncated_shared_object)
{
    size_t size;
    uint8_t *orch = read_whole(SP_SAMPLE_ORCH, &size);
    cr_assert_gt(size, 4000u);
    write_file(SP_SAMPLE_WORK_DIR "/cut.so", orch, 4000);
    char out[8192];
    remove(SP_SAMPLE_WORK_DIR "/cut.spc");
    int rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/cut.spc' --orch '" SP_SAMPLE_WORK_DIR
                         "/cut.so' --entry sample_orch",
                         out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "SP_EKERNEL_LOAD"), "%s", out);
    cr_assert_not_null(strstr(out, "orchestration binary is not a well-formed shared object"), "%s",
                       out);
    cr_assert_not_null(strstr(out, "truncated"), "%s", out);
    FILE *f = fopen(SP_SAMPLE_WORK_DIR "/cut.spc", "rb");
    cr_assert_null(f, "a refused pack leaves no blob");

    /* The same damage inside a blob whose checksum matches (a builder that
     * does not check): --show names the binary and the defect. */
    uint8_t *blob = read_whole(SP_SAMPLE_CALLABLE, &size);
    sp_callable_header *h = (sp_callable_header *)(void *)blob;
    uint64_t phoff = 1u << 30; /* e_phoff of the orchestration's ELF header */
    memcpy(blob + h->orch.offset + 32, &phoff, sizeof phoff);
    h->checksum = sp_callable_checksum(blob, size);
    write_file(SP_SAMPLE_WORK_DIR "/badelf.spc", blob, size);
    free(blob);
    rc = run_simpler("pack --show '" SP_SAMPLE_WORK_DIR "/badelf.spc'", out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "SP_EKERNEL_LOAD"), "%s", out);
    cr_assert_not_null(strstr(out, "orchestration binary: program header table"), "%s", out);
    free(orch);
}

Test(sample_callable, cli_errors_are_one_line_with_exit_1)
{
    char out[8192];
    remove(SP_SAMPLE_WORK_DIR "/x.spc");
    int rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/x.spc' --orch /no/such.so --entry e", out,
                         sizeof out);
    /* Issue 14: a file that cannot be read is an I/O failure, exit 3. */
    cr_assert_eq(rc, 3, "%s", out);
    cr_assert_not_null(strstr(out, "'/no/such.so'"), "%s", out);
    cr_assert_not_null(strstr(out, "No such file"), "%s", out);
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);

    rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/x.spc' " PACK_ARGS
                     " --kernel 7:aiv:" SP_SAMPLE_KERNELS ":sample_add",
                     out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "func_id 7 appears twice"), "%s", out);
    FILE *f = fopen(SP_SAMPLE_WORK_DIR "/x.spc", "rb");
    cr_assert_null(f, "a failed pack writes no output");
}

Test(sample_callable, cli_usage_errors_exit_2)
{
    char out[8192];
    cr_assert_eq(run_simpler("pack --bogus", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "unknown option '--bogus'"), "%s", out);
    cr_assert_eq(run_simpler("pack --orch a.so --entry e", out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "required"), "%s", out);
    cr_assert_eq(
        run_simpler("pack -o x.spc --orch a.so --entry e --kernel 1:gpu:k.so:k", out, sizeof out),
        2, "%s", out);
    cr_assert_not_null(strstr(out, "bad --kernel '1:gpu:k.so:k'"), "%s", out);
    cr_assert_eq(
        run_simpler("pack -o x.spc --orch a.so --entry e --kernel -1:aic:k.so:k", out, sizeof out),
        2, "%s", out);
    cr_assert_eq(
        run_simpler("pack -o x.spc --orch a.so --entry e --kernel 1:aic:k.so", out, sizeof out), 2,
        "%s", out);
    cr_assert_eq(run_simpler("pack --show", out, sizeof out), 2, "%s", out);
    cr_assert_eq(run_simpler("pack --help", out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "usage: simpler pack"), "%s", out);
}

/* ---- issue 14: kernels named once, argument signatures, the pack CLI ---- */

Test(sample_callable, named_kernels_get_func_ids_in_order)
{
    size_t size;
    void *blob = read_whole(SP_NAMED_CALLABLE, &size);
    sp_callable_view v;
    char err[512];
    cr_assert_eq(sp_callable_validate(blob, size, &v, err, sizeof err), SP_OK, "%s", err);
    cr_assert_str_eq(v.orch_entry, "named_orch");
    cr_assert_str_eq(v.orch_args, "x:in:f32[n], y:in:f32[n], z:out:f32[n], factor:scalar:f32");
    cr_assert_eq(v.header->kernel_count, 2);
    cr_assert_eq(v.kernels[0].func_id, 0);
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[0].entry), "sample_add");
    cr_assert_eq(v.kernels[1].func_id, 1);
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[1].entry), "sample_scale", "ENTRY given");
    cr_assert_str_eq(sp_callable_string(&v, v.kernels[1].signature), "xs");
    free(blob);

    size_t hsize;
    char *h = read_whole(SP_NAMED_HEADER, &hsize);
    char *text = calloc(1, hsize + 1);
    memcpy(text, h, hsize);
    cr_assert_not_null(strstr(text, "#define SP_FUNC_sample_add 0\n"), "%s", text);
    cr_assert_not_null(strstr(text, "#define SP_FUNC_scale 1\n"), "the name, not the entry: %s",
                       text);
    cr_assert_not_null(strstr(text, "#define SP_ARG_x 0\n#define SP_ARG_y 1\n#define SP_ARG_z 2\n"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "#define SP_SCALAR_factor 0\n"), "%s", text);
    free(text);
    free(h);
}

Test(sample_callable, cli_header_only_reads_no_shared_object)
{
    char out[8192];
    const char *hdr = SP_SAMPLE_WORK_DIR "/only.h";
    remove(hdr);
    int rc = run_simpler("pack --header='" SP_SAMPLE_WORK_DIR "/only.h' --kernel 0:aiv:-:k_first "
                         "--kernel=5:aic:/no/such.so:k_second --args 'a:in:f32[4], s:scalar'",
                         out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    size_t size;
    char *h = read_whole(hdr, &size);
    char *text = calloc(1, size + 1);
    memcpy(text, h, size);
    cr_assert_not_null(strstr(text, "#ifndef SP_GENERATED_ONLY_H"), "%s", text);
    cr_assert_not_null(strstr(text, "#define SP_FUNC_k_first 0\n#define SP_FUNC_k_second 5\n"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "#define SP_ARG_a 0\n"), "%s", text);
    cr_assert_not_null(strstr(text, "#define SP_SCALAR_s 0\n"), "%s", text);
    free(text);
    free(h);
    /* Names that would not be macros, or twice the same, are refused. */
    rc = run_simpler("pack --header '" SP_SAMPLE_WORK_DIR "/bad.h' --kernel 0:aiv:-:k --kernel "
                     "1:aiv:-:k",
                     out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "kernel name k is given twice"), "%s", out);
    rc = run_simpler("pack --header '" SP_SAMPLE_WORK_DIR "/bad.h' --args 'a:in:f99'", out,
                     sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "SP_EINVAL: --args: signature entry 1 ('a'): DTYPE \"f99\""),
                       "%s", out);
    /* An unwritable header is an I/O failure. */
    rc = run_simpler("pack --header /no/such/dir/x.h --kernel 0:aiv:-:k", out, sizeof out);
    cr_assert_eq(rc, 3, "%s", out);
    cr_assert_not_null(strstr(out, "simpler: cannot write '/no/such/dir/x.h'"), "%s", out);
}

Test(sample_callable, cli_packs_and_shows_an_argument_signature)
{
    char out[8192];
    const char *spc = SP_SAMPLE_WORK_DIR "/with_args.spc";
    remove(spc);
    int rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/with_args.spc' " PACK_ARGS
                         " --args='x:in:f32[1],y:in:f32[1],z:out:f32[1]'",
                         out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    rc = run_simpler("pack --show '" SP_SAMPLE_WORK_DIR "/with_args.spc'", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "arguments: x:in:f32[1],y:in:f32[1],z:out:f32[1]\n"), "%s", out);
    rc = run_simpler("pack --show '" SP_SAMPLE_CALLABLE "'", out, sizeof out);
    cr_assert_not_null(strstr(out, "arguments: (not declared: unchecked)"), "%s", out);
    /* A signature that does not parse packs nothing. */
    remove(spc);
    rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/with_args.spc' " PACK_ARGS
                     " --args 'x:in:f32[1],x:out:f32'",
                     out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "SP_EINVAL"), "%s", out);
    cr_assert_not_null(strstr(out, "name 'x' is used twice"), "%s", out);
    cr_assert_null(fopen(spc, "rb"), "a refused pack leaves no blob");
}

/* Issue 14: a typo'd entry packed with exit 0 and failed only at register. */
Test(sample_callable, cli_pack_refuses_a_symbol_not_exported)
{
    char out[8192];
    const char *spc = SP_SAMPLE_WORK_DIR "/typo.spc";
    remove(spc);
    int rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/typo.spc' --orch '" SP_SAMPLE_ORCH
                         "' --entry sample_orhc --kernel 0:aiv:" SP_SAMPLE_KERNELS ":sample_add",
                         out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "simpler: SP_EMODULE_SYMBOL: orchestration entry "
                                   "'sample_orhc': " SP_SAMPLE_ORCH " does not export"),
                       "%s", out);
    assert_one_error(out);
    cr_assert_null(fopen(spc, "rb"), "a refused pack leaves no blob");
    rc = run_simpler("pack -o '" SP_SAMPLE_WORK_DIR "/typo.spc' --orch '" SP_SAMPLE_ORCH
                     "' --entry sample_orch --kernel 0:aiv:" SP_SAMPLE_KERNELS ":sample_ad",
                     out, sizeof out);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_not_null(strstr(out, "kernel func_id 0 entry 'sample_ad': " SP_SAMPLE_KERNELS
                                   " does not export 'sample_ad'"),
                       "%s", out);
}

Test(sample_callable, cli_options_follow_getopt_long)
{
    char out[8192];
    /* --opt=value and --opt value are the same. */
    const char *a = SP_SAMPLE_WORK_DIR "/eq.spc";
    remove(a);
    int rc =
        run_simpler("pack --output='" SP_SAMPLE_WORK_DIR "/eq.spc' --orch='" SP_SAMPLE_ORCH
                    "' --entry=sample_orch --config=sample_config --kernel=0:aiv:" SP_SAMPLE_KERNELS
                    ":sample_add:iio --kernel 7:aic:" SP_SAMPLE_KERNELS ":sample_scale:xs",
                    out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    size_t na, nb;
    void *x = read_whole(a, &na), *y = read_whole(SP_SAMPLE_CALLABLE, &nb);
    cr_assert(na == nb && memcmp(x, y, na) == 0, "the same blob either way");
    free(x);
    free(y);
    /* A misspelt option suggests the closest. */
    rc = run_simpler("pack --entyr e", out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "unknown option '--entyr' (did you mean --entry?)"), "%s", out);
    rc = run_simpler("pack --orch", out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "--orch needs a value"), "%s", out);
    rc = run_simpler("pack -o x.spc --orch a.so --entry e stray", out, sizeof out);
    cr_assert_eq(rc, 2, "%s", out);
    cr_assert_not_null(strstr(out, "unexpected argument 'stray'"), "%s", out);
    rc = run_simpler("pack --help", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_not_null(strstr(out, "--args TEXT"), "%s", out);
    cr_assert_not_null(strstr(out, "--header FILE"), "%s", out);
    cr_assert_not_null(strstr(out, "Exit status"), "%s", out);
}
