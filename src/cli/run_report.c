/* The result of `simpler run` as text or JSON, and the progress bar
 * (run_report.h). */
#include "cli/run_report.h"

#include <math.h>
#include <string.h>

#include "cli/cli.h"
#include "simpler/status.h"

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* A finite number, or null (JSON has no inf / nan). */
static void json_number(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, "%.17g", v);
    else
        fputs("null", out);
}

static bool passed(const run_report *r)
{
    return r->status == 0 && !r->wrong;
}

void run_report_text(const run_report *r, FILE *out)
{
    fprintf(out, "%s %s runtime=%s", passed(r) ? "PASS" : "FAIL", r->target, r->runtime);
    if (r->case_name)
        fprintf(out, " case=%s", r->case_name);
    if (r->status) {
        fprintf(out, " status=%s\n", sp_status_name(r->status));
        return;
    }
    fprintf(out, " tasks=%llu edges=%llu", (unsigned long long)r->st.tasks,
            (unsigned long long)r->st.edges);
    if (r->wrong) {
        if (!r->is_file)
            fprintf(out, " max_err=%g", r->max_err);
        fprintf(out, ": %s\n", r->why ? r->why : "wrong result");
        return;
    }
    fprintf(out, " build_us=%.1f device_us=%.1f", (r->st.build_ns + r->st.upload_ns) / 1e3,
            r->st.device_ns / 1e3);
    if (!r->is_file)
        fprintf(out, " max_err=%g", r->max_err);
    if (r->replay)
        fprintf(out, " replayed=%ld/%ld", r->replayed, r->rounds);
    fputc('\n', out);
    if (r->device_ns && r->rounds > 1)
        fprintf(out, "rounds=%ld device_us min=%.1f median=%.1f max=%.1f\n", r->rounds,
                r->device_ns[0] / 1e3, r->device_ns[r->rounds / 2] / 1e3,
                r->device_ns[r->rounds - 1] / 1e3);
}

void run_report_json(const run_report *r, FILE *out)
{
    fprintf(out, "{\"result\":\"%s\",\"status\":", passed(r) ? "PASS" : "FAIL");
    json_string(out, sp_status_name(r->status));
    fputs(r->is_file ? ",\"callable\":" : ",\"example\":", out);
    json_string(out, r->target);
    fputs(",\"runtime\":", out);
    json_string(out, r->runtime);
    if (r->case_name) {
        fputs(",\"case\":", out);
        json_string(out, r->case_name);
    }
    if (r->status && r->error) {
        fputs(",\"error\":", out);
        json_string(out, r->error);
    }
    if (r->why) {
        fputs(",\"why\":", out);
        json_string(out, r->why);
    }
    const sp_run_stats *s = &r->st;
    fprintf(out,
            ",\"tasks\":%llu,\"edges\":%llu,\"rounds\":%ld,\"timings_us\":{\"build\":%.3f,"
            "\"upload\":%.3f,\"device\":%.3f,\"orch\":%.3f,\"first_complete\":%.3f}"
            ",\"image_bytes\":%llu",
            (unsigned long long)s->tasks, (unsigned long long)s->edges, r->rounds,
            s->build_ns / 1e3, s->upload_ns / 1e3, s->device_ns / 1e3, s->orch_ns / 1e3,
            s->first_complete_ns / 1e3, (unsigned long long)s->image_bytes);
    fprintf(out, ",\"replayed\":%ld,\"skipped\":%u", r->replayed, s->skipped);
    if (r->device_ns && r->rounds > 1)
        fprintf(out, ",\"device_us\":{\"min\":%.3f,\"median\":%.3f,\"max\":%.3f}",
                r->device_ns[0] / 1e3, r->device_ns[r->rounds / 2] / 1e3,
                r->device_ns[r->rounds - 1] / 1e3);
    if (!r->is_file && r->status == 0) {
        fputs(",\"max_err\":", out);
        json_number(out, r->max_err);
    }
    if (r->output_count) {
        fputs(",\"outputs\":{", out);
        for (uint32_t i = 0; i < r->output_count; i++) {
            fputs(i ? "," : "", out);
            json_string(out, r->output_names[i]);
            fprintf(out, ":{\"fnv1a64\":\"%016llx\"}", (unsigned long long)r->output_hash[i]);
        }
        fputc('}', out);
    }
    if (r->trace) {
        const sp_run_trace *t = r->trace;
        fprintf(out,
                ",\"trace\":{\"level\":%u,\"records\":%llu,\"records_dropped\":%llu,"
                "\"edges\":%llu,\"edges_dropped\":%llu,\"sched_threads\":%u",
                t->level, (unsigned long long)t->record_count,
                (unsigned long long)t->records_dropped, (unsigned long long)t->edge_count,
                (unsigned long long)t->edges_dropped, t->sched_threads);
        if (r->stats_text) {
            /* The summary's lines, as --stats prints them. */
            fputs(",\"stats\":[", out);
            const char *p = r->stats_text;
            for (bool first = true; *p;) {
                size_t n = strcspn(p, "\n");
                char line[512];
                snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1),
                         p);
                fputs(first ? "" : ",", out);
                json_string(out, line);
                first = false;
                p += n + (p[n] == '\n');
            }
            fputc(']', out);
        }
        fputc('}', out);
    }
    fputs("}\n", out);
}

uint64_t run_hash_bytes(const void *p, uint64_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

void run_progress(long done, long total)
{
    if (!cli_stderr_tty() || total < 2)
        return;
    /* "[####    ] 12/100": the counts' room first, the bar gets the rest. */
    char counts[48];
    int clen = snprintf(counts, sizeof counts, " %ld/%ld", done, total);
    int width = cli_term_width() - clen - 3;
    if (width > 60)
        width = 60;
    if (width < 4)
        width = 0;
    int filled = width ? (int)((long long)width * done / total) : 0;
    fputc('\r', stderr);
    if (width) {
        fputc('[', stderr);
        for (int i = 0; i < width; i++)
            fputc(i < filled ? '#' : ' ', stderr);
        fputc(']', stderr);
    }
    fputs(counts, stderr);
    if (done == total)
        fprintf(stderr, "\r%*s\r", width + clen + 2, "");
    fflush(stderr);
}
