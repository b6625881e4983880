/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_comms.c: the communicators the suite runs on. Besides the world:
 * a duplicate; this rank's node (weft_comm_split_node); odd and even
 * ranks (weft_comm_split, order reversed by the key); a non-contiguous
 * list of ranks in descending order (weft_comm_create_group, new ranks in
 * list order); a split of that split (nested); the rows and columns of a
 * 2-D device mesh and, at sizes divisible by 4, one dimension and two
 * flattened dimensions of a 3-D mesh. Each member's rank and size, and
 * weft_comm_world_ranks, are checked against what the construction
 * implies before anything runs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

static weft_mesh_t meshes[2];
static int nmeshes;

static int world_rank;

/* Rank and size as the construction implies, and weft_comm_world_ranks
 * agreeing with the world ranks the members report over the new
 * communicator itself. */
static void expect_shape(weft_comm_t comm, const char *name, int want_rank, int want_size)
{
    int rank, size, *listed, *told;

    MP_CHECK(weft_comm_rank(comm, &rank));
    MP_CHECK(weft_comm_size(comm, &size));
    MP_ASSERT(rank == want_rank && size == want_size,
              "communicator %s: rank %d of %d, expected %d of %d", name, rank, size, want_rank,
              want_size);
    listed = mp_alloc((size_t)size * sizeof(int));
    told = mp_alloc((size_t)size * sizeof(int));
    MP_CHECK(weft_comm_world_ranks(comm, listed));
    MP_CHECK(weft_allgather(&world_rank, told, 1, WEFT_INT32, comm));
    for (int i = 0; i < size; i++)
        MP_ASSERT(listed[i] == told[i], "communicator %s: weft_comm_world_ranks gives world "
                  "rank %d for rank %d, which says it is %d", name, listed[i], i, told[i]);
    MP_ASSERT(listed[rank] == world_rank, "communicator %s: weft_comm_world_ranks puts world "
              "rank %d at this rank (%d), which is world rank %d", name, listed[rank], rank,
              world_rank);
    free(listed);
    free(told);
}

/* The salt comes from the name: a communicator's members may hold it at
 * different positions of their lists (non-members skip it). */
static int add(conf_comm_t *out, int n, int max, weft_comm_t comm, const char *name,
               int rank, int size)
{
    uint64_t salt = 0xc0ffee;

    if (!comm)
        return n;
    for (const char *s = name; *s; s++)
        salt = conf_hash(salt ^ (unsigned char)*s);
    MP_ASSERT(n < max, "more than %d communicators", max);
    expect_shape(comm, name, rank, size);
    out[n] = (conf_comm_t){ .comm = comm, .name = name, .rank = rank, .size = size,
                            .salt = salt };
    return n + 1;
}

int conf_comms_create(weft_comm_t world, conf_comm_t *out, int max, int level)
{
    int me, size, n = 0;
    weft_comm_t c;

    MP_CHECK(weft_comm_rank(world, &me));
    MP_CHECK(weft_comm_size(world, &size));
    world_rank = me;
    n = add(out, n, max, world, "world", me, size);
    if (level == 0)
        return n;

    MP_CHECK(weft_comm_dup(world, &c));
    n = add(out, n, max, c, "dup(world)", me, size);

    /* this rank's node (simulated nodes in some specs) */
    {
        int local_rank, local_size;

        MP_CHECK(weft_comm_local_rank(world, &local_rank));
        MP_CHECK(weft_comm_local_size(world, &local_size));
        MP_CHECK(weft_comm_split_node(world, &c));
        n = add(out, n, max, c, "split_node", local_rank, local_size);
    }

    /* odd and even: key -me reverses the order within each half */
    MP_CHECK(weft_comm_split(world, me % 2, -me, &c));
    {
        int half = me % 2 ? size / 2 : (size + 1) / 2;
        int sub = half - 1 - me / 2;

        n = add(out, n, max, c, me % 2 ? "split(odd, reversed)" : "split(even, reversed)",
                sub, half);
        /* nested: the first and second halves of that split */
        {
            weft_comm_t nested;
            int lower = sub < half / 2;

            MP_CHECK(weft_comm_split(c, lower, sub, &nested));
            n = add(out, n, max, nested, "split(split)", lower ? sub : sub - half / 2,
                    lower ? half / 2 : half - half / 2);
        }
    }

    /* ranks r with r % 3 != 1 (0, 2, 3, 5, 6, ...) listed from the highest
     * down */
    {
        int *list = mp_alloc((size_t)size * sizeof(int)), count = 0, pos = -1;

        for (int r = size - 1; r >= 0; r--)
            if (r % 3 != 1) {
                if (r == me)
                    pos = count;
                list[count++] = r;
            }
        MP_CHECK(weft_comm_create_group(world, count, list, &c));
        MP_ASSERT((c != NULL) == (pos >= 0), "create_group: membership of rank %d wrong", me);
        n = add(out, n, max, c, "create_group(r%3!=1, descending)", pos, count);
        free(list);
    }

    /* a 2-D mesh: rows of 2 where the size is even */
    {
        int shape2[2] = { size % 2 ? 1 : 2, size % 2 ? size : size / 2 };
        const char *names2[2] = { "dp", "tp" };
        int coords[2];

        MP_CHECK(weft_mesh_create(world, 2, shape2, names2, &meshes[nmeshes]));
        MP_CHECK(weft_mesh_coords(meshes[nmeshes], coords));
        MP_ASSERT(coords[0] == me / shape2[1] && coords[1] == me % shape2[1],
                  "mesh coords (%d, %d) of rank %d", coords[0], coords[1], me);
        MP_CHECK(weft_mesh_comm(meshes[nmeshes], "tp", &c));
        n = add(out, n, max, c, "mesh2d[tp]", coords[1], shape2[1]);
        MP_CHECK(weft_mesh_comm_dim(meshes[nmeshes], 0, &c));
        n = add(out, n, max, c, "mesh2d[dim 0]", coords[0], shape2[0]);
        nmeshes++;
    }

    /* a 3-D mesh (2, 2, size / 4): one dimension, and two flattened */
    if (size % 4 == 0) {
        int shape3[3] = { 2, 2, size / 4 };
        const char *names3[3] = { "pp", "dp", "tp" };
        const char *flat[2] = { "pp", "tp" };
        int coords[3];

        MP_CHECK(weft_mesh_create(world, 3, shape3, names3, &meshes[nmeshes]));
        MP_CHECK(weft_mesh_coords(meshes[nmeshes], coords));
        MP_CHECK(weft_mesh_comm(meshes[nmeshes], "dp", &c));
        n = add(out, n, max, c, "mesh3d[dp]", coords[1], 2);
        MP_CHECK(weft_mesh_comm_dims(meshes[nmeshes], 2, flat, &c));
        n = add(out, n, max, c, "mesh3d[pp,tp]", coords[0] * shape3[2] + coords[2],
                2 * shape3[2]);
        nmeshes++;
    }
    return n;
}

void conf_comms_destroy(conf_comm_t *ccs, int n)
{
    /* the world is the caller's; mesh communicators are the meshes' */
    for (int i = 1; i < n; i++)
        if (strncmp(ccs[i].name, "mesh", 4))
            MP_CHECK(weft_comm_destroy(ccs[i].comm));
    for (int i = 0; i < nmeshes; i++)
        MP_CHECK(weft_mesh_destroy(meshes[i]));
    nmeshes = 0;
}
