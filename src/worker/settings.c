/* The one place simpler reads the environment: each SIMPLER_* variable
 * fills one field of sp_settings that the caller left 0. One table names
 * every variable, its field and its range; one validating reader parses
 * them all, so a malformed value is refused the same way everywhere (a
 * warning naming it, the field left 0: the default). Nothing below the
 * worker reads the environment. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/settings.h"
#include "simpler/status.h"
#include "worker/worker_internal.h"

typedef enum setting_kind {
    SETTING_LEVEL, /* a log level name -> 1 + SP_LOG_* */
    SETTING_FLAG,  /* 0 or 1 */
    SETTING_UINT,  /* digits in lo..hi */
    SETTING_MB,    /* digits in lo..hi, stored as bytes (<< 20) */
    SETTING_CPUS,  /* a CPU list "1", "2-3", "0,2-3" -> a bit mask */
} setting_kind;

typedef struct setting {
    const char *name; /* the environment variable */
    setting_kind kind;
    const char *field; /* the sp_settings field it fills */
    size_t offset;     /* of the field in sp_settings */
    size_t width;      /* 4 or 8 bytes */
    uint64_t lo, hi;
    /* The value 0 is meaningful (never spin): stored as SP_SETTING_ZERO,
     * since a 0 field means "the default". */
    int zero_is_setting;
    const char *want; /* what a valid value looks like, for the warning */
} setting;

#define FIELD(f) #f, offsetof(sp_settings, f), sizeof(((sp_settings *)0)->f)

/* docs/USAGE.md "Environment" lists the same variables and ranges. */
static const setting settings_table[] = {
    {"SIMPLER_LOG", SETTING_LEVEL, FIELD(log_level), 0, 0, 0, "debug|info|warn|error|off"},
    {"SIMPLER_CHECK", SETTING_FLAG, FIELD(check), 0, 1, 0, "0 or 1"},
    {"SIMPLER_KERNEL_TIMEOUT_MS", SETTING_UINT, FIELD(kernel_timeout_ms), 1,
     7ull * 24 * 3600 * 1000, 0, "1..604800000 ms"},
    {"SIMPLER_ORCH_TIMEOUT_MS", SETTING_UINT, FIELD(orch_timeout_ms), 1, 1ull << 32, 0,
     "1..4294967296 ms"},
    {"SIMPLER_PIPELINE_DEPTH", SETTING_UINT, FIELD(pipeline_depth), 1, 2, 0, "1 or 2"},
    {"SIMPLER_GRAPH_CACHE", SETTING_UINT, FIELD(graph_cache_count), 1, 1u << 16, 0, "1..65536"},
    {"SIMPLER_GRAPH_CACHE_MB", SETTING_MB, FIELD(graph_cache_bytes), 1, 1ull << 20, 0,
     "1..1048576"},
    {"SIMPLER_SIM_MEMORY_MB", SETTING_MB, FIELD(memory_bytes), 1, 1ull << 20, 0, "1..1048576"},
    {"SIMPLER_SIM_NO_HOST_MAP", SETTING_FLAG, FIELD(sim.no_host_map), 0, 1, 0, "0 or 1"},
    {"SIMPLER_SIM_PROTECT", SETTING_FLAG, FIELD(sim.protect), 0, 1, 0, "0 or 1"},
    {"SIMPLER_SIM_CPUS", SETTING_CPUS, FIELD(sim.cpus), 0, 0, 0,
     "a CPU list of 0..63: 1, 2-3 or 0,2-3"},
    {"SIMPLER_SIM_CORE_QUEUE", SETTING_UINT, FIELD(sim.core_queue), 1, 64, 0, "1..64"},
    {"SIMPLER_SIM_SPIN_NS", SETTING_UINT, FIELD(sim.spin_ns), 0, 1000000000u, 1,
     "0..1000000000 ns"},
    {"SIMPLER_SIM_YIELD_NS", SETTING_UINT, FIELD(sim.yield_ns), 0, 1000000000u, 1,
     "0..1000000000 ns"},
};

/* Digits only, no sign, no blanks (strtoull would take "-1" as 2^64 - 1);
 * 0 and the value, or -1. */
static int parse_digits(const char *s, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* "1", "2-3", "0,2-3" -> a CPU bit mask (CPUs 0..63); -1 if malformed. */
static int parse_cpu_list(const char *s, uint64_t *out)
{
    uint64_t mask = 0;
    while (*s) {
        char *end;
        if (*s < '0' || *s > '9')
            return -1;
        long a = strtol(s, &end, 10), b = a;
        if (a > 63)
            return -1;
        s = end;
        if (*s == '-') {
            if (s[1] < '0' || s[1] > '9')
                return -1;
            b = strtol(s + 1, &end, 10);
            if (b < a || b > 63)
                return -1;
            s = end;
        }
        for (long c = a; c <= b; c++)
            mask |= 1ull << c;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    *out = mask;
    return mask ? 0 : -1;
}

/* The value `text` gives setting `d`, or -1 if it is malformed. */
static int setting_parse(const setting *d, const char *text, uint64_t *out)
{
    uint64_t v;
    switch (d->kind) {
    case SETTING_LEVEL: {
        int lvl = sp__log_parse_level(text);
        if (lvl < 0)
            return -1;
        *out = (uint64_t)lvl + 1;
        return 0;
    }
    case SETTING_CPUS:
        return parse_cpu_list(text, out);
    case SETTING_FLAG:
    case SETTING_UINT:
    case SETTING_MB:
        if (parse_digits(text, &v) || v < d->lo || v > d->hi)
            return -1;
        if (d->kind == SETTING_MB)
            v <<= 20;
        else if (v == 0 && d->zero_is_setting)
            v = SP_SETTING_ZERO;
        *out = v;
        return 0;
    }
    return -1;
}

static uint64_t field_get(const sp_settings *s, const setting *d)
{
    const char *p = (const char *)s + d->offset;
    if (d->width == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void field_set(sp_settings *s, const setting *d, uint64_t v)
{
    char *p = (char *)s + d->offset;
    if (d->width == sizeof(uint32_t)) {
        uint32_t v32 = (uint32_t)v;
        memcpy(p, &v32, sizeof v32);
    } else {
        memcpy(p, &v, sizeof v);
    }
}

SP_EXPORT void sp_settings_from_env(sp_settings *s)
{
    if (!s)
        return;
    /* SIMPLER_LOG first, so SIMPLER_LOG=off also silences the warnings
     * about the other variables below. */
    for (size_t i = 0; i < sizeof settings_table / sizeof settings_table[0]; i++) {
        const setting *d = &settings_table[i];
        if (field_get(s, d)) /* the caller's value wins */
            continue;
        const char *text = getenv(d->name);
        if (!text || !*text)
            continue;
        uint64_t v;
        if (setting_parse(d, text, &v) == 0) {
            field_set(s, d, v);
            continue;
        }
        int level = s->log_level ? s->log_level - 1 : sp__log_level();
        if (level <= SP_LOG_WARN)
            sp__log(SP_LOG_WARN, "ignoring %s='%s' (want %s); using the default", d->name, text,
                    d->want);
    }
}

int wk_settings_check(const sp_settings *s, char *err, size_t err_len)
{
    for (size_t i = 0; i < sizeof settings_table / sizeof settings_table[0]; i++) {
        const setting *d = &settings_table[i];
        uint64_t v = field_get(s, d);
        uint64_t lo = d->lo, hi = d->hi;
        if (d->kind == SETTING_LEVEL)
            lo = 1, hi = 1 + SP_LOG_OFF;
        else if (d->kind != SETTING_UINT && d->kind != SETTING_FLAG)
            continue; /* memory and CPUs: the platform checks what it can give */
        if (!v || (d->zero_is_setting && v == SP_SETTING_ZERO) || (v >= lo && v <= hi))
            continue;
        snprintf(err, err_len, "settings: the field %s (%s) is %llu, outside %llu..%llu", d->field,
                 d->name, (unsigned long long)v, (unsigned long long)lo, (unsigned long long)hi);
        return SP_EINVAL;
    }
    return SP_OK;
}

/* SIMPLER_MODULE_PATH: directories (':'-separated) sp_worker_open_runtime
 * searches before its defaults when the caller gives no module_dir. */
const char *wk_env_module_path(void)
{
    const char *p = getenv("SIMPLER_MODULE_PATH");
    return p && *p ? p : NULL;
}

/* A path, not a number: not a field of sp_settings, but read here like
 * the rest (sp_worker_options.trace_path's default). */
const char *wk_env_trace_path(void)
{
    const char *p = getenv("SIMPLER_TRACE");
    return p && *p ? p : NULL;
}
