/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_comm.c: communicator creation, started by weftrun through
 * tests/mp/run.sh: `mp_comm SUBCOMMAND`. Expected groups are computed here
 * from the rules of MPI_Comm_split and torch's new_group, independently of
 * weft, and every new communicator carries traffic that checks its ranks.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

/* Checks size, rank, world ranks of comm against the expected list, then
 * passes a token around it: each rank adds its comm rank, and the status
 * names the comm rank of the sender. */
static void check_comm(weft_comm_t comm, int n, const int *expect_world, const char *what)
{
    int size = -1, rank = -1, token, want = 0, *got = mp_alloc((size_t)n * sizeof(int));
    weft_status_t st;

    MP_CHECK(weft_comm_size(comm, &size));
    MP_CHECK(weft_comm_rank(comm, &rank));
    MP_ASSERT(size == n, "%s: size %d, expected %d", what, size, n);
    MP_CHECK(weft_comm_world_ranks(comm, got));
    for (int i = 0; i < n; i++)
        MP_ASSERT(got[i] == expect_world[i], "%s: member %d is world rank %d, expected %d",
                  what, i, got[i], expect_world[i]);
    MP_ASSERT(expect_world[rank] == mp_rank, "%s: this rank sits at %d", what, rank);
    for (int i = 0; i < n; i++)
        want += i;
    if (n > 1) {
        if (rank == 0) {
            token = 0;
            MP_CHECK(weft_send(&token, 1, WEFT_INT32, 1, 3, comm));
            MP_CHECK(weft_recv(&token, 1, WEFT_INT32, WEFT_ANY_SOURCE, 3, comm, &st));
            MP_ASSERT(st.source == n - 1, "%s: token came from %d", what, st.source);
            MP_ASSERT(token == want, "%s: token %d, expected %d", what, token, want);
        } else {
            MP_CHECK(weft_recv(&token, 1, WEFT_INT32, rank - 1, 3, comm, &st));
            MP_ASSERT(st.source == rank - 1, "%s: status source %d", what, st.source);
            token += rank;
            MP_CHECK(weft_send(&token, 1, WEFT_INT32, (rank + 1) % n, 3, comm));
        }
    }
    free(got);
}

/* Odd/even split with reversed keys, WEFT_UNDEFINED for the last rank, and
 * a nested split of the result. */
static void sub_split(weft_comm_t world, int rank, int size)
{
    int *expect = mp_alloc((size_t)size * sizeof(int)), n = 0;
    int color = rank == size - 1 && size > 2 ? WEFT_UNDEFINED : rank % 2;
    weft_comm_t c = NULL, nested = NULL;

    MP_CHECK(weft_comm_split(world, color, size - rank, &c));
    if (color == WEFT_UNDEFINED) {
        MP_ASSERT(c == NULL, "WEFT_UNDEFINED gave a communicator");
    } else {
        /* Members of my color, by key = size - rank: descending world rank. */
        for (int r = size - 1; r >= 0; r--)
            if (r % 2 == color && !(r == size - 1 && size > 2))
                expect[n++] = r;
        check_comm(c, n, expect, "odd/even split");
        /* Nested: halves of it by comm rank, key = comm rank. */
        {
            int crank, csize, m = 0;
            int *inner = mp_alloc((size_t)n * sizeof(int));

            MP_CHECK(weft_comm_rank(c, &crank));
            MP_CHECK(weft_comm_size(c, &csize));
            MP_CHECK(weft_comm_split(c, crank < csize / 2, crank, &nested));
            for (int i = 0; i < csize; i++)
                if ((i < csize / 2) == (crank < csize / 2))
                    inner[m++] = expect[i];
            check_comm(nested, m, inner, "nested split");
            MP_CHECK(weft_comm_destroy(nested));
            free(inner);
        }
        MP_CHECK(weft_comm_destroy(c));
    }
    free(expect);
}

/* torch.distributed.new_group([size-1, 1, ...]): a non-contiguous list in
 * its own order; non-members get NULL. */
static void sub_group(weft_comm_t world, int rank, int size)
{
    int ranks[64] = { 0 }, n = 0, member = 0;
    weft_comm_t g = NULL;

    for (int r = size - 1; r >= 0 && n < 64; r -= 2)
        ranks[n++] = r;
    for (int i = 0; i < n; i++)
        member |= ranks[i] == rank;
    MP_CHECK(weft_comm_create_group(world, n, ranks, &g));
    if (!member) {
        MP_ASSERT(g == NULL, "rank %d is not in the group but got a communicator", rank);
        return;
    }
    check_comm(g, n, ranks, "create_group");
    MP_CHECK(weft_comm_destroy(g));
}

/* A group list that differs between ranks fails on every rank. */
static void sub_group_mismatch(weft_comm_t world, int rank, int size)
{
    int ranks[2] = { 0, rank == 0 ? 1 : size - 1 };
    weft_comm_t g = NULL;
    weft_result_t rc;

    if (size < 3)
        return;
    rc = weft_comm_create_group(world, 2, ranks, &g);
    MP_ASSERT(rc == WEFT_ERR_MISMATCH, "differing lists gave %s, expected WEFT_ERR_MISMATCH",
              weft_strerror(rc));
    MP_ASSERT(g == NULL, "a failed create_group wrote its output");
}

/* The ranks of this node: weftrun numbers each node's ranks contiguously
 * and says how many there are in LOCAL_WORLD_SIZE (all of the job when
 * unset: one node). */
static void sub_node(weft_comm_t world, int rank, int size)
{
    const char *lws = getenv("LOCAL_WORLD_SIZE");
    int per_node = lws ? atoi(lws) : size, lr = -1, ls = -1, first, *expect;
    weft_comm_t node = NULL;

    MP_ASSERT(per_node > 0 && size % per_node == 0, "LOCAL_WORLD_SIZE %s does not divide %d",
              lws, size);
    first = rank / per_node * per_node;
    expect = mp_alloc((size_t)per_node * sizeof(int));
    for (int r = 0; r < per_node; r++)
        expect[r] = first + r;
    MP_CHECK(weft_comm_split_node(world, &node));
    check_comm(node, per_node, expect, "split_node");
    MP_CHECK(weft_comm_local_rank(node, &lr));
    MP_CHECK(weft_comm_local_size(node, &ls));
    MP_ASSERT(lr == rank - first && ls == per_node, "local rank %d of %d", lr, ls);
    MP_CHECK(weft_comm_destroy(node));
    free(expect);
}

/* A duplicate is a separate matching context: the same tag on world and
 * on the duplicate never match each other, in either order. */
static void sub_dup(weft_comm_t world, int rank, int size)
{
    weft_comm_t d = NULL;
    int *expect = mp_alloc((size_t)size * sizeof(int)), a = -1, b = -1;
    weft_request_t ra = NULL, rb = NULL;

    for (int r = 0; r < size; r++)
        expect[r] = r;
    MP_CHECK(weft_comm_dup(world, &d));
    check_comm(d, size, expect, "dup");
    if (size >= 2 && rank < 2) {
        int peer = 1 - rank, one = 1, two = 2;

        /* Receive on world first although the duplicate's message is sent
         * first: each receive gets its own communicator's message. */
        MP_CHECK(weft_irecv(&a, 1, WEFT_INT32, peer, 9, world, &ra));
        MP_CHECK(weft_irecv(&b, 1, WEFT_INT32, WEFT_ANY_SOURCE, WEFT_ANY_TAG, d, &rb));
        MP_CHECK(weft_send(&two, 1, WEFT_INT32, peer, 9, d));
        MP_CHECK(weft_send(&one, 1, WEFT_INT32, peer, 9, world));
        MP_CHECK(weft_wait(&ra, NULL));
        MP_CHECK(weft_wait(&rb, NULL));
        MP_ASSERT(a == 1 && b == 2, "world got %d, the duplicate got %d", a, b);
    }
    mp_barrier(d);
    MP_CHECK(weft_comm_destroy(d));
    free(expect);
}

static void sub_args(weft_comm_t world, int rank, int size)
{
    weft_comm_t out = (weft_comm_t)&out;
    int bad[2] = { 0, 0 };

    MP_ASSERT(weft_comm_split(world, -5, 0, &out) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "color"), "negative color accepted");
    MP_ASSERT(weft_comm_split(NULL, 0, 0, &out) == WEFT_ERR_INVALID_ARG, "NULL comm accepted");
    MP_ASSERT(weft_comm_dup(world, NULL) == WEFT_ERR_INVALID_ARG, "NULL out accepted");
    MP_ASSERT(weft_comm_create_group(world, 0, bad, &out) == WEFT_ERR_INVALID_ARG, "n = 0");
    if (size >= 2)
        MP_ASSERT(weft_comm_create_group(world, 2, bad, &out) == WEFT_ERR_INVALID_ARG &&
                  mp_contains(weft_last_error(), "twice"), "duplicate rank accepted");
    bad[0] = size;
    MP_ASSERT(weft_comm_create_group(world, 1, bad, &out) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "ranks[0]"), "out-of-range rank accepted");
    MP_ASSERT(out == (weft_comm_t)&out, "a failed call wrote its output");
    (void)rank;
}

/* Memory registration: a region registered through every transport and
 * released; a registration outlives the communicator it was made with;
 * messages from registered memory arrive whole; wrong arguments are
 * refused by name. CUDA streams: none can be set in a build without a
 * CUDA transport, and clearing one always works. */
static void sub_memreg(weft_comm_t world, int rank, int size)
{
    int64_t buf[256], got[256];
    weft_memreg_t reg = NULL, kept = NULL, untouched = (weft_memreg_t)&untouched;
    weft_comm_t dup = NULL;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int i = 0; i < 256; i++)
        buf[i] = (int64_t)rank * 1000 + i;
    MP_CHECK(weft_mem_register(world, buf, sizeof(buf), &reg));
    MP_ASSERT(reg != NULL, "no registration given");
    MP_CHECK(weft_comm_dup(world, &dup));
    MP_CHECK(weft_mem_register(dup, got, sizeof(got), &kept));
    MP_CHECK(weft_comm_destroy(dup));
    if (size > 1) {
        weft_request_t r[2];

        MP_CHECK(weft_irecv(got, sizeof(got), WEFT_UINT8, left, 5, world, &r[0]));
        MP_CHECK(weft_isend(buf, sizeof(buf), WEFT_UINT8, right, 5, world, &r[1]));
        MP_CHECK(weft_waitall(2, r, NULL));
        for (int i = 0; i < 256; i++)
            MP_ASSERT(got[i] == (int64_t)left * 1000 + i, "element %d: %lld", i,
                      (long long)got[i]);
    }
    MP_CHECK(weft_mem_deregister(kept));
    MP_CHECK(weft_mem_deregister(reg));

    MP_ASSERT(weft_mem_register(NULL, buf, 8, &untouched) == WEFT_ERR_INVALID_ARG,
              "NULL comm accepted");
    MP_ASSERT(weft_mem_register(world, NULL, 8, &untouched) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "ptr"), "NULL ptr accepted");
    MP_ASSERT(weft_mem_register(world, buf, 0, &untouched) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "bytes"), "0 bytes accepted");
    MP_ASSERT(weft_mem_register(world, buf, 8, NULL) == WEFT_ERR_INVALID_ARG &&
              mp_contains(weft_last_error(), "reg"), "NULL reg accepted");
    MP_ASSERT(untouched == (weft_memreg_t)&untouched, "a failed call wrote its output");
    MP_ASSERT(weft_mem_deregister(NULL) == WEFT_ERR_INVALID_ARG, "NULL reg released");

    MP_CHECK(weft_comm_set_stream(world, NULL));
    MP_ASSERT(weft_comm_set_stream(world, buf) == WEFT_ERR_UNSUPPORTED &&
              mp_contains(weft_last_error(), "CUDA"), "a CUDA stream was accepted");
    MP_ASSERT(weft_comm_set_stream(NULL, NULL) == WEFT_ERR_INVALID_ARG, "NULL comm accepted");
}

/* Device meshes: the groups of torch's init_device_mesh, written out. */
static void sub_mesh(weft_comm_t world, int rank, int size)
{
    weft_mesh_t mesh = NULL;
    weft_comm_t c = NULL;
    int expect[8], shape[3], coords[3], nd = 0;

    /* Any size: a 1-D mesh is the whole communicator. */
    MP_CHECK(weft_mesh_create(world, 1, &size, NULL, &mesh));
    MP_CHECK(weft_mesh_comm(mesh, "dim0", &c));
    for (int r = 0; r < size && r < 8; r++)
        expect[r] = r;
    if (size <= 8)
        check_comm(c, size, expect, "1-D mesh");
    MP_CHECK(weft_mesh_destroy(mesh));

    if (size == 6) {
        int s23[2] = { 2, 3 };

        MP_CHECK(weft_mesh_create(world, 2, s23, NULL, &mesh));
        MP_CHECK(weft_mesh_ndims(mesh, &nd));
        MP_CHECK(weft_mesh_shape(mesh, shape));
        MP_CHECK(weft_mesh_coords(mesh, coords));
        MP_ASSERT(nd == 2 && shape[0] == 2 && shape[1] == 3, "2x3 mesh shape");
        MP_ASSERT(coords[0] == rank / 3 && coords[1] == rank % 3, "2x3 coords (%d, %d)",
                  coords[0], coords[1]);
        /* dim 0: the columns {c, c+3}; dim 1: the rows. */
        expect[0] = rank % 3;
        expect[1] = rank % 3 + 3;
        MP_CHECK(weft_mesh_comm_dim(mesh, 0, &c));
        check_comm(c, 2, expect, "2x3 mesh, dim 0");
        for (int i = 0; i < 3; i++)
            expect[i] = 3 * (rank / 3) + i;
        MP_CHECK(weft_mesh_comm_dim(mesh, 1, &c));
        check_comm(c, 3, expect, "2x3 mesh, dim 1");
        MP_CHECK(weft_mesh_destroy(mesh));
    }
    if (size == 8) {
        int s222[3] = { 2, 2, 2 }, dp = rank / 4, pp = (rank / 2) % 2, tp = rank % 2;
        const char *names[3] = { "dp", "pp", "tp" }, *flat[2] = { "dp", "tp" };

        MP_CHECK(weft_mesh_create(world, 3, s222, names, &mesh));
        MP_CHECK(weft_mesh_coords(mesh, coords));
        MP_ASSERT(coords[0] == dp && coords[1] == pp && coords[2] == tp, "2x2x2 coords");
        expect[0] = 2 * pp + tp;
        expect[1] = 4 + 2 * pp + tp;
        MP_CHECK(weft_mesh_comm(mesh, "dp", &c));
        check_comm(c, 2, expect, "dp");
        expect[0] = 4 * dp + tp;
        expect[1] = 4 * dp + 2 + tp;
        MP_CHECK(weft_mesh_comm(mesh, "pp", &c));
        check_comm(c, 2, expect, "pp");
        expect[0] = rank - tp;
        expect[1] = rank - tp + 1;
        MP_CHECK(weft_mesh_comm(mesh, "tp", &c));
        check_comm(c, 2, expect, "tp");
        /* dp and tp flattened, row-major in (dp, tp). */
        expect[0] = 2 * pp;
        expect[1] = 2 * pp + 1;
        expect[2] = 4 + 2 * pp;
        expect[3] = 5 + 2 * pp;
        MP_CHECK(weft_mesh_comm_dims(mesh, 2, flat, &c));
        check_comm(c, 4, expect, "dp x tp flattened");
        MP_ASSERT(weft_mesh_comm(mesh, "ep", &c) == WEFT_ERR_INVALID_ARG &&
                  mp_contains(weft_last_error(), "ep"), "unknown dimension name accepted");
        MP_CHECK(weft_mesh_destroy(mesh));
    }
    {
        int bad[2] = { size + 1, 1 };
        const char *twice[2] = { "x", "x" };
        int ok2[2] = { size, 1 };

        MP_ASSERT(weft_mesh_create(world, 2, bad, NULL, &mesh) == WEFT_ERR_INVALID_ARG &&
                  mp_contains(weft_last_error(), "shape"), "a shape of the wrong size accepted");
        MP_ASSERT(weft_mesh_create(world, 2, ok2, twice, &mesh) == WEFT_ERR_INVALID_ARG &&
                  mp_contains(weft_last_error(), "dim_names"), "duplicate names accepted");
    }
}

static const struct {
    const char *name;
    void (*run)(weft_comm_t, int, int);
} subs[] = {
    { "split", sub_split }, { "group", sub_group }, { "mismatch", sub_group_mismatch },
    { "node", sub_node },   { "dup", sub_dup },     { "args", sub_args },
    { "mesh", sub_mesh },   { "memreg", sub_memreg },
};

int main(int argc, char **argv)
{
    weft_comm_t world = NULL;
    double t0;
    int ran = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: mp_comm SUBCOMMAND... (split group mismatch node dup args)\n");
        return 2;
    }
    mp_init_world(&world, NULL, NULL);
    t0 = mp_now();
    for (int a = 1; a < argc; a++)
        for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
            if (!strcmp(argv[a], subs[i].name)) {
                subs[i].run(world, mp_rank, mp_size);
                mp_barrier(world);
                ran++;
            }
    MP_ASSERT(ran == argc - 1, "unknown subcommand among the arguments");
    MP_CHECK(weft_comm_destroy(world));
    if (mp_rank == 0)
        mp_log("mp_comm: %d subcommands, %d ranks passed in %.2f s", ran, mp_size,
               mp_now() - t0);
    return 0;
}
