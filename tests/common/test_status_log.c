/* Status names and hints, and the log level parser and sink. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"

Test(status, every_code_has_a_distinct_name_and_hint)
{
    static const int codes[] = {
#define CODE(name, value, hint) value,
        SP_STATUS_LIST(CODE)
#undef CODE
    };
    size_t n = sizeof codes / sizeof codes[0];
    cr_assert_gt(n, 10);
    for (size_t i = 0; i < n; i++) {
        cr_assert(codes[i] <= 0);
        cr_assert_str_neq(sp_status_name(codes[i]), "SP_E?");
        cr_assert_gt(strlen(sp_status_hint(codes[i])), 5);
        for (size_t j = i + 1; j < n; j++) {
            cr_assert_neq(codes[i], codes[j]);
            cr_assert_str_neq(sp_status_name(codes[i]), sp_status_name(codes[j]));
        }
    }
    cr_assert_str_eq(sp_status_name(SP_EDEVMEM), "SP_EDEVMEM");
    cr_assert_str_eq(sp_status_name(-9999), "SP_E?");
}

static char last_line[1024];
static int lines_seen;

static void capture(int level, const char *line, void *user)
{
    (void)level;
    (void)user;
    strncpy(last_line, line, sizeof last_line - 1);
    lines_seen++;
}

Test(log, levels_filter_and_sink_captures)
{
    cr_assert_eq(sp__log_parse_level("debug"), SP_LOG_DEBUG);
    cr_assert_eq(sp__log_parse_level("off"), SP_LOG_OFF);
    cr_assert_eq(sp__log_parse_level("loud"), -1);
    cr_assert_eq(sp__log_parse_level(NULL), -1);
    sp__log_set_sink(capture, NULL);
    sp__log_set_level(SP_LOG_WARN);
    SP_INFO("hidden %d", 1);
    cr_assert_eq(lines_seen, 0);
    SP_ERROR("shown %d", 2);
    cr_assert_eq(lines_seen, 1);
    cr_assert(strstr(last_line, "shown 2") != NULL);
    cr_assert(strstr(last_line, "error") != NULL);
    sp__log_set_level(SP_LOG_OFF);
    SP_ERROR("hidden too");
    cr_assert_eq(lines_seen, 1);
    sp__log_set_sink(NULL, NULL);
}

/* The level from SIMPLER_LOG: the worker reads it with the other settings
 * (tests/worker/test_settings.c); log.c reads no environment. */

static void vformat_into(char *line, size_t len, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void vformat_into(char *line, size_t len, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sp__log_vformat(line, len, level, fmt, ap);
    va_end(ap);
}

/* The one line format, for sp__log and for the worker's per-worker sink;
 * a line longer than the buffer is cut, never overrun. */
Test(log, vformat_writes_the_tagged_line_and_truncates)
{
    char line[64];
    sp__log_set_sink(capture, NULL);
    sp__log_set_level(SP_LOG_DEBUG);
    lines_seen = 0;
    SP_DEBUG("value %d", 7);
    cr_assert_eq(lines_seen, 1);
    cr_assert_str_eq(last_line, "simpler debug: value 7");
    sp__log_set_sink(NULL, NULL);
    sp__log_set_level(SP_LOG_WARN);
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    memset(line, 0x55, sizeof line);
    vformat_into(line, sizeof line, SP_LOG_WARN, "%s", big);
    cr_assert_eq(strlen(line), sizeof line - 1);
    cr_assert_eq(strncmp(line, "simpler warn: xxx", 17), 0, "%s", line);
}
