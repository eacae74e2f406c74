/* The context's cache of recorded graphs (runtime/host/graph_cache.h): the
 * graph key (what it holds and what it leaves out), lookups, the recorded
 * control reads, the count and byte bounds (least recently used first,
 * never a held entry), holds that outlive a drop, and forget. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host/graph_cache.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"

static rt_loaded_callable lc;
static rt_graph_key *key;
static int frees;

static void setup(void)
{
    memset(&lc, 0, sizeof lc);
    lc.id = 3;
    key = malloc(sizeof *key);
    cr_assert_not_null(key);
    frees = 0;
}

static void teardown(void)
{
    free(key);
}

TestSuite(graph_cache, .init = setup, .fini = teardown);

static void one_tensor(sp_args *a, void *host, int64_t n, uint64_t scalar)
{
    memset(a, 0, sizeof *a);
    a->tensor_count = 1;
    a->scalar_count = 1;
    a->dirs[0] = SP_INOUT;
    sp_tensor_init(&a->tensors[0], (uint64_t)(uintptr_t)host, SP_DTYPE_I32, 1, &n);
    a->scalars[0] = scalar;
}

static void count_free(void *record)
{
    frees++;
    free(record);
}

/* A filled entry for the key of `a`, holding `bytes` of record. */
static rt_graph *entry(rt_graph_cache *c, const sp_args *a, uint64_t bytes)
{
    (void)c;
    cr_assert_eq(rt_graph_key_build(key, &lc, a, NULL, false), SP_OK);
    rt_graph *g = rt_graph_new(key);
    cr_assert_not_null(g);
    g->record = malloc(8);
    g->record_bytes = bytes;
    g->free_record = count_free;
    return g;
}

static rt_graph *lookup(rt_graph_cache *c, const sp_args *a, bool *stale)
{
    cr_assert_eq(rt_graph_key_build(key, &lc, a, NULL, false), SP_OK);
    return rt_graph_cache_acquire(c, key, a, stale);
}

Test(graph_cache, the_key_holds_geometry_and_shaping_scalars_not_addresses)
{
    int32_t x[16], y[16];
    sp_args a, b;
    one_tensor(&a, x, 16, 7);
    one_tensor(&b, y, 16, 7); /* another host buffer: the same key */
    rt_graph_key *k2 = malloc(sizeof *k2);
    cr_assert_eq(rt_graph_key_build(key, &lc, &a, NULL, false), SP_OK);
    cr_assert_eq(rt_graph_key_build(k2, &lc, &b, NULL, false), SP_OK);
    cr_assert_eq(key->len, k2->len);
    cr_assert_eq(memcmp(key->data, k2->data, key->len), 0);
    cr_assert_eq(key->hash, k2->hash);
    /* A scalar shapes the graph unless the config says it is data. */
    b.scalars[0] = 8;
    cr_assert_eq(rt_graph_key_build(k2, &lc, &b, NULL, false), SP_OK);
    cr_assert_neq(key->hash, k2->hash);
    lc.orch_config = (sp_orch_config_fn)(uintptr_t)1; /* only tested for NULL */
    lc.config.replay = SP_ORCH_REPLAY_DECLARED;       /* no shaping scalars: all data */
    cr_assert(rt_graph_scalar_is_data(&lc, 0));
    cr_assert_eq(rt_graph_key_build(key, &lc, &a, NULL, false), SP_OK);
    cr_assert_eq(rt_graph_key_build(k2, &lc, &b, NULL, false), SP_OK);
    cr_assert_eq(key->hash, k2->hash);
    lc.config.shaping_scalars[0] = 1;
    cr_assert_not(rt_graph_scalar_is_data(&lc, 0));
    cr_assert_eq(rt_graph_key_build(key, &lc, &a, NULL, false), SP_OK);
    /* Shape, direction, checking mode and graph-shaping config fields. */
    sp_args c = a;
    c.tensors[0].shape[0] = 8;
    cr_assert_eq(rt_graph_key_build(k2, &lc, &c, NULL, false), SP_OK);
    cr_assert_neq(key->hash, k2->hash);
    c = a;
    c.dirs[0] = SP_IN;
    cr_assert_eq(rt_graph_key_build(k2, &lc, &c, NULL, false), SP_OK);
    cr_assert_neq(key->hash, k2->hash);
    cr_assert_eq(rt_graph_key_build(k2, &lc, &a, NULL, true), SP_OK);
    cr_assert_neq(key->hash, k2->hash);
    sp_call_config cfg = {.task_window = 64};
    cr_assert_eq(rt_graph_key_build(k2, &lc, &a, &cfg, false), SP_OK);
    cr_assert_neq(key->hash, k2->hash);
    cfg = (sp_call_config){.trace_level = 1, .timeout_us = 5}; /* shape nothing */
    cr_assert_eq(rt_graph_key_build(k2, &lc, &a, &cfg, false), SP_OK);
    cr_assert_eq(key->hash, k2->hash);
    /* An orchestration that is never kept has no key. */
    lc.config.replay = SP_ORCH_REPLAY_NEVER;
    cr_assert_eq(rt_graph_key_build(k2, &lc, &a, NULL, false), SP_ENOTSUP);
    free(k2);
}

Test(graph_cache, an_inserted_graph_is_found_and_held)
{
    rt_graph_cache c;
    cr_assert_eq(rt_graph_cache_init(&c, 0, 0), SP_OK);
    int32_t x[16] = {0};
    sp_args a;
    one_tensor(&a, x, 16, 1);
    bool stale;
    cr_assert_null(lookup(&c, &a, &stale));
    cr_assert_not(stale);
    rt_graph *g = entry(&c, &a, 100);
    cr_assert_eq(rt_graph_cache_insert(&c, g), SP_OK);
    rt_graph_cache_release(&c, g);
    rt_graph *h = lookup(&c, &a, &stale);
    cr_assert_eq(h, g);
    cr_assert_eq(h->refs, 1);
    rt_graph_cache_count_replay(&c);
    sp_graph_cache_info info;
    rt_graph_cache_info(&c, &info);
    cr_assert_eq(info.count, 1);
    cr_assert_eq(info.recorded, 1);
    cr_assert_eq(info.replayed, 1);
    cr_assert_eq(info.max_count, RT_GRAPH_CACHE_COUNT);
    cr_assert_eq(info.max_bytes, RT_GRAPH_CACHE_BYTES);
    cr_assert_geq(info.bytes, 100);
    /* Dropped while held: freed at the release, not before. */
    rt_graph_cache_forget(&c, lc.id, NULL);
    cr_assert_eq(frees, 0);
    rt_graph_cache_release(&c, h);
    cr_assert_eq(frees, 1);
    cr_assert_null(lookup(&c, &a, &stale));
    rt_graph_cache_destroy(&c);
}

Test(graph_cache, a_changed_control_value_drops_the_graph)
{
    rt_graph_cache c;
    cr_assert_eq(rt_graph_cache_init(&c, 0, 0), SP_OK);
    int32_t x[16] = {0};
    x[5] = 42;
    sp_args a;
    one_tensor(&a, x, 16, 1);
    rt_graph *g = entry(&c, &a, 10);
    g->reads = malloc(sizeof *g->reads);
    g->reads[0] = (rt_graph_read){.arg = 0, .bytes = 4, .byte_off = 20, .value = 42};
    g->read_count = 1;
    cr_assert_eq(rt_graph_cache_insert(&c, g), SP_OK);
    rt_graph_cache_release(&c, g);
    bool stale;
    rt_graph *h = lookup(&c, &a, &stale);
    cr_assert_eq(h, g);
    rt_graph_cache_release(&c, h);
    x[5] = 43; /* another value in the new run's data */
    cr_assert_null(lookup(&c, &a, &stale));
    cr_assert(stale);
    sp_graph_cache_info info;
    rt_graph_cache_info(&c, &info);
    cr_assert_eq(info.rerecorded, 1);
    cr_assert_eq(info.count, 0);
    cr_assert_eq(frees, 1);
    /* A read past the buffer never matches. */
    g = entry(&c, &a, 10);
    g->reads = malloc(sizeof *g->reads);
    g->reads[0] = (rt_graph_read){.arg = 0, .bytes = 8, .byte_off = 60, .value = 0};
    g->read_count = 1;
    cr_assert_eq(rt_graph_cache_insert(&c, g), SP_OK);
    rt_graph_cache_release(&c, g);
    cr_assert_null(lookup(&c, &a, &stale));
    rt_graph_cache_destroy(&c);
}

Test(graph_cache, the_count_bound_evicts_the_least_recently_used)
{
    rt_graph_cache c;
    cr_assert_eq(rt_graph_cache_init(&c, 2, 0), SP_OK);
    int32_t x[16] = {0};
    sp_args a[3];
    rt_graph *g[3];
    for (int i = 0; i < 3; i++)
        one_tensor(&a[i], x, 16, (uint64_t)i);
    bool stale;
    for (int i = 0; i < 2; i++) {
        g[i] = entry(&c, &a[i], 10);
        cr_assert_eq(rt_graph_cache_insert(&c, g[i]), SP_OK);
        rt_graph_cache_release(&c, g[i]);
    }
    /* Use graph 0: graph 1 is now the least recently used. */
    rt_graph_cache_release(&c, lookup(&c, &a[0], &stale));
    g[2] = entry(&c, &a[2], 10);
    cr_assert_eq(rt_graph_cache_insert(&c, g[2]), SP_OK);
    rt_graph_cache_release(&c, g[2]);
    cr_assert_null(lookup(&c, &a[1], &stale));
    rt_graph *h0 = lookup(&c, &a[0], &stale), *h2 = lookup(&c, &a[2], &stale);
    cr_assert_eq(h0, g[0]);
    cr_assert_eq(h2, g[2]);
    sp_graph_cache_info info;
    rt_graph_cache_info(&c, &info);
    cr_assert_eq(info.evicted, 1);
    cr_assert_eq(info.count, 2);
    /* Both held: a third insert stays over the bound rather than drop one in use. */
    g[1] = entry(&c, &a[1], 10);
    cr_assert_eq(rt_graph_cache_insert(&c, g[1]), SP_OK);
    rt_graph_cache_release(&c, g[1]);
    rt_graph_cache_info(&c, &info);
    cr_assert_eq(info.count, 3);
    rt_graph_cache_release(&c, h0);
    rt_graph_cache_release(&c, h2);
    rt_graph_cache_destroy(&c);
    cr_assert_eq(frees, 4);
}

Test(graph_cache, the_byte_bound_evicts_and_refuses_a_graph_too_big_alone)
{
    rt_graph_cache c;
    cr_assert_eq(rt_graph_cache_init(&c, 0, 4096), SP_OK);
    int32_t x[16] = {0};
    sp_args a, b;
    one_tensor(&a, x, 16, 1);
    one_tensor(&b, x, 16, 2);
    rt_graph *g = entry(&c, &a, 3000);
    cr_assert_eq(rt_graph_cache_insert(&c, g), SP_OK);
    rt_graph_cache_release(&c, g);
    rt_graph *h = entry(&c, &b, 3000); /* the two do not fit together */
    cr_assert_eq(rt_graph_cache_insert(&c, h), SP_OK);
    rt_graph_cache_release(&c, h);
    bool stale;
    cr_assert_null(lookup(&c, &a, &stale));
    rt_graph *found = lookup(&c, &b, &stale);
    cr_assert_eq(found, h);
    rt_graph_cache_release(&c, found);
    rt_graph *big = entry(&c, &a, 5000);
    cr_assert_eq(rt_graph_cache_insert(&c, big), SP_EGRAPH_LIMIT);
    rt_graph_cache_release(&c, big); /* the caller drops what was not kept */
    cr_assert_eq(frees, 2);
    rt_graph_cache_destroy(&c);
    cr_assert_eq(frees, 3);
}

Test(graph_cache, forget_drops_one_key_or_a_whole_callable)
{
    rt_graph_cache c;
    cr_assert_eq(rt_graph_cache_init(&c, 0, 0), SP_OK);
    int32_t x[16] = {0};
    sp_args a, b;
    one_tensor(&a, x, 16, 1);
    one_tensor(&b, x, 16, 2);
    rt_graph *g = entry(&c, &a, 10), *h = entry(&c, &b, 10);
    cr_assert_eq(rt_graph_cache_insert(&c, g), SP_OK);
    cr_assert_eq(rt_graph_cache_insert(&c, h), SP_OK);
    rt_graph_cache_release(&c, g);
    rt_graph_cache_release(&c, h);
    cr_assert_eq(rt_graph_key_build(key, &lc, &a, NULL, false), SP_OK);
    rt_graph_cache_forget(&c, lc.id, key);
    bool stale;
    cr_assert_null(lookup(&c, &a, &stale));
    rt_graph *found = lookup(&c, &b, &stale);
    cr_assert_eq(found, h);
    rt_graph_cache_release(&c, found);
    rt_graph_cache_forget(&c, lc.id + 1, NULL); /* another callable: nothing */
    cr_assert_eq(frees, 1);
    rt_graph_cache_forget(&c, lc.id, NULL);
    cr_assert_eq(frees, 2);
    rt_graph_cache_destroy(&c);
}
