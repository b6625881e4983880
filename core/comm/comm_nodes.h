/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_nodes.h: how a communicator's ranks fall onto nodes, for the
 * node-aware (hierarchical) collectives. Computed once when the
 * communicator is created, from the node identities exchanged at init.
 */
#ifndef WEFT_CORE_COMM_NODES_H
#define WEFT_CORE_COMM_NODES_H

typedef struct weft__node_map {
    int nnodes;          /* nodes the communicator spans */
    int my_node;         /* this rank's node, 0 .. nnodes-1 */
    int my_index;        /* this rank's position among its node's ranks */
    int max_per_node;    /* ranks on the most populated node */
    int contiguous;      /* every node's ranks are consecutive comm ranks */
    int *node_of;        /* comm rank -> node */
    int *order;          /* comm ranks grouped by node, each node in rank order */
    int *node_start;     /* nnodes + 1 offsets into order */
    int *leaders;        /* the lowest comm rank of each node */
    int my_order;        /* this rank's position in order */
} weft__node_map_t;

struct weft_comm;

/* Fills comm->nodes (WEFT_ERR_NO_MEMORY on failure). */
int weft__comm_nodes_build(struct weft_comm *comm);
void weft__comm_nodes_free(weft__node_map_t *map);

#endif /* WEFT_CORE_COMM_NODES_H */
