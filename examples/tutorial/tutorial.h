/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tutorial.h: what the tutorial programs share: stopping on an error,
 * printing what a rank holds the way the torch.distributed tutorials do,
 * and checking it against the value worked out by hand.
 */
#ifndef WEFT_TUTORIAL_H
#define WEFT_TUTORIAL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <weft.h>

/* Stops the program, naming the call and weft's explanation. */
#define CHECK(call)                                                                \
    do {                                                                           \
        weft_result_t rc_ = (call);                                                \
        if (rc_ != WEFT_SUCCESS) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call,     \
                    weft_strerror(rc_), weft_last_error());                        \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

/* "Rank 1 has data [200, 400]" */
static inline void show(int rank, const char *what, const int32_t *v, size_t n)
{
    printf("Rank %d %s [", rank, what);
    for (size_t i = 0; i < n; i++)
        printf("%s%d", i ? ", " : "", v[i]);
    printf("]\n");
    fflush(stdout);
}

/* Exits 1 unless got equals want element for element. */
static inline void expect(int rank, const char *what, const int32_t *got, const int32_t *want,
                          size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "rank %d: %s: element %zu is %d, expected %d\n", rank, what, i,
                    got[i], want[i]);
            exit(1);
        }
}

#endif /* WEFT_TUTORIAL_H */
