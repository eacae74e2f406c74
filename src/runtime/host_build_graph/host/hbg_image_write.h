/* Laying a built graph out as an hbg image in the host staging buffer of
 * its store (which already holds the tensor descriptors), ready for one copy
 * to the device. Every byte of the image is written (padding included), so
 * nothing of the staging buffer's old contents reaches the device; the only
 * absolute addresses written are device addresses. */
#ifndef SP_RUNTIME_HBG_IMAGE_WRITE_H
#define SP_RUNTIME_HBG_IMAGE_WRITE_H

#include "runtime/host_build_graph/device/hbg_image.h"
#include "runtime/host_build_graph/host/hbg_build.h"

typedef struct hbg_layout {
    uint64_t tasks_off, fanout_off, args_off, tensors_off;
    uint64_t slots_off[HBG_QUEUES];
    uint32_t capacity[HBG_QUEUES]; /* blocks ever pushed to each queue */
    uint64_t total;
} hbg_layout;

/* Sizes and offsets of `g`'s image; SP_EGRAPH_LIMIT if a count overflows. */
int hbg_layout_compute(const hbg_graph *g, hbg_layout *l);
/* Write the image for device address `image_dev` into g's staging
 * (hbg_image_of), grown to l->total bytes, in one pass over the tasks.
 * Returns 0 or SP_ENOMEM. */
int hbg_image_write(hbg_graph *g, const hbg_layout *l, uint64_t image_dev, uint64_t kernel_table,
                    uint32_t kernel_count, uint64_t timeout_ns);
/* The image hbg_image_write wrote: l->total bytes. */
static inline void *hbg_image_of(const hbg_graph *g)
{
    return g->store[HBG_STORE_IMAGE].ptr;
}

#endif
