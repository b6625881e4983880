/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algo.h: the algorithms that run over the transports, one family per
 * file, and the settings they read.
 *
 * Each sets c->step (and what it needs of c) for the collective engine
 * (coll/coll.h); rooted and v-forms read their arguments from c (root,
 * scounts/sdispls/rcounts/rdispls). None touches a transport or shared
 * memory: every exchange is a round of weft__coll_post. The registry
 * (registry.h) numbers them and says what each needs of a call; the tuner
 * chooses among them.
 */
#ifndef WEFT_CORE_ALGO_H
#define WEFT_CORE_ALGO_H

#include <stddef.h>

#include "weft.h"
#include "core/coll/coll.h"

void weft__barrier_dissemination(weft__coll_t *c);     /* barrier.c */
void weft__bcast_binomial(weft__coll_t *c);            /* tree.c */
void weft__reduce_binomial(weft__coll_t *c);
void weft__allreduce_ring(weft__coll_t *c);            /* ring.c */
void weft__reduce_scatterv_ring(weft__coll_t *c);
void weft__allgatherv_ring(weft__coll_t *c);
void weft__gatherv_linear(weft__coll_t *c);            /* linear.c */
void weft__scatterv_linear(weft__coll_t *c);
void weft__alltoallv_pairwise(weft__coll_t *c);
void weft__alltoallv_scattered(weft__coll_t *c);
void weft__allreduce_rd(weft__coll_t *c);              /* rd.c: small messages */
void weft__reduce_scatterv_rd(weft__coll_t *c);
void weft__allreduce_rabenseifner(weft__coll_t *c);    /* rabenseifner.c */
void weft__allgather_bruck(weft__coll_t *c);           /* bruck.c: even counts */
/* hier.c: node-aware. The allreduce runs c->leaders_algo (the tuner's
 * choice; NULL: ring) between the nodes' leaders. */
void weft__allreduce_hier(weft__coll_t *c);
void weft__bcast_hier(weft__coll_t *c);
void weft__reduce_hier(weft__coll_t *c);
void weft__barrier_hier(weft__coll_t *c);
void weft__allgather_hier(weft__coll_t *c);            /* consecutive nodes, even counts */
void weft__allreduce_tree(weft__coll_t *c);            /* dbtree.c: pipelined trees */
void weft__allreduce_dbtree(weft__coll_t *c);
/* Rank's place in tree 0 or 1 of the double binary tree over n ranks:
 * *parent (-1 at the root) and the children (two at most), returning how
 * many. For tests. */
int weft__dbtree_shape(int n, int rank, int tree, int *parent, int *children);
void weft__allreduce_direct(weft__coll_t *c);          /* direct.c: tiny messages */
void weft__bcast_chain(weft__coll_t *c);               /* chain.c: pipelined chain */
void weft__bcast_scatter_allgather(weft__coll_t *c);   /* twophase.c: large messages */
void weft__reduce_ring_gather(weft__coll_t *c);
void weft__allgatherv_rd(weft__coll_t *c);             /* rd_allgather.c */
void weft__reduce_scatterv_pairwise(weft__coll_t *c);  /* pairwise.c */
void weft__alltoall_bruck(weft__coll_t *c);            /* bruck.c: even counts */
void weft__gather_binomial(weft__coll_t *c);           /* binomial.c: even counts */
void weft__scatter_binomial(weft__coll_t *c);
void weft__scan_rd(weft__coll_t *c);                   /* scan.c */
void weft__exscan_rd(weft__coll_t *c);

/* algo.c: the settings. Reads WEFT_COLL_CHUNK and WEFT_ALLTOALL_THROTTLE
 * (at weft_init); a malformed value is WEFT_ERR_INVALID_ARG naming the
 * variable. Until then, and where unset, the defaults hold. */
weft_result_t weft__algo_settings_parse(void);
/* Pipelining: ring, tree and chain steps move their blocks in chunks of
 * this many bytes (WEFT_COLL_CHUNK), so that reducing one chunk overlaps
 * receiving the next. */
size_t weft__algo_chunk_bytes(void);
/* Peers whose exchanges a round of the scattered all-to-all posts at once
 * (WEFT_ALLTOALL_THROTTLE; 0: all of them). */
int weft__algo_alltoall_window(void);

#endif /* WEFT_CORE_ALGO_H */
