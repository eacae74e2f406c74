/* The L3 machine (simpler/l3.h): opening one worker per local chip, the
 * buffer table behind L3 tensors (device buffers mapped once into this
 * process, or caller host memory), host reads and writes outside runs, and
 * communication domains. Runs and tasks live in l3_run.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l3/l3_internal.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

int l3_fail(sp_l3 *l3, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(l3->err, sizeof l3->err, "%s: ", sp_status_name(status));
    if (n > 0 && (size_t)n < sizeof l3->err)
        vsnprintf(l3->err + n, sizeof l3->err - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}

static void close_workers(sp_l3 *l3)
{
    for (uint32_t i = 0; i < l3->local_chips; i++) {
        sp_worker_close(l3->w[i]);
        l3->w[i] = NULL;
    }
}

SP_EXPORT int sp_l3_open(const sp_l3_options *opt, sp_l3 **out, char *err, size_t err_len)
{
    if (err && err_len)
        err[0] = '\0';
    if (!opt || !out) {
        if (err && err_len)
            snprintf(err, err_len, "SP_EINVAL: sp_l3_open: NULL %s", opt ? "out" : "options");
        return SP_EINVAL;
    }
    *out = NULL;
    const sp_l3_transport *tr = opt->transport;
    int rank = 0, nranks = 1;
    if (tr) {
        if (!tr->rank || !tr->size || !tr->isend || !tr->irecv || !tr->agree || !tr->group_create ||
            !tr->group_destroy) {
            if (err && err_len)
                snprintf(err, err_len, "SP_EINVAL: sp_l3_open: the transport lacks an operation");
            return SP_EINVAL;
        }
        rank = tr->rank(tr->ctx);
        nranks = tr->size(tr->ctx);
    }
    if (opt->chips < 1 || nranks < 1 || rank < 0 || rank >= nranks ||
        (uint64_t)opt->chips * (uint64_t)nranks > SP_L3_MAX_CHIPS) {
        if (err && err_len)
            snprintf(err, err_len,
                     "SP_EINVAL: sp_l3_open: %u chips per rank x %d ranks (rank %d): 1..%d chips "
                     "in all",
                     opt->chips, nranks, rank, SP_L3_MAX_CHIPS);
        return SP_EINVAL;
    }
    sp_l3 *l3 = calloc(1, sizeof *l3);
    if (!l3)
        return SP_ENOMEM;
    l3->local_chips = opt->chips;
    l3->total_chips = opt->chips * (uint32_t)nranks;
    l3->flags = opt->flags;
    l3->rank = rank;
    l3->nranks = nranks;
    l3->first_chip = rank * (int)opt->chips;
    l3->tr = tr;
    l3->rank_timeout_ns = (opt->rank_timeout_ms ? opt->rank_timeout_ms : 60000ull) * 1000000ull;
    int rc = SP_OK;
    char werr[512] = "";
    for (uint32_t i = 0; i < opt->chips && rc == SP_OK; i++) {
        sp_worker_options wo = opt->worker;
        wo.device_id = opt->first_device + (int)i;
        const char *rt = opt->chip_runtime[i] ? opt->chip_runtime[i]
                         : opt->runtime       ? opt->runtime
                                              : "hbg";
        rc = sp_worker_open_runtime(rt, opt->platform, &wo, &l3->w[i], werr, sizeof werr);
        if (rc != SP_OK)
            l3_fail(l3, rc, "chip %d (rank %d, device %d, runtime %s): %s", l3->first_chip + (int)i,
                    rank, wo.device_id, rt, werr);
    }
    if (rc == SP_OK) {
        rc = l3_drivers_start(l3, werr, sizeof werr);
        if (rc != SP_OK)
            l3_fail(l3, rc, "rank %d: %s", rank, werr);
    }
    if (tr) {
        /* Every rank learns whether every other rank opened its chips. */
        l3x_outcome mine = {.status = rc, .rank = rank, .chip = SP_L3_HOST, .task = -1}, first;
        memset(&first, 0, sizeof first);
        snprintf(mine.message, sizeof mine.message, "%s", rc ? l3->err : "");
        int arc = tr->agree(tr->ctx, &mine, &first, sp_now_ns() + l3->rank_timeout_ns);
        if (rc == SP_OK && arc != SP_OK)
            rc = l3_fail(l3, arc, "sp_l3_open: rank %d did not answer within %llu ms", first.rank,
                         (unsigned long long)(l3->rank_timeout_ns / 1000000u));
        else if (rc == SP_OK && first.status != 0)
            rc = l3_fail(l3, SP_ERANK, "sp_l3_open: rank %d failed to open its chips: %s",
                         first.rank, first.message);
    }
    if (rc != SP_OK) {
        if (err && err_len)
            snprintf(err, err_len, "%s", l3->err);
        l3_drivers_stop(l3);
        close_workers(l3);
        free(l3->drv);
        free(l3);
        return rc;
    }
    *out = l3;
    return SP_OK;
}

SP_EXPORT void sp_l3_close(sp_l3 *l3)
{
    if (!l3)
        return;
    l3_drivers_stop(l3);
    while (l3->domains)
        sp_l3_domain_destroy(l3->domains);
    for (uint32_t i = 0; i < l3->nbufs; i++) {
        l3_buffer *b = &l3->bufs[i];
        if (b->live)
            l3_buffer_release(l3, (b->gen << L3_BUF_INDEX_BITS) | i);
        free(b->acc);
    }
    free(l3->bufs);
    l3_runs_free(l3);
    close_workers(l3);
    free(l3->drv);
    free(l3);
}

SP_EXPORT uint32_t sp_l3_chip_count(const sp_l3 *l3)
{
    return l3 ? l3->total_chips : 0;
}

SP_EXPORT int sp_l3_rank(const sp_l3 *l3)
{
    return l3 ? l3->rank : 0;
}

SP_EXPORT int sp_l3_rank_count(const sp_l3 *l3)
{
    return l3 ? l3->nranks : 1;
}

SP_EXPORT int sp_l3_chip_is_local(const sp_l3 *l3, int chip)
{
    return l3 && l3_local(l3, chip) >= 0;
}

SP_EXPORT sp_worker *sp_l3_chip_worker(sp_l3 *l3, int chip)
{
    if (!l3)
        return NULL;
    int i = l3_local(l3, chip);
    return i < 0 ? NULL : l3->w[i];
}

SP_EXPORT const char *sp_l3_last_error(const sp_l3 *l3)
{
    return l3 ? l3->err : "";
}

SP_EXPORT int sp_l3_register_callable(sp_l3 *l3, uint32_t id, const void *blob, size_t size)
{
    if (!l3)
        return SP_EINVAL;
    for (uint32_t i = 0; i < l3->local_chips; i++) {
        int rc = sp_worker_register_callable(l3->w[i], id, blob, size);
        if (rc)
            return l3_fail(l3, rc, "register callable %u on chip %d: %s", id,
                           l3->first_chip + (int)i, sp_worker_last_error(l3->w[i]));
    }
    return SP_OK;
}

SP_EXPORT int sp_l3_register_callable_file(sp_l3 *l3, uint32_t id, const char *path)
{
    if (!l3)
        return SP_EINVAL;
    for (uint32_t i = 0; i < l3->local_chips; i++) {
        int rc = sp_worker_register_callable_file(l3->w[i], id, path);
        if (rc)
            return l3_fail(l3, rc, "register callable %u (%s) on chip %d: %s", id,
                           path ? path : "(null)", l3->first_chip + (int)i,
                           sp_worker_last_error(l3->w[i]));
    }
    return SP_OK;
}

/* ---- buffers ------------------------------------------------------------------ */

l3_buffer *l3_buffer_get(sp_l3 *l3, uint32_t id)
{
    uint32_t i = id & L3_BUF_INDEX_MASK;
    if (i >= l3->nbufs)
        return NULL;
    l3_buffer *b = &l3->bufs[i];
    return (b->live && b->gen == id >> L3_BUF_INDEX_BITS) ? b : NULL;
}

int l3_buffer_new(sp_l3 *l3, int chip, uint64_t bytes, void *host, uint32_t *id)
{
    uint32_t i;
    if (l3->free_head) {
        i = l3->free_head - 1;
        l3->free_head = l3->bufs[i].next_free;
    } else {
        if (l3->nbufs > L3_BUF_INDEX_MASK)
            return l3_fail(l3, SP_ENOMEM, "tensor alloc: %u buffers live", l3->nbufs);
        if (l3->nbufs == l3->bufs_cap) {
            uint32_t cap = l3->bufs_cap ? 2 * l3->bufs_cap : 64;
            l3_buffer *nb = realloc(l3->bufs, cap * sizeof *nb);
            if (!nb)
                return l3_fail(l3, SP_ENOMEM, "tensor alloc: buffer table of %u", cap);
            memset(nb + l3->bufs_cap, 0, (cap - l3->bufs_cap) * sizeof *nb);
            l3->bufs = nb;
            l3->bufs_cap = cap;
        }
        i = l3->nbufs++;
    }
    l3_buffer *b = &l3->bufs[i];
    uint32_t gen = (b->gen + 1) & L3_BUF_GEN_MASK;
    b->gen = gen ? gen : 1;
    b->chip = chip;
    b->bytes = bytes;
    b->dev = 0;
    b->host = NULL;
    b->mapped = 0;
    b->run_local = 0;
    b->host_owned = chip == SP_L3_HOST;
    b->run_seq = 0;
    b->nacc = 0;
    b->acc_seq = 0;
    int rc = SP_OK;
    if (chip == SP_L3_HOST) {
        b->host = host;
    } else {
        int li = l3_local(l3, chip);
        if (li >= 0) {
            sp_worker *w = l3->w[li];
            rc = sp_worker_device_alloc(w, bytes, &b->dev);
            if (rc) {
                l3_fail(l3, rc, "tensor alloc of %llu bytes on chip %d: %s",
                        (unsigned long long)bytes, chip, sp_worker_last_error(w));
            } else {
                void *h = NULL;
                int mrc = sp_worker_device_map(w, b->dev, bytes, &h);
                if (mrc == SP_OK) {
                    b->host = h;
                    b->mapped = 1;
                } else if (mrc != SP_ENOTSUP) {
                    rc = l3_fail(l3, mrc, "host-map of a %llu-byte buffer on chip %d: %s",
                                 (unsigned long long)bytes, chip, sp_worker_last_error(w));
                    sp_worker_device_free(w, b->dev);
                }
            }
        }
    }
    if (rc) {
        b->next_free = l3->free_head;
        l3->free_head = i + 1;
        return rc;
    }
    b->live = 1;
    *id = (b->gen << L3_BUF_INDEX_BITS) | i;
    return SP_OK;
}

int l3_buffer_release(sp_l3 *l3, uint32_t id)
{
    l3_buffer *b = l3_buffer_get(l3, id);
    if (!b)
        return SP_ESTALE;
    int rc = SP_OK;
    int li = b->chip >= 0 ? l3_local(l3, b->chip) : -1;
    if (li >= 0 && b->dev) {
        sp_worker *w = l3->w[li];
        if (b->mapped)
            sp_worker_device_unmap(w, b->dev);
        rc = sp_worker_device_free(w, b->dev);
        if (rc)
            l3_fail(l3, rc, "free of buffer %u on chip %d: %s", id, b->chip,
                    sp_worker_last_error(w));
    }
    b->live = 0;
    b->host = NULL;
    b->dev = 0;
    uint32_t i = id & L3_BUF_INDEX_MASK;
    b->next_free = l3->free_head;
    l3->free_head = i + 1;
    return rc;
}

int l3_tensor_make(sp_l3 *l3, int chip, void *host, int dtype, int ndim, const int64_t *shape,
                   sp_l3_tensor *out, const char *what)
{
    if (!l3)
        return SP_EINVAL;
    if (!out || !shape || (chip == SP_L3_HOST && !host))
        return l3_fail(l3, SP_EINVAL, "%s: NULL %s", what,
                       !out     ? "out"
                       : !shape ? "shape"
                                : "host memory");
    if (chip != SP_L3_HOST && (chip < 0 || (uint32_t)chip >= l3->total_chips))
        return l3_fail(l3, SP_EINVAL, "%s: chip %d of %u", what, chip, l3->total_chips);
    sp_tensor t;
    int rc = sp_tensor_init(&t, 0, dtype, ndim, shape);
    if (rc)
        return l3_fail(l3, rc, "%s on chip %d: dtype %d, %d dims", what, chip, dtype, ndim);
    uint32_t id;
    rc = l3_buffer_new(l3, chip, t.buf_bytes, host, &id);
    if (rc)
        return rc;
    l3_buffer *b = l3_buffer_get(l3, id);
    t.addr = chip == SP_L3_HOST ? (uint64_t)(uintptr_t)host : b->dev;
    out->buffer = id;
    out->chip = chip;
    out->view = t;
    return SP_OK;
}

SP_EXPORT int sp_l3_tensor_alloc(sp_l3 *l3, int chip, int dtype, int ndim, const int64_t *shape,
                                 sp_l3_tensor *out)
{
    if (l3 && chip == SP_L3_HOST)
        return l3_fail(l3, SP_EINVAL, "tensor alloc: the host is not a chip (sp_l3_tensor_host)");
    return l3_tensor_make(l3, chip, NULL, dtype, ndim, shape, out, "tensor alloc");
}

SP_EXPORT int sp_l3_tensor_host(sp_l3 *l3, void *host, int dtype, int ndim, const int64_t *shape,
                                sp_l3_tensor *out)
{
    return l3_tensor_make(l3, SP_L3_HOST, host, dtype, ndim, shape, out, "host tensor");
}

/* The live buffer of `t`, checked against the tensor's chip; NULL with the
 * error set (SP_ESTALE, SP_EINVAL) in *rc. */
static l3_buffer *tensor_buffer(sp_l3 *l3, const sp_l3_tensor *t, const char *what, int *rc)
{
    l3_buffer *b = l3_buffer_get(l3, t->buffer);
    if (!b) {
        *rc = l3_fail(l3, SP_ESTALE, "%s: buffer %u (chip %d) was freed or never made", what,
                      t->buffer, t->chip);
        return NULL;
    }
    if (b->chip != t->chip) {
        *rc = l3_fail(l3, SP_EINVAL, "%s: tensor says chip %d, its buffer %u is on chip %d", what,
                      t->chip, t->buffer, b->chip);
        return NULL;
    }
    return b;
}

SP_EXPORT int sp_l3_tensor_free(sp_l3 *l3, const sp_l3_tensor *t)
{
    if (!l3 || !t)
        return l3 ? l3_fail(l3, SP_EINVAL, "tensor free: NULL tensor") : SP_EINVAL;
    int rc;
    l3_buffer *b = tensor_buffer(l3, t, "tensor free", &rc);
    if (!b)
        return rc;
    if (l3->in_run && b->run_seq == l3->run_seq)
        return l3_fail(l3, SP_EBUSY, "tensor free: buffer %u on chip %d is used by the run",
                       t->buffer, t->chip);
    return l3_buffer_release(l3, t->buffer);
}

static int host_io(sp_l3 *l3, const sp_l3_tensor *t, void *host, uint64_t bytes, bool to_dev)
{
    const char *what = to_dev ? "sp_l3_write" : "sp_l3_read";
    if (!l3)
        return SP_EINVAL;
    if (!t || !host)
        return l3_fail(l3, SP_EINVAL, "%s: NULL %s", what, t ? "host memory" : "tensor");
    int rc;
    l3_buffer *b = tensor_buffer(l3, t, what, &rc);
    if (!b)
        return rc;
    if (l3->in_run)
        return l3_fail(l3, SP_EBUSY, "%s: buffer %u on chip %d during a run", what, t->buffer,
                       t->chip);
    if (!sp_tensor_is_contiguous(&t->view))
        return l3_fail(l3, SP_EINVAL, "%s: the view of buffer %u is not contiguous", what,
                       t->buffer);
    uint64_t need = (uint64_t)sp_tensor_numel(&t->view) * sp_tensor_elem_size(&t->view);
    uint64_t off = (uint64_t)t->view.offset * sp_tensor_elem_size(&t->view);
    if (bytes != need || off + need > b->bytes)
        return l3_fail(l3, SP_EINVAL, "%s: %llu bytes for a view of %llu (buffer %u, chip %d)",
                       what, (unsigned long long)bytes, (unsigned long long)need, t->buffer,
                       t->chip);
    if (t->chip == SP_L3_HOST) {
        if (to_dev)
            memmove(b->host + off, host, bytes);
        else
            memmove(host, b->host + off, bytes);
        return SP_OK;
    }
    int li = l3_local(l3, t->chip);
    if (li < 0)
        return SP_OK; /* another rank holds it */
    sp_worker *w = l3->w[li];
    rc = to_dev ? sp_worker_copy_to_device(w, b->dev + off, host, bytes)
                : sp_worker_copy_from_device(w, host, b->dev + off, bytes);
    if (rc)
        return l3_fail(l3, rc, "%s: buffer %u on chip %d: %s", what, t->buffer, t->chip,
                       sp_worker_last_error(w));
    return SP_OK;
}

SP_EXPORT int sp_l3_write(sp_l3 *l3, const sp_l3_tensor *t, const void *host, uint64_t bytes)
{
    return host_io(l3, t, (void *)(uintptr_t)host, bytes, true);
}

SP_EXPORT int sp_l3_read(sp_l3 *l3, const sp_l3_tensor *t, void *host, uint64_t bytes)
{
    return host_io(l3, t, host, bytes, false);
}

SP_EXPORT int sp_l3_tensor_slice(const sp_l3_tensor *in, int dim, int64_t start, int64_t len,
                                 sp_l3_tensor *out)
{
    if (!in || !out)
        return SP_EINVAL;
    sp_tensor v;
    int rc = sp_tensor_slice(&in->view, dim, start, len, &v);
    if (rc)
        return rc;
    out->buffer = in->buffer;
    out->chip = in->chip;
    out->view = v;
    return SP_OK;
}

/* ---- domains ------------------------------------------------------------------ */

SP_EXPORT int sp_l3_domain_create(sp_l3 *l3, const int *chips, uint32_t n, uint64_t window_bytes,
                                  sp_l3_domain **out)
{
    if (!l3)
        return SP_EINVAL;
    if (!chips || !out || n < 1 || n > SP_L3_MAX_DOMAIN_CHIPS || window_bytes == 0)
        return l3_fail(l3, SP_EINVAL, "domain create: %s",
                       !chips || !out ? "NULL chips or out"
                       : window_bytes ? "1..64 members"
                                      : "an empty window");
    if (l3->in_run)
        return l3_fail(l3, SP_EBUSY, "domain create: during a run");
    uint64_t seen = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (chips[i] < 0 || (uint32_t)chips[i] >= l3->total_chips)
            return l3_fail(l3, SP_EINVAL, "domain create: member %u is chip %d of %u", i, chips[i],
                           l3->total_chips);
        if (seen & (1ull << chips[i]))
            return l3_fail(l3, SP_EINVAL, "domain create: chip %d is a member twice", chips[i]);
        seen |= 1ull << chips[i];
    }
    sp_l3_domain *d = calloc(1, sizeof *d);
    if (!d)
        return l3_fail(l3, SP_ENOMEM, "domain create");
    d->l3 = l3;
    d->n = n;
    d->window_bytes = window_bytes;
    int ranks[SP_L3_MAX_CHIPS], nr = 0;
    for (uint32_t i = 0; i < n; i++) {
        d->chips[i] = chips[i];
        int64_t shape = (int64_t)window_bytes;
        int rc = sp_l3_tensor_alloc(l3, chips[i], SP_DTYPE_U8, 1, &shape, &d->win[i]);
        if (rc) {
            for (uint32_t j = 0; j < i; j++)
                l3_buffer_release(l3, d->win[j].buffer);
            free(d);
            return rc;
        }
        if (l3_local(l3, chips[i]) >= 0)
            d->member = true;
    }
    for (int r = 0; r < l3->nranks; r++)
        for (uint32_t i = 0; i < n; i++)
            if (l3_rank_of(l3, chips[i]) == r) {
                ranks[nr++] = r;
                break;
            }
    d->spans_ranks = nr > 1;
    if (l3->tr && d->member && d->spans_ranks) {
        int rc = l3->tr->group_create(l3->tr->ctx, ranks, (uint32_t)nr, &d->group);
        if (rc) {
            const char *te = l3->tr->last_error ? l3->tr->last_error(l3->tr->ctx) : "";
            l3_fail(l3, rc, "domain create: the group of %d ranks: %s", nr, te);
            for (uint32_t j = 0; j < n; j++)
                l3_buffer_release(l3, d->win[j].buffer);
            free(d);
            return rc;
        }
    }
    d->next = l3->domains;
    if (l3->domains)
        l3->domains->prev = d;
    l3->domains = d;
    *out = d;
    return SP_OK;
}

SP_EXPORT void sp_l3_domain_destroy(sp_l3_domain *d)
{
    if (!d)
        return;
    sp_l3 *l3 = d->l3;
    if (d->prev)
        d->prev->next = d->next;
    else
        l3->domains = d->next;
    if (d->next)
        d->next->prev = d->prev;
    if (d->group && l3->tr)
        l3->tr->group_destroy(l3->tr->ctx, d->group);
    for (uint32_t i = 0; i < d->n; i++)
        l3_buffer_release(l3, d->win[i].buffer);
    free(d);
}

SP_EXPORT uint32_t sp_l3_domain_size(const sp_l3_domain *d)
{
    return d ? d->n : 0;
}

SP_EXPORT int sp_l3_domain_view(const sp_l3_domain *d, uint32_t member, uint64_t offset, int dtype,
                                int64_t count, sp_l3_tensor *out)
{
    if (!d || !out || member >= d->n || count < 1)
        return SP_EINVAL;
    size_t es = sp_dtype_size(dtype);
    if (!es)
        return SP_EDTYPE;
    if (offset % es)
        return SP_EINVAL;
    if (offset > d->window_bytes || (uint64_t)count > (d->window_bytes - offset) / es)
        return SP_EBOUNDS;
    sp_tensor v;
    int rc = sp_tensor_init(&v, d->win[member].view.addr, dtype, 1, &count);
    if (rc)
        return rc;
    v.buf_bytes = d->window_bytes;
    v.offset = (int64_t)(offset / es);
    out->buffer = d->win[member].buffer;
    out->chip = d->chips[member];
    out->view = v;
    return SP_OK;
}
