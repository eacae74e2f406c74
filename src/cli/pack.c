/* `simpler pack`: build a callable blob from an orchestration and kernel
 * shared objects; write the header that names its kernels and arguments
 * (--header: the one generator of SP_FUNC_* / SP_ARG_* / SP_SCALAR_*, run
 * by simpler_add_callable before the orchestration compiles, when no
 * shared object exists yet); or (--show) validate a blob (format,
 * checksum, each binary's ELF structure and exports) and print it. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callable/callable_internal.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "common/elf_check.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"

static void pack_usage(FILE *f)
{
    fprintf(
        f, "usage: simpler pack -o OUT.spc --orch PATH --entry NAME [--config NAME]\n"
           "                    [--kernel FUNC_ID:aic|aiv:PATH:ENTRY[:SIGNATURE]]...\n"
           "                    [--args TEXT] [--header OUT.h]\n"
           "       simpler pack --header OUT.h [--kernel FUNC_ID:aic|aiv:-:ENTRY]... [--args "
           "TEXT]\n"
           "       simpler pack --show FILE.spc\n"
           "\n"
           "Pack an orchestration and its kernels into one callable blob. Every entry\n"
           "and config must be a function its shared object exports (checked here).\n"
           "\n"
           "  -o, --output FILE    the callable to write (through a temporary: a failed\n"
           "                       pack leaves no file)\n"
           "      --orch PATH      the orchestration shared object\n"
           "      --entry NAME     its entry function (SP_ORCHESTRATION)\n"
           "      --config NAME    its config function (SP_ORCH_CONFIG), if any\n"
           "      --kernel SPEC    FUNC_ID:aic|aiv:PATH:ENTRY[:SIGNATURE], once per kernel;\n"
           "                       PATH must not contain ':'. SIGNATURE: one character per\n"
           "                       argument: i in, o out, x inout, e out-existing, n no-dep,\n"
           "                       s scalar (empty: unchecked)\n"
           "      --args TEXT      the orchestration's argument signature, checked on every\n"
           "                       run, e.g. \"x:in:f32[n],y:in:f32[n],z:out:f32[n],tile:scalar\"\n"
           "                       (NAME:DIR:DTYPE[DIMS] per tensor, then NAME:scalar[:DTYPE])\n"
           "      --header FILE    write a C header with SP_FUNC_<ENTRY> <func_id> per kernel\n"
           "                       and SP_ARG_<name> / SP_SCALAR_<name> <index> per argument;\n"
           "                       without -o no shared object is read (PATH may be '-')\n"
           "      --show FILE      validate a callable and print what it holds\n"
           "  -h, --help           this text\n"
           "\n"
           "Exit status: 0 packed, 1 refused (named status), 2 usage error, 3 a file could\n"
           "not be read or written.\n");
}

/* FUNC_ID:aic|aiv:PATH:ENTRY[:SIGNATURE], split in place in `text`. */
static int parse_kernel(char *text, sp_callable_kernel_spec *k)
{
    char *field[6];
    int n = 0;
    for (char *p = text; n < 6;) {
        field[n++] = p;
        p = strchr(p, ':');
        if (!p)
            break;
        *p++ = '\0';
    }
    if (n < 4 || n > 5)
        return -1;
    long id;
    if (cli_parse_long(field[0], 0, INT32_MAX, &id) != 0)
        return -1;
    if (strcmp(field[1], "aic") == 0)
        k->core_type = SP_CORE_AIC;
    else if (strcmp(field[1], "aiv") == 0)
        k->core_type = SP_CORE_AIV;
    else
        return -1;
    k->func_id = (int32_t)id;
    k->path = strcmp(field[2], "-") == 0 ? NULL : field[2];
    k->entry = field[3];
    k->signature = n == 5 ? field[4] : NULL;
    return 0;
}

/* Write `size` bytes through a temporary and rename, so a failed write
 * never leaves a half-written file a build system would take as up to
 * date. 0, or CLI_EXIT_IO with the reason printed. */
static int write_file(const char *out, const void *bytes, size_t size)
{
    size_t len = strlen(out) + 32;
    char *tmp = malloc(len);
    if (!tmp)
        return cli_fail(SP_ENOMEM, "out of memory writing '%s'", out);
    snprintf(tmp, len, "%s.tmp.%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(bytes, 1, size, f) == size;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, out) != 0) {
        ok = 0;
        e = errno;
    }
    int rc = CLI_EXIT_OK;
    if (!ok) {
        unlink(tmp);
        rc = cli_io_error("write '%s': %s", out, strerror(e));
    }
    free(tmp);
    return rc;
}

/* A file that could not be read: exit 3, "simpler: cannot open ..." (the
 * reader's message already starts with "cannot"). */
static int read_error(const char *err)
{
    return cli_io_error("%s", strncmp(err, "cannot ", 7) == 0 ? err + 7 : err);
}

/* The header (sp_callable_header_text, the one generator), written to path. */
static int write_header(const char *path, const sp_callable_spec *spec)
{
    const char *base = strrchr(path, '/');
    char *text;
    size_t len;
    char err[512];
    int rc = sp_callable_header_text(spec, base ? base + 1 : path, &text, &len, err, sizeof err);
    if (rc && strncmp(err, "signature: ", 11) == 0)
        return cli_fail(rc, "--args: %s", err + 11);
    if (rc)
        return cli_fail(rc, "%s", err);
    rc = write_file(path, text, len);
    free(text);
    return rc;
}

static int show(const char *path)
{
    void *blob;
    size_t size;
    char err[512];
    int rc = callable_read_file(path, "callable", &blob, &size, err, sizeof err);
    if (rc)
        return rc == SP_ESYS ? read_error(err) : cli_fail(rc, "%s", err);
    sp_callable_view v;
    rc = sp_callable_validate(blob, size, &v, err, sizeof err);
    if (rc) {
        free(blob);
        return cli_fail(rc, "%s: invalid: %s", path, err);
    }
    const sp_callable_header *h = v.header;
    /* The format is sound; the binaries must also be well-formed ELF that
     * export what the blob names, as registration requires, before --show
     * calls the callable valid. */
    for (uint32_t i = 0; i <= h->kernel_count; i++) {
        const sp_callable_section *b = i == 0 ? &h->orch : &v.kernels[i - 1].binary;
        const char *names[2] = {i == 0 ? v.orch_entry
                                       : sp_callable_string(&v, v.kernels[i - 1].entry),
                                i == 0 ? v.orch_config : NULL};
        rc = sp__elf_check(v.base + b->offset, b->size, err, sizeof err);
        for (int j = 0; j < 2 && !rc; j++)
            if (names[j])
                rc = sp__elf_find_export(v.base + b->offset, b->size, names[j], err, sizeof err);
        if (rc) {
            if (i == 0)
                cli_fail(rc, "%s: invalid: orchestration binary: %s", path, err);
            else
                cli_fail(rc, "%s: invalid: kernel func_id %" PRId32 " binary: %s", path,
                         v.kernels[i - 1].func_id, err);
            free(blob);
            return CLI_EXIT_FAIL;
        }
    }
    printf("%s: callable version %" PRIu32 ", %zu bytes, %" PRIu32
           " kernel%s, checksum 0x%08" PRIx32 " (CRC32C, verified)\n",
           path, h->version, size, h->kernel_count, h->kernel_count == 1 ? "" : "s", h->checksum);
    printf("orchestration: entry %s, config %s, %" PRIu64 " bytes at offset %" PRIu64 "\n",
           v.orch_entry, v.orch_config ? v.orch_config : "(none)", h->orch.size, h->orch.offset);
    printf("arguments: %s\n", v.orch_args ? v.orch_args : "(not declared: unchecked)");
    printf("strings: %" PRIu64 " bytes at offset %" PRIu64 "\n", h->strings.size,
           h->strings.offset);
    if (h->kernel_count)
        printf("%-8s %-4s %-32s %-12s %10s %10s\n", "func_id", "core", "entry", "signature",
               "bytes", "offset");
    for (uint32_t i = 0; i < h->kernel_count; i++) {
        const sp_callable_kernel *k = &v.kernels[i];
        const char *sig = sp_callable_string(&v, k->signature);
        printf("%-8" PRId32 " %-4s %-32s %-12s %10" PRIu64 " %10" PRIu64 "\n", k->func_id,
               callable_core_type_name(k->core_type), sp_callable_string(&v, k->entry),
               *sig ? sig : "-", k->binary.size, k->binary.offset);
    }
    free(blob);
    return CLI_EXIT_OK;
}

enum { OPT_ORCH = 256, OPT_ENTRY, OPT_CONFIG, OPT_KERNEL, OPT_ARGS, OPT_HEADER, OPT_SHOW };

static const struct option long_options[] = {
    {"output", required_argument, NULL, 'o'},
    {"orch", required_argument, NULL, OPT_ORCH},
    {"entry", required_argument, NULL, OPT_ENTRY},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"kernel", required_argument, NULL, OPT_KERNEL},
    {"args", required_argument, NULL, OPT_ARGS},
    {"header", required_argument, NULL, OPT_HEADER},
    {"show", required_argument, NULL, OPT_SHOW},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* "unknown option '--entyr' (did you mean --entry?)". */
static int unknown_option(const char *arg)
{
    const char *names[sizeof long_options / sizeof long_options[0]];
    int n = 0;
    for (const struct option *o = long_options; o->name; o++)
        names[n++] = o->name;
    const char *word = arg;
    while (*word == '-')
        word++;
    char bare[64];
    snprintf(bare, sizeof bare, "%.*s", (int)strcspn(word, "="), word);
    const char *near = cli_suggest(bare, names, n);
    if (near)
        return cli_usage_error("pack", "unknown option '%s' (did you mean --%s?)", arg, near);
    return cli_usage_error("pack", "unknown option '%s'", arg);
}

int cli_pack(int argc, char **argv)
{
    const char *out = NULL, *show_path = NULL, *header = NULL;
    sp_callable_spec spec = {0};
    /* --kernel texts are split in place, so each is parsed from a copy
     * (freed at the end) and the original stays printable. */
    sp_callable_kernel_spec *kernels = calloc((size_t)argc + 1, sizeof *kernels);
    char **texts = calloc((size_t)argc + 1, sizeof *texts);
    if (!kernels || !texts) {
        free(kernels);
        free(texts);
        return cli_fail(SP_ENOMEM, "out of memory");
    }
    int rc = CLI_EXIT_OK, help = 0;
    optind = 0; /* GNU: rescan from the start whatever parsed argv before */
    opterr = 0; /* errors are reported below, in the CLI's format */
    int c;
    while (!rc && !help && (c = getopt_long(argc, argv, ":o:h", long_options, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case OPT_ORCH:
            spec.orch_path = optarg;
            break;
        case OPT_ENTRY:
            spec.orch_entry = optarg;
            break;
        case OPT_CONFIG:
            spec.orch_config = optarg;
            break;
        case OPT_ARGS:
            spec.orch_args = optarg;
            break;
        case OPT_HEADER:
            header = optarg;
            break;
        case OPT_SHOW:
            show_path = optarg;
            break;
        case OPT_KERNEL:
            if (!(texts[spec.kernel_count] = strdup(optarg)))
                rc = cli_fail(SP_ENOMEM, "out of memory");
            else if (parse_kernel(texts[spec.kernel_count], &kernels[spec.kernel_count]) != 0)
                rc = cli_usage_error("pack",
                                     "bad --kernel '%s' (want FUNC_ID:aic|aiv:PATH:ENTRY"
                                     "[:SIGNATURE], FUNC_ID >= 0, PATH without ':')",
                                     optarg);
            else
                spec.kernel_count++;
            break;
        case 'h':
            help = 1;
            break;
        case ':':
            rc = cli_usage_error("pack", "%s needs a value", argv[optind - 1]);
            break;
        default:
            rc = unknown_option(argv[optind - 1]);
            break;
        }
    }
    spec.kernels = kernels;
    if (!rc && !help && optind < argc)
        rc = cli_usage_error("pack", "unexpected argument '%s'", argv[optind]);
    if (rc || help) {
        if (help)
            pack_usage(stdout);
    } else if (show_path) {
        if (out || header || spec.orch_path || spec.orch_entry || spec.kernel_count ||
            spec.orch_args)
            rc = cli_usage_error("pack", "--show takes no other option");
        else
            rc = show(show_path);
    } else if (!out && !header) {
        rc = cli_usage_error("pack", "-o, --orch and --entry are required (or --header OUT.h "
                                     "alone, or --show FILE.spc)");
    } else if (out && (!spec.orch_path || !spec.orch_entry)) {
        rc = cli_usage_error("pack", "-o needs --orch and --entry: both are required");
    } else {
        /* The header first: a build runs the header-only form before the
         * orchestration compiles and packs after, with the same kernels. */
        if (header)
            rc = write_header(header, &spec);
        if (!rc && out) {
            void *blob;
            size_t size;
            char err[512];
            int st = sp_callable_build(&spec, &blob, &size, err, sizeof err);
            if (st == SP_ESYS) {
                rc = read_error(err);
            } else if (st) {
                rc = cli_fail(st, "%s", err);
            } else {
                rc = write_file(out, blob, size);
                free(blob);
            }
        }
    }
    for (int i = 0; i <= argc; i++)
        free(texts[i]);
    free(texts);
    free(kernels);
    return rc;
}
