/* What the chip_probe kernels write, shared with the tests that read it. */
#ifndef SP_TEST_KERNELS_CHIP_PROBE_H
#define SP_TEST_KERNELS_CHIP_PROBE_H

#include <stdint.h>

/* One record of chip_report_ctx: the kernel's whole sp_kernel_ctx. */
typedef struct chip_ctx_record {
    uint64_t task_id;
    uint32_t block_idx, block_num, sub_block, core_type, core_id, cluster_id;
    uint64_t seen; /* how many times the record was written */
} chip_ctx_record;

#endif
