/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core_to_core.c: how fast data crosses between two cores of this
 * machine, which bench/compare.sh prints before and after its runs.
 *
 * Shared-memory collectives hand data from one core's cache to
 * another's. On a virtual machine that speed depends on where the host
 * runs the virtual cores, and it changes under a running job: on the
 * development machine a cache line's round trip between its two cores
 * took 63-80 ns for minutes, then 320-346 ns for minutes, and a 2-rank
 * 2 MiB allreduce 137-213 us, then 1033-1181 us. A figure measured in
 * the second state says little about the code; this makes the state
 * visible next to the figures.
 *
 * Prints the round trip of a cache line between CPUs A and B (default:
 * the first two this process may use) and the rate at which B copies
 * 1 MiB that A has just written, best of several tries.
 *
 *   core_to_core [A B]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUND_TRIPS 100000
#define COPY_BYTES (1u << 20)
#define COPY_TRIES 30

static _Alignas(64) long turn;
static unsigned char *written, *copied;
static int cpu_b;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void wait_turn(long t)
{
    while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != t)
        ;
}

static void give_turn(long t)
{
    __atomic_store_n(&turn, t, __ATOMIC_RELEASE);
}

/* CPU B: answers every odd turn, then copies each buffer A hands over. */
static void *side_b(void *arg)
{
    (void)arg;
    pin(cpu_b); /* unpinned if that fails: it must answer anyway */
    for (long i = 0; i < ROUND_TRIPS; i++) {
        wait_turn(2 * i + 1);
        give_turn(2 * i + 2);
    }
    for (long r = 0; r < COPY_TRIES; r++) {
        long t = 2 * ROUND_TRIPS + 2 * r + 1;

        wait_turn(t);
        memcpy(copied, written, COPY_BYTES);
        __asm__ volatile("" : : "r"(copied) : "memory");
        give_turn(t + 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    cpu_set_t mine;
    int cpu_a = -1, found = 0;
    double t0, rtt, best = 1e9;
    pthread_t b;

    sched_getaffinity(0, sizeof(mine), &mine);
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &mine)) {
            if (found++ == 0)
                cpu_a = c;
            else
                cpu_b = c;
        }
    if (argc == 3) {
        cpu_a = atoi(argv[1]);
        cpu_b = atoi(argv[2]);
    } else if (found < 2) {
        printf("core_to_core: fewer than two CPUs\n");
        return 0;
    }
    /* Two spinning threads on one CPU would take turns a scheduler tick
     * at a time. */
    if (cpu_a == cpu_b || cpu_a < 0 || cpu_b < 0) {
        printf("core_to_core: needs two different CPUs\n");
        return 0;
    }
    written = malloc(COPY_BYTES);
    copied = malloc(COPY_BYTES);
    if (!written || !copied || pthread_create(&b, NULL, side_b, NULL) != 0) {
        printf("core_to_core: cannot run on CPUs %d and %d\n", cpu_a, cpu_b);
        return 0;
    }
    pin(cpu_a);
    memset(copied, 0, COPY_BYTES);
    t0 = now();
    for (long i = 0; i < ROUND_TRIPS; i++) {
        give_turn(2 * i + 1);
        wait_turn(2 * i + 2);
    }
    rtt = (now() - t0) / ROUND_TRIPS;
    for (long r = 0; r < COPY_TRIES; r++) {
        long t = 2 * ROUND_TRIPS + 2 * r + 1;
        double s;

        memset(written, (int)r, COPY_BYTES);
        s = now();
        give_turn(t);
        wait_turn(t + 1);
        s = now() - s;
        if (s < best)
            best = s;
    }
    pthread_join(b, NULL);
    printf("CPUs %d and %d: cache line round trip %.0f ns, 1 MiB just written on one "
           "copied on the other at %.1f GB/s\n",
           cpu_a, cpu_b, rtt * 1e9, COPY_BYTES / best / 1e9);
    return 0;
}
