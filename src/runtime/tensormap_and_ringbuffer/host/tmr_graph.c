/* Replay across runs, tmr's host side (tmr_graph.h). */
#include "runtime/tensormap_and_ringbuffer/host/tmr_graph.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "simpler/status.h"

static const char *const abandon_why[] = {
    [TMR_REC_OK] = "kept",
    [TMR_REC_FULL] = "the stream outgrew its buffer (graph_bytes)",
    [TMR_REC_READ_PRODUCED] = "a control read of a value a task of the run wrote",
    [TMR_REC_WRITE] = "a control write (sp_tensor_write)",
    [TMR_REC_READS_FULL] = "more control reads than a record keeps",
    [TMR_REC_UNRESOLVED] = "a tensor argument with no symbolic form",
    [TMR_REC_READ_DEVICE] = "a control read of a device-resident (SP_TENSOR_DEVICE) argument, "
                            "which a replay cannot check on the host",
    [TMR_REC_GRAPH_SCALAR] = "an SP_SCALAR_GRAPH scalar outside any graph task (a body called "
                             "directly), whose run scalar a replay could not patch",
};

static int miss(const rt_prepare *p, const char *why)
{
    snprintf(p->err, p->err_len, "callable %u: replay-only run, nothing to replay: %s",
             p->callable->id, why);
    return SP_EREPLAY_MISS;
}

int tmr_graph_plan(tmr_replay_state *s, const rt_prepare *p, uint64_t *image_bytes)
{
    memset(s, 0, sizeof *s);
    s->cache = p->graphs;
    s->mode = SP_RUN_FRESH;
    *image_bytes = 0;
    if (p->replay == RT_REPLAY_OFF || !p->graphs)
        return SP_OK;
    bool only = p->replay == RT_REPLAY_ONLY;
    /* The key is 64 KiB: it lives in the slot's second scratch buffer. */
    rt_host_scratch *ks = &p->scratch[1];
    if (rt_host_scratch_reserve(ks, sizeof(rt_graph_key)) != SP_OK)
        return only ? miss(p, "no host memory for the graph key") : SP_OK;
    rt_graph_key *k = ks->ptr;
    int rc = rt_graph_key_build(k, p->callable, p->args, &p->config, p->check);
    if (rc == SP_ENOTSUP)
        return only ? miss(p, "the orchestration declares SP_ORCH_REPLAY_NEVER") : SP_OK;
    if (rc)
        return only ? miss(p, "the arguments make no graph key") : SP_OK;
    bool stale = false;
    rt_graph *g = rt_graph_cache_acquire(p->graphs, k, p->args, &stale);
    if (g) {
        s->g = g;
        s->mode = SP_RUN_REPLAYED;
        *image_bytes = ((const tmr_graph *)g->record)->bytes;
        return SP_OK;
    }
    if (only)
        return miss(p, stale ? "a control value the recording read has changed"
                             : "no graph recorded for this key (run once with "
                               "SP_CALL_REPLAY_AUTO)");
    if (!(s->g = rt_graph_new(k)))
        return SP_OK; /* no host memory to keep one: the run goes on fresh */
    s->recording = true;
    uint64_t cap = p->config.graph_bytes ? p->config.graph_bytes : TMR_DEFAULT_RECORD_BYTES;
    if (cap > p->graphs->max_bytes)
        cap = p->graphs->max_bytes; /* a bigger stream could not be kept anyway */
    s->cap = (cap + 7) & ~7ull;
    *image_bytes = sizeof(tmr_rec_header) + s->cap + TMR_REC_MAX_READS * sizeof(tmr_rec_read);
    return SP_OK;
}

int tmr_graph_place(tmr_replay_state *s, const sp_host_api *api, uint64_t image, tmr_ctl *c,
                    char *err, size_t err_len)
{
    if (!s->g)
        return SP_OK;
    s->dev = image;
    c->rec = (tmr_rec_header *)(uintptr_t)image;
    int rc;
    if (s->recording) {
        tmr_rec_header h = {.magic = TMR_REC_MAGIC, .stream_cap = s->cap};
        c->replay = 0;
        rc = sp_host_copy_to_device(api, image, &h, sizeof h);
    } else {
        const tmr_graph *tg = s->g->record;
        tmr_rec_header h;
        c->replay = 1;
        /* The bank may hold this stream already (it recorded or replayed it
         * last): its header names what it holds. */
        rc = sp_host_copy_from_device(api, &h, image, sizeof h);
        if (rc == SP_OK && h.magic == TMR_REC_MAGIC && h.uid == tg->uid &&
            h.stream_bytes + sizeof h == tg->bytes)
            return SP_OK;
        rc = sp_host_copy_to_device(api, image, tg->image, tg->bytes);
        s->patch_bytes = tg->bytes;
    }
    if (rc)
        snprintf(err, err_len, "writing the recorded stream's buffer: %s", sp_status_name(rc));
    return rc;
}

static void graph_free(void *record)
{
    tmr_graph *tg = record;
    free(tg->image);
    free(tg);
}

/* An FNV-1a-style hash over the stream's 64-bit words (entries are 8-byte
 * multiples), once per recording: a bank's copy is known by it. */
static uint64_t stream_uid(const void *p, uint64_t n)
{
    const uint64_t *w = p;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    for (uint64_t i = 0; i < n / 8; i++) {
        h ^= w[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1; /* 0 means "none" */
}

/* Copy the recorded stream back into `g`; false: not keepable. */
static bool take_record(tmr_replay_state *s, const sp_host_api *api, rt_graph *g)
{
    tmr_rec_header h;
    if (sp_host_copy_from_device(api, &h, s->dev, sizeof h) != SP_OK || h.magic != TMR_REC_MAGIC)
        return false;
    if (h.abandoned != TMR_REC_OK) {
        /* Not an error (the run went on fresh), but a reason to know. */
        if (h.abandoned == TMR_REC_FULL)
            SP_WARN("graph replay: the run's submit stream did not fit its %llu-byte buffer "
                    "(sp_call_config.graph_bytes) after %u tasks; not kept",
                    (unsigned long long)s->cap, h.task_count);
        else
            SP_DEBUG("graph replay: the recording was not kept: %s",
                     tmr_graph_abandon_reason(h.abandoned));
        return false;
    }
    if (h.stream_bytes > s->cap || h.read_count > TMR_REC_MAX_READS)
        return false;
    tmr_graph *tg = calloc(1, sizeof *tg);
    uint64_t bytes = sizeof h + h.stream_bytes;
    tmr_rec_header *img = tg ? malloc(bytes) : NULL;
    rt_graph_read *reads = h.read_count ? malloc(h.read_count * sizeof *reads) : NULL;
    tmr_rec_read *dr = h.read_count ? malloc(h.read_count * sizeof *dr) : NULL;
    bool ok = tg && img && (!h.read_count || (reads && dr)) &&
              sp_host_copy_from_device(api, img, s->dev, bytes) == SP_OK &&
              (!h.read_count || sp_host_copy_from_device(api, dr, s->dev + sizeof h + s->cap,
                                                         h.read_count * sizeof *dr) == SP_OK);
    if (!ok) {
        free(tg);
        free(img);
        free(reads);
        free(dr);
        return false;
    }
    for (uint32_t i = 0; i < h.read_count; i++)
        reads[i] = (rt_graph_read){.arg = dr[i].arg,
                                   .bytes = dr[i].bytes,
                                   .byte_off = dr[i].byte_off,
                                   .value = dr[i].value};
    free(dr);
    img->stream_cap = h.stream_bytes; /* as a replay's buffer: no room past the stream */
    img->read_count = 0;
    tg->uid = img->uid = stream_uid(img + 1, h.stream_bytes);
    tg->bytes = bytes;
    tg->task_count = h.task_count;
    tg->image = img;
    g->record = tg;
    g->record_bytes = bytes;
    g->free_record = graph_free;
    g->reads = reads;
    g->read_count = h.read_count;
    /* The bank now holds this stream: name it there, so a replay on this
     * bank uploads nothing (best effort: a failed write only costs one). */
    (void)sp_host_copy_to_device(api, s->dev, img, sizeof *img);
    return true;
}

void tmr_graph_complete(tmr_replay_state *s, const sp_host_api *api, bool ok)
{
    if (!s->g)
        return;
    if (!s->recording) {
        if (ok)
            rt_graph_cache_count_replay(s->cache);
        return;
    }
    s->recording = false;
    rt_graph *g = s->g;
    if (ok && take_record(s, api, g) && rt_graph_cache_insert(s->cache, g) == SP_OK)
        s->mode = SP_RUN_RECORDED;
    /* Kept or not, this run's hold goes: a kept entry stays in the cache. */
    rt_graph_cache_release(s->cache, g);
    s->g = NULL;
}

void tmr_graph_release(tmr_replay_state *s)
{
    if (s->g)
        rt_graph_cache_release(s->cache, s->g);
    s->g = NULL;
}

const char *tmr_graph_abandon_reason(uint32_t why)
{
    return why < sizeof abandon_why / sizeof abandon_why[0] && abandon_why[why] ? abandon_why[why]
                                                                                : "unknown";
}
