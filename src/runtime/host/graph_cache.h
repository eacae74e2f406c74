/* Recorded graphs (DESIGN §12, replay across runs): a context's bounded
 * cache of graphs a runtime recorded, keyed by callable and graph key,
 * least recently used dropped first. The cache is runtime-neutral: an
 * entry holds the key, the control-tensor reads the recording made (a
 * replay is valid only while they read the same values), and the
 * runtime's record as an opaque blob with its own free function. Entries
 * are reference-counted: a prepared run holds the one it replays, and an
 * entry dropped (bound, forget, unregister) while held is freed when the
 * last holder releases it. All calls are thread-safe (one mutex, held
 * only for list and counter updates, never across a runtime call). */
#ifndef SP_RUNTIME_HOST_GRAPH_CACHE_H
#define SP_RUNTIME_HOST_GRAPH_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/host/loaded_callable.h"
#include "simpler/module.h"
#include "simpler/types.h"

#define RT_GRAPH_CACHE_COUNT 16u            /* settings.graph_cache_count 0 */
#define RT_GRAPH_CACHE_BYTES (256ull << 20) /* settings.graph_cache_bytes 0 */

/* sp_call_config.flags -> the run's policy. */
enum { RT_REPLAY_OFF = 0, RT_REPLAY_AUTO = 1, RT_REPLAY_ONLY = 2 };

/* One control-tensor element the orchestration read while recording, in
 * a staged run argument: replay compares it against the new run's host
 * data (args->tensors[arg].addr + byte_off) before staging. */
typedef struct rt_graph_read {
    uint32_t arg;      /* run tensor index */
    uint32_t bytes;    /* element size, 1..8 */
    uint64_t byte_off; /* from the argument's buffer start (addr) */
    uint64_t value;    /* the bytes read, little-endian in the low `bytes` */
} rt_graph_read;

/* The graph key of a run, built by rt_graph_key_build: the bytes compared
 * and their hash. */
#define RT_GRAPH_KEY_MAX 65536u
typedef struct rt_graph_key {
    uint64_t hash;
    uint32_t callable_id;
    uint32_t len;
    uint8_t data[RT_GRAPH_KEY_MAX];
} rt_graph_key;

/* Build `k` for a run of `lc` on `args` with `config` (and the checking
 * mode `check`): the argument geometry (tensor and scalar counts; per
 * tensor its direction, dtype, ndim, shape, strides, offset, buffer
 * bytes), the graph-shaping scalars by value (every scalar unless lc's
 * config declares which, SP_ORCH_REPLAY_DECLARED), and the config fields
 * that shape a graph (clusters, sched_threads, heap_bytes, task_window,
 * graph_tasks, graph_bytes, check). 0, or SP_ENOTSUP when lc's config says
 * SP_ORCH_REPLAY_NEVER. */
int rt_graph_key_build(rt_graph_key *k, const rt_loaded_callable *lc, const sp_args *args,
                       const sp_call_config *config, bool check);
/* Whether run scalar `i` is data (not part of the key): patched on replay. */
bool rt_graph_scalar_is_data(const rt_loaded_callable *lc, uint32_t i);

typedef struct rt_graph rt_graph;
struct rt_graph {
    /* The runtime fills these before rt_graph_cache_insert. */
    void *record;          /* the runtime's record */
    uint64_t record_bytes; /* host bytes it holds (counted against the bound) */
    void (*free_record)(void *record);
    rt_graph_read *reads; /* malloc'd, owned by the entry; NULL if none */
    uint32_t read_count;
    /* The cache's. */
    uint32_t callable_id;
    uint64_t hash;
    uint32_t key_len;
    uint8_t *key; /* a copy of the key's bytes */
    uint32_t refs;
    bool dropped; /* out of the cache; freed at the last release */
    uint64_t last_use;
    rt_graph *prev, *next;
};

typedef struct rt_graph_cache {
    pthread_mutex_t lock;
    uint32_t max_count;
    uint64_t max_bytes;
    uint32_t count;
    uint64_t bytes;
    uint64_t clock;
    rt_graph *head; /* most recently used first */
    sp_graph_cache_info stats;
} rt_graph_cache;

/* 0 in either bound: the default. 0 or SP_ENOMEM / SP_ESYS. */
int rt_graph_cache_init(rt_graph_cache *c, uint32_t max_count, uint64_t max_bytes);
/* Free every entry (none may be held). */
void rt_graph_cache_destroy(rt_graph_cache *c);
/* The entry for `k`, held (refs + 1), if there is one and every read it
 * recorded has the same value in `args` (the run's host data); NULL
 * otherwise. A key found whose reads differ is dropped (and counted in
 * stats.rerecorded) and *stale set true: the run records afresh. */
rt_graph *rt_graph_cache_acquire(rt_graph_cache *c, const rt_graph_key *k, const sp_args *args,
                                 bool *stale);
/* A new entry for `k`, not in the cache, held by the caller, with the
 * key copied: the runtime fills record / reads, then inserts it (or
 * releases it to drop it). NULL: out of host memory. */
rt_graph *rt_graph_new(const rt_graph_key *k);
/* Put `g` (from rt_graph_new, filled) in the cache, replacing an entry of
 * the same key, and evict the least recently used unheld entries until
 * the bounds hold. A graph larger than the byte bound alone is not kept
 * (returns SP_EGRAPH_LIMIT; the caller still holds it and releases it). */
int rt_graph_cache_insert(rt_graph_cache *c, rt_graph *g);
/* Drop the caller's hold; frees a dropped entry at the last release. */
void rt_graph_cache_release(rt_graph_cache *c, rt_graph *g);
/* Drop the entry of `k` (k NULL: every entry of `callable_id`). */
void rt_graph_cache_forget(rt_graph_cache *c, uint32_t callable_id, const rt_graph_key *k);
void rt_graph_cache_info(rt_graph_cache *c, sp_graph_cache_info *out);
/* Count a replayed run (stats.replayed); recorded runs are counted by insert. */
void rt_graph_cache_count_replay(rt_graph_cache *c);

#endif
