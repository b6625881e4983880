/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wireup_topo.c: what the wireup does with the topology once the ranks
 * know each other: drop transports that need a node-local peer where there
 * is none, tell whether ranks compete for this rank's cores, and report
 * where every rank runs and which transport carries each pair of ranks.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/transport/wireup.h"
#include "core/base/log.h"
#include "core/boot/store.h"

/* The matrix is a table for people: beyond this many ranks it is noise,
 * and rank 0 would read that many rows from the store. */
#define MATRIX_MAX_RANKS 64
#define ROW_KEY "weft.transports.%d"
#define LEGEND_LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

void weft__wireup_drop_unneeded(weft__wireup_t *wire)
{
    const char *me = wire->peers[wire->rank].host_id;
    int others = 0;

    for (int w = 0; w < wire->size; w++)
        others += w != wire->rank && !strcmp(wire->peers[w].host_id, me);
    if (others)
        return;
    for (int i = wire->plugins.n - 1; i >= 0; i--) {
        weft__plugin_t *pl = &wire->plugins.plugins[i];

        if (!(pl->needs & WEFT_TRANSPORT_NEED_LOCAL_PEER))
            continue;
        if (pl->forced) {
            WEFT_WARN(TRANSPORT, "%s: kept because WEFT_TRANSPORTS names it, although no "
                      "other rank runs on this node", pl->name);
            continue;
        }
        WEFT_INFO(TRANSPORT, "%s: not applicable: no other rank on this node", pl->name);
        weft__plugins_drop(&wire->plugins, i, "no other rank on this node");
    }
}

weft_result_t weft__wireup_cores(weft__wireup_t *wire)
{
    const weft__topo_summary_t **all = malloc((size_t)wire->size * sizeof(*all));
    const weft__topo_summary_t *me = &wire->peers[wire->rank].topo;

    if (!all)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d summaries", wire->size);
    for (int w = 0; w < wire->size; w++)
        all[w] = &wire->peers[w].topo;
    wire->cores_shared = weft__topo_cores_shared(all, wire->size, wire->rank);
    free(all);
    if (wire->cores_shared && me->cpu >= 0)
        WEFT_INFO(TOPO, "another rank of this job is pinned to this rank's CPU %d: waits "
                  "yield", me->cpu);
    else if (wire->cores_shared)
        WEFT_INFO(TOPO, "this job's ranks on this machine outnumber the %d CPUs this rank may "
                  "use: waits yield", me->ncpus);
    return WEFT_SUCCESS;
}

/* ------------------------------------------------------------ the matrix */

/* A row: the number of transport names, the names (fixed width), then one
 * byte per world rank indexing them. */
static size_t row_size(int size)
{
    return 1 + (size_t)WEFT__PLUGIN_MAX * WEFT__PLUGIN_NAME_MAX + (size_t)size;
}

static void row_build(const weft__wireup_t *wire, unsigned char *row)
{
    unsigned char *names = row + 1, *cells = row + 1 + WEFT__PLUGIN_MAX * WEFT__PLUGIN_NAME_MAX;

    memset(row, 0, row_size(wire->size));
    row[0] = (unsigned char)wire->plugins.n;
    for (int i = 0; i < wire->plugins.n; i++)
        memcpy(names + i * WEFT__PLUGIN_NAME_MAX, wire->plugins.plugins[i].name,
               strnlen(wire->plugins.plugins[i].name, WEFT__PLUGIN_NAME_MAX - 1));
    for (int w = 0; w < wire->size; w++)
        cells[w] = (unsigned char)(wire->peers[w].plugin - wire->plugins.plugins);
}

static void row_publish(weft__wireup_t *wire)
{
    char key[64];
    unsigned char *row;
    weft_result_t rc;

    if (!wire->boot->store || wire->size > MATRIX_MAX_RANKS)
        return;
    row = malloc(row_size(wire->size));
    if (!row)
        return;
    row_build(wire, row);
    snprintf(key, sizeof(key), ROW_KEY, wire->rank);
    rc = weft__store_set(wire->boot->store, key, row, row_size(wire->size));
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
static void matrix_line(weft__wireup_t *wire, int r, unsigned char *row, struct legend *l,
                        char *line, int timeout_ms)
{
    char key[64];
    size_t len = 0;
    int have;

    if (r == wire->rank) {
        row_build(wire, row);
        have = 1;
    } else {
        snprintf(key, sizeof(key), ROW_KEY, r);
        have = wire->boot->store &&
               weft__store_get(wire->boot->store, key, row, row_size(wire->size), &len,
                               timeout_ms) == WEFT_SUCCESS &&
               len == row_size(wire->size) && row[0] <= WEFT__PLUGIN_MAX;
    }
    for (int w = 0; w < wire->size; w++) {
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
    line[2 * wire->size - 1] = '\0';
}

static void log_matrix(weft__wireup_t *wire, int timeout_ms)
{
    struct legend *l = calloc(1, sizeof(*l));
    unsigned char *row = malloc(row_size(wire->size));
    char *line = malloc(2 * (size_t)wire->size + 1);
    char legend_text[512];
    size_t o = 0;

    if (!l || !row || !line)
        goto out_free;
    WEFT_INFO(TRANSPORT, "transport matrix (row: sending rank, column: peer):");
    for (int r = 0; r < wire->size; r++) {
        matrix_line(wire, r, row, l, line, timeout_ms);
        WEFT_INFO(TRANSPORT, "  %4d: %s", r, line);
    }
    for (int i = 0; i < l->n && o < sizeof(legend_text); i++)
        o += (size_t)snprintf(legend_text + o, sizeof(legend_text) - o, "%s%c=%s", i ? " " : "",
                              LEGEND_LETTERS[i],
                              l->names[i]);
    WEFT_INFO(TRANSPORT, "  legend: %s%s", legend_text,
              wire->boot->store ? "" : " (? = not known without weft's store)");

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

static void log_ranks(const weft__wireup_t *wire)
{
    const weft__topo_summary_t *me = &wire->peers[wire->rank].topo;

    WEFT_INFO(TOPO, "ranks (NUMA node of the binding, nearest GPU and NIC; shares with rank %d):",
              wire->rank);
    for (int w = 0; w < wire->size && w < MATRIX_MAX_RANKS; w++) {
        const weft__topo_summary_t *s = &wire->peers[w].topo;
        unsigned share = weft__topo_shared(me, s);

        WEFT_INFO(TOPO, "  %4d: host %s, NUMA %d, %u GPUs, %u NICs (%u RDMA active), GPU %s, "
                  "NIC %s, CPU %d of %d;%s%s%s%s%s%s%s", w, s->host_id, s->numa, s->ngpus,
                  s->nnics, s->nrdma_active, s->gpu[0] ? s->gpu : "-",
                  s->nic[0] ? s->nic : "-", s->cpu, s->ncpus,
                  share & WEFT__TOPO_SHARE_NODE ? " node" : "",
                  share & WEFT__TOPO_SHARE_NUMA ? " NUMA" : "",
                  share & WEFT__TOPO_SHARE_GPU ? " GPU" : "",
                  share & WEFT__TOPO_SHARE_NIC ? " NIC" : "",
                  /* Another node of the same machine: a simulated host. */
                  (share & WEFT__TOPO_SHARE_MACHINE) && !(share & WEFT__TOPO_SHARE_NODE) ?
                  " machine" : "",
                  share & WEFT__TOPO_SHARE_CPU ? " CPU" : "", share ? "" : " nothing");
    }
    if (wire->size > MATRIX_MAX_RANKS)
        WEFT_INFO(TOPO, "  ... %d ranks more", wire->size - MATRIX_MAX_RANKS);
}

void weft__wireup_report(weft__wireup_t *wire, int timeout_ms)
{
    row_publish(wire);
    if (wire->rank != 0)
        return;
    if (weft__log_enabled(WEFT__LOG_INFO, WEFT__SUBSYS_TOPO)) {
        log_topology(wire->topo);
        log_ranks(wire);
    }
    if (weft__log_enabled(WEFT__LOG_INFO, WEFT__SUBSYS_TRANSPORT)) {
        if (wire->size <= MATRIX_MAX_RANKS)
            log_matrix(wire, timeout_ms);
        else
            WEFT_INFO(TRANSPORT, "transport matrix: %d ranks, more than the %d shown",
                      wire->size, MATRIX_MAX_RANKS);
    }
}
