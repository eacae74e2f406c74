/* tensormap_and_ringbuffer's side of replay across runs, on the host
 * (DESIGN §12): before staging, look the run's graph key up in the
 * context's cache (runtime/host/graph_cache.h) and decide — replay a kept
 * stream, record one, or neither; after the arena is committed, give the
 * device its stream buffer in the bank's image (a replay uploads the
 * stream only if the bank does not hold it already); when a recorded run
 * completes, copy the stream back and keep it. */
#ifndef SP_RUNTIME_TMR_GRAPH_H
#define SP_RUNTIME_TMR_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/host/graph_cache.h"
#include "runtime/runtime.h"
#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"

/* A stream buffer when the config's graph_bytes leaves it 0. */
#define TMR_DEFAULT_RECORD_BYTES (64ull << 20) /* ~300 000 two-tensor 1-D tasks */

/* A kept stream (rt_graph.record): its header and stream, as uploaded. */
typedef struct tmr_graph {
    uint64_t uid;   /* content hash (never 0): what a bank's copy is known by */
    uint64_t bytes; /* header + stream */
    uint32_t task_count;
    tmr_rec_header *image;
} tmr_graph;

/* One run's replay state. */
typedef struct tmr_replay_state {
    rt_graph_cache *cache;
    rt_graph *g; /* held: the graph replayed, or the entry being recorded */
    bool recording;
    uint32_t mode; /* SP_RUN_FRESH / RECORDED / REPLAYED */
    uint64_t cap;  /* recording: the stream's bound */
    uint64_t dev;  /* the buffer on the device (the bank's image) */
    uint64_t patch_bytes;
} tmr_replay_state;

/* Decide from p's policy and the cache; *image_bytes is what the bank's
 * image must hold (0: nothing). 0, or SP_EREPLAY_MISS (replay-only and
 * nothing to replay: the reason in p->err), SP_ENOMEM. */
int tmr_graph_plan(tmr_replay_state *s, const rt_prepare *p, uint64_t *image_bytes);
/* With the bank's image at `image`: set the run's control block `c` up to
 * record or replay, uploading the stream if the bank lacks it. 0 or a
 * status (reason in err). */
int tmr_graph_place(tmr_replay_state *s, const sp_host_api *api, uint64_t image, tmr_ctl *c,
                    char *err, size_t err_len);
/* The run completed (`ok`: without error): a recording is copied back
 * and kept if it may be, a replay counted. */
void tmr_graph_complete(tmr_replay_state *s, const sp_host_api *api, bool ok);
/* Drop the run's hold (finalize, or a prepare that failed). */
void tmr_graph_release(tmr_replay_state *s);
/* Why a recording was not kept (tmr_rec_header.abandoned), in words. */
const char *tmr_graph_abandon_reason(uint32_t why);

#endif
