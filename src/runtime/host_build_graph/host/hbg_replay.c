/* host_build_graph's replay across runs (hbg_replay.h): the notes a
 * recording build takes, the record made from the built graph, and the
 * patch a replay uploads. */
#include "runtime/host_build_graph/host/hbg_replay.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wait.h"
#include "simpler/status.h"

static int grow_array(void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return SP_OK;
    uint64_t n = *cap ? *cap * 2 : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return SP_ENOMEM;
    *p = q;
    *cap = n;
    return SP_OK;
}

static void never(hbg_recording *rec, const char *why);

int hbg_recording_note_task(hbg_recording *rec, const sp_task *t, uint64_t arg0)
{
    if (t->abi < 2)
        return SP_OK; /* an orchestration built before scalar sources: all literal */
    for (uint32_t i = 0; i < t->scalar_count; i++) {
        uint16_t src = t->scalar_src[i];
        /* A graph task resolves its graph scalars before they get here; one
         * that arrives is a body called directly, whose scalar may be a run
         * scalar passed on (data a replay would have to patch): not kept. */
        if ((src & 0xff00) == 0x200)
            never(rec, "a task outside any graph task has an SP_SCALAR_GRAPH scalar (a body "
                       "called directly), whose run scalar a replay could not patch");
        if ((src & 0xff00) != 0x100)
            continue; /* a literal */
        uint32_t k = src & 0xff;
        /* A shaping scalar is part of the key: the same on every replay. */
        if (!rt_graph_scalar_is_data(rec->callable, k))
            continue;
        if (grow_array((void **)&rec->scalars, &rec->scalar_cap, rec->scalar_count + 1,
                       sizeof *rec->scalars))
            return SP_ENOMEM;
        rec->scalars[rec->scalar_count++] = (hbg_scalar_note){.arg = arg0 + i, .run_scalar = k};
    }
    return SP_OK;
}

static void never(hbg_recording *rec, const char *why)
{
    if (!rec->never[0])
        snprintf(rec->never, sizeof rec->never, "%s", why);
}

int hbg_recording_note_read(hbg_recording *rec, int buf, uint64_t off, const void *v, size_t bytes)
{
    if (buf < 0) {
        never(rec, "its orchestration read a runtime-allocated tensor");
        return SP_OK;
    }
    if (!rec->args || (uint32_t)buf >= rec->args->tensor_count || rec->args->dirs[buf] == SP_OUT) {
        never(rec, "its orchestration read a pure output (SP_OUT) argument");
        return SP_OK;
    }
    if (rec->args->tensors[buf].flags & SP_TENSOR_DEVICE) {
        never(rec, "its orchestration read a device-resident (SP_TENSOR_DEVICE) argument, which "
                   "a replay cannot check on the host");
        return SP_OK;
    }
    if (bytes == 0 || bytes > 8) {
        never(rec, "its orchestration read a control element wider than 8 bytes");
        return SP_OK;
    }
    uint64_t cap = rec->read_cap;
    if (grow_array((void **)&rec->reads, &cap, (uint64_t)rec->read_count + 1, sizeof *rec->reads))
        return SP_ENOMEM;
    rec->read_cap = (uint32_t)cap;
    rt_graph_read *r = &rec->reads[rec->read_count++];
    *r = (rt_graph_read){.arg = (uint32_t)buf, .bytes = (uint32_t)bytes, .byte_off = off};
    memcpy(&r->value, v, bytes);
    return SP_OK;
}

void hbg_recording_free(hbg_recording *rec)
{
    free(rec->scalars);
    free(rec->reads);
    rec->scalars = NULL;
    rec->reads = NULL;
    rec->scalar_count = rec->scalar_cap = 0;
    rec->read_count = rec->read_cap = 0;
}

uint64_t hbg_replay_patch_bytes(const hbg_graph *g, const hbg_recording *rec)
{
    /* A descriptor's address, an argument word pointing at it, a scalar,
     * a predicated task's element address. */
    return (2 * (uint64_t)g->tensor_count + rec->scalar_count + g->pred_tasks) * sizeof(hbg_patch);
}

void hbg_record_free(void *record)
{
    hbg_record *rd = record;
    if (!rd)
        return;
    free(rd->image);
    free(rd->deps);
    free(rd->relocs);
    free(rd->groups);
    free(rd->bank_src);
    free(rd);
}

uint64_t hbg_record_bytes(const hbg_record *rd)
{
    return sizeof *rd + rd->image_bytes + rd->edge_count * sizeof *rd->deps +
           rd->reloc_count * sizeof *rd->relocs + rd->group_count * sizeof *rd->groups +
           (uint64_t)HBG_REPLAY_BANKS * rd->group_count * sizeof *rd->bank_src;
}

void hbg_record_bank_drop(hbg_record *rd, uint32_t bank)
{
    if (bank < HBG_REPLAY_BANKS)
        rd->bank[bank].valid = false;
}

/* A source's value in this run. */
static uint64_t src_value(uint32_t src, const rt_staging *st, const sp_arena *a,
                          const sp_args *args)
{
    if (src < HBG_SRC_HEAP)
        return st->t[src].dev;
    if (src == HBG_SRC_HEAP)
        return a->heap;
    if (src == HBG_SRC_IMAGE)
        return a->image;
    uint32_t k = src - HBG_SRC_SCALAR;
    return args && k < args->scalar_count ? args->scalars[k] : 0;
}

/* The run argument whose staged buffer holds `addr`, else the heap, else
 * HBG_SRC_COUNT (nowhere). */
static uint32_t src_of_addr(const hbg_graph *g, const rt_staging *st, uint64_t addr)
{
    for (uint32_t i = 0; i < st->count; i++)
        if (st->t[i].dev && addr >= st->t[i].dev && addr - st->t[i].dev < st->t[i].bytes)
            return i;
    if (addr >= g->heap_base && addr - g->heap_base < g->heap_bytes)
        return HBG_SRC_HEAP;
    return HBG_SRC_COUNT;
}

/* A relocation before it is sorted by source. */
typedef struct loose_reloc {
    uint64_t off, delta;
    uint32_t src;
} loose_reloc;

/* Every run-dependent word of the image, sorted into groups by source. */
static int make_relocs(hbg_record *rd, hbg_recording *rec, const hbg_graph *g, const hbg_layout *l,
                       const uint8_t *image, const rt_staging *st, const sp_arena *a,
                       const sp_args *args)
{
    uint64_t n = 2 * (uint64_t)g->tensor_count + rec->scalar_count + g->pred_tasks, at = 0;
    loose_reloc *lr = malloc((n ? n : 1) * sizeof *lr);
    uint32_t *count = calloc(HBG_SRC_COUNT, sizeof *count);
    int rc = lr && count ? SP_OK : SP_ENOMEM;
    const sp_tensor *desc = (const sp_tensor *)(image + l->tensors_off);
    for (uint32_t i = 0; i < g->tensor_count && rc == SP_OK; i++) {
        uint32_t src = src_of_addr(g, st, desc[i].addr);
        if (src == HBG_SRC_COUNT) {
            never(rec, "a task's tensor lies in no buffer of the run");
            rc = SP_ENOTSUP;
            break;
        }
        lr[at++] = (loose_reloc){.off = l->tensors_off + (uint64_t)i * sizeof(sp_tensor) +
                                        offsetof(sp_tensor, addr),
                                 .delta = desc[i].addr - src_value(src, st, a, args),
                                 .src = src};
    }
    /* Argument words of tensors point at descriptors in the image. */
    const uint64_t *words = (const uint64_t *)(image + l->args_off);
    for (uint32_t t = 0; t < g->task_count && rc == SP_OK; t++) {
        const hbg_build_task *bt = &g->tasks[t];
        for (uint32_t k = 0; k < bt->tensor_count; k++) {
            uint64_t w = bt->args_begin + (uint64_t)k;
            lr[at++] = (loose_reloc){.off = l->args_off + w * sizeof(uint64_t),
                                     .delta = words[w] - a->image,
                                     .src = HBG_SRC_IMAGE};
        }
    }
    /* A predicated task's element address (HBG_PRED_ADDR_WORD): in a
     * tensor buffer, relocated with it. */
    for (uint32_t t = 0; t < g->task_count && rc == SP_OK; t++) {
        const hbg_build_task *bt = &g->tasks[t];
        if (bt->pred_op == SP_PRED_NONE)
            continue;
        uint64_t w = HBG_PRED_ADDR_WORD(bt->args_begin);
        uint32_t src = src_of_addr(g, st, words[w]);
        if (src == HBG_SRC_COUNT) {
            never(rec, "a task's predicate lies in no buffer of the run");
            rc = SP_ENOTSUP;
            break;
        }
        lr[at++] = (loose_reloc){.off = l->args_off + w * sizeof(uint64_t),
                                 .delta = words[w] - src_value(src, st, a, args),
                                 .src = src};
    }
    for (uint64_t i = 0; i < rec->scalar_count && rc == SP_OK; i++) {
        const hbg_scalar_note *s = &rec->scalars[i];
        uint32_t src = HBG_SRC_SCALAR + s->run_scalar;
        lr[at++] = (loose_reloc){.off = l->args_off + s->arg * sizeof(uint64_t),
                                 .delta = words[s->arg] - src_value(src, st, a, args),
                                 .src = src};
    }
    if (rc == SP_OK) {
        for (uint64_t i = 0; i < at; i++)
            count[lr[i].src]++;
        uint32_t groups = 0;
        for (uint32_t s = 0; s < HBG_SRC_COUNT; s++)
            groups += count[s] != 0;
        rd->relocs = malloc((at ? at : 1) * sizeof *rd->relocs);
        rd->groups = malloc((groups ? groups : 1) * sizeof *rd->groups);
        rd->bank_src = calloc((size_t)HBG_REPLAY_BANKS * (groups ? groups : 1), sizeof(uint64_t));
        if (!rd->relocs || !rd->groups || !rd->bank_src)
            rc = SP_ENOMEM;
        rd->reloc_count = at;
        rd->group_count = groups;
    }
    if (rc == SP_OK) {
        /* Counting sort: count[] becomes each source's group index. */
        uint64_t begin = 0;
        uint32_t gi = 0;
        uint64_t *fill = calloc(rd->group_count ? rd->group_count : 1, sizeof *fill);
        if (!fill)
            rc = SP_ENOMEM;
        for (uint32_t s = 0; s < HBG_SRC_COUNT && rc == SP_OK; s++) {
            if (!count[s])
                continue;
            rd->groups[gi] = (hbg_reloc_group){.src = s, .count = count[s], .begin = begin};
            fill[gi] = begin;
            begin += count[s];
            count[s] = gi++;
        }
        for (uint64_t i = 0; i < at && rc == SP_OK; i++)
            rd->relocs[fill[count[lr[i].src]]++] =
                (hbg_reloc){.off = lr[i].off, .delta = lr[i].delta};
        free(fill);
    }
    free(lr);
    free(count);
    return rc;
}

int hbg_record_make(hbg_record **out, hbg_recording *rec, const hbg_graph *g, const hbg_layout *l,
                    const uint8_t *image, const rt_staging *st, const sp_arena *a,
                    const sp_args *args, uint32_t bank)
{
    *out = NULL;
    if (g->control_writes)
        never(rec, "its orchestration wrote a control tensor (sp_tensor_write), which a replay "
                   "would not write again");
    /* The header counts a patch in 32 bits. */
    if (hbg_replay_patch_bytes(g, rec) / sizeof(hbg_patch) > UINT32_MAX)
        never(rec, "its graph has more run-dependent words than a patch counts (2^32)");
    if (rec->never[0])
        return SP_ENOTSUP;
    hbg_record *rd = calloc(1, sizeof *rd);
    if (!rd)
        return SP_ENOMEM;
    rd->image_bytes = l->total;
    rd->patch_off = l->total; /* sections end 64-aligned */
    rd->heap_need = g->heap_used;
    rd->task_count = g->task_count;
    rd->pred_tasks = g->pred_tasks;
    rd->edge_count = g->dep_count;
    rd->image = malloc(l->total);
    rd->deps = malloc((g->dep_count ? g->dep_count : 1) * sizeof *rd->deps);
    int rc = rd->image && rd->deps ? SP_OK : SP_ENOMEM;
    if (rc == SP_OK)
        rc = make_relocs(rd, rec, g, l, image, st, a, args);
    if (rc) {
        hbg_record_free(rd);
        return rc;
    }
    memcpy(rd->image, image, l->total);
    for (uint32_t i = 0; i < g->task_count; i++) {
        const hbg_build_task *bt = &g->tasks[i];
        if (bt->dep_count) /* g->deps is NULL in a graph without edges */
            memcpy(rd->deps + bt->deps_begin, g->deps + bt->deps_begin,
                   bt->dep_count * sizeof *rd->deps);
        uint32_t lanes = 0;
        for (int k = 0; k < 3; k++)
            lanes += bt->kernel[k] >= 0;
        rd->trace_slices += (uint64_t)bt->block_num * lanes;
    }
    /* Unique enough across records and contexts; never 0. */
    rd->tag = (sp_now_ns() * 0x9e3779b97f4a7c15ull) ^ (uint64_t)(uintptr_t)rd;
    if (!rd->tag)
        rd->tag = 1;
    ((hbg_image *)rd->image)->replay_tag = rd->tag;
    if (bank < HBG_REPLAY_BANKS) {
        uint64_t *src = rd->bank_src + (uint64_t)bank * rd->group_count;
        for (uint32_t gi = 0; gi < rd->group_count; gi++)
            src[gi] = src_value(rd->groups[gi].src, st, a, args);
        rd->bank[bank] = (hbg_bank_view){
            .valid = true, .image_dev = a->image, .image_held = a->size.image_bytes};
    }
    *out = rd;
    return SP_OK;
}

int hbg_replay_upload(hbg_record *rd, const rt_prepare *p, const rt_staging *st, const sp_arena *a,
                      uint64_t trace_dev, rt_host_scratch *stage, uint64_t *uploaded)
{
    *uploaded = 0;
    const uint32_t bank = p->dev_bank;
    hbg_bank_view *view = bank < HBG_REPLAY_BANKS ? &rd->bank[bank] : NULL;
    uint64_t *last = view ? rd->bank_src + (uint64_t)bank * rd->group_count : NULL;
    bool full = !view || !view->valid || view->image_dev != a->image ||
                view->image_held != a->size.image_bytes;
    int rc;
    if (!full) {
        /* The bank's image may have been overwritten since (a fresh run,
         * another record, another context on this bank): its header says. */
        uint64_t tag = 0;
        rc = sp_host_copy_from_device(p->api, &tag, a->image + offsetof(hbg_image, replay_tag),
                                      sizeof tag);
        if (rc) {
            snprintf(p->err, p->err_len, "replay: reading the image's tag: %s", sp_status_name(rc));
            return rc;
        }
        full = tag != rd->tag;
    }
    /* The patch: every word of a group whose source moved. */
    uint64_t src[HBG_SRC_COUNT];
    uint64_t n = 0;
    for (uint32_t gi = 0; gi < rd->group_count; gi++) {
        src[gi] = src_value(rd->groups[gi].src, st, a, p->args);
        if (full || last[gi] != src[gi])
            n += rd->groups[gi].count;
    }
    const uint64_t head = HBG_IMAGE_TENSORS_OFF;
    if ((rc = rt_host_scratch_reserve(stage, head + n * sizeof(hbg_patch))) != SP_OK) {
        snprintf(p->err, p->err_len, "replay: host staging of a %llu-word patch: %s",
                 (unsigned long long)n, sp_status_name(rc));
        return rc;
    }
    hbg_patch *patch = (hbg_patch *)((char *)stage->ptr + head);
    uint64_t at = 0;
    for (uint32_t gi = 0; gi < rd->group_count; gi++) {
        if (!full && last[gi] == src[gi])
            continue;
        const hbg_reloc *r = rd->relocs + rd->groups[gi].begin;
        const uint64_t base = src[gi];
        for (uint32_t k = 0; k < rd->groups[gi].count; k++)
            patch[at++] = (hbg_patch){.off = r[k].off, .value = base + r[k].delta};
    }
    hbg_image *h = stage->ptr;
    memcpy(h, rd->image, sizeof *h); /* pristine: counters 0, queues seeded */
    h->kernel_table = p->callable->kernel_table;
    h->kernel_count = p->callable->kernel_count;
    h->timeout_ns = p->kernel_timeout_ns;
    h->trace = trace_dev;
    h->replay_tag = rd->tag;
    h->patch_off = rd->patch_off;
    h->patch_count = (uint32_t)n;
    h->reset = 1;
    if (view)
        view->valid = false; /* until every part is up */
    uint64_t sent = 0;
    if (full) {
        rc = sp_host_copy_to_device(p->api, a->image + head, rd->image + head,
                                    rd->image_bytes - head);
        sent += rd->image_bytes - head;
    }
    if (rc == SP_OK && n) {
        rc = sp_host_copy_to_device(p->api, a->image + rd->patch_off, patch, n * sizeof(hbg_patch));
        sent += n * sizeof(hbg_patch);
    }
    if (rc == SP_OK) {
        rc = sp_host_copy_to_device(p->api, a->image, h, sizeof *h);
        sent += sizeof *h;
    }
    if (rc) {
        snprintf(p->err, p->err_len, "replay: uploading the %s of %llu bytes: %s",
                 full ? "image" : "patch", (unsigned long long)sent, sp_status_name(rc));
        return rc;
    }
    if (view) {
        memcpy(last, src, rd->group_count * sizeof *last);
        *view = (hbg_bank_view){
            .valid = true, .image_dev = a->image, .image_held = a->size.image_bytes};
    }
    *uploaded = sent;
    return SP_OK;
}
