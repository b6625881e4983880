/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello.c: weft's first example. Every rank sends a greeting and a small
 * array to its right neighbour in a ring, receives both from its left
 * neighbour, and says what it got.
 *
 *   weftrun -n 4 examples/hello
 *
 * Exit status 0 when every rank received exactly what its neighbour sent.
 */
#include <stdio.h>
#include <string.h>

#include <weft.h>

#define GREETING_MAX 64
#define NUMBERS 4
#define TAG_GREETING 1
#define TAG_NUMBERS 2

/* Reports a failed weft call; weft_last_error() says what went wrong. */
static int failed(const char *call, weft_result_t rc)
{
    fprintf(stderr, "hello: %s: %s: %s\n", call, weft_strerror(rc), weft_last_error());
    return 1;
}

int main(void)
{
    weft_comm_t world;
    weft_result_t rc;
    weft_request_t sends[2];
    weft_status_t status;
    int rank, size, right, left, ok = 1;
    char greeting[GREETING_MAX], received[GREETING_MAX], expected[GREETING_MAX];
    int32_t numbers[NUMBERS], got[NUMBERS];
    size_t got_count;

    /* Joins the job that weftrun (or torchrun, srun, mpirun) started. */
    rc = weft_init(NULL, &world);
    if (rc != WEFT_SUCCESS)
        return failed("weft_init", rc);
    weft_comm_rank(world, &rank);
    weft_comm_size(world, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    snprintf(greeting, sizeof(greeting), "hello from rank %d", rank);
    for (int i = 0; i < NUMBERS; i++)
        numbers[i] = 10 * rank + i;

    /* Nonblocking sends first, so that no rank waits for its right
     * neighbour before receiving from its left one. */
    rc = weft_isend(greeting, strlen(greeting) + 1, WEFT_UINT8, right, TAG_GREETING, world,
                    &sends[0]);
    if (rc != WEFT_SUCCESS)
        return failed("weft_isend", rc);
    rc = weft_isend(numbers, NUMBERS, WEFT_INT32, right, TAG_NUMBERS, world, &sends[1]);
    if (rc != WEFT_SUCCESS)
        return failed("weft_isend", rc);

    memset(received, 0, sizeof(received));
    rc = weft_recv(received, sizeof(received) - 1, WEFT_UINT8, left, TAG_GREETING, world,
                   &status);
    if (rc != WEFT_SUCCESS)
        return failed("weft_recv", rc);
    rc = weft_recv(got, NUMBERS, WEFT_INT32, left, TAG_NUMBERS, world, &status);
    if (rc != WEFT_SUCCESS)
        return failed("weft_recv", rc);
    got_count = status.count;
    rc = weft_waitall(2, sends, NULL);
    if (rc != WEFT_SUCCESS)
        return failed("weft_waitall", rc);

    printf("rank %d of %d received \"%s\" and [", rank, size, received);
    for (size_t i = 0; i < got_count; i++)
        printf("%s%d", i ? ", " : "", (int)got[i]);
    printf("] from rank %d\n", status.source);

    /* Did the left neighbour's message arrive intact? */
    snprintf(expected, sizeof(expected), "hello from rank %d", left);
    if (strcmp(received, expected) != 0 || got_count != NUMBERS || status.source != left)
        ok = 0;
    for (size_t i = 0; i < got_count && i < NUMBERS; i++)
        if (got[i] != 10 * left + (int)i)
            ok = 0;
    if (!ok)
        fprintf(stderr, "hello: rank %d expected \"%s\" and [%d, ...] from rank %d\n", rank,
                expected, 10 * left, left);

    weft_comm_destroy(world);
    return ok ? 0 : 1;
}
