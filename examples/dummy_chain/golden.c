/* dummy_chain golden: stamps in order write their position; the counter
 * ends at the number of stamps. */
#include "dummy_chain/golden.h"

void dummy_chain_golden(int64_t stamps, int64_t *counter, int64_t *log)
{
    for (int64_t s = 0; s < stamps; s++)
        log[s] = s;
    *counter = stamps;
}
