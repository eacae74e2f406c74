/* hbg image layout and writing: counts, offsets, fan-out in CSR form, the
 * seeded ready queues, and argument words that point at the descriptors. */
#include "runtime/host_build_graph/hbg_image_write.h"

#include <stdlib.h>
#include <string.h>

#include "simpler/orchestration.h"
#include "simpler/status.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t)63)

int hbg_layout_compute(const hbg_graph *g, hbg_layout *l)
{
    memset(l, 0, sizeof *l);
    uint64_t blocks[HBG_QUEUES] = {0};
    for (uint32_t i = 0; i < g->task_count; i++)
        blocks[sp_queue_of_shape(g->tasks[i].shape)] += g->tasks[i].block_num;
    uint64_t off = ALIGN64(sizeof(hbg_image));
    l->tasks_off = off;
    off = ALIGN64(off + (uint64_t)g->task_count * sizeof(hbg_task));
    l->fanout_off = off;
    off = ALIGN64(off + g->dep_count * sizeof(uint32_t));
    l->args_off = off;
    off = ALIGN64(off + g->arg_count * sizeof(uint64_t));
    l->tensors_off = off;
    off = ALIGN64(off + (uint64_t)g->tensor_count * sizeof(sp_tensor));
    for (int q = 0; q < HBG_QUEUES; q++) {
        if (blocks[q] > UINT32_MAX)
            return SP_EGRAPH_LIMIT;
        l->capacity[q] = (uint32_t)blocks[q];
        l->slots_off[q] = off;
        off = ALIGN64(off + blocks[q] * sizeof(uint32_t));
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

int hbg_image_write(const hbg_graph *g, const hbg_layout *l, uint64_t image_dev,
                    uint64_t kernel_table, uint32_t kernel_count, uint64_t timeout_ns,
                    void *staging)
{
    uint8_t *base = staging;
    uint32_t n = g->task_count;
    /* Fan-out in CSR form: count per producer, prefix sums, then fill in
     * consumer order (so each producer's consumers are ascending). */
    uint32_t *cursor = calloc((size_t)n + 1, sizeof *cursor);
    if (!cursor)
        return SP_ENOMEM;
    for (uint64_t e = 0; e < g->dep_count; e++)
        cursor[g->deps[e].producer + 1]++;
    for (uint32_t i = 0; i < n; i++)
        cursor[i + 1] += cursor[i];

    hbg_image *h = (hbg_image *)base;
    memset(h, 0, sizeof *h);
    fill_gap(base, sizeof *h, l->tasks_off);
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

    hbg_task *tasks = (hbg_task *)(base + l->tasks_off);
    for (uint32_t i = 0; i < n; i++) {
        const hbg_build_task *bt = &g->tasks[i];
        hbg_task t;
        memset(&t, 0, sizeof t);
        t.fanout_begin = cursor[i];
        t.fanout_count = 0; /* counted while filling below */
        t.args_begin = bt->args_begin;
        t.block_num = bt->block_num;
        memcpy(t.kernel, bt->kernel, sizeof t.kernel);
        t.shape = bt->shape;
        atomic_init(&t.fanin_left, bt->dep_count);
        atomic_init(&t.blocks_left, bt->block_num);
        atomic_init(&t.next_block, 0);
        memcpy(&tasks[i], &t, sizeof t);
    }
    fill_gap(base, l->tasks_off + (uint64_t)n * sizeof(hbg_task), l->fanout_off);

    uint32_t *fanout = (uint32_t *)(base + l->fanout_off);
    for (uint32_t c = 0; c < n; c++) {
        const hbg_build_task *bt = &g->tasks[c];
        for (uint32_t k = 0; k < bt->dep_count; k++) {
            uint32_t p = g->deps[bt->deps_begin + k].producer;
            fanout[tasks[p].fanout_begin + tasks[p].fanout_count++] = c;
        }
    }
    free(cursor);
    fill_gap(base, l->fanout_off + g->dep_count * sizeof(uint32_t), l->args_off);

    uint64_t *args = (uint64_t *)(base + l->args_off);
    uint64_t desc_dev = image_dev + l->tensors_off;
    for (uint32_t i = 0; i < n; i++) {
        const hbg_build_task *bt = &g->tasks[i];
        const uint64_t *src = &g->args[bt->args_begin];
        uint64_t *dst = &args[bt->args_begin];
        for (int a = 0; a < bt->tensor_count; a++)
            dst[a] = desc_dev + src[a] * sizeof(sp_tensor);
        memcpy(dst + bt->tensor_count, src + bt->tensor_count, bt->scalar_count * sizeof *src);
    }
    fill_gap(base, l->args_off + g->arg_count * sizeof(uint64_t), l->tensors_off);

    memcpy(base + l->tensors_off, g->tensors, (size_t)g->tensor_count * sizeof(sp_tensor));
    fill_gap(base, l->tensors_off + (uint64_t)g->tensor_count * sizeof(sp_tensor), l->slots_off[0]);

    /* Seed the ready queues: every block of every task without producers. */
    for (int q = 0; q < HBG_QUEUES; q++)
        memset(base + l->slots_off[q], 0,
               (q + 1 < HBG_QUEUES ? l->slots_off[q + 1] : l->total) - l->slots_off[q]);
    uint32_t ready = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (g->tasks[i].dep_count)
            continue;
        int q = sp_queue_of_shape(g->tasks[i].shape);
        uint32_t *slots = (uint32_t *)(base + l->slots_off[q]);
        uint32_t tail = atomic_load_explicit(&h->queues[q].tail, memory_order_relaxed);
        for (uint32_t b = 0; b < g->tasks[i].block_num; b++)
            slots[tail++] = i + 1;
        /* Relaxed: the image is private to this thread until it is uploaded. */
        atomic_store_explicit(&h->queues[q].tail, tail, memory_order_relaxed);
        ready++;
    }
    h->ready_count = ready;
    return SP_OK;
}
