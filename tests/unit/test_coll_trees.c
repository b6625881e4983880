/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_coll_trees.c: the shape of the double binary tree (coll/algo/dbtree.c)
 * at every size from 1 to 70 ranks: each tree spans every rank once, with
 * one root, at most two children, parents and children agreeing and no
 * cycle; no rank is inside both trees, and at most one (at odd sizes) is a
 * leaf of both, so the two trees share the work of the inner ranks.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "core/coll/algo/algo.h"

#define MAX_RANKS 70

static void each_tree_spans_the_ranks(void **state)
{
    (void)state;
    for (int n = 1; n <= MAX_RANKS; n++)
        for (int t = 0; t < 2; t++) {
            int parent[MAX_RANKS], kids[MAX_RANKS][2], nkids[MAX_RANKS], roots = 0;

            for (int r = 0; r < n; r++) {
                nkids[r] = weft__dbtree_shape(n, r, t, &parent[r], kids[r]);
                assert_true(nkids[r] >= 0 && nkids[r] <= 2);
                assert_true(parent[r] >= -1 && parent[r] < n && parent[r] != r);
                roots += parent[r] < 0;
            }
            assert_int_equal(roots, 1);
            for (int r = 0; r < n; r++) {
                int found = parent[r] < 0, hops = 0;

                for (int i = 0; i < nkids[r]; i++)
                    assert_int_equal(parent[kids[r][i]], r);
                for (int i = 0; parent[r] >= 0 && i < nkids[parent[r]]; i++)
                    found |= kids[parent[r]][i] == r;
                assert_true(found);
                for (int a = r; parent[a] >= 0; a = parent[a])
                    assert_true(++hops < n);
            }
        }
}

static void trees_are_complementary(void **state)
{
    (void)state;
    for (int n = 2; n <= MAX_RANKS; n++) {
        int leaf_in_both = 0;

        for (int r = 0; r < n; r++) {
            int p, kids[2], inner0 = weft__dbtree_shape(n, r, 0, &p, kids) > 0;
            int inner1 = weft__dbtree_shape(n, r, 1, &p, kids) > 0;

            assert_false(inner0 && inner1);
            leaf_in_both += !inner0 && !inner1;
        }
        assert_true(leaf_in_both <= n % 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_tree_spans_the_ranks),
        cmocka_unit_test(trees_are_complementary),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
