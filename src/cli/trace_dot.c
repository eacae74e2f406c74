/* `simpler run --deps out.dot`: the run's dependency graph in Graphviz DOT
 * (`dot -Tsvg out.dot`): a node per task labelled by its kernel, shape and
 * duration, an edge per dependency labelled and coloured by its kind. The
 * edge count is the PASS line's edges=. */
#include "cli/trace_model.h"
#include "simpler/orchestration.h"

static const char *const kind_colour[SP_TRACE_EDGE_KINDS] = {"gray40", "black", "red3",
                                                             "darkorange", "blue3"};

int trace_write_dot(const trace_model *m, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "digraph simpler {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
               "fillcolor=white, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", "
               "fontsize=10];\n");
    for (uint64_t i = 0; i < m->task_count; i++) {
        const tm_task *t = &m->tasks[i];
        double us = t->seen && t->end_ns > t->start_ns ? (t->end_ns - t->start_ns) / 1e3 : 0.0;
        fprintf(f, "  t%llu [label=\"%s\\n#%llu %s %.1f us\"%s];\n", (unsigned long long)i,
                t->seen ? tm_kernel_name(m, t->func_id) : "?", (unsigned long long)i,
                tm_shape_name(t->shape), us, t->shape == SP_SHAPE_DUMMY ? ", style=dashed" : "");
    }
    for (uint64_t i = 0; i < m->tr->edge_count; i++) {
        const sp_trace_edge *e = &m->tr->edges[i];
        uint32_t k = e->kind < SP_TRACE_EDGE_KINDS ? e->kind : 0;
        fprintf(f, "  t%llu -> t%llu [label=\"%s\", color=%s, fontcolor=%s];\n",
                (unsigned long long)e->producer, (unsigned long long)e->consumer,
                tm_edge_kind_name(e->kind), kind_colour[k], kind_colour[k]);
    }
    fputs("}\n", f);
    return fclose(f) ? -1 : 0;
}
