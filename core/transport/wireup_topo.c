/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wireup_topo.c: what weft_init does with the topology once the ranks
 * know each other: drop transports that need a node-local peer where there
 * is none, and report where every rank runs and which transport carries
 * each pair of ranks.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/progress/instance.h"
#include "core/base/log.h"
#include "core/boot/store.h"

/* The matrix is a table for people: beyond this many ranks it is noise,
 * and rank 0 would read that many rows from the store. */
#define MATRIX_MAX_RANKS 64
#define ROW_KEY "weft.transports.%d"
#define LEGEND_LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

void weft__instance_drop_unneeded(weft__instance_t *inst)
{
    const char *me = inst->peers[inst->rank].host_id;
    int others = 0;

    for (int w = 0; w < inst->size; w++)
        others += w != inst->rank && !strcmp(inst->peers[w].host_id, me);
    if (others)
        return;
    for (int i = inst->plugins.n - 1; i >= 0; i--) {
        weft__plugin_t *pl = &inst->plugins.plugins[i];

        if (!(pl->needs & WEFT_TRANSPORT_NEED_LOCAL_PEER))
            continue;
        if (pl->forced) {
            WEFT_WARN(TRANSPORT, "%s: kept because WEFT_TRANSPORTS names it, although no "
                      "other rank runs on this node", pl->name);
            continue;
        }
        WEFT_INFO(TRANSPORT, "%s: not applicable: no other rank on this node", pl->name);
        weft__plugins_drop(&inst->plugins, i, "no other rank on this node");
    }
}

/* ------------------------------------------------------------ the matrix */

/* A row: the number of transport names, the names (fixed width), then one
 * byte per world rank indexing them. */
static size_t row_size(int size)
{
    return 1 + (size_t)WEFT__PLUGIN_MAX * WEFT__PLUGIN_NAME_MAX + (size_t)size;
}

static void row_build(const weft__instance_t *inst, unsigned char *row)
{
    unsigned char *names = row + 1, *cells = row + 1 + WEFT__PLUGIN_MAX * WEFT__PLUGIN_NAME_MAX;

    memset(row, 0, row_size(inst->size));
    row[0] = (unsigned char)inst->plugins.n;
    for (int i = 0; i < inst->plugins.n; i++)
        memcpy(names + i * WEFT__PLUGIN_NAME_MAX, inst->plugins.plugins[i].name,
               strnlen(inst->plugins.plugins[i].name, WEFT__PLUGIN_NAME_MAX - 1));
    for (int w = 0; w < inst->size; w++)
        cells[w] = (unsigned char)(inst->peers[w].plugin - inst->plugins.plugins);
}

static void row_publish(weft__instance_t *inst)
{
    char key[64];
    unsigned char *row;
    weft_result_t rc;

    if (!inst->boot->store || inst->size > MATRIX_MAX_RANKS)
        return;
    row = malloc(row_size(inst->size));
    if (!row)
        return;
    row_build(inst, row);
    snprintf(key, sizeof(key), ROW_KEY, inst->rank);
    rc = weft__store_set(inst->boot->store, key, row, row_size(inst->size));
    if (rc != WEFT_SUCCESS)
        WEFT_INFO(TRANSPORT, "cannot publish the transport row: %s", weft__get_error());
    free(row);
}

/* The legend maps each transport name to one letter of the matrix. */
struct legend {
    int n;
    char names[WEFT__PLUGIN_MAX * 4][WEFT__PLUGIN_NAME_MAX];
};

static char legend_letter(struct legend *l, const char *name)
{
    const char *letters = LEGEND_LETTERS;

    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->names[i], name))
            return letters[i];
    if (l->n == (int)(sizeof(l->names) / sizeof(l->names[0])))
        return '?';
    snprintf(l->names[l->n], sizeof(l->names[0]), "%s", name);
    return letters[l->n++];
}

/* One line of the matrix from a published row; '?' where it is missing. */
static void matrix_line(weft__instance_t *inst, int r, unsigned char *row, struct legend *l,
                        char *line)
{
    char key[64];
    size_t len = 0;
    int have;

    if (r == inst->rank) {
        row_build(inst, row);
        have = 1;
    } else {
        snprintf(key, sizeof(key), ROW_KEY, r);
        have = inst->boot->store &&
               weft__store_get(inst->boot->store, key, row, row_size(inst->size), &len,
                               inst->timeout_ms) == WEFT_SUCCESS &&
               len == row_size(inst->size) && row[0] <= WEFT__PLUGIN_MAX;
    }
    for (int w = 0; w < inst->size; w++) {
        unsigned char idx = row[1 + WEFT__PLUGIN_MAX * WEFT__PLUGIN_NAME_MAX + w];
        char name[WEFT__PLUGIN_NAME_MAX];

        if (!have || idx >= row[0]) {
            line[2 * w] = '?';
        } else {
            memcpy(name, row + 1 + idx * WEFT__PLUGIN_NAME_MAX, sizeof(name));
            name[sizeof(name) - 1] = '\0';
            line[2 * w] = legend_letter(l, name);
        }
        line[2 * w + 1] = ' ';
    }
    line[2 * inst->size - 1] = '\0';
}

static void log_matrix(weft__instance_t *inst)
{
    struct legend *l = calloc(1, sizeof(*l));
    unsigned char *row = malloc(row_size(inst->size));
    char *line = malloc(2 * (size_t)inst->size + 1);
    char legend_text[512];
    size_t o = 0;

    if (!l || !row || !line)
        goto out_free;
    WEFT_INFO(TRANSPORT, "transport matrix (row: sending rank, column: peer):");
    for (int r = 0; r < inst->size; r++) {
        matrix_line(inst, r, row, l, line);
        WEFT_INFO(TRANSPORT, "  %4d: %s", r, line);
    }
    for (int i = 0; i < l->n && o < sizeof(legend_text); i++)
        o += (size_t)snprintf(legend_text + o, sizeof(legend_text) - o, "%s%c=%s", i ? " " : "",
                              LEGEND_LETTERS[i],
                              l->names[i]);
    WEFT_INFO(TRANSPORT, "  legend: %s%s", legend_text,
              inst->boot->store ? "" : " (? = not known without weft's store)");

out_free:
    free(l);
    free(row);
    free(line);
}

/* ------------------------------------------------------ the topology */

static void log_topology(const weft__topo_t *topo)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);

    if (!mem)
        return;
    weft__topo_print(topo, mem, "");
    fclose(mem);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        WEFT_INFO(TOPO, "%s", line);
    }
    free(text);
}

static void log_ranks(const weft__instance_t *inst)
{
    const weft__topo_summary_t *me = &inst->peers[inst->rank].topo;

    WEFT_INFO(TOPO, "ranks (NUMA node of the binding, nearest GPU and NIC; shares with rank %d):",
              inst->rank);
    for (int w = 0; w < inst->size && w < MATRIX_MAX_RANKS; w++) {
        const weft__topo_summary_t *s = &inst->peers[w].topo;
        unsigned share = weft__topo_shared(me, s);

        WEFT_INFO(TOPO, "  %4d: host %s, NUMA %d, %u GPUs, %u NICs (%u RDMA active), GPU %s, "
                  "NIC %s;%s%s%s%s%s", w, s->host_id, s->numa, s->ngpus, s->nnics,
                  s->nrdma_active, s->gpu[0] ? s->gpu : "-", s->nic[0] ? s->nic : "-",
                  share & WEFT__TOPO_SHARE_NODE ? " node" : "",
                  share & WEFT__TOPO_SHARE_NUMA ? " NUMA" : "",
                  share & WEFT__TOPO_SHARE_GPU ? " GPU" : "",
                  share & WEFT__TOPO_SHARE_NIC ? " NIC" : "", share ? "" : " nothing");
    }
    if (inst->size > MATRIX_MAX_RANKS)
        WEFT_INFO(TOPO, "  ... %d ranks more", inst->size - MATRIX_MAX_RANKS);
}

void weft__instance_topo_report(weft__instance_t *inst)
{
    row_publish(inst);
    if (inst->rank != 0)
        return;
    if (weft__log_enabled(WEFT__LOG_INFO, WEFT__SUBSYS_TOPO)) {
        log_topology(inst->topo);
        log_ranks(inst);
    }
    if (weft__log_enabled(WEFT__LOG_INFO, WEFT__SUBSYS_TRANSPORT)) {
        if (inst->size <= MATRIX_MAX_RANKS)
            log_matrix(inst);
        else
            WEFT_INFO(TRANSPORT, "transport matrix: %d ranks, more than the %d shown",
                      inst->size, MATRIX_MAX_RANKS);
    }
}
