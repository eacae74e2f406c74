/* The device buffers a module context handed out through
 * simpler_device_malloc: the only memory a device-resident run argument
 * (SP_TENSOR_DEVICE) may name. The worker checks its own table first with
 * named messages and busy counts (src/worker/device_buffers.c); this is
 * the module's own check, so a caller of the module ABI cannot point a
 * run at arbitrary device memory. Thread-safe: one mutex, taken per
 * malloc / free and once per run that has device arguments. */
#ifndef SP_RUNTIME_HOST_DEVICE_BUFFERS_H
#define SP_RUNTIME_HOST_DEVICE_BUFFERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "simpler/types.h"

typedef struct rt_device_buffer {
    uint64_t dev, bytes;
} rt_device_buffer;

typedef struct rt_device_buffers {
    pthread_mutex_t lock;
    rt_device_buffer *b; /* sorted by dev */
    uint32_t count, cap;
} rt_device_buffers;

/* 0 or SP_ESYS. */
int rt_device_buffers_init(rt_device_buffers *d);
void rt_device_buffers_destroy(rt_device_buffers *d);
/* 0 or SP_ENOMEM. */
int rt_device_buffers_add(rt_device_buffers *d, uint64_t dev, uint64_t bytes);
void rt_device_buffers_remove(rt_device_buffers *d, uint64_t dev);
/* Forget every buffer (the device they were on is closed). */
void rt_device_buffers_clear(rt_device_buffers *d);
/* Whether every SP_TENSOR_DEVICE tensor of `args` lies in one live buffer
 * of `d` (NULL: there are none): 0, or SP_EBADPTR / SP_EBOUNDS with the
 * argument named in `err`. */
int rt_device_buffers_check_args(rt_device_buffers *d, const sp_args *args, char *err,
                                 size_t err_len);

#endif
