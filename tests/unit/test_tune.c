/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tune.c: the tuner's cost model, choices and cache file.
 *
 * Predicted times grow with the message; the model picks the textbook
 * algorithm where the textbook is clear (log-step algorithms for tiny
 * messages, bandwidth-optimal ones for huge ones, node-aware ones across
 * nodes when the flat ones would cross the network at every step);
 * identical parameters give identical choices, through a communicator's
 * cache too; a cache file round-trips exactly and a malformed one is
 * WEFT_ERR_INVALID_ARG naming the file and what is wrong.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/base/error.h"
#include "core/coll/algo/registry.h"
#include "core/coll/shared/shared.h"
#include "core/tune/tune.h"
#include "tests/unit/fake_comm.h"

/* Shapes: one node, contiguous pow2 nodes, nodes interleaved round-robin,
 * nodes of 6 ranks, one rank a node, odd counts. */
static const weft__tune_shape_t shapes[] = {
    { 8, 1, 8, 1 }, { 16, 4, 4, 1 }, { 16, 4, 4, 0 }, { 24, 4, 6, 1 }, { 4, 4, 1, 1 },
    { 2, 1, 2, 1 }, { 7, 1, 7, 1 }, { 12, 3, 4, 1 }, { 1, 1, 1, 1 },
    { 2, 1, 2, 1, 1, 1 << 20 }, { 8, 1, 8, 1, 1, 1 << 20 },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* Textbook figures: a microsecond-class network, a faster node. */
static void textbook(weft__tune_params_t *p)
{
    p->intra.alpha = 2e-6;
    p->intra.beta = 0.05e-9;
    p->inter.alpha = 10e-6;
    p->inter.beta = 0.1e-9;
    p->gamma = 0.05e-9;
}

static const char *best_name(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             weft__coll_kind_t kind, size_t bytes)
{
    int i = weft__tune_best(p, s, (int)kind, bytes, 1, 0, NULL);

    assert_true(i >= 0 && i < WEFT__ALGO_COUNT);
    return weft__algos[i].name;
}

static void cost_grows_with_bytes(void **state)
{
    weft__tune_params_t params[2];
    const weft__algo_t *algos = weft__algos;

    (void)state;
    weft__tune_defaults(&params[0]);
    textbook(&params[1]);
    for (int i = 0; i < WEFT__ALGO_COUNT; i++) {
        weft__tune_cost_fn cost = weft__tune_cost_of(i);

        assert_non_null(cost);
        for (size_t pi = 0; pi < 2; pi++)
            for (size_t s = 0; s < NSHAPES; s++) {
                double prev = cost(&params[pi], &shapes[s], 0);

                assert_true(prev >= 0);
                for (size_t bytes = 1; bytes <= ((size_t)1 << 34); bytes *= 2) {
                    double t = cost(&params[pi], &shapes[s], bytes);

                    if (t < prev)
                        fail_msg("%s:%s at %d ranks: %g s for %zu bytes < %g s for less",
                                 algos[i].op_name, algos[i].name, shapes[s].ranks, t, bytes,
                                 prev);
                    prev = t;
                }
            }
    }
}

/* The registry and the cost models are joined by id: every id has an
 * entry (an operation, names, a setter) and a model, and no two entries
 * share their WEFT_ALGO names. An algorithm added without its model, or a
 * model whose algorithm is gone (its id then names an empty entry), fails
 * here. */
static void every_algorithm_has_an_entry_and_a_model(void **state)
{
    const weft__algo_t *algos = weft__algos;

    (void)state;
    assert_null(weft__tune_cost_of(-1));
    assert_null(weft__tune_cost_of(WEFT__ALGO_COUNT));
    for (int i = 0; i < WEFT__ALGO_COUNT; i++) {
        if (!algos[i].set || !algos[i].op_name || !algos[i].name)
            fail_msg("algorithm id %d has no registry entry", i);
        if (!weft__tune_cost_of(i))
            fail_msg("algorithm %s:%s (id %d) has no cost model", algos[i].op_name,
                     algos[i].name, i);
        assert_true((unsigned)algos[i].kind < WEFT__COLL_NKINDS);
        /* An operation's ids are consecutive, as WEFT_ALGO's messages
         * and the tuner's table list them. */
        if (i > 0 && algos[i].kind != algos[i - 1].kind)
            for (int j = 0; j < i - 1; j++)
                assert_true(algos[j].kind != algos[i].kind);
        for (int j = 0; j < i; j++)
            if (!strcmp(algos[i].op_name, algos[j].op_name) &&
                !strcmp(algos[i].name, algos[j].name))
                fail_msg("ids %d and %d are both %s:%s", j, i, algos[i].op_name,
                         algos[i].name);
    }
}

/* Bruck's and recursive doubling's allgathers both take ceil(log2 p) steps. */
static int log_step_allgather(const char *name)
{
    return !strcmp(name, "bruck") || !strcmp(name, "rd");
}

static void tiny_messages_take_log_steps(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t one_node = { 8, 1, 8, 1 };

    (void)state;
    textbook(&p);
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_ALLREDUCE, 8), "rd");
    assert_true(log_step_allgather(best_name(&p, &one_node, WEFT__COLL_ALLGATHER, 8)));
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_REDUCE_SCATTER, 64), "rd");
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_ALLTOALL, 64), "scattered");
    weft__tune_defaults(&p);
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_ALLREDUCE, 8), "rd");
    assert_true(log_step_allgather(best_name(&p, &one_node, WEFT__COLL_ALLGATHER, 8)));
}

/* On one node with a shared segment, small calls go through it; calls
 * larger than its slot, and communicators without one, never do. */
static void small_on_one_node_take_the_shared_segment(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t shared = { 8, 1, 8, 1, 1 }, plain = { 8, 1, 8, 1, 0 };
    const weft__coll_kind_t kinds[] = { WEFT__COLL_BARRIER, WEFT__COLL_BCAST,
                                        WEFT__COLL_REDUCE, WEFT__COLL_ALLREDUCE,
                                        WEFT__COLL_REDUCE_SCATTER, WEFT__COLL_ALLGATHER,
                                        WEFT__COLL_ALLTOALL };

    (void)state;
    textbook(&p);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        assert_string_equal(best_name(&p, &shared, kinds[k], 64), "shared");
        for (size_t bytes = 8; bytes <= ((size_t)1 << 24); bytes *= 8)
            assert_string_not_equal(best_name(&p, &plain, kinds[k], bytes), "shared");
        if (kinds[k] != WEFT__COLL_BARRIER)
            assert_string_not_equal(best_name(&p, &shared, kinds[k], 16384), "shared");
    }
}

/* Large calls on one node go through the segment in steps, which copies
 * each byte once in and once out where a ring through a transport copies
 * it twice per hop; never beyond WEFT__SHARED_PIPE_RANKS ranks, never
 * without a segment. */
static void large_on_one_node_take_the_pipelined_segment(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t shared = { 8, 1, 8, 1, 1 }, plain = { 8, 1, 8, 1, 0 },
                             crowded = { WEFT__SHARED_PIPE_RANKS + 1, 1,
                                         WEFT__SHARED_PIPE_RANKS + 1, 1, 1 };
    const weft__coll_kind_t kinds[] = { WEFT__COLL_ALLREDUCE, WEFT__COLL_REDUCE_SCATTER,
                                        WEFT__COLL_ALLGATHER, WEFT__COLL_ALLTOALL,
                                        WEFT__COLL_BCAST };

    (void)state;
    textbook(&p);
    /* An all-to-all's exchanges cost as much per byte through the segment
     * as through a transport: the segment wins on latency only, its
     * signal per chunk against p - 1 messages. */
    assert_string_equal(best_name(&p, &shared, WEFT__COLL_ALLTOALL, (size_t)1 << 20),
                        "shared_pipelined");
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (size_t bytes = (size_t)1 << 20;
             kinds[k] != WEFT__COLL_ALLTOALL && bytes <= ((size_t)1 << 28); bytes *= 16)
            assert_string_equal(best_name(&p, &shared, kinds[k], bytes), "shared_pipelined");
        for (size_t bytes = 8; bytes <= ((size_t)1 << 28); bytes *= 16) {
            assert_string_not_equal(best_name(&p, &plain, kinds[k], bytes), "shared_pipelined");
            assert_string_not_equal(best_name(&p, &crowded, kinds[k], bytes),
                                    "shared_pipelined");
        }
    }
}

/* An output the node's cache cannot hold is streamed (copy_stream.h),
 * which makes the copies out cheaper: the pipelined all-to-all then wins
 * at large sizes too, where it only tied with pairwise; below the
 * threshold nothing changes. */
static void streamed_outputs_favour_the_pipelined_segment(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t plain = { 2, 1, 2, 1, 1 },
                             streams = { 2, 1, 2, 1, 1, (double)(32 << 20) + 1 };
    const int ops[] = { WEFT__ALGO_ALLREDUCE_SHARED_PIPELINED,
                        WEFT__ALGO_ALLGATHER_SHARED_PIPELINED,
                        WEFT__ALGO_ALLTOALL_SHARED_PIPELINED };
    size_t big = (size_t)64 << 20, small = (size_t)4 << 20;

    (void)state;
    textbook(&p);
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        const weft__tune_cost_fn f = weft__tune_cost_of(ops[k]);

        assert_non_null(f);

        assert_true(f(&p, &streams, big) < f(&p, &plain, big));
        assert_true(f(&p, &streams, small) == f(&p, &plain, small));
    }
    assert_string_equal(best_name(&p, &plain, WEFT__COLL_ALLTOALL, big), "pairwise");
    assert_string_equal(best_name(&p, &streams, WEFT__COLL_ALLTOALL, big), "shared_pipelined");
}

static void huge_messages_take_bandwidth_optimal(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t one_node = { 8, 1, 8, 1 }, odd = { 7, 1, 7, 1 };
    const char *name;

    (void)state;
    textbook(&p);
    name = best_name(&p, &one_node, WEFT__COLL_ALLREDUCE, (size_t)256 << 20);
    if (strcmp(name, "ring") && strcmp(name, "rabenseifner"))
        fail_msg("allreduce of 256 MiB at 8 ranks chose %s", name);
    /* Beyond a power of two, Rabenseifner's fold moves the whole vector
     * twice more: the ring wins. */
    assert_string_equal(best_name(&p, &odd, WEFT__COLL_ALLREDUCE, (size_t)256 << 20), "ring");
    /* Allgather: the ring or recursive doubling, both move (p - 1) n. */
    name = best_name(&p, &one_node, WEFT__COLL_ALLGATHER, (size_t)32 << 20);
    if (strcmp(name, "ring") && strcmp(name, "rd"))
        fail_msg("allgather of 32 MiB at 8 ranks chose %s", name);
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_REDUCE_SCATTER, (size_t)256 << 20),
                        "ring");
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_ALLTOALL, (size_t)256 << 20),
                        "pairwise");
}

static void small_across_nodes_takes_hierarchical(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t interleaved = { 16, 4, 4, 0 }, six = { 24, 4, 6, 1 },
                             one_each = { 4, 4, 1, 1 }, one_node = { 8, 1, 8, 1 };

    (void)state;
    textbook(&p);
    /* The flat algorithms would cross between nodes at every step. */
    assert_string_equal(best_name(&p, &interleaved, WEFT__COLL_ALLREDUCE, 8), "hier");
    assert_string_equal(best_name(&p, &interleaved, WEFT__COLL_BARRIER, 0), "hier");
    assert_string_equal(best_name(&p, &interleaved, WEFT__COLL_BCAST, 64), "hier");
    assert_string_equal(best_name(&p, &six, WEFT__COLL_ALLREDUCE, 8), "hier");
    assert_string_equal(best_name(&p, &six, WEFT__COLL_REDUCE, 8), "hier");
    /* Node-aware algorithms need several ranks on several nodes. */
    assert_string_equal(best_name(&p, &one_each, WEFT__COLL_ALLREDUCE, 8), "rd");
    assert_string_equal(best_name(&p, &one_node, WEFT__COLL_BCAST, 8), "binomial");
    weft__tune_defaults(&p);
    assert_string_equal(best_name(&p, &interleaved, WEFT__COLL_ALLREDUCE, 8), "hier");
}

static void bruck_and_node_aware_allgather_need_even_blocks(void **state)
{
    weft__tune_params_t p;
    const weft__tune_shape_t one_node = { 8, 1, 8, 1 }, nodes = { 16, 4, 4, 1 };
    const weft__algo_t *algos = weft__algos;
    int i;

    (void)state;
    textbook(&p);
    i = weft__tune_best(&p, &one_node, WEFT__COLL_ALLGATHER, 8, 0, 0, NULL);
    assert_true(algos[i].needs == 0 && !algos[i].hierarchical);
    i = weft__tune_best(&p, &nodes, WEFT__COLL_ALLGATHER, 8, 0, 0, NULL);
    assert_true(algos[i].needs == 0 && !algos[i].hierarchical);
    /* Only flat algorithms when asked (the node-aware allreduce's inner
     * phase). */
    i = weft__tune_best(&p, &shapes[2], WEFT__COLL_ALLREDUCE, 8, 1, 1, NULL);
    assert_false(algos[i].hierarchical);
    /* Binomial gather only for the even form. */
    i = weft__tune_best(&p, &one_node, WEFT__COLL_GATHER, 8, 0, 0, NULL);
    assert_string_equal(algos[i].name, "linear");
}

static void identical_parameters_identical_choices(void **state)
{
    weft__instance_t *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
    struct weft__tune_job ja = { 0 }, jb = { 0 };
    struct weft_comm ca, cb;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    a->tune = &ja;
    b->tune = &jb;
    weft__tune_defaults(&ja.params);
    ja.params.inter.alpha = 7.25e-6; /* not the defaults: a measured set */
    memcpy(&jb.params, &ja.params, sizeof(ja.params));
    for (size_t s = 0; s < NSHAPES; s++) {
        weft__tune_shape_t seen;

        fake_comm(&ca, a, &shapes[s]);
        fake_comm(&cb, b, &shapes[s]);
        /* The communicator's shape, with the streaming threshold of its
         * node (the default, with no topology). */
        weft__tune_shape_of(&ca, &seen);
        assert_int_equal(seen.ranks, shapes[s].ranks);
        assert_true(seen.stream_from > 0);
        for (int k = 0; k < WEFT__COLL_NKINDS; k++)
            for (int even = 0; even < 2; even++)
                for (int bit = 0; bit < 40; bit++) {
                    size_t bytes = ((size_t)1 << bit) - (bit > 2 ? 3 : 0);
                    int pa = weft__tune_pick(&ca, k, bytes, even);

                    /* Twice: the second answer comes from the cache. */
                    assert_int_equal(pa, weft__tune_pick(&ca, k, bytes, even));
                    assert_int_equal(pa, weft__tune_pick(&cb, k, bytes, even));
                    /* The bucket's choice is the one predicted for its top. */
                    assert_int_equal(pa, weft__tune_best(&ja.params, &seen, k,
                                                         (size_t)1 << weft__tune_bucket(bytes),
                                                         even, 0, NULL));
                }
        /* The cache goes with the communicator. */
        assert_non_null(ca.tune);
        fake_comm_free(&ca);
        fake_comm_free(&cb);
        assert_null(ca.tune);
    }
    free(a);
    free(b);
}

static void size_buckets(void **state)
{
    (void)state;
    assert_int_equal(weft__tune_bucket(0), 0);
    assert_int_equal(weft__tune_bucket(1), 0);
    assert_int_equal(weft__tune_bucket(2), 1);
    assert_int_equal(weft__tune_bucket(3), 2);
    assert_int_equal(weft__tune_bucket(4), 2);
    assert_int_equal(weft__tune_bucket(5), 3);
    assert_int_equal(weft__tune_bucket((size_t)1 << 20), 20);
    assert_int_equal(weft__tune_bucket(((size_t)1 << 20) + 1), 21);
    assert_int_equal(weft__tune_bucket(SIZE_MAX), 64);
}

static char *temp_path(void)
{
    static char path[64];

    snprintf(path, sizeof(path), "/tmp/weft-test-tune-%d", (int)getpid());
    return path;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void cache_file_round_trips(void **state)
{
    weft__tune_params_t p, q;
    const char *path = temp_path();

    (void)state;
    textbook(&p);
    p.intra.alpha = 1.0 / 3.0 * 1e-5; /* no short decimal form */
    p.gamma = 0;                       /* allowed: free reductions */
    assert_int_equal(weft__tune_save(path, &p), WEFT_SUCCESS);
    weft__tune_defaults(&q);
    assert_int_equal(weft__tune_load(path, &q), WEFT_SUCCESS);
    assert_memory_equal(&p, &q, sizeof(p));
    for (size_t s = 0; s < NSHAPES; s++)
        for (int k = 0; k < WEFT__COLL_NKINDS; k++)
            assert_int_equal(weft__tune_best(&p, &shapes[s], k, 4096, 1, 0, NULL),
                             weft__tune_best(&q, &shapes[s], k, 4096, 1, 0, NULL));
    /* Comments, blank lines and any order are fine. */
    write_file(path, "# hand-edited\nweft-tune 1\n\ngamma 1e-10\ninter_beta 2e-10  # net\n"
               "inter_alpha 3e-6\nintra_beta 4e-11\nintra_alpha 5e-7\n");
    assert_int_equal(weft__tune_load(path, &q), WEFT_SUCCESS);
    assert_true(q.inter.alpha == 3e-6 && q.intra.beta == 4e-11 && q.gamma == 1e-10);
    unlink(path);
    assert_int_equal(weft__tune_save("/nonexistent-dir/tune", &p), WEFT_ERR_SYSTEM);
    assert_non_null(strstr(weft__get_error(), "/nonexistent-dir/tune"));
}

static void malformed_cache_file_is_refused(void **state)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        { "", "empty" },
        { "# only a comment\n", "empty" },
        { "weft-tune 2\nintra_alpha 1e-6\n", "does not start with" },
        { "intra_alpha 1e-6\n", "does not start with" },
        { "weft-tune 1\nintra_alpha 1e-6\n", "lacks 'intra_beta'" },
        { "weft-tune 1\nintra_alpha\n", "line 2" },
        { "weft-tune 1\nintra_alpha fast\n", "line 2" },
        { "weft-tune 1\nintra_alpha 1e-6 2e-6\n", "line 2" },
        { "weft-tune 1\nintra_alpha -1e-6\n", "out of range" },
        { "weft-tune 1\nintra_alpha 0\n", "out of range" },
        { "weft-tune 1\nintra_alpha nan\n", "out of range" },
        { "weft-tune 1\nintra_alpha inf\n", "out of range" },
        { "weft-tune 1\nlatency 1e-6\n", "unknown key 'latency'" },
        { "weft-tune 1\nintra_alpha 1e-6\nintra_alpha 2e-6\n", "given twice" },
        { "\x7f" "ELF\x02\x01\x01\n\xff\xfe garbage", "does not start with" },
    };
    weft__tune_params_t p, before;
    const char *path = temp_path();
    char longline[1024];

    (void)state;
    weft__tune_defaults(&p);
    before = p;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file(path, bad[i].text);
        assert_int_equal(weft__tune_load(path, &p), WEFT_ERR_INVALID_ARG);
        if (!strstr(weft__get_error(), bad[i].says) || !strstr(weft__get_error(), path))
            fail_msg("case %zu: '%s' lacks '%s' or the path", i, weft__get_error(),
                     bad[i].says);
        assert_memory_equal(&p, &before, sizeof(p));
    }
    memset(longline, 'x', sizeof(longline) - 1);
    longline[sizeof(longline) - 1] = '\0';
    write_file(path, longline);
    assert_int_equal(weft__tune_load(path, &p), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "too long"));
    unlink(path);
    assert_int_equal(weft__tune_load(path, &p), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "cannot read"));
    assert_int_equal(weft__tune_load(NULL, &p), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__tune_load("", &p), WEFT_ERR_INVALID_ARG);
    assert_memory_equal(&p, &before, sizeof(p));
}

static void table_prints_every_modelled_algorithm(void **state)
{
    weft__tune_params_t p;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    (void)state;
    assert_non_null(f);
    weft__tune_defaults(&p);
    weft__tune_print_table(f, &p, &shapes[2]);
    fclose(f);
    assert_non_null(strstr(text, "16 ranks on 4 nodes"));
    assert_non_null(strstr(text, "rabenseifner"));
    assert_non_null(strstr(text, "-> hier"));
    assert_non_null(strstr(text, "reduce_scatter"));
    free(text);
}

/* weft-bench --tune measures the algorithms weft__tune_predict times and
 * marks weft__tune_best's choice among them: the choice must be one of
 * them, the fastest predicted (the lower id on a tie), and the time
 * weft__tune_best reports its prediction. */
static void the_choice_is_the_fastest_predicted(void **state)
{
    weft__tune_params_t p;

    (void)state;
    textbook(&p);
    for (size_t s = 0; s < NSHAPES; s++)
        for (int k = 0; k < WEFT__COLL_NKINDS; k++)
            for (size_t bytes = 8; bytes <= (64u << 20); bytes *= 8) {
                double t_best = 0, t, fastest_t = 0;
                int best = weft__tune_best(&p, &shapes[s], k, bytes, 1, 0, &t_best);
                int fastest = -1;

                for (int i = 0; i < WEFT__ALGO_COUNT; i++) {
                    if ((int)weft__algos[i].kind != k ||
                        !weft__tune_predict(&p, &shapes[s], i, bytes, &t))
                        continue;
                    assert_true(t >= 0);
                    if (fastest < 0 || t < fastest_t) {
                        fastest = i;
                        fastest_t = t;
                    }
                }
                assert_int_equal(best, fastest);
                if (best >= 0)
                    assert_true(t_best == fastest_t);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cost_grows_with_bytes),
        cmocka_unit_test(every_algorithm_has_an_entry_and_a_model),
        cmocka_unit_test(tiny_messages_take_log_steps),
        cmocka_unit_test(small_on_one_node_take_the_shared_segment),
        cmocka_unit_test(large_on_one_node_take_the_pipelined_segment),
        cmocka_unit_test(streamed_outputs_favour_the_pipelined_segment),
        cmocka_unit_test(huge_messages_take_bandwidth_optimal),
        cmocka_unit_test(small_across_nodes_takes_hierarchical),
        cmocka_unit_test(bruck_and_node_aware_allgather_need_even_blocks),
        cmocka_unit_test(identical_parameters_identical_choices),
        cmocka_unit_test(size_buckets),
        cmocka_unit_test(cache_file_round_trips),
        cmocka_unit_test(malformed_cache_file_is_refused),
        cmocka_unit_test(table_prints_every_modelled_algorithm),
        cmocka_unit_test(the_choice_is_the_fastest_predicted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
