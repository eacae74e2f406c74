/* oneTBB flow graph peer: the prebuilt-graph anchor. The suite's DAG becomes
 * one continue_node per task with an edge per dependence (derived here once,
 * from the same access lists the other systems get: read-after-write,
 * write-after-write and write-after-read), built once (timed on its own as
 * build_ns), run once as a warm-up, then re-run: the re-run is the timed
 * figure. Parallelism is capped at SUITE_TBB_THREADS (bench/run: 2). */
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "suite.h"

using tbb::flow::continue_msg;
using node = tbb::flow::continue_node<continue_msg>;

namespace
{

struct graph_state {
    const suite_opts *o;
    suite_tile *tiles;
    double *a;
    uint64_t spin_ns = 0;
    int failed = 0;
};

/* Build the flow graph; roots get the task ids with no predecessor. */
void build(tbb::flow::graph &g, graph_state &s, std::vector<std::unique_ptr<node>> &nodes,
           std::vector<uint32_t> &roots, uint64_t &edges)
{
    const suite_opts *o = s.o;
    const uint64_t ntiles = dag_tile_count(o->kind, o->tiles);
    std::vector<int64_t> last_writer(ntiles, -1);
    std::vector<std::vector<uint32_t>> readers(ntiles); /* since the last write */
    nodes.reserve(dag_task_count(o->kind, o->tiles));
    dag_iter it;
    dag_task t;
    dag_begin(&it, o->kind, o->tiles);
    std::vector<uint32_t> preds;
    while (dag_next(&it, &t)) {
        const uint32_t id = (uint32_t)nodes.size();
        graph_state *sp = &s;
        nodes.emplace_back(new node(g, [sp, t](const continue_msg &) {
            if (sp->o->real)
                sp->failed |= suite_chol_task(sp->o, sp->a, &t);
            else
                suite_task_body(sp->tiles, t.tile[t.n_acc - 1], sp->spin_ns);
        }));
        preds.clear();
        for (int i = 0; i < t.n_acc; i++) {
            const uint32_t tile = t.tile[i];
            if (last_writer[tile] >= 0)
                preds.push_back((uint32_t)last_writer[tile]); /* RAW, WAW */
            if (t.mode[i] & ACC_W) {
                for (uint32_t r : readers[tile])
                    if (r != id)
                        preds.push_back(r); /* WAR */
                readers[tile].clear();
                last_writer[tile] = id;
            } else {
                readers[tile].push_back(id);
            }
        }
        /* A predecessor named twice would be counted twice by continue_node. */
        std::vector<uint32_t> uniq;
        for (uint32_t p : preds) {
            bool seen = false;
            for (uint32_t q : uniq)
                seen |= q == p;
            if (!seen && p != id)
                uniq.push_back(p);
        }
        for (uint32_t p : uniq)
            tbb::flow::make_edge(*nodes[p], *nodes[id]);
        edges += uniq.size();
        if (uniq.empty())
            roots.push_back(id);
    }
}

uint64_t run(tbb::flow::graph &g, std::vector<std::unique_ptr<node>> &nodes,
             const std::vector<uint32_t> &roots)
{
    uint64_t t0 = suite_now_ns();
    for (uint32_t r : roots)
        nodes[r]->try_put(continue_msg());
    g.wait_for_all();
    return suite_now_ns() - t0;
}

} // namespace

int main(int argc, char **argv)
{
    suite_opts o;
    if (suite_parse(argc, argv, &o, nullptr, nullptr))
        return 2;
    const char *env = std::getenv("SUITE_TBB_THREADS");
    const int threads = env ? std::atoi(env) : 2;
    tbb::global_control cap(tbb::global_control::max_allowed_parallelism, (size_t)threads);

    graph_state s;
    s.o = &o;
    s.tiles = o.real ? nullptr : suite_tiles_alloc(&o);
    s.a = o.real ? suite_matrix_alloc(&o) : nullptr;
    double *a0 = nullptr;
    if (!s.tiles && !s.a)
        return 1;
    if (o.real) {
        suite_blas_threads(1); /* one BLAS thread per task: the graph is the parallelism */
        suite_matrix_fill(&o, s.a);
        a0 = o.check ? suite_matrix_copy(&o, s.a) : nullptr;
    }

    tbb::flow::graph g;
    std::vector<std::unique_ptr<node>> nodes;
    std::vector<uint32_t> roots;
    uint64_t edges = 0;
    uint64_t t0 = suite_now_ns();
    build(g, s, nodes, roots, edges);
    const uint64_t build_ns = suite_now_ns() - t0;

    uint64_t ns;
    if (o.real) {
        ns = run(g, nodes, roots); /* the matrix is consumed: no re-run */
    } else {
        run(g, nodes, roots); /* the first run */
        s.spin_ns = o.spin_ns;
        ns = run(g, nodes, roots); /* the re-run of the same graph: timed */
    }
    char extra[256];
    double res = 0;
    int bad = s.failed;
    if (!bad && o.real)
        bad = o.check && suite_matrix_check(&o, a0, s.a, &res);
    else if (!bad)
        bad = suite_tiles_check(&o, s.tiles, 2) != 0;
    if (bad) {
        std::fprintf(stderr, "peer_tbb: %s is wrong\n", o.workload);
        return 1;
    }
    if (o.real)
        std::snprintf(extra, sizeof extra,
                      "threads=%d build_ns=%llu edges=%llu residual=%.3g gflops=%.2f", threads,
                      (unsigned long long)build_ns, (unsigned long long)edges, res,
                      (double)o.n * o.n * o.n / 3.0 / (double)ns);
    else
        std::snprintf(extra, sizeof extra, "threads=%d build_ns=%llu edges=%llu", threads,
                      (unsigned long long)build_ns, (unsigned long long)edges);
    suite_result(&o, "tbb", "flow_graph", nodes.size(), ns, extra);
    std::free(s.tiles);
    std::free(s.a);
    std::free(a0);
    return 0;
}
