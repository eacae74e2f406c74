/* F16 for MPI: the 2-byte datatype and the SUM / MAX user operations the
 * transport's iallreduce uses for SP_DTYPE_F16 (MPI has no half type),
 * reducing with the chips' own f16 arithmetic (l3_reduce). */
#ifndef SP_L4_F16_H
#define SP_L4_F16_H

#include <mpi.h>
#include <stdint.h>

typedef struct l4_f16_ops {
    MPI_Datatype type; /* 2 contiguous bytes */
    MPI_Op sum, max;
} l4_f16_ops;

/* Create (on the thread that makes MPI calls) / free them. MPI status. */
int l4_f16_create(l4_f16_ops *f);
void l4_f16_free(l4_f16_ops *f);

#endif
