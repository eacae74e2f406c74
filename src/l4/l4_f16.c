/* F16 datatype and reductions for MPI (l4_f16.h). */
#include "l4/l4_f16.h"

#include "l3/l3_coll.h"

#include <string.h>

/* The chips' own f16 arithmetic (src/l3/l3_reduce.c, compiled into this
 * library too): an allreduce gives the same bits at level 3 and level 4. */
static void f16_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    l3_reduce(inout, in, (uint64_t)*len, SP_DTYPE_F16, SP_L3_SUM);
}

static void f16_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    l3_reduce(inout, in, (uint64_t)*len, SP_DTYPE_F16, SP_L3_MAX);
}

int l4_f16_create(l4_f16_ops *f)
{
    f->type = MPI_DATATYPE_NULL;
    f->sum = f->max = MPI_OP_NULL;
    int rc = MPI_Type_contiguous(2, MPI_BYTE, &f->type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&f->type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Op_create(f16_sum, 1, &f->sum);
    if (rc == MPI_SUCCESS)
        rc = MPI_Op_create(f16_max, 1, &f->max);
    if (rc != MPI_SUCCESS)
        l4_f16_free(f);
    return rc;
}

void l4_f16_free(l4_f16_ops *f)
{
    if (f->sum != MPI_OP_NULL)
        MPI_Op_free(&f->sum);
    if (f->max != MPI_OP_NULL)
        MPI_Op_free(&f->max);
    if (f->type != MPI_DATATYPE_NULL)
        MPI_Type_free(&f->type);
}
