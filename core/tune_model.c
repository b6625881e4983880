/*
 * tune_model.c: the predicted time of each algorithm (see tune.h).
 *
 * Notation in the formulas: p ranks, n bytes as weft__coll_choose counts
 * them (allreduce, bcast, reduce: the vector; allgather: one rank's block;
 * reduce_scatter: the whole input; alltoall: all a rank sends), L =
 * ceil(log2 p), P the largest power of two <= p, a/b/g alpha, beta, gamma.
 * A step's link is the inter-node one when the communicator spans several
 * nodes, except in the exchanges between partners r and r xor d, which
 * stay on the node while d is below the ranks per node (consecutive,
 * power-of-two nodes): that is where recursive doubling and Rabenseifner
 * gain on a multi-node communicator.
 *
 * An algorithm of coll_select.c's table whose (operation, name) is not in
 * models[] has no cost: the tuner never picks it, it only runs when
 * WEFT_ALGO forces it. Adding an algorithm's model is one function below
 * and one line in models[].
 */
#include "config.h"

#include <string.h>

#include "core/tune.h"

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

/* --------------------------------------------------------------- allgather */

/* Ring: (p - 1) steps of one block: (p - 1) (a + n b). */
static double allgather_ring(const weft__tune_params_t *p, const weft__tune_shape_t *s,
                             size_t n)
{
    return (s->ranks - 1) * step(flat_link(p, s), (double)n);
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

static const struct model {
    const char *op_name, *algo_name;   /* as in coll_select.c and WEFT_ALGO */
    weft__tune_cost_fn cost;
} models[] = {
    { "barrier", "dissemination", barrier_dissemination },
    { "barrier", "hier", barrier_hier },
    { "bcast", "binomial", bcast_binomial },
    { "bcast", "hier", bcast_hier },
    { "reduce", "binomial", reduce_binomial },
    { "reduce", "hier", reduce_hier },
    { "allreduce", "ring", allreduce_ring },
    { "allreduce", "rd", allreduce_rd },
    { "allreduce", "rabenseifner", allreduce_rabenseifner },
    { "allreduce", "hier", allreduce_hier },
    { "allgather", "ring", allgather_ring },
    { "allgather", "bruck", allgather_bruck },
    { "allgather", "hier", allgather_hier },
    { "reduce_scatter", "ring", reduce_scatter_ring },
    { "reduce_scatter", "rd", reduce_scatter_rd },
    { "alltoall", "pairwise", alltoall_pairwise },
    { "alltoall", "scattered", alltoall_scattered },
};

weft__tune_cost_fn weft__tune_cost_of(const char *op_name, const char *algo_name)
{
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
        if (!strcmp(models[i].op_name, op_name) && !strcmp(models[i].algo_name, algo_name))
            return models[i].cost;
    return NULL;
}
