/* A traced run's edges as (producer, consumer) pairs, sorted by consumer,
 * then producer: how the scene tests compare two runs' edge sets pair for
 * pair. For Criterion tests (it asserts that no edge was dropped). */
#ifndef SP_TESTS_TRACE_PAIRS_H
#define SP_TESTS_TRACE_PAIRS_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "simpler/trace.h"

typedef struct pair {
    uint64_t producer, consumer;
} pair;

static inline int cmp_pair(const void *x, const void *y)
{
    const pair *a = x, *b = y;
    if (a->consumer != b->consumer)
        return a->consumer < b->consumer ? -1 : 1;
    if (a->producer != b->producer)
        return a->producer < b->producer ? -1 : 1;
    return 0;
}

/* tr's edges, sorted (calloc'd, one spare entry: the caller frees);
 * *n = how many. */
static inline pair *trace_pairs(const sp_run_trace *tr, uint64_t *n)
{
    cr_assert_not_null(tr);
    cr_assert_eq(tr->edges_dropped, 0);
    pair *p = calloc(tr->edge_count + 1, sizeof *p);
    cr_assert_not_null(p);
    for (uint64_t i = 0; i < tr->edge_count; i++)
        p[i] = (pair){tr->edges[i].producer, tr->edges[i].consumer};
    qsort(p, tr->edge_count, sizeof *p, cmp_pair);
    *n = tr->edge_count;
    return p;
}

#endif
