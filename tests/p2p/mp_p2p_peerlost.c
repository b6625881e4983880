/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_p2p_peerlost.c: the last rank kills itself (SIGKILL: no clean-up of
 * any kind) in the middle of a stream of messages to every other rank.
 * Each survivor's pending receive must fail with WEFT_ERR_PEER_LOST naming
 * the dead rank, well within WEFT_TIMEOUT; later operations with the dead
 * rank fail the same way instead of hanging; destroying the communicator
 * still works. Each survivor then leaves the file
 * $WEFT_TEST_MARKER_DIR/peerlost.<rank>, which run.sh (spec key
 * expect=peerlost) checks instead of weftrun's exit status: weftrun
 * reports the dead rank's failure.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/mp/mptest.h"
#include "tests/p2p/p2p.h"

#define PL_TAG 90
#define PL_CHUNK (256u << 10)
#define PL_CHUNKS_BEFORE 8         /* whole chunks before the large message */
#define PL_BIG (64u << 20)         /* the message the sender dies in */
#define PL_MESSAGES (2 * PL_CHUNKS_BEFORE + 1)
#define PL_DIE_AFTER_S 0.02        /* progress on the large message first */

static const char *marker_dir;

static size_t pl_bytes(int i)
{
    return i == PL_CHUNKS_BEFORE ? PL_BIG : PL_CHUNK;
}

static uint64_t pl_seed(int dst, int i)
{
    return i == PL_CHUNKS_BEFORE ? 0xb1b1b1 : (uint64_t)dst * 1000 + (uint64_t)i;
}

void mp_p2p_peerlost_prepare(void)
{
    marker_dir = getenv("WEFT_TEST_MARKER_DIR");
    if (!marker_dir || !marker_dir[0])
        MP_FAIL("WEFT_TEST_MARKER_DIR is not set: run this test through tests/mp/run.sh");
    /* weftrun stops the job with SIGTERM once the last rank died; the
     * survivors must live on to see the loss (SIGKILL still follows after
     * weftrun's --kill-grace). */
    if (signal(SIGTERM, SIG_IGN) == SIG_ERR)
        MP_FAIL("signal(SIGTERM): %s", strerror(errno));
}

static void die_mid_stream(weft_comm_t world, int size)
{
    int nsurv = size - 1;
    unsigned char *chunk = mp_alloc(PL_CHUNK), *big = mp_alloc(PL_BIG);
    weft_request_t *reqs = mp_alloc(sizeof(*reqs) * (size_t)nsurv);
    double until;

    for (int i = 0; i < PL_CHUNKS_BEFORE; i++)
        for (int s = 0; s < nsurv; s++) {
            mp_fill(chunk, PL_CHUNK, pl_seed(s, i));
            MP_CHECK(weft_send(chunk, PL_CHUNK, WEFT_UINT8, s, PL_TAG, world));
        }
    mp_fill(big, PL_BIG, pl_seed(0, PL_CHUNKS_BEFORE));
    for (int s = 0; s < nsurv; s++)
        MP_CHECK(weft_isend(big, PL_BIG, WEFT_UINT8, s, PL_TAG, world, &reqs[s]));
    /* Drive the transfers for a moment so that part of the large message
     * is on its way when the process disappears. */
    until = mp_now() + PL_DIE_AFTER_S;
    while (mp_now() < until) {
        for (int s = 0; s < nsurv; s++) {
            int done = 0;

            if (reqs[s])
                MP_CHECK(weft_test(&reqs[s], &done, NULL));
        }
        mp_sleep_us(500);
    }
    printf("[rank %d] sent %d of %d messages to each rank; dying now\n", size - 1,
           PL_CHUNKS_BEFORE, PL_MESSAGES);
    fflush(stdout);
    raise(SIGKILL);
    _exit(9);
}

static void write_marker(int rank, const char *text)
{
    char path[4096];
    int fd;
    size_t len = strlen(text);

    snprintf(path, sizeof(path), "%s/peerlost.%d", marker_dir, rank);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        MP_FAIL("cannot create %s: %s", path, strerror(errno));
    if (write(fd, text, len) != (ssize_t)len || close(fd) != 0)
        MP_FAIL("cannot write %s: %s", path, strerror(errno));
}

/* rc must be WEFT_ERR_PEER_LOST with a message naming the dead rank. */
static void expect_lost(weft_result_t rc, int dead, const char *what, char *err, size_t cap)
{
    char name[32];

    snprintf(err, cap, "%s", weft_last_error());
    MP_ASSERT(rc == WEFT_ERR_PEER_LOST, "%s: %s instead of WEFT_ERR_PEER_LOST (%s)", what,
              mp_rc_name(rc), err);
    snprintf(name, sizeof(name), "rank %d", dead);
    MP_ASSERT(mp_contains(err, name), "%s: WEFT_ERR_PEER_LOST, but weft_last_error() \"%s\" "
              "does not name %s", what, err, name);
}

static void survive(weft_comm_t world, int rank, int size)
{
    int dead = size - 1, i;
    unsigned char *buf = mp_alloc(PL_BIG);
    double t0 = mp_now(), t_lost;
    weft_request_t req = NULL;
    weft_status_t st;
    weft_result_t rc = WEFT_SUCCESS;
    char err[1024], line[1400], what[64];
    uint64_t x = 0;

    for (i = 0; i < PL_MESSAGES; i++) {
        rc = weft_recv(buf, PL_BIG, WEFT_UINT8, dead, PL_TAG, world, &st);
        if (rc != WEFT_SUCCESS)
            break;
        snprintf(what, sizeof(what), "message %d from rank %d", i, dead);
        MP_ASSERT(i != PL_CHUNKS_BEFORE + 1, "%s arrived, but rank %d never sent it", what,
                  dead);
        MP_ASSERT(st.source == dead && st.count == pl_bytes(i), "%s: status {%d, %zu}", what,
                  st.source, st.count);
        MP_CHECK_PATTERN(buf, pl_bytes(i), pl_seed(rank, i), what);
    }
    t_lost = mp_now() - t0;
    snprintf(what, sizeof(what), "receive %d of %d from the dying rank", i + 1, PL_MESSAGES);
    expect_lost(rc, dead, what, err, sizeof(err));
    snprintf(line, sizeof(line), "rank %d: WEFT_ERR_PEER_LOST at message %d of %d after "
             "%.2f s: %s\n", rank, i, PL_MESSAGES, t_lost, err);
    fputs(line, stdout);
    fflush(stdout);

    /* Later operations with the dead rank fail as well, and promptly. */
    rc = weft_send(&x, 1, WEFT_UINT64, dead, PL_TAG + 1, world);
    expect_lost(rc, dead, "a send to the dead rank", err, sizeof(err));
    MP_CHECK(weft_irecv(&x, 1, WEFT_UINT64, dead, PL_TAG + 1, world, &req));
    rc = weft_wait(&req, NULL);
    expect_lost(rc, dead, "a receive from the dead rank", err, sizeof(err));

    MP_CHECK(weft_comm_destroy(world));
    write_marker(rank, line);
    if (rank == 0)
        mp_log("mp_p2p peerlost: %d rank%s saw rank %d die", size - 1, size > 2 ? "s" : "",
               dead);
    free(buf);
    exit(0);
}

void mp_p2p_peerlost(weft_comm_t world, int rank, int size)
{
    if (rank == size - 1)
        die_mid_stream(world, size);
    else
        survive(world, rank, size);
}
