/* Conventions every `simpler` sub-command follows: exit codes, how an
 * error is printed (once, on stderr, "simpler: <STATUS>: <message>" and
 * its hint), usage errors, number parsing and "did you mean". */
#ifndef SP_CLI_CLI_H
#define SP_CLI_CLI_H

#include <stdbool.h>

#include "simpler/types.h"

enum {
    CLI_EXIT_OK = 0,    /* passed */
    CLI_EXIT_FAIL = 1,  /* a wrong result or a failed run */
    CLI_EXIT_USAGE = 2, /* bad options or arguments: nothing ran */
    CLI_EXIT_IO = 3,    /* an input or output file could not be read or written */
};

/* "simpler: <STATUS_NAME>: <message>" and "  hint: <the status's hint>" on
 * stderr; returns CLI_EXIT_FAIL. */
int cli_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "simpler <cmd>: <message>" and "try 'simpler <cmd> --help'" on stderr;
 * returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "simpler: cannot <message>" on stderr; returns CLI_EXIT_IO. */
int cli_io_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse a decimal integer in [lo, hi]; 0, or -1 (not a number, trailing
 * characters, out of range). */
int cli_parse_long(const char *s, long lo, long hi, long *out);
/* The candidate closest to `word` by edit distance, if it is close enough
 * to be a typo (distance <= max(2, strlen(word) / 3)); NULL otherwise. */
const char *cli_suggest(const char *word, const char *const *candidates, int n);
/* getopt_long's failure (it returned '?' or ':' with opterr = 0 and ":" at
 * the start of its optstring) as a usage error of `cmd`: "unknown option
 * '--x' (did you mean --y?)" or "option '--x' needs a value". */
struct option;
int cli_option_error(const char *cmd, int c, char *const *argv, const struct option *longopts);
/* The command's log sink (sp_worker_options.log_sink, log_user = a
 * cli_log): lines below error go to stderr as they come; error lines are
 * held, because they restate a failure the command reports itself (once,
 * cli_fail). cli_log_end prints the held lines when the command did not
 * fail (something went wrong and was recovered), or when `verbose` (the
 * user asked for SIMPLER_LOG=debug or info), and forgets them otherwise. */
#define CLI_LOG_HELD 8
typedef struct cli_log {
    bool verbose;
    int held, dropped;
    char lines[CLI_LOG_HELD][512];
} cli_log;
void cli_log_sink(int level, const char *line, void *user);
void cli_log_end(cli_log *log, bool failed);

/* The a2a3 chip's geometry as a worker prewarm (info and smoke --a2a3):
 * 24 clusters, 3 scheduler threads (+ the orchestrator's AICPU thread). */
void cli_a2a3_prewarm(sp_call_config *prewarm);

/* Is stderr a terminal, and its width in columns (80 when unknown). */
bool cli_stderr_tty(void);
int cli_term_width(void);

#endif
