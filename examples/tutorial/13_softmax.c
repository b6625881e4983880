/*
 * 13_softmax.c: softmax and L2 normalisation of a vector split across the
 * ranks, each holding [rank + 1, rank + 2, rank + 3]. The softmax needs
 * the global maximum (for stability) and the global sum of exponentials;
 * the norm the global sum of squares: three all_reduce calls on scalars.
 * Checked against the same computation done serially over the whole
 * vector, within 1e-6 (the sums are added in another order).
 *
 * torch:  dist.all_reduce(m, op=MAX); dist.all_reduce(s, op=SUM)
 */
#include "tutorial.h"

static int close_enough(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fabs(b) + 1e-12;
}

int main(void)
{
    weft_comm_t world;
    double x[3], soft[3], unit[3], max, sum = 0, squares = 0, gmax = -INFINITY, gsum = 0,
           gsq = 0;
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    for (int i = 0; i < 3; i++)
        x[i] = rank + 1 + i;

    max = x[0] > x[2] ? x[0] : x[2];
    CHECK(weft_allreduce(WEFT_IN_PLACE, &max, 1, WEFT_FLOAT64, WEFT_MAX, world));
    for (int i = 0; i < 3; i++) {
        sum += exp(x[i] - max);
        squares += x[i] * x[i];
    }
    CHECK(weft_allreduce(WEFT_IN_PLACE, &sum, 1, WEFT_FLOAT64, WEFT_SUM, world));
    CHECK(weft_allreduce(WEFT_IN_PLACE, &squares, 1, WEFT_FLOAT64, WEFT_SUM, world));
    for (int i = 0; i < 3; i++) {
        soft[i] = exp(x[i] - max) / sum;
        unit[i] = x[i] / sqrt(squares);
    }
    printf("Rank %d softmax [%.6f, %.6f, %.6f] normalised [%.6f, %.6f, %.6f]\n", rank, soft[0],
           soft[1], soft[2], unit[0], unit[1], unit[2]);

    /* The whole vector, serially. */
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3; i++)
            gmax = r + 1 + i > gmax ? r + 1 + i : gmax;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 3; i++) {
            gsum += exp(r + 1 + i - gmax);
            gsq += (double)(r + 1 + i) * (r + 1 + i);
        }
    for (int i = 0; i < 3; i++)
        if (!close_enough(soft[i], exp(x[i] - gmax) / gsum) ||
            !close_enough(unit[i], x[i] / sqrt(gsq))) {
            fprintf(stderr, "rank %d: element %d differs from the serial result\n", rank, i);
            return 1;
        }
    CHECK(weft_comm_destroy(world));
    return 0;
}
