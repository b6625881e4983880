/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * startup.c: the weft side of bench/startup.sh. Joins the job
 * (weft_init), runs one allreduce of one float on the world, and prints,
 * on rank 0, the wall-clock time at which the allreduce returned there
 * (CLOCK_REALTIME, in microseconds since the epoch): the script subtracts
 * the time it started the launcher. Built with -DSTARTUP_MPI it does the
 * same with MPI_Init and MPI_Allreduce (mpicc), so that both sides are
 * one program.
 */
#include <stdio.h>
#include <time.h>

#ifdef STARTUP_MPI
#include <mpi.h>
#else
#include <weft.h>
#endif

static long long now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int main(int argc, char **argv)
{
    float one = 1.0f, sum = 0.0f;
    long long done;
    int rank = 0;

#ifdef STARTUP_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    done = now_us();
#else
    weft_comm_t world;

    (void)argc;
    (void)argv;
    if (weft_init(NULL, &world) != WEFT_SUCCESS ||
        weft_comm_rank(world, &rank) != WEFT_SUCCESS ||
        weft_allreduce(&one, &sum, 1, WEFT_FLOAT32, WEFT_SUM, world) != WEFT_SUCCESS) {
        fprintf(stderr, "startup: %s\n", weft_last_error());
        return 1;
    }
    done = now_us();
#endif
    if (rank == 0)
        printf("%lld %g\n", done, (double)sum);
#ifdef STARTUP_MPI
    MPI_Finalize();
#else
    weft_comm_destroy(world); /* the world's: weft's state goes with it */
#endif
    return 0;
}
