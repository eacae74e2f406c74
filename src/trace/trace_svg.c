/* SP_TRACE_FORMAT_SVG: a self-contained SVG swimlane that any browser
 * opens. A time axis over the device run; from the top an orchestrator
 * lane (tmr: the orchestration and each submit), a lane per scheduler
 * thread (the dispatches it made, its passes and idle waits at trace
 * level >= 2, the dummy tasks it completed, the predicated tasks it
 * retired without running as hatched boxes), then a lane per core. On a core lane each block it ran
 * is a bar in its kernel's colour (hover: task, block, times), the time the block sat queued on the
 * core between dispatch and start is drawn lighter in a strip under the bars (one row per
 * overlapping wait), and the core is hatched where it sat idle while a block of its core type was
 * ready and not yet dispatched. The critical path is outlined and linked in red. */
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "trace/trace_model.h"

#define SVG_W 1200.0
#define LABEL_W 120.0
#define RIGHT_W 20.0
#define LANE_H 26.0
#define BAR_H 14.0  /* the bars' height in a core lane; the queue strip is below */
#define STRIP_H 9.0 /* the queued strip */
#define TOP_H 64.0

typedef struct ival {
    uint64_t b, e;
} ival;

typedef struct tick {
    uint64_t t;
    int d; /* +1 ready, -1 dispatched */
} tick;

static int cmp_tick(const void *a, const void *b)
{
    const tick *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->d - y->d; /* dispatches first at equal times: no zero-width waits */
}

static int cmp_ival(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    return x->b < y->b ? -1 : x->b > y->b;
}

/* XML text: the five special characters escaped. */
static void xstr(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20)
                fputc(*s, f);
        }
    }
}

/* Intervals where at least one block that runs on core type `is_aic` was
 * ready and not yet dispatched; *n gets the count. NULL: no memory. */
static ival *waiting_work(const trace_model *m, bool is_aic, uint64_t *n)
{
    const sp_run_trace *tr = m->tr;
    tick *ticks = malloc((2 * tr->record_count + 1) * sizeof *ticks);
    ival *out = malloc((tr->record_count + 1) * sizeof *out);
    *n = 0;
    if (!ticks || !out) {
        free(ticks);
        free(out);
        return NULL;
    }
    uint64_t k = 0;
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE || (r->lane == 0) != is_aic)
            continue;
        uint64_t ready = m->tasks[r->task].ready_ns;
        if (ready >= r->dispatch_ns)
            continue;
        ticks[k++] = (tick){ready, +1};
        ticks[k++] = (tick){r->dispatch_ns, -1};
    }
    qsort(ticks, k, sizeof *ticks, cmp_tick);
    int depth = 0;
    for (uint64_t i = 0; i < k; i++) {
        if (depth == 0 && ticks[i].d > 0)
            out[*n].b = ticks[i].t;
        depth += ticks[i].d;
        if (depth == 0 && ticks[i].d < 0 && ticks[i].t > out[*n].b) {
            out[*n].e = ticks[i].t;
            (*n)++;
        }
    }
    free(ticks);
    return out;
}

static double nice_step(double span_us)
{
    double raw = span_us / 8, p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw && p > 1e-3)
        p /= 10;
    return raw < 2 * p ? 2 * p : raw < 5 * p ? 5 * p : 10 * p;
}

typedef struct svg {
    FILE *f;
    trace_model *m;
    uint64_t t0, t1;
    double plot_w;
    bool orch_lane;   /* tmr: the orchestrator's lane */
    uint32_t sched;   /* scheduler lanes */
    double cores_top; /* y of the first core lane */
} svg;

static double xat(const svg *s, uint64_t ns)
{
    if (ns < s->t0)
        ns = s->t0;
    return LABEL_W + s->plot_w * (double)(ns - s->t0) / (double)(s->t1 - s->t0);
}

/* y of core `core`'s lane: cluster by cluster, AIC then AIV0, AIV1. */
static double core_y(const svg *s, uint32_t core)
{
    uint32_t cl, ln;
    tm_core_place(s->m, core, &cl, &ln);
    return s->cores_top + (3 * cl + ln) * LANE_H;
}

static void lane_frame(const svg *s, double y, const char *fill, const char *label)
{
    fprintf(s->f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            LABEL_W, y, s->plot_w, LANE_H, fill, LABEL_W - 6, y + BAR_H, label);
}

/* A mark with a hover text that is not a task bar (the task bars are the
 * only rects with a <title> child). */
static void mark(const svg *s, const char *cls, uint64_t b, uint64_t e, double y, double h,
                 const char *fill, const char *title)
{
    double x0 = xat(s, b), x1 = xat(s, e);
    fprintf(s->f,
            "<g class=\"%s\"><title>%s</title><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
            "height=\"%.2f\" fill=\"%s\"/></g>\n",
            cls, title, x0, y, x1 - x0 > 0.4 ? x1 - x0 : 0.4, h, fill);
}

static void orchestrator_lane(const svg *s, double y)
{
    const sp_run_trace *tr = s->m->tr;
    lane_frame(s, y, "#eef3f8", "orchestrator");
    char title[96];
    if (tr->orch_end_ns) {
        snprintf(title, sizeof title, "orchestration %.2f .. %.2f us",
                 (double)(tr->orch_begin_ns - s->t0) / 1e3,
                 (double)(tr->orch_end_ns - s->t0) / 1e3);
        mark(s, "orch", tr->orch_begin_ns, tr->orch_end_ns, y + 2, BAR_H, "#c6dbef", title);
    }
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SUBMIT)
            continue;
        snprintf(title, sizeof title, "submit task %llu at %.2f us", (unsigned long long)r->task,
                 r->dispatch_ns > s->t0 ? (double)(r->dispatch_ns - s->t0) / 1e3 : 0.0);
        mark(s, "submit", r->dispatch_ns, r->end_ns, y + 2, BAR_H, "#08519c", title);
    }
}

static void scheduler_lanes(const svg *s, double y0)
{
    const sp_run_trace *tr = s->m->tr;
    for (uint32_t t = 0; t < s->sched; t++) {
        char label[32];
        snprintf(label, sizeof label, "scheduler %u", t);
        lane_frame(s, y0 + t * LANE_H, t % 2 ? "#f4f4f4" : "#fafafa", label);
    }
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->thread >= s->sched)
            continue;
        double y = y0 + r->thread * LANE_H + 2;
        char title[128];
        if (r->kind == SP_TRACE_SKIPPED) { /* retired without running: a hatched box */
            snprintf(title, sizeof title, "skipped #%llu (%s, predicate false) at %.2f us",
                     (unsigned long long)r->task, tm_kernel_name(s->m, r->func_id),
                     tm_span_us(s->t0, r->end_ns));
            double x = xat(s, r->end_ns);
            fprintf(s->f,
                    "<g class=\"skipped\"><title>%s</title><rect x=\"%.2f\" y=\"%.2f\" "
                    "width=\"5\" height=\"%.2f\" fill=\"url(#skip)\" stroke=\"#555\" "
                    "stroke-width=\"0.6\" stroke-dasharray=\"2,1\"/></g>\n",
                    title, x - 2.5, y, BAR_H);
            continue;
        }
        if (r->kind == SP_TRACE_SLICE) { /* the doorbell it rang: a tick */
            snprintf(title, sizeof title, "dispatch #%llu block %u to core %u at %.2f us",
                     (unsigned long long)r->task, r->block, r->core,
                     tm_span_us(s->t0, r->dispatch_ns));
            mark(s, "dispatch", r->dispatch_ns, r->dispatch_ns, y + BAR_H / 2, BAR_H / 2,
                 tm_kernel_colour(s->m, r->func_id), title);
            continue;
        }
        const char *what = r->kind == SP_TRACE_SCHED_PASS   ? "pass"
                           : r->kind == SP_TRACE_SCHED_IDLE ? "idle"
                           : r->kind == SP_TRACE_DUMMY      ? "dummy task"
                                                            : NULL;
        if (!what)
            continue;
        uint64_t b = r->kind == SP_TRACE_DUMMY ? r->start_ns : r->dispatch_ns;
        int w = snprintf(title, sizeof title, "%s", what);
        if (r->kind == SP_TRACE_DUMMY)
            w += snprintf(title + w, sizeof title - (size_t)w, " #%llu",
                          (unsigned long long)r->task);
        snprintf(title + w, sizeof title - (size_t)w, ": %.2f .. %.2f us", tm_span_us(s->t0, b),
                 tm_span_us(s->t0, r->end_ns));
        const char *fill = r->kind == SP_TRACE_SCHED_PASS   ? "#636363"
                           : r->kind == SP_TRACE_SCHED_IDLE ? "#d9d9d9"
                                                            : "#888888";
        mark(s, r->kind == SP_TRACE_DUMMY ? "dummy" : "sched", b, r->end_ns, y, BAR_H, fill, title);
    }
}

/* Hatch the gaps between this core's busy intervals where work of its type waited. */
static void idle_hatch(const svg *s, uint32_t core, double y, const ival *w, uint64_t n_w,
                       ival *busy)
{
    const sp_run_trace *tr = s->m->tr;
    uint64_t nb = 0;
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind == SP_TRACE_SLICE && r->core == core)
            busy[nb++] = (ival){r->dispatch_ns, r->end_ns};
    }
    qsort(busy, nb, sizeof *busy, cmp_ival);
    uint64_t idle_from = tr->launch_ns, wi = 0;
    for (uint64_t b = 0; b <= nb; b++) {
        uint64_t idle_to = b < nb ? busy[b].b : tr->done_ns;
        for (uint64_t k = wi; k < n_w && w[k].b < idle_to; k++) {
            uint64_t st = w[k].b > idle_from ? w[k].b : idle_from;
            uint64_t en = w[k].e < idle_to ? w[k].e : idle_to;
            if (en > st)
                fprintf(s->f,
                        "<rect class=\"idle\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
                        "height=\"%.1f\" fill=\"url(#idle)\"/>\n",
                        xat(s, st), y + 2, xat(s, en) - xat(s, st), BAR_H);
        }
        while (wi < n_w && w[wi].e <= idle_to)
            wi++;
        if (b < nb && busy[b].e > idle_from)
            idle_from = busy[b].e;
    }
}

static void core_lanes(const svg *s)
{
    trace_model *m = s->m;
    const sp_run_trace *tr = m->tr;
    uint32_t C = tr->clusters ? tr->clusters : 1;
    uint64_t nw[2] = {0, 0};
    ival *wait[2] = {waiting_work(m, false, &nw[0]), waiting_work(m, true, &nw[1])};
    ival *busy = malloc((tr->record_count + 1) * sizeof *busy);
    for (uint32_t i = 0; i < 3 * C; i++) {
        uint32_t cl = i / 3, ln = i % 3;
        uint32_t core = ln == 0 ? cl : C + 2 * cl + (ln - 1);
        char label[48];
        snprintf(label, sizeof label, "cluster %u %s", cl,
                 ln == 0   ? "AIC"
                 : ln == 1 ? "AIV0"
                           : "AIV1");
        double y = s->cores_top + i * LANE_H;
        lane_frame(s, y, i % 6 < 3 ? "#fafafa" : "#f0f0f0", label);
        if (busy && wait[ln == 0])
            idle_hatch(s, core, y, wait[ln == 0], nw[ln == 0], busy);
    }
    free(busy);
    free(wait[0]);
    free(wait[1]);

    /* Queued strips, then the bars over everything. */
    double row_h = STRIP_H / (m->queue_rows ? m->queue_rows : 1);
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE || r->core >= 3 * C || r->start_ns <= r->dispatch_ns)
            continue;
        char title[160];
        snprintf(title, sizeof title,
                 "#%llu block %u queued on the core %.2f us (dispatched %.2f, started %.2f)",
                 (unsigned long long)r->task, r->block, tm_span_us(r->dispatch_ns, r->start_ns),
                 tm_span_us(s->t0, r->dispatch_ns), tm_span_us(s->t0, r->start_ns));
        double y = core_y(s, r->core) + 2 + BAR_H + 0.5 + m->queue_row[i] * row_h;
        mark(s, "queued", r->dispatch_ns, r->start_ns, y, row_h, tm_kernel_colour(m, r->func_id),
             title);
    }
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE || r->core >= 3 * C)
            continue;
        bool crit = m->tasks[r->task].critical;
        double x0 = xat(s, r->start_ns), x1 = xat(s, r->end_ns), y = core_y(s, r->core);
        fprintf(s->f,
                "<rect class=\"task%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"><title>",
                crit ? " critical" : "", x0, y + 2, x1 - x0 > 0.5 ? x1 - x0 : 0.5, BAR_H,
                tm_kernel_colour(m, r->func_id), crit ? "#d7191c" : "#333", crit ? "1.5" : "0.3");
        xstr(s->f, tm_kernel_name(m, r->func_id));
        fprintf(s->f,
                " #%llu block %u%s: start %.2f us, end %.2f us (%.2f us), dispatched %.2f us, "
                "queued %.2f us</title></rect>\n",
                (unsigned long long)r->task, r->block, crit ? " (critical path)" : "",
                tm_span_us(s->t0, r->start_ns), tm_span_us(s->t0, r->end_ns),
                tm_span_us(r->start_ns, r->end_ns), tm_span_us(s->t0, r->dispatch_ns),
                tm_span_us(r->dispatch_ns, r->start_ns));
    }
}

/* The critical path's links: producer's end to consumer's start, in red. */
static void critical_links(const svg *s)
{
    trace_model *m = s->m;
    uint32_t C = m->tr->clusters ? m->tr->clusters : 1;
    for (int64_t c = m->cp_tail; c >= 0 && m->tasks[c].cp_prev >= 0; c = m->tasks[c].cp_prev) {
        const tm_task *ct = &m->tasks[c], *pt = &m->tasks[ct->cp_prev];
        const sp_trace_record *rc = &m->tr->records[ct->first_rec],
                              *rp = &m->tr->records[pt->last_rec];
        if (rc->core >= 3 * C || rp->core >= 3 * C)
            continue; /* a dummy on a scheduler lane */
        fprintf(s->f,
                "<line class=\"critical-link\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
                "stroke=\"#d7191c\" stroke-width=\"1.2\"/>\n",
                xat(s, rp->end_ns), core_y(s, rp->core) + 2 + BAR_H / 2, xat(s, rc->start_ns),
                core_y(s, rc->core) + 2 + BAR_H / 2);
    }
}

static void legend(const svg *s)
{
    trace_model *m = s->m;
    FILE *f = s->f;
    double lx = LABEL_W;
    for (uint32_t i = 0; i < m->name_count && lx < SVG_W - 200; i++) {
        fprintf(f,
                "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/><text "
                "x=\"%.1f\" y=\"38\">",
                lx, tm_kernel_colour(m, m->names[i].func_id), lx + 16);
        xstr(f, m->names[i].name);
        fputs("</text>\n", f);
        lx += 30 + 7.0 * (double)strlen(m->names[i].name);
    }
    fprintf(
        f,
        "<rect x=\"%.1f\" y=\"34\" width=\"12\" height=\"5\" fill=\"#888\" opacity=\"0.45\"/>"
        "<text x=\"%.1f\" y=\"38\">queued on core</text>\n"
        "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"url(#idle)\"/>"
        "<text x=\"%.1f\" y=\"38\">idle with ready work</text>\n"
        "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"white\" "
        "stroke=\"#d7191c\" stroke-width=\"1.5\"/><text x=\"%.1f\" y=\"38\">critical path</text>\n",
        lx, lx + 16, lx + 120, lx + 136, lx + 270, lx + 286);
    if (m->skipped)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"url(#skip)\" "
                "stroke=\"#555\" stroke-dasharray=\"2,1\"/><text x=\"%.1f\" y=\"38\">skipped "
                "(predicate false)</text>\n",
                lx + 370, lx + 386);
}

int tm_write_svg(trace_model *m, FILE *f)
{
    const sp_run_trace *tr = m->tr;
    svg s = {.f = f, .m = m, .t0 = tr->launch_ns, .t1 = tr->done_ns};
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind == SP_TRACE_SUBMIT)
            s.orch_lane = true;
        if (r->kind != SP_TRACE_SUBMIT && r->kind != SP_TRACE_SLICE &&
            (uint32_t)r->thread + 1 > s.sched && r->thread < tr->sched_threads)
            s.sched = r->thread + 1;
        if (r->dispatch_ns && r->dispatch_ns < s.t0)
            s.t0 = r->dispatch_ns;
        if (r->end_ns > s.t1)
            s.t1 = r->end_ns;
    }
    if (tr->orch_end_ns) {
        s.orch_lane = true;
        if (tr->orch_begin_ns && tr->orch_begin_ns < s.t0)
            s.t0 = tr->orch_begin_ns;
        if (tr->orch_end_ns > s.t1)
            s.t1 = tr->orch_end_ns;
    }
    if (tr->sched_threads > s.sched)
        s.sched = tr->sched_threads; /* every scheduler thread, busy or not */
    if (s.t1 <= s.t0)
        s.t1 = s.t0 + 1;
    uint32_t C = tr->clusters ? tr->clusters : 1;
    s.plot_w = SVG_W - LABEL_W - RIGHT_W;
    s.cores_top = TOP_H + ((s.orch_lane ? 1 : 0) + s.sched) * LANE_H;
    double bottom = s.cores_top + 3 * C * LANE_H, height = bottom + 40;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\" "
            "font-size=\"11\">\n",
            SVG_W, height, SVG_W, height);
    fputs("<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde0dd\"/>"
          "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e34a33\" stroke-width=\"2\"/>"
          "</pattern><pattern id=\"skip\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(-45)\"><rect width=\"4\" height=\"4\" fill=\"#f0f0f0\"/>"
          "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#777\" stroke-width=\"1.5\"/>"
          "</pattern><style>.queued rect{opacity:0.45}</style></defs>\n"
          "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
          f);
    fputs("<text x=\"120\" y=\"18\" font-size=\"14\" font-weight=\"bold\">simpler run", f);
    if (m->runtime[0]) {
        fputs(" (", f);
        xstr(f, m->runtime);
        fputc(')', f);
    }
    fprintf(f,
            ": %llu tasks, %llu edges, device %.1f us, critical path %.1f us over %llu "
            "tasks</text>\n",
            (unsigned long long)m->task_count, (unsigned long long)tr->edge_count,
            tm_span_us(tr->launch_ns, tr->done_ns), m->cp_ns / 1e3,
            (unsigned long long)m->cp_tasks);
    legend(&s);
    /* Time axis: grid lines and labels, in us from the first event. */
    double span = (double)(s.t1 - s.t0);
    double step = nice_step(span / 1e3);
    for (double us = 0; us * 1e3 <= span; us += step) {
        double x = LABEL_W + s.plot_w * us * 1e3 / span;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">%g</text>\n",
                x, TOP_H, x, bottom, x, TOP_H - 6, us);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">us</text>\n",
            LABEL_W - 6, TOP_H - 6);
    double y = TOP_H;
    if (s.orch_lane) {
        orchestrator_lane(&s, y);
        y += LANE_H;
    }
    scheduler_lanes(&s, y);
    core_lanes(&s);
    critical_links(&s);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">time since the first event (us); bars: "
            "kernels (hover for task, block, times); under them, lighter: time queued on the "
            "core after dispatch</text>\n</svg>\n",
            LABEL_W, bottom + 24);
    return SP_OK;
}
