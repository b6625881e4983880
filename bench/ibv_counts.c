/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_counts.c: the work behind each message over ib-verbs, for
 * bench/ibv-counts.sh. Under weftrun -n 2 with WEFT_TRANSPORTS=ib-verbs:
 *
 *   ibv_counts BYTES COUNT REGISTERED POSTED
 *
 * rank 0 sends COUNT messages of BYTES to rank 1, from memory registered
 * with weft_mem_register on both sides when REGISTERED is 1. POSTED 1:
 * rank 1 posts each receive, then tells rank 0 with a message of no
 * bytes, so no message arrives before its receive; POSTED 0: rank 0 sends
 * as fast as it can and messages may arrive first (the transport then
 * holds them in memory of its own and copies them once matched). The
 * transport's counters come out in its finalize log line (WEFT_DEBUG=INFO
 * WEFT_DEBUG_SUBSYS=TRANSPORT); the script divides them by the messages.
 * Rank 1 checks every message, so a count is never of wrong work.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

static int fail(const char *what, weft_result_t rc)
{
    fprintf(stderr, "ibv_counts: %s: %s: %s\n", what, weft_strerror(rc), weft_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    weft_comm_t world;
    weft_memreg_t reg = NULL;
    weft_result_t rc;
    size_t bytes;
    int count, registered, posted, rank, size;
    unsigned char *buf;

    if (argc != 5) {
        fprintf(stderr, "usage: ibv_counts BYTES COUNT REGISTERED POSTED   (under weftrun -n 2)\n");
        return 2;
    }
    bytes = strtoull(argv[1], NULL, 0);
    count = atoi(argv[2]);
    registered = atoi(argv[3]);
    posted = atoi(argv[4]);
    if ((rc = weft_init(NULL, &world)) != WEFT_SUCCESS)
        return fail("weft_init", rc);
    weft_comm_rank(world, &rank);
    weft_comm_size(world, &size);
    if (size != 2) {
        fprintf(stderr, "ibv_counts: run it at 2 ranks\n");
        return 2;
    }
    buf = malloc(bytes ? bytes : 1);
    if (!buf)
        return fail("malloc", WEFT_ERR_NO_MEMORY);
    if (registered && (rc = weft_mem_register(world, buf, bytes, &reg)) != WEFT_SUCCESS)
        return fail("weft_mem_register", rc);
    for (int i = 0; i < count; i++) {
        if (rank == 0) {
            memset(buf, i & 0xff, bytes);
            rc = posted ? weft_recv(NULL, 0, WEFT_UINT8, 1, i, world, NULL) : WEFT_SUCCESS;
            if (rc == WEFT_SUCCESS)
                rc = weft_send(buf, bytes, WEFT_UINT8, 1, i, world);
        } else {
            weft_request_t req = NULL;

            rc = weft_irecv(buf, bytes, WEFT_UINT8, 0, i, world, &req);
            if (rc == WEFT_SUCCESS && posted)
                rc = weft_send(NULL, 0, WEFT_UINT8, 0, i, world);
            if (rc == WEFT_SUCCESS)
                rc = weft_wait(&req, NULL);
            for (size_t k = 0; rc == WEFT_SUCCESS && k < bytes; k += 4093)
                if (buf[k] != (unsigned char)(i & 0xff)) {
                    fprintf(stderr, "ibv_counts: message %d byte %zu is wrong\n", i, k);
                    return 1;
                }
        }
        if (rc != WEFT_SUCCESS)
            return fail(rank == 0 ? "weft_send" : "weft_recv", rc);
    }
    if (reg)
        weft_mem_deregister(reg);
    weft_comm_destroy(world);
    free(buf);
    return 0;
}
