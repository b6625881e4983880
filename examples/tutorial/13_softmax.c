/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 13_softmax.c: softmax and L2 normalisation of a vector split across the
 * ranks, each holding [rank + 1, rank + 2, rank + 3] in float32. The
 * softmax needs the global maximum (for stability) and the global sum of
 * exponentials; the norm the global sum of squares: three all_reduce calls
 * on scalars. Checked against the whole vector worked out serially in
 * double, within float32's rounding (relative 1e-5).
 *
 * torch:  dist.all_reduce(m, op=ReduceOp.MAX); dist.all_reduce(s, op=ReduceOp.SUM)
 */
#include "tutorial.h"

static int close_enough(double got, double want)
{
    return fabs(got - want) <= 1e-5 * fabs(want);
}

int main(void)
{
    weft_comm_t world;
    float x[3], soft[3], unit[3], max, sum = 0, squares = 0;
    double gmax = 0, gsum = 0, gsq = 0;
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    for (int i = 0; i < 3; i++)
        x[i] = (float)(rank + 1 + i);

    max = fmaxf(x[0], fmaxf(x[1], x[2]));
    CHECK(weft_allreduce(WEFT_IN_PLACE, &max, 1, WEFT_FLOAT32, WEFT_MAX, world));
    for (int i = 0; i < 3; i++) {
        sum += expf(x[i] - max);
        squares += x[i] * x[i];
    }
    CHECK(weft_allreduce(WEFT_IN_PLACE, &sum, 1, WEFT_FLOAT32, WEFT_SUM, world));
    CHECK(weft_allreduce(WEFT_IN_PLACE, &squares, 1, WEFT_FLOAT32, WEFT_SUM, world));
    for (int i = 0; i < 3; i++) {
        soft[i] = expf(x[i] - max) / sum;
        unit[i] = x[i] / sqrtf(squares);
    }
    printf("Rank %d softmax [%.6f, %.6f, %.6f] normalised [%.6f, %.6f, %.6f]\n", rank, soft[0],
           soft[1], soft[2], unit[0], unit[1], unit[2]);

    /* The whole vector 1, 2, 3, 2, 3, 4, ..., size + 2, serially: its
     * largest element is size + 2. */
    gmax = size + 2;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3; i++) {
            gsum += exp(r + 1 + i - gmax);
            gsq += (double)(r + 1 + i) * (r + 1 + i);
        }
    for (int i = 0; i < 3; i++)
        if (!close_enough(soft[i], exp(x[i] - gmax) / gsum) ||
            !close_enough(unit[i], x[i] / sqrt(gsq))) {
            fprintf(stderr, "rank %d: element %d: softmax %.7g, norm %.7g; serially %.7g, %.7g\n",
                    rank, i, soft[i], unit[i], exp(x[i] - gmax) / gsum, x[i] / sqrt(gsq));
            return 1;
        }
    CHECK(weft_comm_destroy(world));
    return 0;
}
