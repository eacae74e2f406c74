/* SP_TRACE_FORMAT_DOT: the run's dependency graph in Graphviz DOT
 * (`dot -Tsvg out.dot`). Up to dot_detail_max tasks: a node per task
 * labelled by its kernel, shape and duration and filled in its kernel's
 * colour (a predicated task that was skipped: dashed, "skipped"), one rank per depth (a task's
 * depth is 1 + its deepest producer's), an edge per dependency labelled and coloured by its kind,
 * the critical path in bold red. Past that, a summary that stays readable:
 * one node per kernel per depth band (task count, mean duration), one edge
 * per pair of groups with the number of dependencies it stands for (and
 * how many of its tasks were skipped, the mean over those that ran). */
#include <stdlib.h>

#include "simpler/orchestration.h"
#include "simpler/status.h"
#include "trace/trace_model.h"

static const char *const kind_colour[SP_TRACE_EDGE_KINDS] = {"gray40", "black", "red3",
                                                             "darkorange", "blue3"};

/* A DOT string's body: quotes and backslashes escaped. */
static void dstr(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
}

static void header(FILE *f, const trace_model *m, const char *what)
{
    fprintf(f,
            "digraph simpler {\n  label=\"%s: %llu tasks, %llu edges, critical path %.1f us over "
            "%llu tasks (red)\";\n  labelloc=t;\n  rankdir=TB;\n  newrank=true;\n  node "
            "[shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\"];\n  "
            "edge [fontname=\"Helvetica\", fontsize=10];\n",
            what, (unsigned long long)m->task_count, (unsigned long long)m->tr->edge_count,
            m->cp_ns / 1e3, (unsigned long long)m->cp_tasks);
}

/* Nodes depth by depth, each depth one rank: tasks sorted by depth once. */
static int write_detail(trace_model *m, FILE *f)
{
    uint64_t n = m->task_count;
    uint64_t *first = calloc((size_t)m->max_depth + 2, sizeof *first);
    uint64_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!first || !order) {
        free(first);
        free(order);
        return SP_ENOMEM;
    }
    for (uint64_t i = 0; i < n; i++)
        first[m->tasks[i].depth + 1]++;
    for (uint32_t d = 1; d <= m->max_depth + 1; d++)
        first[d] += first[d - 1];
    for (uint64_t i = 0; i < n; i++)
        order[first[m->tasks[i].depth]++] = i;
    header(f, m, "dependency graph");
    uint64_t k = 0;
    for (uint32_t d = 0; d <= m->max_depth && k < n; d++) {
        fprintf(f, "  subgraph depth%u {\n    rank=same;\n", d);
        for (; k < n && m->tasks[order[k]].depth == d; k++) {
            uint64_t i = order[k];
            const tm_task *t = &m->tasks[i];
            double us = t->seen ? tm_span_us(t->start_ns, t->end_ns) : 0.0;
            fprintf(f, "    t%llu [label=\"", (unsigned long long)i);
            dstr(f, t->seen ? tm_kernel_name(m, t->func_id) : "?");
            char took[32];
            if (t->skipped)
                snprintf(took, sizeof took, "skipped");
            else
                snprintf(took, sizeof took, "%.1f us", us);
            fprintf(f, "\\n#%llu %s %s\", fillcolor=\"%s80\"%s%s];\n", (unsigned long long)i,
                    tm_shape_name(t->shape), took, tm_kernel_colour(m, t->seen ? t->func_id : -1),
                    t->skipped || t->shape == SP_SHAPE_DUMMY ? ", style=\"rounded,filled,dashed\""
                                                             : "",
                    t->critical ? ", color=red, penwidth=3" : "");
        }
        fputs("  }\n", f);
    }
    free(first);
    free(order);
    for (uint64_t i = 0; i < m->tr->edge_count; i++) {
        const sp_trace_edge *e = &m->tr->edges[i];
        uint32_t kd = e->kind < SP_TRACE_EDGE_KINDS ? e->kind : 0;
        bool crit = tm_edge_critical(m, e->producer, e->consumer);
        fprintf(f, "  t%llu -> t%llu [label=\"%s\", color=%s, fontcolor=%s%s];\n",
                (unsigned long long)e->producer, (unsigned long long)e->consumer,
                tm_edge_kind_name(e->kind), crit ? "red" : kind_colour[kd], kind_colour[kd],
                crit ? ", penwidth=3" : "");
    }
    fputs("}\n", f);
    return SP_OK;
}

typedef struct group {
    uint64_t count, sum_ns;
    uint64_t skipped; /* of count, predicated off (no duration: left out of the mean) */
    uint32_t depth_lo, depth_hi;
    int32_t func_id;
    bool critical;
} group;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#define SUMMARY_BANDS 24u

/* One node per (depth band, kernel); kernels not in the callable share a
 * slot, dummies another. */
static int write_summary(trace_model *m, FILE *f)
{
    uint32_t depths = m->max_depth + 1;
    uint32_t bands = depths < SUMMARY_BANDS ? depths : SUMMARY_BANDS;
    uint32_t slots = m->name_count + 2;
    uint64_t G = (uint64_t)bands * slots;
    group *g = calloc(G, sizeof *g);
    uint64_t *keys = malloc((m->tr->edge_count ? m->tr->edge_count : 1) * sizeof *keys);
    uint64_t *gid = malloc((m->task_count ? m->task_count : 1) * sizeof *gid);
    if (!g || !keys || !gid) {
        free(g);
        free(keys);
        free(gid);
        return SP_ENOMEM;
    }
    for (uint64_t i = 0; i < m->task_count; i++) {
        const tm_task *t = &m->tasks[i];
        uint32_t band = (uint32_t)((uint64_t)t->depth * bands / depths);
        int ki = t->seen && t->func_id >= 0 ? tm_kernel_index(m, t->func_id) : -2;
        uint32_t slot = ki >= 0 ? (uint32_t)ki : ki == -1 ? m->name_count : m->name_count + 1;
        group *x = &g[gid[i] = (uint64_t)band * slots + slot];
        if (!x->count) {
            x->depth_lo = x->depth_hi = t->depth;
            x->func_id = ki == -2 ? -1 : t->func_id;
        }
        x->depth_lo = t->depth < x->depth_lo ? t->depth : x->depth_lo;
        x->depth_hi = t->depth > x->depth_hi ? t->depth : x->depth_hi;
        x->count++;
        x->skipped += t->skipped;
        x->sum_ns += t->seen && t->end_ns > t->start_ns ? t->end_ns - t->start_ns : 0;
        x->critical |= t->critical;
    }
    /* Edges between groups: key = (from * G + to) * 2 + critical, sorted, counted. */
    uint64_t ne = 0;
    for (uint64_t i = 0; i < m->tr->edge_count; i++) {
        const sp_trace_edge *e = &m->tr->edges[i];
        if (e->producer >= m->task_count || e->consumer >= m->task_count)
            continue;
        keys[ne++] = (gid[e->producer] * G + gid[e->consumer]) * 2 +
                     tm_edge_critical(m, e->producer, e->consumer);
    }
    qsort(keys, ne, sizeof *keys, cmp_u64);

    header(f, m, "dependency summary (one node per kernel per depth band)");
    for (uint32_t b = 0; b < bands; b++) {
        fprintf(f, "  subgraph band%u {\n    rank=same;\n", b);
        for (uint32_t s = 0; s < slots; s++) {
            const group *x = &g[(uint64_t)b * slots + s];
            if (!x->count)
                continue;
            fprintf(f, "    g%llu [label=\"", (unsigned long long)((uint64_t)b * slots + s));
            dstr(f, s == m->name_count ? "other kernels" : tm_kernel_name(m, x->func_id));
            uint64_t ran = x->count - x->skipped;
            fprintf(f, "\\ndepth %u..%u\\n%llu tasks", x->depth_lo, x->depth_hi,
                    (unsigned long long)x->count);
            if (x->skipped)
                fprintf(f, " (%llu skipped)", (unsigned long long)x->skipped);
            fprintf(f, ", mean %.1f us\", fillcolor=\"%s80\"%s%s];\n",
                    ran ? x->sum_ns / 1e3 / (double)ran : 0.0, tm_kernel_colour(m, x->func_id),
                    ran ? "" : ", style=\"rounded,filled,dashed\"",
                    x->critical ? ", color=red, penwidth=3" : "");
        }
        fputs("  }\n", f);
    }
    for (uint64_t i = 0; i < ne;) {
        uint64_t pair = keys[i] / 2, count = 0;
        bool crit = false;
        for (; i < ne && keys[i] / 2 == pair; i++) {
            count++;
            crit |= keys[i] & 1;
        }
        uint32_t bits = 0; /* the pen grows with log2 of the edge count */
        while (bits < 40 && (count >> bits) > 1)
            bits++;
        fprintf(f, "  g%llu -> g%llu [label=\"%llu\", penwidth=%.1f%s];\n",
                (unsigned long long)(pair / G), (unsigned long long)(pair % G),
                (unsigned long long)count, 1.0 + bits / 2.0, crit ? ", color=red" : "");
    }
    fputs("}\n", f);
    free(g);
    free(keys);
    free(gid);
    return SP_OK;
}

int tm_write_dot(trace_model *m, FILE *f)
{
    return m->task_count > m->dot_detail_max ? write_summary(m, f) : write_detail(m, f);
}
