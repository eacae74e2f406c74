/* The conventions of src/cli/cli.h. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "simpler/log.h"
#include "simpler/status.h"

int cli_fail(int status, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* A library message may already start with the status's name. */
    const char *name = sp_status_name(status), *text = msg;
    size_t n = strlen(name);
    if (strncmp(text, name, n) == 0 && text[n] == ':' && text[n + 1] == ' ')
        text += n + 2;
    fprintf(stderr, "simpler: %s: %s\n  hint: %s\n", name, text, sp_status_hint(status));
    return CLI_EXIT_FAIL;
}

void cli_log_sink(int level, const char *line, void *user)
{
    cli_log *log = user;
    if (level < SP_LOG_ERROR || log->verbose) {
        fprintf(stderr, "%s\n", line);
        return;
    }
    if (log->held == CLI_LOG_HELD) {
        log->dropped++;
        return;
    }
    snprintf(log->lines[log->held++], sizeof log->lines[0], "%s", line);
}

void cli_log_end(cli_log *log, bool failed)
{
    if (!failed)
        for (int i = 0; i < log->held; i++)
            fprintf(stderr, "%s\n", log->lines[i]);
    if (!failed && log->dropped)
        fprintf(stderr, "simpler: %d more error lines not shown\n", log->dropped);
    log->held = log->dropped = 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "simpler %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'simpler %s --help'\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_io_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "simpler: cannot ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_IO;
}

int cli_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Levenshtein distance, two rows; words longer than 63 are "far". */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return (size_t)-1;
    size_t prev[64], cur[64];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

const char *cli_suggest(const char *word, const char *const *candidates, int n)
{
    size_t limit = strlen(word) / 3 > 2 ? strlen(word) / 3 : 2;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (int i = 0; i < n; i++) {
        size_t d = distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    return best_d <= limit ? best : NULL;
}

int cli_option_error(const char *cmd, int c, char *const *argv, const struct option *longopts)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    if (c == ':')
        return cli_usage_error(cmd, "option '%s' needs a value", arg);
    if (optopt && optopt != '?' && (arg[0] != '-' || arg[1] != '-'))
        return cli_usage_error(cmd, "unknown option '-%c'", optopt);
    /* "--nmae=x": the name alone, then the closest known long option. */
    char name[64];
    const char *n = arg[0] == '-' && arg[1] == '-' ? arg + 2 : arg;
    snprintf(name, sizeof name, "%.*s", (int)strcspn(n, "="), n);
    for (int i = 0; longopts && longopts[i].name; i++)
        if (strcmp(longopts[i].name, name) == 0 && longopts[i].has_arg == no_argument)
            return cli_usage_error(cmd, "option '--%s' takes no value", name);
    const char *names[64];
    int count = 0;
    for (; longopts && longopts[count].name && count < 64; count++)
        names[count] = longopts[count].name;
    const char *best = cli_suggest(name, names, count);
    if (best)
        return cli_usage_error(cmd, "unknown option '%s' (did you mean --%s?)", arg, best);
    return cli_usage_error(cmd, "unknown option '%s'", arg);
}

void cli_a2a3_prewarm(sp_call_config *prewarm)
{
    prewarm->clusters = 24;
    prewarm->sched_threads = 3;
}

bool cli_stderr_tty(void)
{
    return isatty(STDERR_FILENO) == 1;
}

int cli_term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}
