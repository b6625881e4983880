/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_coll_select.c: WEFT_ALGO parsing and forcing. Valid choices are
 * accepted; an unknown operation or algorithm is WEFT_ERR_INVALID_ARG with
 * a message naming it and listing the valid ones. A forced algorithm runs
 * where it can, and where it cannot (Bruck's all-to-all or a binomial
 * gather of the v-forms, whose counts only some ranks know) the automatic
 * choice runs instead. The numeric settings read beside WEFT_ALGO take
 * their values, keep their defaults where unset, and refuse what is not
 * a number in range, naming the variable.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/base/error.h"
#include "core/coll/algo/algo.h"
#include "core/coll/shared/shared.h"
#include "core/init/instance.h"
#include "core/progress/progress.h"
#include "core/tune/tune.h"
#include "tests/unit/fake_comm.h"

static void accepts_valid_choices(void **state)
{
    (void)state;
    assert_int_equal(weft__tune_algo_parse(NULL), WEFT_SUCCESS);
    assert_int_equal(weft__tune_algo_parse(""), WEFT_SUCCESS);
    assert_int_equal(weft__tune_algo_parse("allreduce:ring"), WEFT_SUCCESS);
    assert_int_equal(weft__tune_algo_parse("allreduce:rd,allreduce:rabenseifner,allreduce:hier,bcast:binomial,reduce:hier,alltoall:scattered,"
                                           "allgather:ring,barrier:dissemination"),
                     WEFT_SUCCESS);
}

static void accepts_every_algorithm(void **state)
{
    (void)state;
    assert_int_equal(weft__tune_algo_parse("allreduce:tree,bcast:chain,reduce:ring_gather,"
                                           "allgather:rd,reduce_scatter:pairwise,alltoall:bruck,"
                                           "gather:binomial,scatter:binomial,scan:rd,exscan:rd"),
                     WEFT_SUCCESS);
    assert_int_equal(weft__tune_algo_parse("allreduce:dbtree,bcast:scatter_allgather,"
                                           "gather:linear,scatter:linear"), WEFT_SUCCESS);
    assert_int_equal(weft__tune_algo_parse("allreduce:direct"), WEFT_SUCCESS);
    /* The listing names every choice, in the table's order. */
    assert_int_equal(weft__tune_algo_parse("allreduce:x"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "ring, rd, rabenseifner, hier, tree, dbtree, "
                                              "direct"));
    assert_int_equal(weft__tune_algo_parse("bcast:x"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "binomial, hier, chain, scatter_allgather"));
    assert_int_equal(weft__tune_algo_parse("gather:x"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "linear, binomial"));
}

/* The step an algorithm setter installs, to compare choices by. */
static weft__coll_step_fn step_of(void (*set)(weft__coll_t *c))
{
    weft__coll_t c;

    memset(&c, 0, sizeof(c));
    set(&c);
    if (c.ctx_free)
        c.ctx_free(c.ctx);
    return c.step;
}

static weft__coll_step_fn chosen(const char *spec, weft__coll_kind_t kind, size_t bytes, int even)
{
    static weft__instance_t inst;
    static struct weft__tune_job job;
    const weft__tune_shape_t one_node = { 4, 1, 4, 1 };
    struct weft_comm comm;
    weft__coll_t c;

    /* The built-in tuning parameters, as with WEFT_TUNE=0. */
    weft__tune_defaults(&job.params);
    inst.tune = &job;
    fake_comm(&comm, &inst, &one_node);
    memset(&c, 0, sizeof(c));
    assert_int_equal(weft__tune_algo_parse(spec), WEFT_SUCCESS);
    weft__tune_choose(&c, &comm, kind, bytes, even);
    fake_comm_free(&comm);
    if (c.ctx_free)
        c.ctx_free(c.ctx);
    return c.step;
}

static void forced_algorithms_run_where_they_can(void **state)
{
    (void)state;
    assert_ptr_equal(chosen("allreduce:dbtree", WEFT__COLL_ALLREDUCE, 8, 1),
                     step_of(weft__allreduce_dbtree));
    assert_ptr_equal(chosen("allreduce:direct", WEFT__COLL_ALLREDUCE, 1 << 20, 1),
                     step_of(weft__allreduce_direct));
    assert_ptr_equal(chosen("bcast:chain", WEFT__COLL_BCAST, 8, 1), step_of(weft__bcast_chain));
    assert_ptr_equal(chosen("reduce:ring_gather", WEFT__COLL_REDUCE, 8, 1),
                     step_of(weft__reduce_ring_gather));
    assert_ptr_equal(chosen("allgather:rd", WEFT__COLL_ALLGATHER, 8, 0),
                     step_of(weft__allgatherv_rd));
    assert_ptr_equal(chosen("reduce_scatter:pairwise", WEFT__COLL_REDUCE_SCATTER, 8, 1),
                     step_of(weft__reduce_scatterv_pairwise));
    assert_ptr_equal(chosen("alltoall:bruck", WEFT__COLL_ALLTOALL, 8, 1),
                     step_of(weft__alltoall_bruck));
    assert_ptr_equal(chosen("gather:binomial", WEFT__COLL_GATHER, 8, 1),
                     step_of(weft__gather_binomial));
    assert_ptr_equal(chosen("scatter:binomial", WEFT__COLL_SCATTER, 8, 1),
                     step_of(weft__scatter_binomial));
}

static void forced_algorithms_fall_back_where_they_cannot(void **state)
{
    (void)state;
    /* alltoallv: the automatic choice (scattered at 8 bytes). */
    assert_ptr_equal(chosen("alltoall:bruck", WEFT__COLL_ALLTOALL, 8, 0),
                     step_of(weft__alltoallv_scattered));
    assert_ptr_equal(chosen("gather:binomial", WEFT__COLL_GATHER, 8, 0),
                     step_of(weft__gatherv_linear));
    assert_ptr_equal(chosen("scatter:binomial", WEFT__COLL_SCATTER, 8, 0),
                     step_of(weft__scatterv_linear));
    assert_ptr_equal(chosen("allgather:bruck", WEFT__COLL_ALLGATHER, 8, 0),
                     step_of(weft__allgatherv_ring));
    /* Without WEFT_ALGO the choice is unchanged: linear gather, rd scan. */
    assert_ptr_equal(chosen("", WEFT__COLL_GATHER, 8, 1), step_of(weft__gatherv_linear));
    assert_ptr_equal(chosen("", WEFT__COLL_SCAN, 8, 1), step_of(weft__scan_rd));
    assert_ptr_equal(chosen("", WEFT__COLL_ALLREDUCE, 8, 1), step_of(weft__allreduce_rd));
}

static void rejects_unknown_algorithm(void **state)
{
    (void)state;
    assert_int_equal(weft__tune_algo_parse("allreduce:ring,bcast:tre"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "'tre'"));
    assert_non_null(strstr(weft__get_error(), "binomial, hier"));
    assert_int_equal(weft__tune_algo_parse("allreduce"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "ring, rd, rabenseifner, hier"));
}

static void rejects_unknown_operation(void **state)
{
    (void)state;
    assert_int_equal(weft__tune_algo_parse("allreduse:ring"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "'allreduse'"));
    assert_non_null(strstr(weft__get_error(), "allreduce"));
    assert_non_null(strstr(weft__get_error(), "barrier"));
}

static void rejects_overlong_spec(void **state)
{
    char spec[1024];

    (void)state;
    memset(spec, 'a', sizeof(spec) - 1);
    spec[sizeof(spec) - 1] = '\0';
    assert_int_equal(weft__tune_algo_parse(spec), WEFT_ERR_INVALID_ARG);
}

static const char *const settings[] = { "WEFT_COLL_CHUNK", "WEFT_ALLTOALL_THROTTLE",
                                        "WEFT_STREAM_THRESHOLD", "WEFT_SPIN_US" };

static void unset_settings(void)
{
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
        unsetenv(settings[i]);
}

static void settings_take_their_values(void **state)
{
    (void)state;
    unset_settings();
    assert_int_equal(weft__settings_parse(), WEFT_SUCCESS);
    assert_int_equal(weft__progress_spin_us(), -1);
    assert_int_equal(weft__shared_stream_threshold(8u << 20), 8u << 20);
    assert_int_equal(weft__shared_stream_threshold(0), 32u << 20);
    setenv("WEFT_COLL_CHUNK", "65536", 1);
    setenv("WEFT_ALLTOALL_THROTTLE", "0", 1);
    setenv("WEFT_STREAM_THRESHOLD", "0", 1);
    setenv("WEFT_SPIN_US", "250", 1);
    assert_int_equal(weft__settings_parse(), WEFT_SUCCESS);
    assert_int_equal(weft__algo_chunk_bytes(), 65536);
    assert_int_equal(weft__algo_alltoall_window(), 0);
    assert_int_equal(weft__shared_stream_threshold(8u << 20), 0);
    assert_int_equal(weft__progress_spin_us(), 250);
    unset_settings();
    assert_int_equal(weft__settings_parse(), WEFT_SUCCESS);
    assert_int_equal(weft__progress_spin_us(), -1);
    assert_int_equal(weft__algo_chunk_bytes(), 256 * 1024);
}

static void settings_refuse_what_is_not_a_number_in_range(void **state)
{
    const char *bad[] = { "", "abc", "-1", "12x", "99999999999999999999999" };

    (void)state;
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
        for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
            unset_settings();
            setenv(settings[i], bad[b], 1);
            assert_int_equal(weft__settings_parse(), WEFT_ERR_INVALID_ARG);
            assert_non_null(strstr(weft__get_error(), settings[i]));
        }
    unset_settings();
    setenv("WEFT_SPIN_US", "1000001", 1);
    assert_int_equal(weft__settings_parse(), WEFT_ERR_INVALID_ARG);
    setenv("WEFT_SPIN_US", "1000000", 1);
    assert_int_equal(weft__settings_parse(), WEFT_SUCCESS);
    unset_settings();
    assert_int_equal(weft__settings_parse(), WEFT_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_valid_choices),
        cmocka_unit_test(accepts_every_algorithm),
        cmocka_unit_test(forced_algorithms_run_where_they_can),
        cmocka_unit_test(forced_algorithms_fall_back_where_they_cannot),
        cmocka_unit_test(rejects_unknown_algorithm),
        cmocka_unit_test(rejects_unknown_operation),
        cmocka_unit_test(rejects_overlong_spec),
        cmocka_unit_test(settings_take_their_values),
        cmocka_unit_test(settings_refuse_what_is_not_a_number_in_range),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
