/* `simpler pack`: build a callable blob from an orchestration and kernel
 * shared objects, or (--show) validate one (format, checksum and each
 * binary's ELF structure) and print what it holds. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "callable/callable_internal.h"
#include "cli/commands.h"
#include "common/elf_check.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"

static void pack_usage(FILE *f)
{
    fprintf(f, "usage: simpler pack -o OUT.spc --orch PATH --entry NAME [--config NAME]\n"
               "                    [--kernel FUNC_ID:aic|aiv:PATH:ENTRY[:SIGNATURE]]...\n"
               "       simpler pack --show FILE.spc\n"
               "PATH must not contain ':'. SIGNATURE is one character per argument:\n"
               "i in, o out, x inout, e out-existing, n no-dep, s scalar (empty: unchecked).\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "simpler pack: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    pack_usage(stderr);
    return 2;
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
    char *end;
    errno = 0;
    long id = strtol(field[0], &end, 10);
    if (errno || end == field[0] || *end || id < 0 || id > INT32_MAX)
        return -1;
    if (strcmp(field[1], "aic") == 0)
        k->core_type = SP_CORE_AIC;
    else if (strcmp(field[1], "aiv") == 0)
        k->core_type = SP_CORE_AIV;
    else
        return -1;
    k->func_id = (int32_t)id;
    k->path = field[2];
    k->entry = field[3];
    k->signature = n == 5 ? field[4] : NULL;
    return 0;
}

/* Write through a temporary and rename, so a failed pack never leaves a
 * half-written blob that a build system would take as up to date. */
static int write_blob(const char *out, const void *blob, size_t size)
{
    size_t len = strlen(out) + 32;
    char *tmp = malloc(len);
    if (!tmp) {
        fprintf(stderr, "simpler pack: out of memory\n");
        return 1;
    }
    snprintf(tmp, len, "%s.tmp.%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(blob, 1, size, f) == size;
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, out) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        fprintf(stderr, "simpler pack: cannot write '%s': %s\n", out, strerror(e));
        unlink(tmp);
    }
    free(tmp);
    return ok ? 0 : 1;
}

static int show(const char *path)
{
    void *blob;
    size_t size;
    char err[512];
    int rc = callable_read_file(path, "callable", &blob, &size, err, sizeof err);
    if (rc) {
        fprintf(stderr, "simpler pack: %s\n", err);
        return 1;
    }
    sp_callable_view v;
    rc = sp_callable_validate(blob, size, &v, err, sizeof err);
    if (rc) {
        fprintf(stderr, "simpler pack: %s: invalid (%s): %s\n", path, sp_status_name(rc), err);
        free(blob);
        return 1;
    }
    const sp_callable_header *h = v.header;
    /* The format is sound; the binaries must also be well-formed ELF, as
     * registration requires, before --show calls the callable valid. */
    for (uint32_t i = 0; i <= h->kernel_count; i++) {
        const sp_callable_section *b = i == 0 ? &h->orch : &v.kernels[i - 1].binary;
        rc = sp__elf_check(v.base + b->offset, b->size, err, sizeof err);
        if (rc) {
            if (i == 0)
                fprintf(stderr, "simpler pack: %s: invalid (%s): orchestration binary: %s\n", path,
                        sp_status_name(rc), err);
            else
                fprintf(stderr,
                        "simpler pack: %s: invalid (%s): kernel func_id %" PRId32 " binary: %s\n",
                        path, sp_status_name(rc), v.kernels[i - 1].func_id, err);
            free(blob);
            return 1;
        }
    }
    printf("%s: callable version %" PRIu32 ", %zu bytes, %" PRIu32
           " kernel%s, checksum 0x%08" PRIx32 " (CRC32C, verified)\n",
           path, h->version, size, h->kernel_count, h->kernel_count == 1 ? "" : "s", h->checksum);
    printf("orchestration: entry %s, config %s, %" PRIu64 " bytes at offset %" PRIu64 "\n",
           v.orch_entry, v.orch_config ? v.orch_config : "(none)", h->orch.size, h->orch.offset);
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
    return 0;
}

int cli_pack(int argc, char **argv)
{
    const char *out = NULL, *show_path = NULL;
    sp_callable_spec spec = {0};
    /* --kernel texts are split in place, so each is parsed from a copy
     * (freed at the end) and the original stays printable. */
    sp_callable_kernel_spec *kernels = calloc((size_t)argc, sizeof *kernels);
    char **texts = calloc((size_t)argc, sizeof *texts);
    if (!kernels || !texts) {
        fprintf(stderr, "simpler pack: out of memory\n");
        free(kernels);
        free(texts);
        return 1;
    }
    int rc = 0, help = 0;
    for (int i = 1; i < argc && !rc && !help; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
            help = 1;
            break;
        }
        int takes_value = strcmp(opt, "-o") == 0 || strcmp(opt, "--orch") == 0 ||
                          strcmp(opt, "--entry") == 0 || strcmp(opt, "--config") == 0 ||
                          strcmp(opt, "--kernel") == 0 || strcmp(opt, "--show") == 0;
        if (!takes_value) {
            rc = usage_error("unknown option '%s'", opt);
            break;
        }
        if (i + 1 >= argc) {
            rc = usage_error("%s needs a value", opt);
            break;
        }
        const char *val = argv[++i];
        if (strcmp(opt, "-o") == 0)
            out = val;
        else if (strcmp(opt, "--orch") == 0)
            spec.orch_path = val;
        else if (strcmp(opt, "--entry") == 0)
            spec.orch_entry = val;
        else if (strcmp(opt, "--config") == 0)
            spec.orch_config = val;
        else if (strcmp(opt, "--show") == 0)
            show_path = val;
        else if (!(texts[spec.kernel_count] = strdup(val))) {
            fprintf(stderr, "simpler pack: out of memory\n");
            rc = 1;
        } else if (parse_kernel(texts[spec.kernel_count], &kernels[spec.kernel_count]) != 0)
            rc = usage_error("bad --kernel '%s' (want FUNC_ID:aic|aiv:PATH:ENTRY[:SIGNATURE], "
                             "FUNC_ID >= 0, PATH without ':')",
                             val);
        else
            spec.kernel_count++;
    }
    if (help)
        pack_usage(stdout);
    else if (!rc && show_path && (out || spec.orch_path || spec.orch_entry || spec.kernel_count))
        rc = usage_error("--show takes no other option");
    else if (!rc && show_path)
        rc = show(show_path);
    else if (!rc && (!out || !spec.orch_path || !spec.orch_entry))
        rc = usage_error("-o, --orch and --entry are required");
    else if (!rc) {
        spec.kernels = kernels;
        void *blob;
        size_t size;
        char err[512];
        int st = sp_callable_build(&spec, &blob, &size, err, sizeof err);
        if (st) {
            fprintf(stderr, "simpler pack: %s (%s)\n", err, sp_status_name(st));
            rc = 1;
        } else {
            rc = write_blob(out, blob, size);
            free(blob);
        }
    }
    for (int i = 0; i < argc; i++)
        free(texts[i]);
    free(texts);
    free(kernels);
    return rc;
}
