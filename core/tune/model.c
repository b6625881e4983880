/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * model.c: the predicted time of each algorithm (see tune.h).
 *
 * Notation in the formulas: p ranks, n bytes as weft__tune_choose counts
 * them (allreduce, bcast, reduce: the vector; allgather: one rank's block;
 * reduce_scatter: the whole input; alltoall: all a rank sends), L =
 * ceil(log2 p), P the largest power of two <= p, a/b/g alpha, beta, gamma,
 * c = max(1, n / WEFT_COLL_CHUNK) the pieces of a pipeline (a real number,
 * so that the cost grows smoothly with n).
 * A step's link is the inter-node one when the communicator spans several
 * nodes, except in the exchanges between partners r and r xor d, which
 * stay on the node while d is below the ranks per node (consecutive,
 * power-of-two nodes): that is where recursive doubling and Rabenseifner
 * gain on a multi-node communicator.
 *
 * models[] is indexed by the algorithms' ids (coll/algo/registry.h):
 * adding an algorithm's model is one function below and one line there,
 * and tests/unit/test_tune.c fails while an algorithm has none.
 */
#include "config.h"

#include "core/coll/algo/algo.h"
#include "core/coll/algo/registry.h"
#include "core/coll/shared/shared.h"
#include "core/tune/tune.h"

static int ceil_log2(int p)
{
    int l = 0;

    while ((1 << l) < p)
        l++;
    return l;
}

static int floor_pow2(int p)
{
    int q = 1;

    while (q * 2 <= p)
        q *= 2;
    return q;
}

static int is_pow2(int v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* The link every step of a flat algorithm crosses on its critical path. */
static const weft__tune_link_t *flat_link(const weft__tune_params_t *p,
                                          const weft__tune_shape_t *s)
{
    return s->nodes > 1 ? &p->inter : &p->intra;
}

/* The link between partners r and r xor d. */
static const weft__tune_link_t *xor_link(const weft__tune_params_t *p,
                                         const weft__tune_shape_t *s, int d)
{
    if (s->nodes <= 1)
        return &p->intra;
    if (s->contiguous && is_pow2(s->per_node) && d < s->per_node)
        return &p->intra;
    return &p->inter;
}

static double step(const weft__tune_link_t *l, double bytes)
{
    return l->alpha + bytes * l->beta;
}

/* The shape of a node's ranks, and of the nodes' representatives. */
static weft__tune_shape_t on_node(const weft__tune_shape_t *s)
{
    weft__tune_shape_t t = { s->per_node, 1, s->per_node, 1 };

    return t;
}

static weft__tune_shape_t across_nodes(const weft__tune_shape_t *s)
{
    weft__tune_shape_t t = { s->nodes, s->nodes, 1, 1 };

    return t;
}

/* The pieces a pipelined algorithm cuts n bytes into. */
static double pieces(size_t n)
{
    double c = (double)n / (double)weft__algo_chunk_bytes();

    return c > 1 ? c : 1;
}

/* ----------------------------------------------------------------- barrier */

/* Dissemination: L steps of zero bytes. */
static double barrier_dissemination(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                    size_t n)
{
    (void)n;
    return ceil_log2(s->ranks) * flat_link(p, s)->alpha;
}

/* Hier: the node's ranks check in with the leader one by one and are
 * released one by one (2 (ppn - 1) a_intra), the leaders disseminate. */
static double barrier_hier(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    weft__tune_shape_t x = across_nodes(s);

    return 2.0 * (s->per_node - 1) * p->intra.alpha + barrier_dissemination(p, &x, n);
}

/* ------------------------------------------------------------------- bcast */

/* Binomial: L steps of n, partner r xor 2^k from root 0. */
static double bcast_binomial(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    double t = 0;

    for (int d = 1; d < s->ranks; d *= 2)
        t += step(xor_link(p, s, d), (double)n);
    return t;
}

/* Hier: binomial among the nodes, then binomial on each node. */
static double bcast_hier(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    weft__tune_shape_t x = across_nodes(s), y = on_node(s);

    return bcast_binomial(p, &x, n) + bcast_binomial(p, &y, n);
}

/* Chain: the pieces follow each other down the line of ranks, p - 2 steps
 * behind the first: (c + p - 2)(a + n/c b). */
static double bcast_chain(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    double c = pieces(n);

    if (s->ranks < 2)
        return 0;
    return (c + s->ranks - 2) * step(flat_link(p, s), (double)n / c);
}

/* Van de Geijn: the root's blocks posted at once (a + (p-1)/p n b), then
 * a ring allgather of them ((p - 1)(a + n/p b)). */
static double bcast_scatter_allgather(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                      size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    double block = (double)n / s->ranks;

    if (s->ranks < 2)
        return 0;
    return l->alpha + (s->ranks - 1) * block * l->beta + (s->ranks - 1) * step(l, block);
}

/* ------------------------------------------------------------------ reduce */

/* Binomial: L steps of n, each reduced: L (a + n b + n g). */
static double reduce_binomial(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                              size_t n)
{
    double t = 0;

    for (int d = 1; d < s->ranks; d *= 2)
        t += step(xor_link(p, s, d), (double)n) + (double)n * p->gamma;
    return t;
}

/* Hier: binomial on each node, then among the nodes. */
static double reduce_hier(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    weft__tune_shape_t x = across_nodes(s), y = on_node(s);

    return reduce_binomial(p, &y, n) + reduce_binomial(p, &x, n);
}

/* A ring reduce-scatter, (p - 1)(a + n/p b + n/p g), then the blocks
 * posted to the root at once, a + (p - 1)/p n b. */
static double reduce_ring_gather(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                 size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    double block = (double)n / s->ranks;

    if (s->ranks < 2)
        return 0;
    return (s->ranks - 1) * (step(l, block) + block * p->gamma) + l->alpha +
           (s->ranks - 1) * block * l->beta;
}

/* --------------------------------------------------------------- allreduce */

/* Ranks beyond P fold their input into a partner first and get the result
 * back last: 2 (a + n b) + n g when p is not a power of two. */
static double fold_cost(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    if (is_pow2(s->ranks))
        return 0;
    return 2 * step(flat_link(p, s), (double)n) + (double)n * p->gamma;
}

/* Ring: 2 (p - 1) steps of n / p, half of them reduced:
 * 2 (p - 1) a + 2 (p - 1) / p n b + (p - 1) / p n g. */
static double allreduce_ring(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    double block = (double)n / s->ranks;

    return 2.0 * (s->ranks - 1) * step(flat_link(p, s), block) +
           (s->ranks - 1) * block * p->gamma;
}

/* Recursive doubling: log2 P exchanges of the whole vector, each reduced:
 * log2 P (a + n b + n g), plus the fold. */
static double allreduce_rd(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    double t = fold_cost(p, s, n);

    for (int d = 1; d < floor_pow2(s->ranks); d *= 2)
        t += step(xor_link(p, s, d), (double)n) + (double)n * p->gamma;
    return t;
}

/* Rabenseifner: reduce-scatter by recursive halving (the step at distance
 * d moves and reduces n d / P), allgather by recursive doubling:
 * 2 log2 P a + 2 (P - 1) / P n b + (P - 1) / P n g, plus the fold. */
static double allreduce_rabenseifner(const weft__tune_params_t *p,
                                     const weft__tune_shape_t *s, size_t n)
{
    int q = floor_pow2(s->ranks);
    double t = fold_cost(p, s, n);

    for (int d = 1; d < q; d *= 2) {
        double part = (double)n * d / q;

        t += 2 * step(xor_link(p, s, d), part) + part * p->gamma;
    }
    return t;
}

/* The best flat allreduce (the models above) for this shape. */
static double allreduce_flat(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    double ring = allreduce_ring(p, s, n), rd = allreduce_rd(p, s, n),
           rab = allreduce_rabenseifner(p, s, n), best = ring;

    if (rd < best)
        best = rd;
    if (rab < best)
        best = rab;
    return best;
}

/* Hier: binomial reduce on each node, the best flat allreduce among the
 * leaders, binomial bcast on each node. */
static double allreduce_hier(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    weft__tune_shape_t x = across_nodes(s), y = on_node(s);

    return reduce_binomial(p, &y, n) + allreduce_flat(p, &x, n) + bcast_binomial(p, &y, n);
}

/* Binary tree, reduce up then broadcast down, pipelined: an inner rank
 * takes two children's pieces and passes the result on, then the reverse:
 * (3 L + 2 c) a + 3 n b + 2 n g. */
static double allreduce_tree(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    if (s->ranks < 2)
        return 0;
    return (3.0 * ceil_log2(s->ranks) + 2 * pieces(n)) * l->alpha + 3.0 * (double)n * l->beta +
           2.0 * (double)n * p->gamma;
}

/* Double binary tree: two trees, each with half the vector, a rank inner
 * in at most one: (3 L + c) a + 2 n b + n g. */
static double allreduce_dbtree(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                               size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    if (s->ranks < 2)
        return 0;
    return (3.0 * ceil_log2(s->ranks) + pieces(n)) * l->alpha + 2.0 * (double)n * l->beta +
           (double)n * p->gamma;
}

/* Direct: every vector to every rank at once, all reduced locally. The
 * latencies overlap on the wire, but one rank's CPU starts and completes
 * its p - 1 sends and receives one after the other, which on the links
 * weft has measured costs about an alpha each (4 ranks on loopback
 * sockets: direct 260 us at 8 B against recursive doubling's 137):
 * (p - 1)(a + n b + n g). */
static double allreduce_direct(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                               size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return (s->ranks - 1) * (l->alpha + (double)n * (l->beta + p->gamma));
}

/* --------------------------------------------------------------- allgather */

/* An out-of-place call's own block copied to its place in the output, a
 * copy at memory speed, taken as g as Bruck's rotation is. Not the node's
 * link: a job of one rank per node never measures that one, and its
 * built-in 0.8 ns/B made the ring's own copy of 1 MiB cost 419 us between
 * two hosts, so that Bruck, whose copies cost g, was picked for 1-32 MiB
 * where it measured 1.0-2.5x the ring's time. The shared allgathers
 * count it in their copies. */
static double own_block_copy(const weft__tune_params_t *p, size_t n)
{
    return (double)n * p->gamma;
}

/* Ring: (p - 1) steps of one block, and the own block's copy:
 * (p - 1) (a + n b) + n b/2. */
static double allgather_ring(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    return (s->ranks - 1) * step(flat_link(p, s), (double)n) + own_block_copy(p, n);
}

/* Bruck: L steps moving p - 1 blocks in all, then a local rotation of all
 * p blocks (memory speed, taken as g): L a + (p - 1) n b + p n g. */
static double allgather_bruck(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                              size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return ceil_log2(s->ranks) * l->alpha + (double)(s->ranks - 1) * (double)n * l->beta +
           (double)s->ranks * (double)n * p->gamma;
}

/* Hier: the node's blocks gathered one by one onto the leader, a ring of
 * per-node blocks among the leaders, a binomial bcast of everything on
 * each node: (ppn - 1)(a_i + n b_i) + (nodes - 1)(a_e + ppn n b_e)
 * + log2 ppn (a_i + p n b_i). */
static double allgather_hier(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    weft__tune_shape_t x = across_nodes(s), y = on_node(s);

    return (s->per_node - 1) * step(&p->intra, (double)n) +
           allgather_ring(p, &x, n * (size_t)s->per_node) +
           bcast_binomial(p, &y, n * (size_t)s->ranks);
}

/* Recursive doubling: log2 P exchanges, the one at distance d of d
 * blocks, (P - 1) n bytes in all; ranks beyond P fold in and out (2 more
 * messages, the last of all p blocks); and the own block's copy. */
static double allgather_rd(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    int q = floor_pow2(s->ranks);
    double t = own_block_copy(p, n);

    for (int d = 1; d < q; d *= 2)
        t += step(xor_link(p, s, d), (double)n * d);
    if (!is_pow2(s->ranks))
        t += step(flat_link(p, s), (double)n) + step(flat_link(p, s), (double)n * s->ranks);
    return t;
}

/* ---------------------------------------------------------- reduce_scatter */

/* Ring: (p - 1) steps of n / p, each reduced: (p - 1)(a + n/p b + n/p g). */
static double reduce_scatter_ring(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                  size_t n)
{
    double block = (double)n / s->ranks;

    return (s->ranks - 1) * (step(flat_link(p, s), block) + block * p->gamma);
}

/* Recursive doubling over the whole input: as allreduce_rd. */
static double reduce_scatter_rd(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                size_t n)
{
    return allreduce_rd(p, s, n);
}

/* Pairwise: p - 1 steps, each sending a block to its owner and reducing
 * the one received: the ring's (p - 1)(a + n/p b + n/p g). On a tie the
 * ring, first in the table, is kept. */
static double reduce_scatter_pairwise(const weft__tune_params_t *p,
                                      const weft__tune_shape_t *s, size_t n)
{
    return reduce_scatter_ring(p, s, n);
}

/* ---------------------------------------------------------------- alltoall */

/* Pairwise: p - 1 steps of n / p: (p - 1)(a + n/p b). */
static double alltoall_pairwise(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                size_t n)
{
    return (s->ranks - 1) * step(flat_link(p, s), (double)n / s->ranks);
}

/* Scattered: every exchange posted at once, so the latencies overlap, but
 * p - 1 flows share the link and contend: a + 1.25 (p - 1)/p n b. The
 * contention factor is a guess that puts the crossover with pairwise near
 * the former 64 KiB threshold at the defaults. */
static double alltoall_scattered(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                 size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return l->alpha + 1.25 * (s->ranks - 1) * ((double)n / s->ranks) * l->beta;
}

/* Bruck: L steps, each moving about half the blocks (n / 2), plus two
 * local rotations of everything at memory speed (taken as g):
 * L a + L n/2 b + 2 n g. */
static double alltoall_bruck(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    int lg = ceil_log2(s->ranks);

    if (s->ranks < 2)
        return 0;
    return lg * l->alpha + lg * (double)n / 2 * l->beta + 2.0 * (double)n * p->gamma;
}

/* ---------------------------------------------------------- gather/scatter */

/* Linear: the root's p - 1 transfers of one block (n) posted at once; they
 * share the root's link and contend, as the scattered all-to-all's do:
 * a + 1.25 (p - 1) n b. */
static double rooted_linear(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    if (s->ranks < 2)
        return 0;
    return l->alpha + 1.25 * (s->ranks - 1) * (double)n * l->beta;
}

/* Binomial: L steps, the one at distance d carrying d blocks, one transfer
 * at a time into or out of each rank, and the inner ranks copy what they
 * pass on (about p/2 blocks, at g): L a + (p - 1) n b + p/2 n g. */
static double rooted_binomial(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                              size_t n)
{
    double t = 0;

    for (int d = 1; d < s->ranks; d *= 2) {
        int blocks = d < s->ranks - d ? d : s->ranks - d;

        t += step(xor_link(p, s, d), (double)n * blocks);
    }
    return t + (s->ranks / 2) * (double)n * p->gamma;
}

/* -------------------------------------------------------------------- scan */

/* Recursive doubling: L steps of the vector, each reduced: L (a + n b + n g). */
static double scan_rd(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    double t = 0;

    for (int d = 1; d < s->ranks; d *= 2)
        t += step(flat_link(p, s), (double)n) + (double)n * p->gamma;
    return t;
}

/* ------------------------------------------------------------------ shared */

/* Through the node-shared segment (coll/shared/small.c): no message, only a
 * counter each rank raises and the others read, taken as half a message's
 * latency; and copies at memory speed, taken as half the link's time per
 * byte, which counts a copy in and a copy out. */
static double shared_barrier(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    (void)n;
    return flat_link(p, s)->alpha / 2;
}

/* The root copies in, every other rank copies out: a/2 + n b. */
static double shared_bcast(const weft__tune_params_t *p, const weft__tune_shape_t *s, size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return l->alpha / 2 + (double)n * l->beta;
}

/* A copy in, then p - 1 inputs folded: a/2 + n b/2 + (p - 1) n g. */
static double shared_reduce(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                            size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return l->alpha / 2 + (double)n * l->beta / 2 + (s->ranks - 1) * (double)n * p->gamma;
}

/* The whole vector in, one block of it folded from every rank:
 * a/2 + n b/2 + (p - 1) n/p g. */
static double shared_reduce_scatter(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                    size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return l->alpha / 2 + (double)n * l->beta / 2 +
           (s->ranks - 1) * (double)n / s->ranks * p->gamma;
}

/* One block in, p blocks out: a/2 + (p + 1) n b/2. */
static double shared_allgather(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                               size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    return l->alpha / 2 + (s->ranks + 1) * (double)n * l->beta / 2;
}

/* The whole send buffer in, as much out: a/2 + n b. */
static double shared_alltoall(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                              size_t n)
{
    return shared_bcast(p, s, n);
}

/* The pipelined ones (coll/shared/pipelined.c): the same, in steps of up to a
 * chunk slot per rank, each step a signal (a/2), after the signal of the
 * generation itself (a/2: the small ones win where both apply). c, the
 * chunks, is the bytes a rank writes to its slot over the call (n, for
 * each of them as weft__tune_choose counts n) over the slot's size. */
static double pipe_chunks(const weft__tune_shape_t *s, double n)
{
    double slot = (double)weft__shared_chunk_bytes(s->ranks);

    return n > slot ? n / slot : 1;
}

/* Time of copying bytes out of the segment into an output of out bytes
 * per rank: b/2 a byte, or b/3 where the output is streamed
 * (WEFT_STREAM_THRESHOLD): a streamed store skips reading the line it
 * writes (1 MiB pieces into a 32 MiB output: 24-26 GB/s streamed against
 * 17 with memcpy on the development machine). Only the share of the
 * node's outputs beyond the threshold counts as streamed, so that the
 * cost still grows with the bytes where the call starts to stream. */
static double copy_out(const weft__tune_link_t *l, const weft__tune_shape_t *s, double bytes,
                       double out)
{
    double node = out * s->ranks, streamed;

    if (s->stream_from <= 0 || node <= s->stream_from) /* as weft__copy_stream_worth */
        return bytes * l->beta / 2;
    streamed = (node - s->stream_from) / node;
    return bytes * (l->beta / 2 - streamed * l->beta / 6);
}

/* The root copies chunk after chunk in while the others copy the one
 * before out, two slots apart: the copies overlap but for one chunk,
 * (c + 1) a/2 + n b/2 + min(n, slot) b/2. */
static double pipelined_bcast(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                              size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    double slot = (double)weft__shared_chunk_bytes(s->ranks);

    return (pipe_chunks(s, (double)n) + 1) * l->alpha / 2 + (double)n * l->beta / 2 +
           ((double)n < slot ? (double)n : slot) * l->beta / 2;
}

/* An exchange and a gather step per chunk, the others' parts copied in,
 * the whole vector copied out (o: copy_out, b/2 a byte or less):
 * a/2 + c a + (p - 1)/p n b/2 + n o + (p - 1)/p n g. */
static double pipelined_allreduce(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                  size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    double part = (double)n / s->ranks;

    return l->alpha / 2 + pipe_chunks(s, (double)n) * l->alpha +
           (s->ranks - 1) * part * l->beta / 2 + copy_out(l, s, (double)n, (double)n) +
           (s->ranks - 1) * part * p->gamma;
}

/* The others' parts in, one's own folded:
 * (c + 1) a/2 + (p - 1)/p n (b/2 + g). */
static double pipelined_reduce_scatter(const weft__tune_params_t *p,
                                       const weft__tune_shape_t *s, size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    double part = (double)n / s->ranks;

    return (pipe_chunks(s, (double)n) + 1) * l->alpha / 2 +
           (s->ranks - 1) * part * (l->beta / 2 + p->gamma);
}

/* One block in, p - 1 out, and the own block to its place from the copy
 * in, still in cache (memory speed, taken as g, as Bruck's rotation):
 * (c + 1) a/2 + n b/2 + (p - 1) n o + n g. */
static double pipelined_allgather(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                  size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);
    double out = (double)n * s->ranks;

    return (pipe_chunks(s, (double)n) + 1) * l->alpha / 2 + (double)n * l->beta / 2 +
           copy_out(l, s, (s->ranks - 1) * (double)n, out) + (double)n * p->gamma;
}

/* The others' blocks in, theirs for this rank out:
 * (c + 1) a/2 + (p - 1)/p n (b/2 + o). */
static double pipelined_alltoall(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                                 size_t n)
{
    const weft__tune_link_t *l = flat_link(p, s);

    double others = (s->ranks - 1) * ((double)n / s->ranks);

    return (pipe_chunks(s, (double)n) + 1) * l->alpha / 2 + others * l->beta / 2 +
           copy_out(l, s, others, (double)n);
}

static const weft__tune_cost_fn models[WEFT__ALGO_COUNT] = {
    [WEFT__ALGO_BARRIER_DISSEMINATION] = barrier_dissemination,
    [WEFT__ALGO_BARRIER_HIER] = barrier_hier,
    [WEFT__ALGO_BARRIER_SHARED] = shared_barrier,
    [WEFT__ALGO_BCAST_BINOMIAL] = bcast_binomial,
    [WEFT__ALGO_BCAST_HIER] = bcast_hier,
    [WEFT__ALGO_BCAST_CHAIN] = bcast_chain,
    [WEFT__ALGO_BCAST_SCATTER_ALLGATHER] = bcast_scatter_allgather,
    [WEFT__ALGO_BCAST_SHARED] = shared_bcast,
    [WEFT__ALGO_BCAST_SHARED_PIPELINED] = pipelined_bcast,
    [WEFT__ALGO_REDUCE_BINOMIAL] = reduce_binomial,
    [WEFT__ALGO_REDUCE_HIER] = reduce_hier,
    [WEFT__ALGO_REDUCE_RING_GATHER] = reduce_ring_gather,
    [WEFT__ALGO_REDUCE_SHARED] = shared_reduce,
    [WEFT__ALGO_ALLREDUCE_RING] = allreduce_ring,
    [WEFT__ALGO_ALLREDUCE_RD] = allreduce_rd,
    [WEFT__ALGO_ALLREDUCE_RABENSEIFNER] = allreduce_rabenseifner,
    [WEFT__ALGO_ALLREDUCE_HIER] = allreduce_hier,
    [WEFT__ALGO_ALLREDUCE_TREE] = allreduce_tree,
    [WEFT__ALGO_ALLREDUCE_DBTREE] = allreduce_dbtree,
    [WEFT__ALGO_ALLREDUCE_DIRECT] = allreduce_direct,
    [WEFT__ALGO_ALLREDUCE_SHARED] = shared_reduce,
    [WEFT__ALGO_ALLREDUCE_SHARED_PIPELINED] = pipelined_allreduce,
    [WEFT__ALGO_ALLGATHER_RING] = allgather_ring,
    [WEFT__ALGO_ALLGATHER_BRUCK] = allgather_bruck,
    [WEFT__ALGO_ALLGATHER_HIER] = allgather_hier,
    [WEFT__ALGO_ALLGATHER_RD] = allgather_rd,
    [WEFT__ALGO_ALLGATHER_SHARED] = shared_allgather,
    [WEFT__ALGO_ALLGATHER_SHARED_PIPELINED] = pipelined_allgather,
    [WEFT__ALGO_REDUCE_SCATTER_RING] = reduce_scatter_ring,
    [WEFT__ALGO_REDUCE_SCATTER_RD] = reduce_scatter_rd,
    [WEFT__ALGO_REDUCE_SCATTER_PAIRWISE] = reduce_scatter_pairwise,
    [WEFT__ALGO_REDUCE_SCATTER_SHARED] = shared_reduce_scatter,
    [WEFT__ALGO_REDUCE_SCATTER_SHARED_PIPELINED] = pipelined_reduce_scatter,
    [WEFT__ALGO_ALLTOALL_PAIRWISE] = alltoall_pairwise,
    [WEFT__ALGO_ALLTOALL_SCATTERED] = alltoall_scattered,
    [WEFT__ALGO_ALLTOALL_BRUCK] = alltoall_bruck,
    [WEFT__ALGO_ALLTOALL_SHARED] = shared_alltoall,
    [WEFT__ALGO_ALLTOALL_SHARED_PIPELINED] = pipelined_alltoall,
    [WEFT__ALGO_GATHER_LINEAR] = rooted_linear,
    [WEFT__ALGO_GATHER_BINOMIAL] = rooted_binomial,
    [WEFT__ALGO_SCATTER_LINEAR] = rooted_linear,
    [WEFT__ALGO_SCATTER_BINOMIAL] = rooted_binomial,
    [WEFT__ALGO_SCAN_RD] = scan_rd,
    [WEFT__ALGO_EXSCAN_RD] = scan_rd,
};

weft__tune_cost_fn weft__tune_cost_of(int id)
{
    return id >= 0 && id < WEFT__ALGO_COUNT ? models[id] : NULL;
}
