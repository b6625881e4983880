/*
 * test_coll_select.c: WEFT_ALGO parsing. Valid choices are accepted;
 * an unknown operation or algorithm is WEFT_ERR_INVALID_ARG with a message
 * naming it and listing the valid ones.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "core/coll.h"
#include "core/error.h"

static void accepts_valid_choices(void **state)
{
    (void)state;
    assert_int_equal(weft__coll_algo_parse(NULL), WEFT_SUCCESS);
    assert_int_equal(weft__coll_algo_parse(""), WEFT_SUCCESS);
    assert_int_equal(weft__coll_algo_parse("allreduce:ring"), WEFT_SUCCESS);
    assert_int_equal(weft__coll_algo_parse("allreduce:rd,allreduce:rabenseifner,allreduce:hier,bcast:binomial,reduce:hier,alltoall:scattered,"
                                           "allgather:ring,barrier:dissemination"),
                     WEFT_SUCCESS);
}

static void rejects_unknown_algorithm(void **state)
{
    (void)state;
    assert_int_equal(weft__coll_algo_parse("allreduce:ring,bcast:tre"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "'tre'"));
    assert_non_null(strstr(weft__get_error(), "binomial, hier"));
    assert_int_equal(weft__coll_algo_parse("allreduce"), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft__get_error(), "ring, rd, rabenseifner, hier"));
}

static void rejects_unknown_operation(void **state)
{
    (void)state;
    assert_int_equal(weft__coll_algo_parse("allreduse:ring"), WEFT_ERR_INVALID_ARG);
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
    assert_int_equal(weft__coll_algo_parse(spec), WEFT_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_valid_choices),
        cmocka_unit_test(rejects_unknown_algorithm),
        cmocka_unit_test(rejects_unknown_operation),
        cmocka_unit_test(rejects_overlong_spec),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
