/*
 * mpi_bench.c: the MPI side of bench/compare.sh. Times the collectives
 * weft-bench times, the same way (warm-up, a barrier, a timed loop, the
 * slowest rank's mean), so that the two programs' figures compare:
 *
 *   mpirun -n 4 mpi_bench OP BYTES ITERS
 *
 * prints "OP BYTES TIME_US" on rank 0. OP is allreduce, broadcast,
 * allgather, reduce_scatter, alltoall or pingpong (ranks 0 and 1, half
 * the round trip); BYTES is nccl-tests' size (the
 * whole gathered or scattered buffer for the last three); float32 data,
 * sum.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, n, iters, warmup = 5;
    size_t bytes, count;
    float *sb, *rb;
    double t0, t;
    const char *op;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_bench OP BYTES ITERS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    op = argv[1];
    bytes = strtoull(argv[2], NULL, 0);
    iters = atoi(argv[3]);
    count = bytes / sizeof(float);
    if (!strcmp(op, "allgather") || !strcmp(op, "reduce_scatter") || !strcmp(op, "alltoall"))
        count /= (size_t)n; /* per-rank block */
    sb = calloc(count * (size_t)n + 1, sizeof(float));
    rb = calloc(count * (size_t)n + 1, sizeof(float));
    for (int i = -warmup; i < iters; i++) {
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (!strcmp(op, "allreduce"))
            MPI_Allreduce(sb, rb, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(op, "broadcast"))
            MPI_Bcast(sb, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        else if (!strcmp(op, "allgather"))
            MPI_Allgather(sb, (int)count, MPI_FLOAT, rb, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce_scatter"))
            MPI_Reduce_scatter_block(sb, rb, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(op, "alltoall"))
            MPI_Alltoall(sb, (int)count, MPI_FLOAT, rb, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        else if (!strcmp(op, "pingpong") && rank == 0) {
            MPI_Send(sb, (int)count, MPI_FLOAT, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rb, (int)count, MPI_FLOAT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (!strcmp(op, "pingpong") && rank == 1) {
            MPI_Recv(rb, (int)count, MPI_FLOAT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(rb, (int)count, MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
        } else if (!strcmp(op, "pingpong"))
            ;
        else {
            if (rank == 0)
                fprintf(stderr, "mpi_bench: unknown operation %s\n", op);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    t = (MPI_Wtime() - t0) / iters * 1e6;
    if (!strcmp(op, "pingpong"))
        t /= 2; /* one way of the round trip, as weft-bench reports it */
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %zu %.3f\n", op, bytes, t);
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
