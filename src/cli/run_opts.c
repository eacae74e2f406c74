/* `simpler run`'s option table, --help text and the checks made before
 * anything runs (run_opts.h). */
#include "cli/run_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "simpler/status.h"

static const char run_help[] =
    "usage: simpler run EXAMPLE [options]\n"
    "       simpler run FILE.spc [--input NAME=X.npy]... [--output NAME=SHAPE:DTYPE]... [options]\n"
    "Run an example (simpler list shows them) and compare it with its golden, or run a packed\n"
    "callable with tensors read from and written to .npy files. Ends with one PASS or FAIL line\n"
    "(or, with --json, one JSON object) on stdout.\n"
    "\n"
    "what runs:\n"
    "  --runtime NAME         runtime module: hbg (default) or tmr\n"
    "  --rounds N             run N times (1..1000000); prints min/median/max device time\n"
    "  --clusters N           clusters of the device (1..256; default: the platform's)\n"
    "  --sched N              scheduler threads of the device (1..64; default: the platform's)\n"
    "  --window N             tmr only: task ring slots, a power of two in 4..2^20\n"
    "  --heap BYTES           the run's device heap (4096..2^40)\n"
    "  --replay MODE          off (default), auto (record the graph, replay it on later rounds)\n"
    "                         or only (replay, or fail with SP_EREPLAY_MISS)\n"
    "examples:\n"
    "  --case NAME            one of the example's cases (default: its first)\n"
    "  --param KEY=VALUE      override a parameter (any length); KEY=@FILE reads VALUE from FILE\n"
    "callable files (FILE.spc, or any path with a '/'):\n"
    "  --input NAME=X.npy     an IN tensor read from X.npy (numpy's format, C order, "
    "little-endian)\n"
    "  --inout NAME=X.npy     an INOUT tensor read from X.npy, written back by the run\n"
    "  --output NAME=SHAPE:DTYPE  an OUT tensor, e.g. z=4096:f32 or c=64x64:f16\n"
    "  --scalar NAME=VALUE    a scalar (integer, or a number when the signature says f32/f64)\n"
    "    With a signature in the callable (simpler pack --args) the names are the signature's\n"
    "    and are checked against it; without one, arguments go in command-line order.\n"
    "results:\n"
    "  --save DIR             write tensors to DIR/NAME.npy after the run (an example: every\n"
    "                         argument; a callable file: what it wrote)\n"
    "  --json                 print one JSON object (status, tasks, edges, timings, ...) instead\n"
    "                         of the text lines\n"
    "  --trace OUT.json       Chrome-trace / Perfetto JSON of the last round\n"
    "  --swimlane OUT.svg     SVG swimlane of the last round\n"
    "  --deps OUT.dot         Graphviz dependency graph of the last round\n"
    "  --stats                print the trace's summary after the result line\n"
    "  --trace-level 1..3     1 tasks (default when tracing), 2 + scheduler, 3 + submits (tmr)\n"
    "  --trace-records N      tmr only: trace buffer records (1..2^30)\n"
    "  --trace-cost           rounds alternate tracing off and on; prints the recording's cost\n"
    "  -h, --help             this text\n"
    "\n"
    "exit status: 0 passed, 1 wrong result or failed run, 2 usage error (nothing ran),\n"
    "3 a file could not be read or written\n";

enum {
    OPT_RUNTIME = 256,
    OPT_CASE,
    OPT_ROUNDS,
    OPT_CLUSTERS,
    OPT_SCHED,
    OPT_WINDOW,
    OPT_HEAP,
    OPT_PARAM,
    OPT_SAVE,
    OPT_TRACE,
    OPT_SWIMLANE,
    OPT_DEPS,
    OPT_STATS,
    OPT_TRACE_LEVEL,
    OPT_TRACE_RECORDS,
    OPT_TRACE_COST,
    OPT_JSON,
    OPT_INPUT,
    OPT_INOUT,
    OPT_OUTPUT,
    OPT_SCALAR,
    OPT_REPLAY,
};

static const struct option longopts[] = {
    {"runtime", required_argument, NULL, OPT_RUNTIME},
    {"case", required_argument, NULL, OPT_CASE},
    {"rounds", required_argument, NULL, OPT_ROUNDS},
    {"clusters", required_argument, NULL, OPT_CLUSTERS},
    {"sched", required_argument, NULL, OPT_SCHED},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"heap", required_argument, NULL, OPT_HEAP},
    {"param", required_argument, NULL, OPT_PARAM},
    {"save", required_argument, NULL, OPT_SAVE},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"swimlane", required_argument, NULL, OPT_SWIMLANE},
    {"deps", required_argument, NULL, OPT_DEPS},
    {"stats", no_argument, NULL, OPT_STATS},
    {"trace-level", required_argument, NULL, OPT_TRACE_LEVEL},
    {"trace-records", required_argument, NULL, OPT_TRACE_RECORDS},
    {"trace-cost", no_argument, NULL, OPT_TRACE_COST},
    {"json", no_argument, NULL, OPT_JSON},
    {"input", required_argument, NULL, OPT_INPUT},
    {"inout", required_argument, NULL, OPT_INOUT},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"scalar", required_argument, NULL, OPT_SCALAR},
    {"replay", required_argument, NULL, OPT_REPLAY},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int bad(const char *fmt, const char *arg)
{
    return cli_usage_error("run", fmt, arg);
}

/* The whole of `path` as a string, trailing whitespace (a final newline)
 * removed; NULL with errno set. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += n;
        if (len + 1 == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int e = ferror(f) ? EIO : 0;
    fclose(f);
    if (buf && e) {
        free(buf);
        errno = e;
        return NULL;
    }
    if (!buf)
        return NULL;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
                   buf[len - 1] == '\t'))
        len--;
    buf[len] = '\0';
    return buf;
}

/* --param KEY=VALUE, or KEY=@FILE: the value read from FILE. */
static int add_param(run_opts *o, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return bad("--param takes KEY=VALUE or KEY=@FILE, not '%s'", kv);
    if (eq[1] != '@') {
        o->overrides[o->override_count++] = kv;
        return 0;
    }
    char *text = read_text(eq + 2);
    if (!text)
        return cli_io_error("read '%s' (--param %.*s=@FILE): %s", eq + 2, (int)(eq - kv), kv,
                            strerror(errno));
    size_t klen = (size_t)(eq - kv) + 1, vlen = strlen(text);
    char *joined = malloc(klen + vlen + 1);
    if (!joined) {
        free(text);
        return cli_io_error("read '%s': out of memory", eq + 2);
    }
    memcpy(joined, kv, klen);
    memcpy(joined + klen, text, vlen + 1);
    free(text);
    o->owned[o->owned_count++] = joined;
    o->overrides[o->override_count++] = joined;
    return 0;
}

/* --input/--inout/--output/--scalar NAME=VALUE. */
static int add_arg(run_opts *o, run_arg_kind kind, const char *opt, const char *kv)
{
    const char *eq = strchr(kv, '=');
    size_t nlen = eq ? (size_t)(eq - kv) : 0;
    if (!eq || nlen == 0 || nlen >= sizeof o->args[0].name || !eq[1]) {
        char msg[96];
        snprintf(msg, sizeof msg, "--%s takes NAME=%s, not '%%s'", opt,
                 kind == RUN_ARG_OUTPUT   ? "SHAPE:DTYPE"
                 : kind == RUN_ARG_SCALAR ? "VALUE"
                                          : "FILE.npy");
        return bad(msg, kv);
    }
    for (int i = 0; i < o->arg_count; i++)
        if (strlen(o->args[i].name) == nlen && memcmp(o->args[i].name, kv, nlen) == 0)
            return bad("argument '%s' is given twice", o->args[i].name);
    run_arg *a = &o->args[o->arg_count++];
    a->kind = kind;
    memcpy(a->name, kv, nlen);
    a->name[nlen] = '\0';
    a->value = eq + 1;
    return 0;
}

static int number(const char *v, const char *what, long lo, long hi, long *out)
{
    if (cli_parse_long(v, lo, hi, out) == 0)
        return 0;
    char msg[128];
    snprintf(msg, sizeof msg, "--%s must be an integer in %ld..%ld, not '%%s'", what, lo, hi);
    return bad(msg, v);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool run_opts_is_hbg(const run_opts *o)
{
    return strcmp(o->runtime, "hbg") == 0;
}

bool run_opts_wants_trace(const run_opts *o)
{
    return o->trace_json || o->swimlane || o->deps || o->stats;
}

/* Can a file be created at `path` (its directory exists and is writable)?
 * Checked before the run, so a long run is not lost to a typo'd directory;
 * the write itself can still fail (and is then exit 3 too). */
static bool can_create(const char *path)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        return access(".", W_OK | X_OK) == 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
    return access(dir, W_OK | X_OK) == 0;
}

static int check_outputs(const run_opts *o)
{
    const struct {
        const char *path, *opt;
    } outs[] = {{o->trace_json, "--trace"}, {o->swimlane, "--swimlane"}, {o->deps, "--deps"}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (outs[i].path && !can_create(outs[i].path))
            return cli_io_error("write '%s' (%s): %s", outs[i].path, outs[i].opt, strerror(errno));
    if (!o->save_dir)
        return 0;
    struct stat st;
    if (stat(o->save_dir, &st) != 0)
        return can_create(o->save_dir)
                   ? 0
                   : cli_io_error("create '%s' (--save): %s", o->save_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return cli_io_error("write into '%s' (--save): not a directory", o->save_dir);
    if (access(o->save_dir, W_OK | X_OK) != 0)
        return cli_io_error("write into '%s' (--save): %s", o->save_dir, strerror(errno));
    return 0;
}

/* The checks that need no device: combinations, and options of one runtime
 * or one form given to the other. */
static int check(run_opts *o)
{
    if (!o->target)
        return bad("%s", "which example or callable file? (simpler list shows the examples)");
    if (run_opts_is_hbg(o)) {
        if (o->window)
            return bad("%s", "--window is a tmr option (host_build_graph has no task window): "
                             "drop it or use --runtime tmr");
        if (o->trace_records)
            return bad("%s", "--trace-records is a tmr option (host_build_graph sizes its trace "
                             "buffer from the graph): drop it or use --runtime tmr");
    }
    if (o->is_file && (o->case_name || o->override_count))
        return bad("%s", "--case and --param are options of the examples, not of a callable file "
                         "(use --input, --output and --scalar)");
    if (!o->is_file && o->arg_count)
        return bad("--input, --inout, --output and --scalar are options of a callable file, not "
                   "of the example '%s' (use --param)",
                   o->target);
    if (o->trace_cost && o->json)
        return bad("%s", "--trace-cost prints a text report: it does not combine with --json");
    return check_outputs(o);
}

int run_opts_parse(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->runtime = "hbg";
    o->rounds = 1;
    /* Every --param / argument option takes one argv word at least. */
    o->overrides = calloc((size_t)argc + 1, sizeof *o->overrides);
    o->owned = calloc((size_t)argc + 1, sizeof *o->owned);
    o->args = calloc((size_t)argc + 1, sizeof *o->args);
    if (!o->overrides || !o->owned || !o->args)
        return cli_fail(SP_ENOMEM, "no host memory for %d arguments", argc);
    opterr = 0;
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case OPT_RUNTIME:
            o->runtime = v; /* the worker finds its module, or says there is none */
            break;
        case OPT_CASE:
            o->case_name = v;
            break;
        case OPT_REPLAY:
            if (strcmp(v, "off") == 0)
                o->replay = 0;
            else if (strcmp(v, "auto") == 0)
                o->replay = 1;
            else if (strcmp(v, "only") == 0)
                o->replay = 2;
            else
                rc = cli_usage_error("run", "--replay wants off, auto or only, not '%s'", v);
            break;
        case OPT_ROUNDS:
            rc = number(v, "rounds", 1, 1000000, &o->rounds);
            break;
        case OPT_CLUSTERS:
            rc = number(v, "clusters", 1, 256, &o->clusters);
            break;
        case OPT_SCHED:
            rc = number(v, "sched", 1, 64, &o->sched);
            break;
        case OPT_WINDOW:
            rc = number(v, "window", 4, 1L << 20, &o->window);
            if (rc == 0 && (o->window & (o->window - 1)))
                rc = bad("--window must be a power of two (4, 8, ..., 2^20), not %s", v);
            break;
        case OPT_HEAP:
            rc = number(v, "heap", 4096, 1L << 40, &o->heap);
            break;
        case OPT_PARAM:
            rc = add_param(o, v);
            break;
        case OPT_SAVE:
            o->save_dir = v;
            break;
        case OPT_TRACE:
            o->trace_json = v;
            break;
        case OPT_SWIMLANE:
            o->swimlane = v;
            break;
        case OPT_DEPS:
            o->deps = v;
            break;
        case OPT_STATS:
            o->stats = true;
            break;
        case OPT_TRACE_LEVEL:
            rc = number(v, "trace-level", 1, 3, &o->trace_level);
            break;
        case OPT_TRACE_RECORDS:
            rc = number(v, "trace-records", 1, 1L << 30, &o->trace_records);
            break;
        case OPT_TRACE_COST:
            o->trace_cost = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_INPUT:
            rc = add_arg(o, RUN_ARG_INPUT, "input", v);
            break;
        case OPT_INOUT:
            rc = add_arg(o, RUN_ARG_INOUT, "inout", v);
            break;
        case OPT_OUTPUT:
            rc = add_arg(o, RUN_ARG_OUTPUT, "output", v);
            break;
        case OPT_SCALAR:
            rc = add_arg(o, RUN_ARG_SCALAR, "scalar", v);
            break;
        case 'h':
            fputs(run_help, stdout);
            o->help = true;
            return CLI_EXIT_OK;
        default:
            return cli_option_error("run", c, argv, longopts);
        }
    }
    if (rc)
        return rc;
    for (; optind < argc; optind++) {
        if (o->target)
            return bad("unexpected argument '%s' (one example or callable file per run)",
                       argv[optind]);
        o->target = argv[optind];
    }
    if (o->target)
        o->is_file = ends_with(o->target, ".spc") || strchr(o->target, '/') != NULL;
    return check(o);
}

void run_opts_free(run_opts *o)
{
    for (int i = 0; i < o->owned_count; i++)
        free(o->owned[i]);
    free(o->owned);
    free(o->overrides);
    free(o->args);
    memset(o, 0, sizeof *o);
}
