/* bench_graphs kernel: does nothing, so a task's cost is the runtime's. */
#include "simpler/kernel.h"

SP_KERNEL(graphs_empty)
{
    (void)args, (void)ctx;
}
