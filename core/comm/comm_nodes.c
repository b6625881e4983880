/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm_nodes.c: the node map of a communicator (comm_nodes.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/comm/comm.h"
#include "core/comm/comm_nodes.h"
#include "core/base/error.h"

void weft__comm_nodes_free(weft__node_map_t *map)
{
    free(map->node_of);
    free(map->order);
    free(map->node_start);
    free(map->leaders);
    memset(map, 0, sizeof(*map));
}

int weft__comm_nodes_build(weft_comm_t comm)
{
    weft__node_map_t *m = &comm->nodes;
    weft__instance_t *inst = comm->inst;
    int n = comm->size, *count;

    m->node_of = malloc((size_t)n * sizeof(int));
    m->order = malloc((size_t)n * sizeof(int));
    m->node_start = calloc((size_t)n + 1, sizeof(int));
    m->leaders = malloc((size_t)n * sizeof(int));
    count = calloc((size_t)n + 1, sizeof(int));
    if (!m->node_of || !m->order || !m->node_start || !m->leaders || !count) {
        free(count);
        weft__comm_nodes_free(m);
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the node map of %d ranks", n);
    }
    /* Nodes are numbered by their lowest rank, so node 0 holds rank 0. */
    m->nnodes = 0;
    for (int r = 0; r < n; r++) {
        const char *host = inst->wire.peers[comm->world_ranks[r]].host_id;
        int node = -1;

        for (int k = 0; k < m->nnodes && node < 0; k++)
            if (!strcmp(inst->wire.peers[comm->world_ranks[m->leaders[k]]].host_id, host))
                node = k;
        if (node < 0) {
            node = m->nnodes++;
            m->leaders[node] = r;
        }
        m->node_of[r] = node;
        count[node]++;
    }
    m->max_per_node = 0;
    for (int k = 0; k < m->nnodes; k++) {
        m->node_start[k + 1] = m->node_start[k] + count[k];
        if (count[k] > m->max_per_node)
            m->max_per_node = count[k];
        count[k] = m->node_start[k]; /* now: next free slot of node k */
    }
    m->contiguous = 1;
    for (int r = 0; r < n; r++) {
        int slot = count[m->node_of[r]]++;

        m->order[slot] = r;
        m->contiguous &= slot == r;
        if (r == comm->rank) {
            m->my_order = slot;
            m->my_node = m->node_of[r];
            m->my_index = slot - m->node_start[m->my_node];
        }
    }
    free(count);
    return WEFT_SUCCESS;
}
