/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_coll_v.c: the rooted, uneven and composite collectives against
 * expectations computed here: gather(v) and scatter(v) from every root,
 * allgatherv and alltoallv with uneven blocks, scan and exscan, PREMUL_SUM,
 * the _axis forms along every axis of a 3-D array, and the _bytes forms.
 * Values encode where they came from (rank, block, element), so a
 * misplaced element names itself. Started by weftrun: `mp_coll_v`, or
 * `mp_coll_v big` for the 64 MiB cases.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

static int me, n, cases;

/* Rank r's element i of block j. */
static int32_t val(int r, int j, size_t i)
{
    return r * 1000000 + j * 10000 + (int32_t)i;
}

/* Uneven block sizes: rank r's block for rank j (0 included). */
static size_t uneven(int r, int j)
{
    return (size_t)((r * 3 + j * 5) % 4) * 3;
}

static void sub_gather_scatter(weft_comm_t w)
{
    size_t counts[64], displs[64], total = 0, mine = uneven(me, 0);
    int32_t *all, *blk;

    for (int r = 0; r < n; r++) {
        counts[r] = uneven(r, 0);
        displs[r] = total + 1; /* a gap before each block */
        total += counts[r] + 1;
    }
    all = mp_alloc((total + 1) * 4);
    blk = mp_alloc((mine + 7) * 4);
    for (int root = 0; root < n; root++) {
        /* Even forms, out of place and in place at the root. */
        for (int ip = 0; ip < 2; ip++, cases++) {
            int32_t v[7], *g = mp_alloc((size_t)n * 7 * 4), got[7] = { 0 };

            for (int i = 0; i < 7; i++)
                v[i] = val(me, root, (size_t)i);
            memset(g, 0, (size_t)n * 7 * 4);
            if (ip && me == root)
                memcpy(g + me * 7, v, sizeof(v));
            MP_CHECK(weft_gather(ip && me == root ? WEFT_IN_PLACE : v, g, 7, WEFT_INT32, root,
                                 w));
            for (int r = 0; me == root && r < n; r++)
                for (int i = 0; i < 7; i++)
                    MP_ASSERT(g[r * 7 + i] == val(r, root, (size_t)i), "gather to %d%s: "
                              "rank %d element %d is %d", root, ip ? " in place" : "", r, i,
                              g[r * 7 + i]);
            /* Scatter it back: rank r gets block r. */
            MP_CHECK(weft_scatter(g, ip && me == root ? WEFT_IN_PLACE : got, 7, WEFT_INT32, root,
                                  w));
            for (int i = 0; !(ip && me == root) && i < 7; i++)
                MP_ASSERT(got[i] == val(me, root, (size_t)i), "scatter from %d%s: element %d "
                          "is %d", root, ip ? " in place" : "", i, got[i]);
            free(g);
        }
        /* v-forms with uneven blocks and gaps. */
        for (size_t i = 0; i < mine; i++)
            blk[i] = val(me, root, i);
        memset(all, 0xff, (total + 1) * 4);
        MP_CHECK(weft_gatherv(blk, mine, all, counts, displs, WEFT_INT32, root, w));
        for (int r = 0; me == root && r < n; r++) {
            for (size_t i = 0; i < counts[r]; i++)
                MP_ASSERT(all[displs[r] + i] == val(r, root, i), "gatherv to %d: rank %d "
                          "element %zu is %d", root, r, i, all[displs[r] + i]);
            MP_ASSERT(all[displs[r] - 1] == -1, "gatherv wrote into a gap");
        }
        memset(blk, 0, (mine + 7) * 4);
        MP_CHECK(weft_scatterv(all, counts, displs, blk, mine, WEFT_INT32, root, w));
        for (size_t i = 0; i < mine; i++)
            MP_ASSERT(blk[i] == val(me, root, i), "scatterv from %d: element %zu is %d", root,
                      i, blk[i]);
        cases += 2;
    }
    /* allgatherv: every rank gets every block. */
    for (size_t i = 0; i < mine; i++)
        blk[i] = val(me, 9, i);
    memset(all, 0xff, (total + 1) * 4);
    MP_CHECK(weft_allgatherv(blk, mine, all, counts, displs, WEFT_INT32, w));
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < counts[r]; i++)
            MP_ASSERT(all[displs[r] + i] == val(r, 9, i), "allgatherv: rank %d element %zu",
                      r, i);
    cases++;
    free(all);
    free(blk);
}

/* torch's all_to_all_single with split sizes. */
static void sub_alltoallv(weft_comm_t w)
{
    size_t sc[64], sd[64], rc[64], rd[64], st = 0, rt = 0;
    int32_t *sb, *rb;

    for (int j = 0; j < n; j++) {
        sc[j] = uneven(me, j);
        sd[j] = st;
        st += sc[j];
        rc[j] = uneven(j, me);
        rd[j] = rt;
        rt += rc[j];
    }
    sb = mp_alloc((st + 1) * 4);
    rb = mp_alloc((rt + 1) * 4);
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < sc[j]; i++)
            sb[sd[j] + i] = val(me, j, i);
    MP_CHECK(weft_alltoallv(sb, sc, sd, rb, rc, rd, WEFT_INT32, w));
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < rc[j]; i++)
            MP_ASSERT(rb[rd[j] + i] == val(j, me, i), "alltoallv: from rank %d element %zu is "
                      "%d", j, i, rb[rd[j] + i]);
    cases++;
    free(sb);
    free(rb);
}

static void sub_scan(weft_comm_t w)
{
    static const size_t counts[] = { 0, 1, 7, 1031 };

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
        for (int ip = 0; ip < 2; ip++) {
            size_t k = counts[c];
            int64_t *in = mp_alloc(k * 8 + 8), *s = mp_alloc(k * 8 + 8), *e = mp_alloc(k * 8 + 8);

            for (size_t i = 0; i < k; i++) {
                in[i] = (int64_t)(me + 1) * (int64_t)(i + 1);
                e[i] = -7;
            }
            memcpy(s, in, k * 8);
            MP_CHECK(weft_scan(ip ? WEFT_IN_PLACE : in, s, k, WEFT_INT64, WEFT_SUM, w));
            if (ip)
                memcpy(e, in, k * 8);
            MP_CHECK(weft_exscan(ip ? WEFT_IN_PLACE : in, e, k, WEFT_INT64, WEFT_SUM, w));
            for (size_t i = 0; i < k; i++) {
                int64_t before = (int64_t)me * (me + 1) / 2 * (int64_t)(i + 1);

                MP_ASSERT(s[i] == before + in[i], "scan count %zu%s: element %zu is %lld", k,
                          ip ? " in place" : "", i, (long long)s[i]);
                /* exscan leaves rank 0's buffer as it was. */
                MP_ASSERT(e[i] == (me ? before : ip ? in[i] : -7), "exscan count %zu%s: element "
                          "%zu is %lld", k, ip ? " in place" : "", i, (long long)e[i]);
            }
            cases += 2;
            free(in);
            free(s);
            free(e);
        }
    {   /* MAX and AVG */
        double x = (double)((me * 7) % 5), mx, av, want_mx = 0, sum = 0;

        MP_CHECK(weft_scan(&x, &mx, 1, WEFT_FLOAT64, WEFT_MAX, w));
        MP_CHECK(weft_scan(&x, &av, 1, WEFT_FLOAT64, WEFT_AVG, w));
        for (int r = 0; r <= me; r++) {
            double v = (double)((r * 7) % 5);

            want_mx = v > want_mx ? v : want_mx;
            sum += v;
        }
        MP_ASSERT(mx == want_mx && av == sum / (me + 1), "scan max %g avg %g", mx, av);
        cases += 2;
    }
}

static void sub_premul(weft_comm_t w)
{
    float k = 0.25f, x[5], y[5];
    int32_t ki = -3, xi = me + 1, yi = 0;
    weft_op_t op, opi;

    for (int i = 0; i < 5; i++)
        x[i] = (float)(me + i);
    MP_CHECK(weft_op_create_premul_sum(&k, WEFT_FLOAT32, &op));
    MP_CHECK(weft_op_create_premul_sum(&ki, WEFT_INT32, &opi));
    MP_CHECK(weft_allreduce(x, y, 5, WEFT_FLOAT32, op, w));
    for (int i = 0; i < 5; i++)
        MP_ASSERT(y[i] == 0.25f * (float)(n * (n - 1) / 2 + n * i), "premul allreduce [%d] %g",
                  i, y[i]);
    MP_CHECK(weft_reduce(&xi, &yi, 1, WEFT_INT32, opi, 0, w));
    MP_ASSERT(me || yi == -3 * n * (n + 1) / 2, "premul reduce %d", yi);
    MP_ASSERT(weft_allreduce(x, y, 5, WEFT_FLOAT64, op, w) == WEFT_ERR_INVALID_ARG,
              "a float32 PREMUL_SUM accepted float64");
    MP_CHECK(weft_op_free(op));
    MP_ASSERT(weft_allreduce(x, y, 5, WEFT_FLOAT32, op, w) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "op"), "a freed PREMUL_SUM was accepted");
    MP_CHECK(weft_op_free(opi));
    cases += 3;
}

/* A 3-D array of shape (2, 3, 4) per rank along each axis: element
 * (a, b, c) of rank r is r * 1000 + a * 100 + b * 10 + c. */
static void sub_axis(weft_comm_t w)
{
    size_t local[3] = { 2, 3, 4 }, elems = 24;

    for (int axis = 0; axis < 3; axis++) {
        size_t full[3] = { 2, 3, 4 }, strides[3];
        int32_t loc[24], *big = mp_alloc(elems * (size_t)n * 4), back[24], *a2 = mp_alloc(
                    elems * (size_t)n * 4);

        full[axis] *= (size_t)n;
        strides[2] = 1;
        strides[1] = full[2];
        strides[0] = full[1] * full[2];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 3; b++)
                for (int c = 0; c < 4; c++)
                    loc[(a * 3 + b) * 4 + c] = me * 1000 + a * 100 + b * 10 + c;
        MP_CHECK(weft_allgather_axis(loc, big, 3, local, axis, WEFT_INT32, w));
        /* torch.cat along axis: rank r's block starts at r * local[axis]. */
        for (int r = 0; r < n; r++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 3; b++)
                    for (int c = 0; c < 4; c++) {
                        size_t idx[3] = { (size_t)a, (size_t)b, (size_t)c };

                        idx[axis] += (size_t)r * local[axis];
                        MP_ASSERT(big[idx[0] * strides[0] + idx[1] * strides[1] + idx[2]] ==
                                  r * 1000 + a * 100 + b * 10 + c, "allgather_axis %d: rank %d "
                                  "(%d,%d,%d)", axis, r, a, b, c);
                    }
        for (int root = 0; root < n; root += n > 2 ? n - 1 : 1) {
            int32_t *g = mp_alloc(elems * (size_t)n * 4);

            MP_CHECK(weft_gather_axis(loc, g, 3, local, axis, WEFT_INT32, root, w));
            MP_ASSERT(me != root || !memcmp(g, big, elems * (size_t)n * 4), "gather_axis %d to "
                      "%d", axis, root);
            MP_CHECK(weft_scatter_axis(big, back, 3, full, axis, WEFT_INT32, root, w));
            MP_ASSERT(!memcmp(back, loc, sizeof(loc)), "scatter_axis %d from %d", axis, root);
            free(g);
        }
        MP_CHECK(weft_reduce_scatter_axis(big, back, 3, full, axis, WEFT_INT32, WEFT_SUM, w));
        for (int i = 0; i < 24; i++)
            MP_ASSERT(back[i] == n * loc[i], "reduce_scatter_axis %d: element %d is %d", axis,
                      i, back[i]);
        /* Everyone holds big: block j of it is rank j's array, so rank me
         * receives its own array from every rank, joined along axis. */
        MP_CHECK(weft_alltoall_axis(big, a2, 3, full, axis, WEFT_INT32, w));
        for (int r = 0; r < n; r++)
            for (int i = 0; i < 24; i++) {
                size_t idx[3] = { (size_t)(i / 12), (size_t)(i / 4 % 3), (size_t)(i % 4) };

                idx[axis] += (size_t)r * local[axis];
                MP_ASSERT(a2[idx[0] * strides[0] + idx[1] * strides[1] + idx[2]] == loc[i],
                          "alltoall_axis %d: block %d element %d", axis, r, i);
            }
        MP_ASSERT(weft_scatter_axis(big, back, 3, full, 3, WEFT_INT32, 0, w) ==
                  WEFT_ERR_INVALID_ARG && mp_contains(weft_last_error(), "axis"),
                  "axis 3 of 3 accepted");
        cases += 5;
        free(big);
        free(a2);
    }
    if (n > 1) {
        size_t odd[1] = { (size_t)n + 1 };
        int32_t v[64];

        MP_ASSERT(weft_scatter_axis(v, v, 1, odd, 0, WEFT_INT32, 0, w) == WEFT_ERR_INVALID_ARG &&
                  mp_contains(weft_last_error(), "divisible"), "indivisible shape accepted");
    }
    MP_ASSERT(weft_allgather_axis(&me, &me, 0, local, 0, WEFT_INT32, w) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "ndims"), "ndims 0 accepted");
}

static void sub_bytes(weft_comm_t w)
{
    char msg[64];
    int len = snprintf(msg, sizeof(msg), "rank %d says %.*s", me, me % 5, "hello");
    size_t *lens = mp_alloc((size_t)n * sizeof(size_t)), off = 0;
    void *out = NULL, *rec = NULL;
    size_t rlen = 0;
    const char record[] = { 'w', 0, 'e', 'f', 't', (char)0xff };

    MP_CHECK(weft_allgather_bytes(msg, me == 1 ? 0 : (size_t)len, &out, lens, w));
    for (int r = 0; r < n; r++) {
        char want[64];
        int l = snprintf(want, sizeof(want), "rank %d says %.*s", r, r % 5, "hello");

        if (r == 1)
            l = 0;
        MP_ASSERT(lens[r] == (size_t)l && !memcmp((char *)out + off, want, (size_t)l),
                  "allgather_bytes: rank %d's string", r);
        off += lens[r];
    }
    weft_free(out);
    if (me == n - 1) {
        rec = (void *)record;
        rlen = sizeof(record);
    }
    MP_CHECK(weft_broadcast_bytes(&rec, &rlen, n - 1, w));
    MP_ASSERT(rlen == sizeof(record) && !memcmp(rec, record, sizeof(record)), "broadcast_bytes");
    if (me != n - 1)
        weft_free(rec);
    cases += 2;
    free(lens);
}

/* 64 MiB and more per rank: allreduce (many chunks of the ring and the
 * tree), reduce_scatter, allgather and broadcast, checked in full. */
static void sub_big(weft_comm_t w)
{
    size_t count = (64u << 20) / sizeof(float), block = count / (size_t)n;
    float *a = mp_alloc(count * sizeof(float)), *b = mp_alloc(count * sizeof(float));

    for (size_t i = 0; i < count; i++)
        a[i] = (float)((i + (size_t)me) % 1000);
    MP_CHECK(weft_allreduce(a, b, count, WEFT_FLOAT32, WEFT_SUM, w));
    for (size_t i = 0; i < count; i++) {
        float want = 0;

        for (int r = 0; r < n; r++)
            want += (float)((i + (size_t)r) % 1000);
        MP_ASSERT(b[i] == want, "64 MiB allreduce: element %zu is %g, want %g", i, b[i], want);
    }
    MP_CHECK(weft_reduce(a, b, count, WEFT_FLOAT32, WEFT_MAX, n - 1, w));
    for (size_t i = 0; me == n - 1 && i < count; i++) {
        float want = 0;

        for (int r = 0; r < n; r++)
            want = (float)((i + (size_t)r) % 1000) > want ? (float)((i + (size_t)r) % 1000) : want;
        MP_ASSERT(b[i] == want, "64 MiB reduce: element %zu is %g", i, b[i]);
    }
    MP_CHECK(weft_reduce_scatter(a, b, block, WEFT_FLOAT32, WEFT_SUM, w));
    for (size_t i = 0; i < block; i++) {
        size_t g = (size_t)me * block + i;
        float want = 0;

        for (int r = 0; r < n; r++)
            want += (float)((g + (size_t)r) % 1000);
        MP_ASSERT(b[i] == want, "64 MiB reduce_scatter: element %zu is %g", i, b[i]);
    }
    for (size_t i = 0; i < block; i++)
        a[(size_t)me * block + i] = (float)(me * 7 + (int)(i % 13));
    MP_CHECK(weft_allgather(WEFT_IN_PLACE, a, block, WEFT_FLOAT32, w));
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < block; i++)
            MP_ASSERT(a[(size_t)r * block + i] == (float)(r * 7 + (int)(i % 13)),
                      "64 MiB allgather: block %d element %zu", r, i);
    if (me == 0)
        for (size_t i = 0; i < count; i++)
            a[i] = (float)(i % 4099);
    MP_CHECK(weft_broadcast(a, count, WEFT_FLOAT32, 0, w));
    for (size_t i = 0; i < count; i++)
        MP_ASSERT(a[i] == (float)(i % 4099), "64 MiB broadcast: element %zu", i);
    cases += 5;
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    weft_comm_t w;
    double t0;

    mp_init_world(&w, &me, &n);
    if (n > 64)
        mp_skip("at most 64 ranks");
    t0 = mp_now();
    if (argc > 1 && !strcmp(argv[1], "big")) {
        sub_big(w);
    } else {
        sub_gather_scatter(w);
        sub_alltoallv(w);
        sub_scan(w);
        sub_premul(w);
        sub_axis(w);
        sub_bytes(w);
    }
    if (me == 0)
        mp_log("mp_coll_v: %d cases at %d ranks passed in %.2f s", cases, n, mp_now() - t0);
    MP_CHECK(weft_comm_destroy(w));
    return 0;
}
