/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 15_objects.c: collectives of byte strings whose lengths the receivers do
 * not know, as torch's object collectives: all_gather of strings of
 * different lengths, and broadcast of a record serialised by hand.
 *
 * torch:  dist.all_gather_object(out, "rank 1 says hi")
 *         dist.broadcast_object_list([record], src=0)
 */
#include <string.h>

#include "tutorial.h"

/* A record and its little-endian wire form: id (4 bytes), score (8 bytes,
 * IEEE), name length (1 byte), name. */
struct record {
    uint32_t id;
    double score;
    char name[32];
};

static size_t serialise(const struct record *r, unsigned char *out)
{
    size_t len = strlen(r->name);
    uint64_t bits;

    memcpy(&bits, &r->score, 8);
    for (int i = 0; i < 4; i++)
        out[i] = (unsigned char)(r->id >> (8 * i));
    for (int i = 0; i < 8; i++)
        out[4 + i] = (unsigned char)(bits >> (8 * i));
    out[12] = (unsigned char)len;
    memcpy(out + 13, r->name, len);
    return 13 + len;
}

static int deserialise(const unsigned char *in, size_t len, struct record *r)
{
    uint64_t bits = 0;

    if (len < 13 || len != 13u + in[12] || in[12] >= sizeof(r->name))
        return -1;
    r->id = 0;
    for (int i = 0; i < 4; i++)
        r->id |= (uint32_t)in[i] << (8 * i);
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)in[4 + i] << (8 * i);
    memcpy(&r->score, &bits, 8);
    memcpy(r->name, in + 13, in[12]);
    r->name[in[12]] = '\0';
    return 0;
}

int main(void)
{
    weft_comm_t world;
    char mine[64];
    size_t lens[256], off = 0, len;
    void *all = NULL, *buf = NULL;
    unsigned char wire[64];
    struct record rec = { 0 };
    int rank, size;

    CHECK(weft_init(NULL, &world));
    CHECK(weft_comm_rank(world, &rank));
    CHECK(weft_comm_size(world, &size));
    if (size > 256) {
        fprintf(stderr, "run with at most 256 ranks\n");
        return 2;
    }

    /* Each rank's string has its own length. */
    snprintf(mine, sizeof(mine), "rank %d says %.*s", rank, rank + 1, "hello");
    CHECK(weft_allgather_bytes(mine, strlen(mine), &all, lens, world));
    for (int r = 0; r < size; r++) {
        char want[64];

        snprintf(want, sizeof(want), "rank %d says %.*s", r, r + 1, "hello");
        printf("Rank %d got from rank %d: \"%.*s\"\n", rank, r, (int)lens[r], (char *)all + off);
        if (lens[r] != strlen(want) || memcmp((char *)all + off, want, lens[r])) {
            fprintf(stderr, "rank %d: string of rank %d differs\n", rank, r);
            return 1;
        }
        off += lens[r];
    }
    weft_free(all);

    /* The root serialises a record; the others get its bytes and length. */
    if (rank == 0) {
        struct record r0 = { 42, 0.875, "weft" };

        len = serialise(&r0, wire);
        buf = wire;
    }
    CHECK(weft_broadcast_bytes(&buf, &len, 0, world));
    if (deserialise(buf, len, &rec) || rec.id != 42 || rec.score != 0.875 ||
        strcmp(rec.name, "weft")) {
        fprintf(stderr, "rank %d: the record did not survive\n", rank);
        return 1;
    }
    printf("Rank %d has record {id %u, score %g, name \"%s\"}\n", rank, rec.id, rec.score,
           rec.name);
    if (rank != 0)
        weft_free(buf);
    CHECK(weft_comm_destroy(world));
    return 0;
}
