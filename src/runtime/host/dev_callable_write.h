/* The host side of the device callable table (runtime/device/dev_callable.h):
 * lay out a registered callable's device view as one self-contained block —
 * the table, its kernels and their strings — with every pointer rebased to
 * the address the block will be read at (the block itself for a host-side
 * reader, its device address for one on the chip). */
#ifndef RT_HOST_DEV_CALLABLE_WRITE_H
#define RT_HOST_DEV_CALLABLE_WRITE_H

#include <stdint.h>

#include "runtime/device/dev_callable.h"
#include "runtime/host/loaded_callable.h"

/* Bytes of lc's block (a multiple of 64). */
uint64_t rt_dev_callable_bytes(const rt_loaded_callable *lc);
/* Write lc's block into `buf` (rt_dev_callable_bytes of room), its pointers
 * valid where the block is read at address `at`; returns the table, in buf. */
rt_dev_callable *rt_dev_callable_write(const rt_loaded_callable *lc, void *buf, uint64_t at);

#endif
