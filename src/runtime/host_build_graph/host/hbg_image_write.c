/* hbg image layout and writing: counts, offsets, fan-out in CSR form, the
 * seeded ready queues, and argument words that point at the descriptors. */
#include "runtime/host_build_graph/host/hbg_image_write.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/orchestration.h"
#include "simpler/status.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

/* Tasks are written field by field: every byte must be a named field. */
_Static_assert(sizeof(hbg_task) == 13 * sizeof(uint32_t), "hbg_task has no implicit padding");

int hbg_layout_compute(const hbg_graph *g, hbg_layout *l)
{
    memset(l, 0, sizeof *l);
    uint64_t off = HBG_IMAGE_TENSORS_OFF;
    l->tensors_off = off;
    off = ALIGN64(off + (uint64_t)g->tensor_count * sizeof(sp_tensor));
    l->tasks_off = off;
    off = ALIGN64(off + (uint64_t)g->task_count * sizeof(hbg_task));
    l->fanout_off = off;
    off = ALIGN64(off + g->dep_count * sizeof(uint32_t));
    l->args_off = off;
    off = ALIGN64(off + g->arg_count * sizeof(uint64_t));
    for (int q = 0; q < HBG_QUEUES; q++) {
        /* Blocks ever pushed to the queue: counted as tasks were submitted. */
        if (g->queue_blocks[q] > UINT32_MAX)
            return SP_EGRAPH_LIMIT;
        l->capacity[q] = (uint32_t)g->queue_blocks[q];
        l->slots_off[q] = off;
        off = ALIGN64(off + g->queue_blocks[q] * sizeof(uint32_t));
    }
    l->total = off;
    return SP_OK;
}

/* Zero the alignment gap between the end of a section and the next one. */
static void fill_gap(uint8_t *base, uint64_t end, uint64_t next)
{
    if (next > end)
        memset(base + end, 0, next - end);
}

int hbg_image_write(hbg_graph *g, const hbg_layout *l, uint64_t image_dev, uint64_t kernel_table,
                    uint32_t kernel_count, uint64_t timeout_ns)
{
    /* The tensors are in place already: grow the staging around them. */
    rt_host_scratch *st = &g->store[HBG_STORE_IMAGE];
    if (st->cap < l->total) {
        int rc = rt_host_scratch_grow(
            st, l->total, HBG_IMAGE_TENSORS_OFF + (size_t)g->tensor_count * sizeof(sp_tensor), 0);
        if (rc)
            return rc;
        g->tensors = (sp_tensor *)((char *)st->ptr + HBG_IMAGE_TENSORS_OFF);
        g->tensor_cap = (uint32_t)g->tensor_count;
    }
    uint8_t *base = st->ptr;
    const uint32_t n = g->task_count;
    hbg_image *h = (hbg_image *)base;
    memset(h, 0, sizeof *h);
    fill_gap(base, sizeof *h, l->tensors_off);
    fill_gap(base, l->tensors_off + (uint64_t)g->tensor_count * sizeof(sp_tensor), l->tasks_off);
    h->magic = HBG_IMAGE_MAGIC;
    h->version = HBG_IMAGE_VERSION;
    h->task_count = n;
    h->edge_count = g->dep_count;
    h->total_bytes = l->total;
    h->tasks_off = l->tasks_off;
    h->fanout_off = l->fanout_off;
    h->args_off = l->args_off;
    h->tensors_off = l->tensors_off;
    h->kernel_table = kernel_table;
    h->kernel_count = kernel_count;
    h->timeout_ns = timeout_ns;
    for (int q = 0; q < HBG_QUEUES; q++) {
        h->queues[q].slots_off = l->slots_off[q];
        h->queues[q].capacity = l->capacity[q];
    }

    /* One pass in task order. Fan-out in CSR form: a task's consumers start
     * where its predecessors' end (their number was counted at submit), and
     * are filled in as each consumer comes by, so they ascend; a consumer's
     * producers all come earlier, so their ranges are already placed. */
    hbg_task *tasks = (hbg_task *)(base + l->tasks_off);
    uint32_t *fanout = (uint32_t *)(base + l->fanout_off);
    uint64_t *args = (uint64_t *)(base + l->args_off);
    const uint64_t desc_dev = image_dev + l->tensors_off;
    uint32_t tail[HBG_QUEUES] = {0}, fanout_at = 0, ready = 0;
    for (uint32_t i = 0; i < n; i++) {
        const hbg_build_task *bt = &g->tasks[i];
        hbg_task *t = &tasks[i];
        t->fanout_begin = fanout_at;
        t->fanout_count = 0; /* the fill cursor until every consumer is in */
        t->args_begin = bt->args_begin;
        t->block_num = bt->block_num;
        memcpy(t->kernel, bt->kernel, sizeof t->kernel);
        t->shape = bt->shape;
        t->pred_op = bt->pred_op;
        t->pred_dtype = bt->pred_dtype;
        atomic_init(&t->pred_state, HBG_PRED_UNDECIDED);
        atomic_init(&t->fanin_left, bt->dep_count);
        atomic_init(&t->blocks_left, bt->block_num);
        atomic_init(&t->next_block, 0);
        t->check_mask = bt->check_mask;
        t->fanin_init = bt->dep_count;
        fanout_at += bt->fanout_count;

        const hbg_dep *dep = &g->deps[bt->deps_begin];
        for (uint32_t k = 0; k < bt->dep_count; k++) {
            hbg_task *p = &tasks[dep[k].producer];
            fanout[p->fanout_begin + p->fanout_count++] = i;
        }

        const uint64_t *src = &g->args[bt->args_begin];
        uint64_t *dst = &args[bt->args_begin];
        for (int a = 0; a < bt->tensor_count; a++)
            dst[a] = desc_dev + src[a] * sizeof(sp_tensor);
        for (int a = bt->tensor_count; a < bt->tensor_count + bt->scalar_count; a++)
            dst[a] = src[a];
        if (bt->pred_op != SP_PRED_NONE) /* its words before the arguments, as they are */
            memcpy(dst - HBG_PRED_WORDS, src - HBG_PRED_WORDS, HBG_PRED_WORDS * sizeof *dst);

        /* Seed the ready queues: every block of every task without producers. */
        if (bt->dep_count == 0) {
            int q = rt_queue_of_shape(bt->shape);
            uint32_t *slots = (uint32_t *)(base + l->slots_off[q]);
            for (uint32_t b = 0; b < bt->block_num; b++)
                slots[tail[q]++] = i + 1;
            ready++;
        }
    }
    fill_gap(base, l->tasks_off + (uint64_t)n * sizeof(hbg_task), l->fanout_off);
    fill_gap(base, l->fanout_off + g->dep_count * sizeof(uint32_t), l->args_off);
    fill_gap(base, l->args_off + g->arg_count * sizeof(uint64_t), l->slots_off[0]);

    /* The rest of every queue is empty (0 = not yet written), its padding too. */
    for (int q = 0; q < HBG_QUEUES; q++) {
        uint64_t end = q + 1 < HBG_QUEUES ? l->slots_off[q + 1] : l->total;
        fill_gap(base, l->slots_off[q] + (uint64_t)tail[q] * sizeof(uint32_t), end);
        /* Relaxed: the image is private to this thread until it is uploaded. */
        atomic_store_explicit(&h->queues[q].tail, tail[q], memory_order_relaxed);
    }
    h->ready_count = ready;
    return SP_OK;
}
