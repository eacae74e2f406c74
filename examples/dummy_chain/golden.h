/* dummy_chain golden: what an in-order chain of stamps leaves behind. */
#ifndef SP_EXAMPLES_DUMMY_CHAIN_GOLDEN_H
#define SP_EXAMPLES_DUMMY_CHAIN_GOLDEN_H

#include <stdint.h>

void dummy_chain_golden(int64_t stamps, int64_t *counter, int64_t *log);

#endif
