/* Validation of a submitted task, shared by both runtimes: argument counts,
 * block_num, shape and lanes against the callable's kernels (core types,
 * signatures), directions, dtypes and views, and that every tensor lies in
 * a buffer of the run. Nothing is changed: a task either passes whole or
 * fails with a named status and a message naming the task and func_id. */
#ifndef SP_RUNTIME_TASK_CHECK_H
#define SP_RUNTIME_TASK_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/shared/loaded_callable.h"

#define SP_MAX_BLOCKS 65536u

/* A device range tensors may live in (a staged argument, the heap). */
typedef struct sp_device_range {
    uint64_t dev;
    uint64_t bytes;
} sp_device_range;

typedef struct sp_task_check {
    const sp_loaded_callable *callable;
    const sp_device_range *ranges; /* staged arguments */
    uint32_t range_count;
    sp_device_range heap; /* runtime-allocated tensors */
    char *msg;
    size_t msg_len;
} sp_task_check;

/* Check task `id`; on success fill kernel[lane] with kernel indices (-1 for
 * an idle lane). Returns 0 or a status with the reason in c->msg. */
int sp_task_validate(const sp_task_check *c, uint64_t id, const sp_task *t, int32_t kernel[3]);
/* True if [addr, addr + bytes) lies inside `r`. */
bool sp_range_holds(const sp_device_range *r, uint64_t addr, uint64_t bytes);

#endif
