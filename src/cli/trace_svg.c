/* `simpler run --swimlane out.svg`: a self-contained SVG swimlane that any
 * browser opens. A time axis over the device run, one lane per core, each
 * block a core ran as a bar coloured by its kernel (hover: task, block,
 * times), and hatched where the core sat idle while a block of its core
 * type was ready and not yet dispatched ("idle with ready work"). */
#include <stdlib.h>
#include <string.h>

#include "cli/trace_model.h"

#define SVG_W 1200.0
#define LABEL_W 120.0
#define RIGHT_W 20.0
#define LANE_H 20.0
#define TOP_H 64.0

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define PALETTE_N (sizeof palette / sizeof palette[0])

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

/* Colour of a kernel: by its position among the callable's kernels. */
static const char *colour_of(const trace_model *m, int32_t func_id)
{
    if (func_id < 0)
        return "#888888";
    for (uint32_t i = 0; i < m->name_count; i++)
        if (m->names[i].func_id == func_id)
            return palette[i % PALETTE_N];
    return palette[(uint32_t)func_id % PALETTE_N];
}

/* Intervals where at least one block that runs on core type `is_aic` was
 * ready and not yet dispatched; *n gets the count. Caller frees. */
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

int trace_write_svg(const trace_model *m, const char *path)
{
    const sp_run_trace *tr = m->tr;
    uint32_t C = tr->clusters ? tr->clusters : 1, cores = 3 * C;
    uint64_t t0 = tr->launch_ns, t1 = tr->done_ns;
    for (uint64_t i = 0; i < tr->record_count; i++) {
        const sp_trace_record *r = &tr->records[i];
        if (r->kind != SP_TRACE_SLICE)
            continue;
        if (r->dispatch_ns < t0)
            t0 = r->dispatch_ns;
        if (r->end_ns > t1)
            t1 = r->end_ns;
    }
    if (t1 <= t0)
        t1 = t0 + 1;
    double plot_w = SVG_W - LABEL_W - RIGHT_W;
    double span = (double)(t1 - t0);
#define X(ns) (LABEL_W + plot_w * (double)((ns)-t0) / span)
    /* Lanes: cluster by cluster, AIC then AIV0, AIV1. */
    double height = TOP_H + cores * LANE_H + 40;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\" "
            "font-size=\"11\">\n",
            SVG_W, height, SVG_W, height);
    fputs("<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fde0dd\"/>"
          "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e34a33\" stroke-width=\"2\"/>"
          "</pattern></defs>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
          f);
    fprintf(f,
            "<text x=\"%.0f\" y=\"18\" font-size=\"14\" font-weight=\"bold\">simpler run "
            "(%s): %llu tasks, %llu edges, device %.1f us</text>\n",
            LABEL_W, m->runtime, (unsigned long long)m->task_count,
            (unsigned long long)tr->edge_count, (tr->done_ns - tr->launch_ns) / 1e3);
    /* Legend: kernels, then the idle shading. */
    double lx = LABEL_W;
    for (uint32_t i = 0; i < m->name_count; i++) {
        fprintf(f,
                "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"%s\"/><text "
                "x=\"%.1f\" y=\"38\">%s</text>\n",
                lx, palette[i % PALETTE_N], lx + 16, m->names[i].name);
        lx += 30 + 7.5 * (double)strlen(m->names[i].name);
    }
    fprintf(f,
            "<rect x=\"%.1f\" y=\"28\" width=\"12\" height=\"12\" fill=\"url(#idle)\"/><text "
            "x=\"%.1f\" y=\"38\">idle with ready work</text>\n",
            lx, lx + 16);
    /* Time axis: grid lines and labels, in us from launch. */
    double step = nice_step(span / 1e3);
    double axis_y = TOP_H - 6, bottom = TOP_H + cores * LANE_H;
    for (double us = 0; us * 1e3 <= span; us += step) {
        double x = LABEL_W + plot_w * us * 1e3 / span;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">%g</text>\n",
                x, TOP_H, x, bottom, x, axis_y, us);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">us</text>\n",
            LABEL_W - 6, axis_y);

    uint64_t nw[2];
    ival *wait[2] = {waiting_work(m, false, &nw[0]), waiting_work(m, true, &nw[1])};
    ival *busy = malloc((tr->record_count + 1) * sizeof *busy);
    for (uint32_t lane_i = 0; lane_i < cores; lane_i++) {
        uint32_t cl = lane_i / 3, ln = lane_i % 3;
        uint32_t core = ln == 0 ? cl : C + 2 * cl + (ln - 1);
        double y = TOP_H + lane_i * LANE_H;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">cluster %u %s</text>\n",
                LABEL_W, y, plot_w, LANE_H, lane_i % 6 < 3 ? "#fafafa" : "#f0f0f0", LABEL_W - 6,
                y + LANE_H - 6, cl,
                ln == 0   ? "AIC"
                : ln == 1 ? "AIV0"
                          : "AIV1");
        /* This core's busy intervals, sorted; the gaps between them are idle. */
        uint64_t nb = 0;
        for (uint64_t i = 0; busy && i < tr->record_count; i++) {
            const sp_trace_record *r = &tr->records[i];
            if (r->kind == SP_TRACE_SLICE && r->core == core)
                busy[nb++] = (ival){r->dispatch_ns, r->end_ns};
        }
        if (busy)
            qsort(busy, nb, sizeof *busy, cmp_ival);
        const ival *w = wait[ln == 0];
        uint64_t n_w = nw[ln == 0], wi = 0;
        uint64_t idle_from = tr->launch_ns;
        for (uint64_t b = 0; w && b <= nb; b++) {
            uint64_t idle_to = b < nb ? busy[b].b : tr->done_ns;
            for (uint64_t k = wi; k < n_w && w[k].b < idle_to; k++) {
                uint64_t s = w[k].b > idle_from ? w[k].b : idle_from;
                uint64_t e = w[k].e < idle_to ? w[k].e : idle_to;
                if (e > s)
                    fprintf(f,
                            "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                            "fill=\"url(#idle)\"/>\n",
                            X(s), y + 2, X(e) - X(s), LANE_H - 4);
            }
            while (wi < n_w && w[wi].e <= idle_to)
                wi++;
            if (b < nb && busy[b].e > idle_from)
                idle_from = busy[b].e;
        }
        for (uint64_t i = 0; i < tr->record_count; i++) {
            const sp_trace_record *r = &tr->records[i];
            if (r->kind != SP_TRACE_SLICE || r->core != core)
                continue;
            double x0 = X(r->start_ns), x1 = X(r->end_ns);
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                    "stroke=\"#333\" stroke-width=\"0.3\"><title>%s #%llu block %u: start %.2f us, "
                    "end %.2f us (%.2f us), dispatched %.2f us</title></rect>\n",
                    x0, y + 2, x1 - x0 > 0.5 ? x1 - x0 : 0.5, LANE_H - 4, colour_of(m, r->func_id),
                    tm_kernel_name(m, r->func_id), (unsigned long long)r->task, r->block,
                    (r->start_ns - t0) / 1e3, (r->end_ns - t0) / 1e3,
                    (r->end_ns - r->start_ns) / 1e3, (r->dispatch_ns - t0) / 1e3);
        }
    }
    free(busy);
    free(wait[0]);
    free(wait[1]);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" fill=\"#555\">time since launch (us); bars: kernels "
            "(hover for task, block, times)</text>\n</svg>\n",
            LABEL_W, bottom + 24);
#undef X
    return fclose(f) ? -1 : 0;
}
