/* The context's recorded graphs: a doubly linked list, most recently used
 * first, with count and byte bounds (graph_cache.h). A cache holds a
 * handful of graphs, so a lookup walks the list comparing hashes. */
#include "runtime/host/graph_cache.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"

/* FNV-1a, 64-bit: the key is a few hundred bytes, once per run. */
static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

typedef struct key_writer {
    rt_graph_key *k;
    bool full;
} key_writer;

static void put(key_writer *w, const void *v, size_t n)
{
    if (w->full || n > RT_GRAPH_KEY_MAX - w->k->len) {
        w->full = true;
        return;
    }
    memcpy(w->k->data + w->k->len, v, n);
    w->k->len += (uint32_t)n;
}

static void put64(key_writer *w, uint64_t v)
{
    put(w, &v, sizeof v);
}

bool rt_graph_scalar_is_data(const rt_loaded_callable *lc, uint32_t i)
{
    if (!lc->orch_config || !(lc->config.replay & SP_ORCH_REPLAY_DECLARED) || i >= 128)
        return false;
    return !((lc->config.shaping_scalars[i / 64] >> (i % 64)) & 1);
}

int rt_graph_key_build(rt_graph_key *k, const rt_loaded_callable *lc, const sp_args *args,
                       const sp_call_config *config, bool check)
{
    if (lc->orch_config && (lc->config.replay & SP_ORCH_REPLAY_NEVER))
        return SP_ENOTSUP;
    key_writer w = {.k = k};
    k->len = 0;
    k->callable_id = lc->id;
    uint32_t nt = args ? args->tensor_count : 0, ns = args ? args->scalar_count : 0;
    if (nt > SP_MAX_RUN_TENSORS || ns > SP_MAX_RUN_SCALARS)
        return SP_EINVAL;
    put64(&w, lc->id);
    put64(&w, ((uint64_t)nt << 32) | ns);
    for (uint32_t i = 0; i < nt; i++) {
        const sp_tensor *t = &args->tensors[i];
        uint32_t nd = t->ndim <= SP_MAX_DIMS ? t->ndim : SP_MAX_DIMS;
        put64(&w, ((uint64_t)(t->flags & SP_TENSOR_DEVICE) << 32) |
                      ((uint64_t)args->dirs[i] << 16) | ((uint64_t)t->dtype << 8) | nd);
        put(&w, t->shape, nd * sizeof t->shape[0]);
        put(&w, t->strides, nd * sizeof t->strides[0]);
        put64(&w, (uint64_t)t->offset);
        put64(&w, t->buf_bytes);
    }
    for (uint32_t i = 0; i < ns; i++)
        put64(&w, rt_graph_scalar_is_data(lc, i) ? 0 : args->scalars[i]);
    const sp_call_config z = {0}, *c = config ? config : &z;
    put64(&w, ((uint64_t)c->clusters << 32) | c->sched_threads);
    put64(&w, ((uint64_t)c->task_window << 32) | c->graph_tasks);
    put64(&w, c->heap_bytes);
    put64(&w, c->graph_bytes);
    put64(&w, check);
    if (w.full)
        return SP_EGRAPH_LIMIT;
    k->hash = hash_bytes(k->data, k->len);
    return SP_OK;
}

int rt_graph_cache_init(rt_graph_cache *c, uint32_t max_count, uint64_t max_bytes)
{
    memset(c, 0, sizeof *c);
    if (pthread_mutex_init(&c->lock, NULL))
        return SP_ESYS;
    c->max_count = max_count ? max_count : RT_GRAPH_CACHE_COUNT;
    c->max_bytes = max_bytes ? max_bytes : RT_GRAPH_CACHE_BYTES;
    return SP_OK;
}

static uint64_t entry_bytes(const rt_graph *g)
{
    return g->record_bytes + g->key_len + (uint64_t)g->read_count * sizeof *g->reads + sizeof *g;
}

static void entry_free(rt_graph *g)
{
    if (g->record && g->free_record)
        g->free_record(g->record);
    free(g->reads);
    free(g->key);
    free(g);
}

/* Unlink `g` (locked); freed now if nobody holds it, else at its release. */
static void drop_locked(rt_graph_cache *c, rt_graph *g)
{
    if (g->prev)
        g->prev->next = g->next;
    else
        c->head = g->next;
    if (g->next)
        g->next->prev = g->prev;
    g->prev = g->next = NULL;
    c->count--;
    c->bytes -= entry_bytes(g);
    g->dropped = true;
    if (!g->refs)
        entry_free(g);
}

void rt_graph_cache_destroy(rt_graph_cache *c)
{
    while (c->head)
        drop_locked(c, c->head);
    pthread_mutex_destroy(&c->lock);
}

static bool same_key(const rt_graph *g, uint32_t callable_id, uint64_t hash, uint32_t len,
                     const uint8_t *data)
{
    return g->callable_id == callable_id && g->hash == hash && g->key_len == len &&
           memcmp(g->key, data, len) == 0;
}

static rt_graph *find_locked(rt_graph_cache *c, const rt_graph_key *k)
{
    for (rt_graph *g = c->head; g; g = g->next)
        if (same_key(g, k->callable_id, k->hash, k->len, k->data))
            return g;
    return NULL;
}

static void to_front_locked(rt_graph_cache *c, rt_graph *g)
{
    g->last_use = ++c->clock;
    if (c->head == g)
        return;
    if (g->prev)
        g->prev->next = g->next;
    if (g->next)
        g->next->prev = g->prev;
    g->prev = NULL;
    g->next = c->head;
    if (c->head)
        c->head->prev = g;
    c->head = g;
}

/* The recorded reads against the new run's host data. */
static bool reads_hold(const rt_graph *g, const sp_args *args)
{
    for (uint32_t i = 0; i < g->read_count; i++) {
        const rt_graph_read *r = &g->reads[i];
        if (!args || r->arg >= args->tensor_count || r->bytes == 0 || r->bytes > 8)
            return false;
        const sp_tensor *t = &args->tensors[r->arg];
        /* A device-resident argument's addr is no host data: a read there
         * cannot be checked, so the graph is recorded afresh. */
        if ((t->flags & SP_TENSOR_DEVICE) || !t->addr || r->byte_off > t->buf_bytes ||
            r->bytes > t->buf_bytes - r->byte_off)
            return false;
        uint64_t v = 0;
        memcpy(&v, (const uint8_t *)(uintptr_t)t->addr + r->byte_off, r->bytes);
        if (v != r->value)
            return false;
    }
    return true;
}

rt_graph *rt_graph_cache_acquire(rt_graph_cache *c, const rt_graph_key *k, const sp_args *args,
                                 bool *stale)
{
    *stale = false;
    pthread_mutex_lock(&c->lock);
    rt_graph *g = find_locked(c, k);
    if (g && !reads_hold(g, args)) {
        drop_locked(c, g);
        c->stats.rerecorded++;
        *stale = true;
        g = NULL;
    }
    if (g) {
        g->refs++;
        to_front_locked(c, g);
    }
    pthread_mutex_unlock(&c->lock);
    return g;
}

rt_graph *rt_graph_new(const rt_graph_key *k)
{
    rt_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->key = malloc(k->len ? k->len : 1);
    if (!g->key) {
        free(g);
        return NULL;
    }
    memcpy(g->key, k->data, k->len);
    g->key_len = k->len;
    g->hash = k->hash;
    g->callable_id = k->callable_id;
    g->refs = 1;
    g->dropped = true; /* not in the cache until inserted */
    return g;
}

int rt_graph_cache_insert(rt_graph_cache *c, rt_graph *g)
{
    uint64_t bytes = entry_bytes(g);
    pthread_mutex_lock(&c->lock);
    if (bytes > c->max_bytes) {
        pthread_mutex_unlock(&c->lock);
        return SP_EGRAPH_LIMIT;
    }
    /* The same key again (two runs recorded it at once): the newer wins. */
    for (rt_graph *o = c->head; o; o = o->next)
        if (same_key(o, g->callable_id, g->hash, g->key_len, g->key)) {
            drop_locked(c, o);
            break;
        }
    g->dropped = false;
    g->prev = NULL;
    g->next = c->head;
    if (c->head)
        c->head->prev = g;
    c->head = g;
    g->last_use = ++c->clock;
    c->count++;
    c->bytes += bytes;
    c->stats.recorded++;
    /* Evict from the tail: least recently used, not held, never `g`. */
    while (c->count > c->max_count || c->bytes > c->max_bytes) {
        rt_graph *victim = NULL;
        for (rt_graph *o = c->head; o; o = o->next)
            if (o != g && !o->refs)
                victim = o;
        if (!victim)
            break;
        drop_locked(c, victim);
        c->stats.evicted++;
    }
    pthread_mutex_unlock(&c->lock);
    return SP_OK;
}

void rt_graph_cache_release(rt_graph_cache *c, rt_graph *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&c->lock);
    bool free_it = --g->refs == 0 && g->dropped;
    pthread_mutex_unlock(&c->lock);
    if (free_it)
        entry_free(g);
}

void rt_graph_cache_forget(rt_graph_cache *c, uint32_t callable_id, const rt_graph_key *k)
{
    pthread_mutex_lock(&c->lock);
    for (rt_graph *g = c->head, *next; g; g = next) {
        next = g->next;
        if (k ? same_key(g, k->callable_id, k->hash, k->len, k->data)
              : g->callable_id == callable_id)
            drop_locked(c, g);
    }
    pthread_mutex_unlock(&c->lock);
}

void rt_graph_cache_info(rt_graph_cache *c, sp_graph_cache_info *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    out->count = c->count;
    out->max_count = c->max_count;
    out->bytes = c->bytes;
    out->max_bytes = c->max_bytes;
    pthread_mutex_unlock(&c->lock);
}

void rt_graph_cache_count_replay(rt_graph_cache *c)
{
    pthread_mutex_lock(&c->lock);
    c->stats.replayed++;
    pthread_mutex_unlock(&c->lock);
}
