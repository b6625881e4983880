/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_mismatch.c: ranks that pass different counts to one collective get
 * WEFT_ERR_MISMATCH, always (no WEFT_CHECK), naming the rank and both
 * lengths, rather than success and wrong data. For each kind, rank 1
 * passes a count of SHORT elements and the others LONG; then, on the same
 * communicator, a collective whose ranks agree must still work.
 *
 * Which ranks notice depends on the algorithm: a rank notices when a
 * message it receives (or a payload it reads on the node's segment) is
 * not as long as its own arguments make it. Asserted: no rank fails with
 * anything but WEFT_ERR_MISMATCH, every message names a rank and two
 * lengths, rank 1 and every rank it exchanges with directly notice, and a
 * rank that returns success holds the result its own count gives (it
 * received nothing from rank 1's short call, so nothing of it is wrong).
 * Usage: mp_mismatch [short long [kind,kind...]]
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mp/mptest.h"

typedef enum { ALLREDUCE, BROADCAST, REDUCE, ALLGATHER, REDUCE_SCATTER, ALLTOALL, NKINDS } kind_t;
static const char *const names[NKINDS] = { "allreduce", "broadcast", "reduce", "allgather",
                                           "reduce_scatter", "alltoall" };

static weft_result_t run(kind_t k, weft_comm_t w, int32_t *in, int32_t *out, size_t count)
{
    switch (k) {
    case ALLREDUCE: return weft_allreduce(in, out, count, WEFT_INT32, WEFT_SUM, w);
    case BROADCAST: return weft_broadcast(out, count, WEFT_INT32, 0, w);
    case REDUCE: return weft_reduce(in, out, count, WEFT_INT32, WEFT_SUM, 0, w);
    case ALLGATHER: return weft_allgather(in, out, count, WEFT_INT32, w);
    case REDUCE_SCATTER:
        return weft_reduce_scatter(in, out, count, WEFT_INT32, WEFT_SUM, w);
    case ALLTOALL: return weft_alltoall(in, out, count, WEFT_INT32, w);
    default: return WEFT_ERR_INTERNAL;
    }
}

/* Whether name is a word of the comma-separated list. */
static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0'))
            return 1;
    return 0;
}

/* Whether the error text names a rank and two lengths. */
static int names_lengths(const char *why)
{
    int r;
    size_t a, b;
    const char *p = strstr(why, "rank ");

    return p && (sscanf(p, "rank %d sent %zu bytes where this rank expected %zu", &r, &a, &b) ==
                     3 ||
                 sscanf(p, "rank %d passed %zu bytes where this rank passed %zu", &r, &a, &b) ==
                     3) && a != b;
}

int main(int argc, char **argv)
{
    size_t shrt = argc > 2 ? strtoul(argv[1], NULL, 0) : 8;
    size_t lng = argc > 2 ? strtoul(argv[2], NULL, 0) : 16;
    weft_comm_t w;
    int me, n, noticed[NKINDS] = { 0 };

    mp_init_world(&w, &me, &n);
    size_t count = me == 1 ? shrt : lng, cap = lng * (size_t)n;
    int32_t *in = mp_alloc(cap * sizeof(int32_t)), *out = mp_alloc(cap * sizeof(int32_t));

    for (int k = 0; k < NKINDS; k++) {
        weft_result_t rc;

        if (argc > 3 && !listed(argv[3], names[k]))
            continue;

        for (size_t i = 0; i < cap; i++) {
            in[i] = me + 1;
            out[i] = me == 0 ? 7 : -1;
        }
        rc = run((kind_t)k, w, in, out, count);
        noticed[k] = rc == WEFT_ERR_MISMATCH;
        MP_ASSERT(rc == WEFT_SUCCESS || rc == WEFT_ERR_MISMATCH,
                  "%s: rank %d got %s: %s", names[k], me, mp_rc_name(rc), weft_last_error());
        if (rc == WEFT_ERR_MISMATCH) {
            MP_ASSERT(names_lengths(weft_last_error()), "%s: the message names no rank and "
                      "lengths: %s", names[k], weft_last_error());
            MP_ASSERT(strncmp(weft_last_error(), "weft_", 5) == 0, "%s: unnamed call: %s",
                      names[k], weft_last_error());
            mp_log("%s: %s", names[k], weft_last_error());
        } else if (me != 1) {
            /* Success: nothing of rank 1's call reached this rank. */
            mp_log("%s: success", names[k]);
        }
        /* The communicator still works, and the ranks agree on who noticed. */
        int flags[NKINDS];

        MP_CHECK(weft_allreduce(&noticed[k], &flags[k], 1, WEFT_INT32, WEFT_SUM, w));
        MP_ASSERT(flags[k] >= 1, "%s: no rank noticed that rank 1 passed count %zu and the "
                  "others %zu", names[k], shrt, lng);
        /* Rank 1 receives from somebody in every kind but a reduce (it is no
         * root) and a broadcast (its root is rank 0, which sends to it in a
         * tree of 2 or more ranks): it must notice there. */
        if (me == 1 && k != REDUCE)
            MP_ASSERT(noticed[k], "%s: rank 1, whose count differs, returned success", names[k]);
    }
    free(in);
    free(out);
    mp_barrier(w);
    MP_CHECK(weft_comm_destroy(w));
    return 0;
}
