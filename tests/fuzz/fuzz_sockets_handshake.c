/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_sockets_handshake.c: what the sockets transport reads from a
 * stream it accepted (plugins/sockets/sockets_conn.c, sockets_recv.c):
 * the hello, then frame headers and payload.
 *
 * Per input, a job of three ranks in this process: rank 1 under test,
 * rank 2 a well-behaved peer, and rank 0 played by the input over a TCP
 * connection to rank 1. The first byte holds settings: bit 0 has the
 * harness write a correct hello of rank 0 first, on the stream of bits
 * 1-3, so that half the inputs get past it to the frames; otherwise the
 * input's own bytes are the hello. Rank 1 has receives posted from rank
 * 0 and from any rank, small and large, before the bytes arrive.
 *
 * Properties: progress never fails; a receive completes only with a
 * documented status, its tag and source as posted (from any source: the
 * rank the hello claimed), at most its buffer written (the bytes past the
 * message keep their canary); rank 1 closes the stream once it ended; and
 * afterwards rank 1 and rank 2 still exchange messages both ways, intact.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "weft/transport.h"
#include "plugins/sockets/sockets.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_tp.h"

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

#define JOB "fuzz-job"
#define NR 3
#define FUZZ_RANK 0
#define VICTIM 1
#define HONEST 2
#define STUCK_MS 5000
#define CANARY 0xa5

static weft_transport_core_t cores[NR];
static void *ctx[NR];

static const char *core_param(const char *name)
{
    (void)name;
    return NULL;
}

static void progress(int r)
{
    weft_result_t rc = T->progress(ctx[r]);

    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "progress of rank %d: %d: %s", r, rc, fuzz_tp_last_error);
}

/* Ranks 1 and 2, connected to each other; rank 1 also knows an address
 * for rank 0, which it never dials: nothing is sent to it. */
static void job_up(unsigned char addr[NR][WEFT_TRANSPORT_ADDR_MAX])
{
    size_t len[NR];
    struct sock_addr fake;

    for (int r = VICTIM; r < NR; r++) {
        memset(&cores[r], 0, sizeof(cores[r]));
        cores[r].struct_size = sizeof(cores[r]);
        cores[r].rank = r;
        cores[r].size = NR;
        cores[r].job_id = JOB;
        cores[r].master_addr = "127.0.0.1";
        cores[r].log = fuzz_tp_log;
        cores[r].set_error = fuzz_tp_set_error;
        cores[r].get_param = core_param;
        FUZZ_REQUIRE(T->init(&cores[r], &ctx[r]) == WEFT_SUCCESS, "init: %s", fuzz_tp_last_error);
        len[r] = WEFT_TRANSPORT_ADDR_MAX;
        FUZZ_REQUIRE(T->get_address(ctx[r], addr[r], &len[r]) == WEFT_SUCCESS, "address: %s",
                     fuzz_tp_last_error);
    }
    memcpy(&fake, addr[VICTIM], sizeof(fake));
    fake.port = htons(1);
    FUZZ_REQUIRE(T->connect(ctx[VICTIM], FUZZ_RANK, &fake, sizeof(fake)) == WEFT_SUCCESS,
                 "connect to rank 0: %s", fuzz_tp_last_error);
    FUZZ_REQUIRE(T->connect(ctx[VICTIM], HONEST, addr[HONEST], len[HONEST]) == WEFT_SUCCESS,
                 "connect to rank 2: %s", fuzz_tp_last_error);
    FUZZ_REQUIRE(T->connect(ctx[HONEST], VICTIM, addr[VICTIM], len[VICTIM]) == WEFT_SUCCESS,
                 "connect to rank 1: %s", fuzz_tp_last_error);
}

/* The rank the stream's hello claims: the job id is the only credential,
 * so the stream speaks for any rank it names, rank 1 itself included (a
 * rank dials itself for its own messages). */
static uint32_t claimed = FUZZ_RANK;

/* The receives rank 1 posts before the input's bytes arrive. */
static fuzz_tp_posted_t posted[] = {
    { FUZZ_RANK, 7, 0, 64, NULL, NULL },
    { FUZZ_RANK, 0, ~0ull, 0, NULL, NULL },
    { WEFT_TRANSPORT_ANY_PEER, 0, ~0ull, 4096, NULL, NULL },
    { FUZZ_RANK, 1, 0xff, 100000, NULL, NULL },
};
#define NPOSTED (sizeof(posted) / sizeof(posted[0]))

static void post_receives(void)
{
    fuzz_tp_post(T, ctx[VICTIM], posted, NPOSTED, CANARY);
}

static void check_receives(void)
{
    for (size_t i = 0; i < NPOSTED; i++) {
        fuzz_tp_posted_t *p = &posted[i];
        weft_transport_completion_t c;
        int done = 0;

        FUZZ_REQUIRE(T->test(ctx[VICTIM], p->req, &done, &c) == WEFT_SUCCESS, "test: %s",
                     fuzz_tp_last_error);
        if (!done) {
            FUZZ_REQUIRE(T->cancel(ctx[VICTIM], p->req) == WEFT_SUCCESS, "cancel: %s",
                         fuzz_tp_last_error);
            FUZZ_REQUIRE(T->test(ctx[VICTIM], p->req, &done, &c) == WEFT_SUCCESS && done,
                         "a cancelled receive does not complete");
            FUZZ_REQUIRE(c.status == WEFT_ERR_ABORTED || c.status == WEFT_SUCCESS ||
                         c.status == WEFT_ERR_TRUNCATED,
                         "cancelled receive %zu: status %d", i, c.status);
        } else {
            FUZZ_REQUIRE(c.status == WEFT_SUCCESS || c.status == WEFT_ERR_TRUNCATED ||
                         c.status == WEFT_ERR_PEER_LOST || c.status == WEFT_ERR_ABORTED,
                         "receive %zu: status %d", i, c.status);
        }
        if (c.status == WEFT_SUCCESS || c.status == WEFT_ERR_TRUNCATED) {
            FUZZ_REQUIRE(c.peer == (p->peer == WEFT_TRANSPORT_ANY_PEER ? (int)claimed : p->peer),
                         "receive %zu: from rank %d", i, c.peer);
            FUZZ_REQUIRE((c.tag & ~p->ignore) == (p->tag & ~p->ignore),
                         "receive %zu: tag %llu", i, (unsigned long long)c.tag);
            FUZZ_REQUIRE((c.status == WEFT_SUCCESS) == (c.len <= p->cap),
                         "receive %zu: status %d for %zu bytes into %zu", i, c.status, c.len,
                         p->cap);
            for (size_t k = c.len; k < p->cap; k++)
                FUZZ_REQUIRE(p->buf[k] == CANARY, "receive %zu: byte %zu of a %zu-byte "
                             "message written", i, k, c.len);
        }
        free(p->buf);
    }
}

static int dial(const unsigned char *addr_blob)
{
    struct sock_addr a;
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd;

    memcpy(&a, addr_blob, sizeof(a));
    sl = weft__sock_addr_to_sa(&a, &ss);
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    FUZZ_REQUIRE(fd >= 0, "socket: %s", strerror(errno));
    FUZZ_REQUIRE(connect(fd, (struct sockaddr *)&ss, sl) == 0 || errno == EINPROGRESS,
                 "connect to rank 1: %s", strerror(errno));
    return fd;
}

/* Writes the stream's bytes while rank 1 reads them, then ends it and
 * waits until rank 1 closed its side. */
static void play_rank0(int fd, const uint8_t *p, size_t n)
{
    int64_t deadline = fuzz_tp_now_ms() + STUCK_MS;
    int wr_done = 0;
    char sink[4096];

    for (;;) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN | (wr_done ? 0 : POLLOUT) };
        ssize_t k;

        progress(VICTIM);
        progress(HONEST);
        FUZZ_REQUIRE(fuzz_tp_now_ms() < deadline, "rank 1 keeps a stream open %d ms after it ended",
                     STUCK_MS);
        if (poll(&pfd, 1, 0) < 0)
            continue;
        if (!wr_done && (pfd.revents & POLLOUT)) {
            k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k > 0) {
                p += k;
                n -= (size_t)k;
            } else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                n = 0;
            }
            if (n == 0) {
                shutdown(fd, SHUT_WR);
                wr_done = 1;
            }
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            /* Rank 1 never writes on a stream it did not pick for rank 0:
             * anything but its end is a surprise. */
            k = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
            FUZZ_REQUIRE(k <= 0, "rank 1 wrote %zd bytes to rank 0", k);
            if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                return;
        }
    }
}

/* Sends len bytes from rank `from` to rank `to` and checks they arrive. */
static void exchange(int from, int to, size_t len)
{
    unsigned char *out = malloc(len), *in = malloc(len);
    weft_transport_completion_t cs, cr;
    int64_t deadline = fuzz_tp_now_ms() + STUCK_MS;
    void *s = NULL, *r = NULL;
    int sdone = 0, rdone = 0;

    FUZZ_REQUIRE(out && in, "out of memory");
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(i * 7 + 3);
    FUZZ_REQUIRE(T->irecv(ctx[to], from, in, len, 99, 0, NULL, &r) == WEFT_SUCCESS, "irecv: %s",
                 fuzz_tp_last_error);
    FUZZ_REQUIRE(T->isend(ctx[from], to, out, len, 99, NULL, &s) == WEFT_SUCCESS, "isend: %s",
                 fuzz_tp_last_error);
    while (!sdone || !rdone) {
        FUZZ_REQUIRE(fuzz_tp_now_ms() < deadline, "rank %d to rank %d: not done in %d ms", from, to,
                     STUCK_MS);
        progress(VICTIM);
        progress(HONEST);
        if (!sdone)
            FUZZ_REQUIRE(T->test(ctx[from], s, &sdone, &cs) == WEFT_SUCCESS, "test send");
        if (!rdone)
            FUZZ_REQUIRE(T->test(ctx[to], r, &rdone, &cr) == WEFT_SUCCESS, "test recv");
    }
    FUZZ_REQUIRE(cs.status == WEFT_SUCCESS && cr.status == WEFT_SUCCESS,
                 "rank %d to rank %d: send %d, receive %d", from, to, cs.status, cr.status);
    FUZZ_REQUIRE(cr.len == len && cr.peer == from && !memcmp(in, out, len),
                 "rank %d to rank %d: the message arrived changed", from, to);
    free(out);
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char addr[NR][WEFT_TRANSPORT_ADDR_MAX];
    uint8_t *stream;
    size_t n = 0;
    int fd;

    if (size < 1)
        return 0;
    /* The stream rank 0 writes: the harness's hello, or the input's. */
    stream = malloc(sizeof(struct sock_hello) + size);
    FUZZ_REQUIRE(stream != NULL, "out of memory");
    if (data[0] & 1) {
        struct sock_hello h;

        memset(&h, 0, sizeof(h));
        h.magic = SOCK_HELLO_MAGIC;
        h.wire_version = SOCK_WIRE_VERSION;
        h.abi_version = WEFT_TRANSPORT_ABI_VERSION;
        h.rank = FUZZ_RANK;
        h.stream = (uint32_t)(data[0] >> 1) % SOCK_MAX_STREAMS;
        snprintf(h.job_id, sizeof(h.job_id), "%s", JOB);
        memcpy(stream, &h, sizeof(h));
        n = sizeof(h);
    }
    memcpy(stream + n, data + 1, size - 1);
    n += size - 1;
    claimed = FUZZ_RANK;
    if (!(data[0] & 1) && n >= offsetof(struct sock_hello, rank) + 4) {
        /* The well-behaved rank 2 is kept out of what the stream may
         * claim, or its loss would be the input's doing. */
        memcpy(&claimed, stream + offsetof(struct sock_hello, rank), 4);
        if (claimed == HONEST) {
            claimed = FUZZ_RANK;
            memcpy(stream + offsetof(struct sock_hello, rank), &claimed, 4);
        }
    }

    job_up(addr);
    post_receives();
    fd = dial(addr[VICTIM]);
    play_rank0(fd, stream, n);
    close(fd);
    check_receives();
    exchange(HONEST, VICTIM, 3000);
    exchange(VICTIM, HONEST, 3000);
    for (int r = VICTIM; r < NR; r++) {
        FUZZ_REQUIRE(T->finalize(ctx[r]) == WEFT_SUCCESS, "finalize: %s", fuzz_tp_last_error);
        ctx[r] = NULL;
    }
    free(stream);
    return 0;
}
