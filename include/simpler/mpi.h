/* Level 4 over Open MPI (libsimpler_mpi): a transport for sp_l3_options
 * that makes every rank of an MPI job one part of one L3 machine. Link
 * with -lsimpler_mpi (pkg-config simpler-mpi); run with mpirun. */
#ifndef SIMPLER_MPI_H
#define SIMPLER_MPI_H

#include "simpler/export.h"
#include "simpler/l3.h"

typedef struct sp_mpi sp_mpi;

/* Initialize MPI (MPI_Init_thread, unless the program did already) and
 * start the progress thread that drives every MPI call simpler makes.
 * 0, or SP_ESYS with the MPI error text in `err`. */
SP_EXPORT int sp_mpi_open(int *argc, char ***argv, sp_mpi **out, char *err, size_t err_len);
/* The transport to put in sp_l3_options.transport (valid until close). */
SP_EXPORT const sp_l3_transport *sp_mpi_transport(sp_mpi *m);
SP_EXPORT int sp_mpi_rank(const sp_mpi *m);
SP_EXPORT int sp_mpi_size(const sp_mpi *m);
/* Stop the progress thread and finalize MPI if sp_mpi_open initialized
 * it. Close every sp_l3 that uses the transport first. NULL: nothing. */
SP_EXPORT void sp_mpi_close(sp_mpi *m);

#endif
