/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_bench.c: the MPI side of bench/compare.sh. Times the collectives
 * weft-bench times, the same way (warm-up, a barrier, a timed loop, the
 * slowest rank's mean), so that the two programs' figures compare:
 *
 *   mpirun -n 4 mpi_bench OP BYTES ITERS [WARMUP [WARMUP_MS]]
 *
 * prints "OP BYTES TIME_US" on rank 0. OP is allreduce, broadcast,
 * allgather, reduce_scatter, alltoall, pingpong (ranks 0 and 1, half
 * the round trip) or bw (a window of BW_WINDOW nonblocking messages from
 * rank 0 to rank 1, closed by an empty one back, as weft-bench's bw: the
 * time of one message of the window); BYTES is nccl-tests' size (the
 * whole gathered or scattered buffer for the last three); float32 data,
 * sum.
 *
 * Both buffers hold written data, as weft-bench's do: a buffer calloc
 * left untouched maps every page to the kernel's one zero page, which
 * stays in cache, and a 32 MiB all-gather read from it ran 1.6x faster
 * than from real memory.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, BROADCAST, ALLGATHER, REDUCE_SCATTER, ALLTOALL, PINGPONG, BW, UNKNOWN };

/* weft-bench's BENCH_BW_WINDOW. */
#define BW_WINDOW 64

/* The operation's number, looked up once: the timed loop should cost
 * what MPI costs, not string comparisons (weft-bench's loop switches on
 * a number too). */
static int op_number(const char *op)
{
    static const char *const ops[] = { "allreduce", "broadcast", "allgather", "reduce_scatter",
                                       "alltoall", "pingpong", "bw" };

    for (int i = 0; i < UNKNOWN; i++)
        if (!strcmp(op, ops[i]))
            return i;
    return UNKNOWN;
}

/* One operation of the kind measured. */
/* Writes every element, so that every page is the process's own. */
static void fill(float *buf, size_t n, float value)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = value;
}

static void once(int op, float *sb, float *rb, size_t count, int rank)
{
    switch (op) {
    case ALLREDUCE:
        MPI_Allreduce(sb, rb, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BROADCAST:
        MPI_Bcast(sb, (int)count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sb, (int)count, MPI_FLOAT, rb, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        MPI_Reduce_scatter_block(sb, rb, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sb, (int)count, MPI_FLOAT, rb, (int)count, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case PINGPONG:
        if (rank == 0) {
            MPI_Send(sb, (int)count, MPI_FLOAT, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rb, (int)count, MPI_FLOAT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(rb, (int)count, MPI_FLOAT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(rb, (int)count, MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
        }
        break;
    case BW: {
        MPI_Request reqs[BW_WINDOW];
        char none = 0;

        if (rank > 1)
            break;
        for (int i = 0; i < BW_WINDOW; i++) {
            if (rank == 0)
                MPI_Isend(sb, (int)count, MPI_FLOAT, 1, 2, MPI_COMM_WORLD, &reqs[i]);
            else
                MPI_Irecv(rb, (int)count, MPI_FLOAT, 0, 2, MPI_COMM_WORLD, &reqs[i]);
        }
        MPI_Waitall(BW_WINDOW, reqs, MPI_STATUSES_IGNORE);
        if (rank == 0)
            MPI_Recv(&none, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(&none, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        break;
    }
    }
}

int main(int argc, char **argv)
{
    int rank, n, iters, warmup = 5;
    double warmup_ms = 0;
    size_t bytes, count;
    float *sb, *rb;
    double t0, t;
    const char *name;
    int op;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 4 || argc > 6) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_bench OP BYTES ITERS [WARMUP [WARMUP_MS]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (argc >= 5)
        warmup = atoi(argv[4]);
    if (argc == 6)
        warmup_ms = atof(argv[5]);
    name = argv[1];
    op = op_number(name);
    bytes = strtoull(argv[2], NULL, 0);
    iters = atoi(argv[3]);
    count = bytes / sizeof(float);
    if (op == ALLGATHER || op == REDUCE_SCATTER || op == ALLTOALL)
        count /= (size_t)n; /* per-rank block */
    sb = calloc(count * (size_t)n + 1, sizeof(float));
    rb = calloc(count * (size_t)n + 1, sizeof(float));
    if (!sb || !rb) {
        fprintf(stderr, "mpi_bench: out of memory for %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fill(sb, count * (size_t)n + 1, (float)(rank + 1));
    fill(rb, count * (size_t)n + 1, 0.0f);
    if (op == UNKNOWN) {
        if (rank == 0)
            fprintf(stderr, "mpi_bench: unknown operation %s\n", name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 0; i < warmup; i++)
        once(op, sb, rb, count, rank);
    /* Blocks of warm-up until WARMUP_MS passed, as weft-bench's
     * --warmup-ms: the ranks agree after each block. */
    for (double start = MPI_Wtime(), more = warmup_ms > 0; more > 0;) {
        for (int i = 0; i < 8; i++)
            once(op, sb, rb, count, rank);
        more = (MPI_Wtime() - start) * 1e3 < warmup_ms;
        MPI_Allreduce(MPI_IN_PLACE, &more, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        once(op, sb, rb, count, rank);
    t = (MPI_Wtime() - t0) / iters * 1e6;
    if (op == PINGPONG)
        t /= 2; /* one way of the round trip, as weft-bench reports it */
    if (op == BW)
        t /= BW_WINDOW; /* one message of the window, as weft-bench reports it */
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %zu %.3f\n", name, bytes, t);
    free(sb);
    free(rb);
    MPI_Finalize();
    return 0;
}
