/* The worker's async lane. A submit prepares its run in the caller's thread
 * (for hbg that is the whole host graph build and upload) while the run
 * ahead of it executes; the lane thread launches prepared runs strictly in
 * dispatch order, one at a time, and finalizes each before launching the
 * next, so device execution stays serial. Each run holds a pipeline slot's
 * lease from submit until it is waited for; a lease's generation makes a
 * stale or replayed handle detectable. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "simpler/status.h"
#include "worker/worker_internal.h"

/* Process-unique epochs: a run handle names one run in this process. */
static _Atomic uint64_t epoch_counter;

static void lease_fail(sp_worker *w, wk_lease *l, int rc)
{
    l->result = rc;
    snprintf(l->error, sizeof l->error, "%s", w->m.simpler_last_error(w->ctx));
}

/* Launch, wait for and finalize one prepared run; publish its result. */
static void lane_execute(sp_worker *w, wk_lease *l)
{
    sp__waitword_store(&l->state, LEASE_RUNNING);
    l->result = SP_OK;
    l->error[0] = 0;
    int rc;
    if (atomic_load_explicit(&w->stuck, memory_order_acquire)) {
        rc = SP_EUNUSABLE;
        snprintf(l->error, sizeof l->error,
                 "run %llu not launched: an earlier run's device side never finished; close "
                 "this worker",
                 (unsigned long long)l->run_id);
        l->result = rc;
    } else {
        rc = w->m.simpler_launch_run(w->ctx, l->run);
    }
    bool launched = rc == SP_OK;
    if (rc == SP_OK) {
        rc = w->m.simpler_wait_run(w->ctx, l->run, l->run_timeout_ns);
        if (rc == SP_ETIMEOUT && l->run_timeout_ns) {
            /* The device side is stuck: nothing can finalize the run, so
             * it is left as it is and the worker refuses further runs. */
            atomic_store_explicit(&w->stuck, 1, memory_order_release);
            l->result = SP_ESTALL;
            snprintf(l->error, sizeof l->error,
                     "run %llu: the device side did not finish within %llu ms of its launch "
                     "(run_timeout_us); the run is abandoned and this worker can only be closed",
                     (unsigned long long)l->run_id,
                     (unsigned long long)(l->run_timeout_ns / 1000000));
            wk_log(w, SP_LOG_DEBUG, "run %llu: abandoned in slot %u, generation %llu",
                   (unsigned long long)l->run_id, (unsigned)(l - w->lease),
                   (unsigned long long)l->generation);
            sp__waitword_store(&l->state, LEASE_DONE);
            return;
        }
        if (rc == SP_OK)
            w->m.simpler_run_stats(w->ctx, l->run, &l->stats);
    }
    if (rc && !l->result)
        lease_fail(w, l, rc);
    l->trace.level = 0;
    if (launched) /* a failed run's trace too; before finalize frees the records */
        wk_lease_trace_capture(w, l);
    /* Finalize even after a failure: it releases the slot and the staging. */
    int frc = w->m.simpler_finalize_run(w->ctx, l->run);
    if (frc && l->result == SP_OK)
        lease_fail(w, l, frc);
    sp__waitword_store(&l->state, LEASE_DONE);
}

/* The prepared lease with the lowest dispatch id, or NULL. */
static wk_lease *lane_next(sp_worker *w)
{
    wk_lease *best = NULL;
    for (uint32_t s = 0; s < w->depth; s++) {
        wk_lease *l = &w->lease[s];
        if (sp__waitword_load(&l->state) == LEASE_PREPARED &&
            (!best || l->dispatch_id < best->dispatch_id))
            best = l;
    }
    return best;
}

static void *lane_main(void *arg)
{
    sp_worker *w = arg;
    for (;;) {
        uint32_t snap = sp__waitword_load(&w->kick);
        wk_lease *l = lane_next(w);
        if (l) {
            lane_execute(w, l);
            continue;
        }
        if (atomic_load_explicit(&w->stop, memory_order_acquire))
            return NULL;
        sp__waitword_wait_ne(&w->kick, snap, NULL, 0, NULL);
    }
}

int wk_lane_start(sp_worker *w)
{
    if (pthread_create(&w->lane, NULL, lane_main, w) != 0)
        return SP_ESYS;
    w->lane_started = true;
    return SP_OK;
}

bool wk_lane_stop(sp_worker *w)
{
    if (!w->lane_started)
        return true;
    /* Runs still queued are executed first: the lane stops only when idle. */
    atomic_store_explicit(&w->stop, 1, memory_order_release);
    sp__waitword_add(&w->kick, 1);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
    uint64_t ns = (uint64_t)until.tv_nsec + w->close_timeout_ns % 1000000000u;
    until.tv_sec += (time_t)(w->close_timeout_ns / 1000000000u + ns / 1000000000u);
    until.tv_nsec = (long)(ns % 1000000000u);
    if (pthread_timedjoin_np(w->lane, NULL, &until) != 0) {
        pthread_detach(w->lane);
        return false;
    }
    w->lane_started = false;
    return true;
}

static int worker_fail(sp_worker *w, int status, const char *fmt, const char *text)
{
    snprintf(w->last_error, sizeof w->last_error, fmt, text);
    return status;
}

SP_EXPORT int sp_worker_submit(sp_worker *w, uint32_t callable_id, const sp_args *args,
                               const sp_call_config *config, sp_run_handle *out)
{
    if (!w || !out)
        return SP_EINVAL;
    memset(out, 0, sizeof *out);
    if (atomic_load_explicit(&w->stuck, memory_order_acquire))
        return worker_fail(w, SP_EUNUSABLE, "%s",
                           "an earlier run's device side never finished (SP_ESTALL): this worker "
                           "can only be closed");
    int checked = wk_signature_check(w, callable_id, args);
    if (checked)
        return checked;
    pthread_mutex_lock(&w->submit_lock);
    wk_lease *l = NULL;
    uint32_t slot = 0;
    for (; slot < w->depth; slot++)
        if (sp__waitword_load(&w->lease[slot].state) == LEASE_FREE) {
            l = &w->lease[slot];
            break;
        }
    if (!l) {
        pthread_mutex_unlock(&w->submit_lock);
        return worker_fail(w, SP_EBUSY, "%s",
                           "every pipeline slot holds a run not yet waited for: wait for the "
                           "oldest first");
    }
    l->generation++;
    if (l->generation == 0)
        l->generation = 1; /* generation 0 is never valid */
    l->epoch = atomic_fetch_add_explicit(&epoch_counter, 1, memory_order_relaxed) + 1;
    l->run_id = ++w->next_run_id;
    l->dispatch_id = ++w->next_dispatch_id;
    l->result = SP_OK;
    l->error[0] = 0;
    l->run_timeout_ns = config ? config->run_timeout_us * 1000u : 0;
    memset(&l->stats, 0, sizeof l->stats);
    /* Held: nobody else takes this slot while it is prepared below. */
    sp__waitword_store(&l->state, LEASE_RESERVED);
    pthread_mutex_unlock(&w->submit_lock);
    /* Device-resident arguments name live buffers, held until the wait. */
    int held = wk_devbufs_hold(w, l, args);
    if (held) {
        sp__waitword_store(&l->state, LEASE_FREE);
        return held;
    }

    sp_run_descriptor d = {
        .pipeline_slot = slot,
        .arena_bank = w->bank_of[slot],
        .run_id = l->run_id,
        .generation = l->generation,
        .dispatch_id = l->dispatch_id,
        .run_epoch = l->epoch,
    };
    l->callable_id = callable_id;
    sp_call_config traced; /* with a trace path, every run is traced */
    config = wk_trace_config(w, config, &traced);
    int rc = w->m.simpler_prepare_run(w->ctx, l->run, callable_id, args, config, &d);
    if (rc) {
        worker_fail(w, rc, "%s", w->m.simpler_last_error(w->ctx));
        wk_devbufs_release(w, l);
        sp__waitword_store(&l->state, LEASE_FREE);
        return rc;
    }
    *out = (sp_run_handle){
        .run_id = l->run_id, .epoch = l->epoch, .generation = l->generation, .slot = slot};
    sp__waitword_store(&l->state, LEASE_PREPARED);
    sp__waitword_add(&w->kick, 1);
    return SP_OK;
}

/* The lease a handle names, or NULL if the handle is stale or foreign. */
static wk_lease *lease_of(sp_worker *w, const sp_run_handle *h)
{
    if (!h || h->slot >= w->depth || h->generation == 0)
        return NULL;
    wk_lease *l = &w->lease[h->slot];
    uint32_t st = sp__waitword_load(&l->state);
    if (st == LEASE_FREE || l->generation != h->generation || l->epoch != h->epoch ||
        l->run_id != h->run_id)
        return NULL;
    return l;
}

SP_EXPORT int sp_worker_poll(sp_worker *w, const sp_run_handle *h)
{
    if (!w)
        return SP_EINVAL;
    wk_lease *l = lease_of(w, h);
    if (!l)
        return worker_fail(w, SP_ESTALE, "%s", "poll: run handle is stale or was waited for");
    return sp__waitword_load(&l->state) == LEASE_DONE ? l->result : SP_RUN_NOT_READY;
}

/* Wait for the run until `deadline_ns` (sp_now_ns time, 0 for none). */
static int lease_wait(sp_worker *w, const sp_run_handle *h, sp_run_stats *stats,
                      uint64_t deadline_ns, uint64_t timeout_ms)
{
    if (!w)
        return SP_EINVAL;
    wk_lease *l = lease_of(w, h);
    if (!l)
        return worker_fail(w, SP_ESTALE, "%s", "wait: run handle is stale or was waited for");
    uint32_t st;
    while ((st = sp__waitword_load(&l->state)) != LEASE_DONE) {
        int timed_out = 0;
        if (deadline_ns && sp_now_ns() >= deadline_ns)
            timed_out = 1;
        else
            sp__waitword_wait_ne(&l->state, st, NULL, deadline_ns, &timed_out);
        if (timed_out && sp__waitword_load(&l->state) != LEASE_DONE) {
            snprintf(w->last_error, sizeof w->last_error,
                     "run %llu not done within %llu ms; it is still in flight: wait for it again",
                     (unsigned long long)h->run_id, (unsigned long long)timeout_ms);
            return SP_ETIMEOUT;
        }
    }
    int rc = l->result;
    if (stats)
        *stats = l->stats;
    pthread_mutex_lock(&w->wait_lock);
    wk_lease_trace_take(w, l);
    if (rc)
        worker_fail(w, rc, "%s", l->error);
    /* The run is finalized: its device buffers may be freed again. */
    wk_devbufs_release(w, l);
    /* The slot is free again; this handle's generation is now stale. */
    sp__waitword_store(&l->state, LEASE_FREE);
    wk_trace_autowrite(w); /* options.trace_path: nothing without one */
    pthread_mutex_unlock(&w->wait_lock);
    return rc;
}

SP_EXPORT int sp_worker_wait(sp_worker *w, const sp_run_handle *h, sp_run_stats *stats)
{
    return lease_wait(w, h, stats, 0, 0);
}

SP_EXPORT int sp_worker_wait_for(sp_worker *w, const sp_run_handle *h, sp_run_stats *stats,
                                 uint64_t timeout_ms)
{
    uint64_t now = sp_now_ns();
    uint64_t span = timeout_ms > UINT64_MAX / 2000000u ? UINT64_MAX / 2 : timeout_ms * 1000000u;
    return lease_wait(w, h, stats, now + span ? now + span : 1, timeout_ms);
}

SP_EXPORT uint32_t sp_worker_lane_depth(const sp_worker *w)
{
    return w ? w->depth : 0;
}
