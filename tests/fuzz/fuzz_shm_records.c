/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_shm_records.c: the records the shm transport reads from a peer's
 * ring (weft__shm_drain, plugins/shm/shm_recv.c, and where their bytes go,
 * shm_msg.c).
 *
 * Per input, two ranks in this process, connected as a job of two: rank
 * 0 under test, rank 1 its peer. After one message shows the pair works,
 * rank 0's ring from rank 1 is moved to ordinary heap memory of exactly
 * its size, so that ASan sees any read past it, and the input's bytes
 * are published in it at once, as rank 1 would publish records: a
 * header (struct shm_rec) and its payload, any number of them. The first
 * byte holds settings: bit 0 has rank 0 post receives first (from rank 1
 * and from any rank, small and large), so that records meet both posted
 * receives and the unexpected queue.
 *
 * Properties: progress never fails and never consumes past what was
 * published; a receive completes with a documented status, from rank 1,
 * with its tag, having written at most the message (canary past it);
 * messages left unexpected can be claimed and received; and afterwards
 * rank 0 still receives from itself, and from rank 1 too unless the
 * input made rank 1 leave or be given up as lost.
 */
#include "config.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft/transport.h"
#include "plugins/shm/shm.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_tp.h"

extern const weft_transport_v1_t weft_transport_v1;
static const weft_transport_v1_t *T = &weft_transport_v1;

#define NR 2
#define VICTIM 0
#define PEER 1
#define RING "8192"
#define STUCK_MS 5000
#define CANARY 0x5a

static weft_transport_core_t cores[NR];
static void *ctx[NR];
static char job[64];
static const char *core_param(const char *name)
{
    if (!strcmp(name, "WEFT_SHM_RING_SIZE"))
        return RING;
    if (!strcmp(name, "WEFT_SHM_CUDA_IPC"))
        return "0";
    if (!strcmp(name, "WEFT_HOSTID"))
        return "fuzz-node";
    return NULL;
}

static void progress(int r)
{
    weft_result_t rc = T->progress(ctx[r]);

    FUZZ_REQUIRE(rc == WEFT_SUCCESS, "progress of rank %d: %d: %s", r, rc, fuzz_tp_last_error);
}

static void pair_up(void)
{
    unsigned char addr[NR][WEFT_TRANSPORT_ADDR_MAX];
    size_t len[NR];

    if (!job[0])
        snprintf(job, sizeof(job), "fuzz%d", (int)getpid());
    for (int r = 0; r < NR; r++) {
        memset(&cores[r], 0, sizeof(cores[r]));
        cores[r].struct_size = sizeof(cores[r]);
        cores[r].rank = r;
        cores[r].size = NR;
        cores[r].job_id = job;
        cores[r].log = fuzz_tp_log;
        cores[r].set_error = fuzz_tp_set_error;
        cores[r].get_param = core_param;
        FUZZ_REQUIRE(T->init(&cores[r], &ctx[r]) == WEFT_SUCCESS, "init: %s", fuzz_tp_last_error);
        len[r] = sizeof(addr[r]);
        FUZZ_REQUIRE(T->get_address(ctx[r], addr[r], &len[r]) == WEFT_SUCCESS, "address: %s",
                     fuzz_tp_last_error);
    }
    /* Each rank creates its segment at its first connect: itself first,
     * so that one thread can connect both. */
    for (int r = 0; r < NR; r++)
        FUZZ_REQUIRE(T->connect(ctx[r], r, addr[r], len[r]) == WEFT_SUCCESS, "connect: %s",
                     fuzz_tp_last_error);
    for (int r = 0; r < NR; r++)
        FUZZ_REQUIRE(T->connect(ctx[r], 1 - r, addr[1 - r], len[1 - r]) == WEFT_SUCCESS,
                     "connect: %s", fuzz_tp_last_error);
}

/* Sends len bytes from rank `from` to rank 0 with a receive from `from`,
 * and checks they arrive intact. */
static void exchange(int from, size_t len)
{
    unsigned char *out = malloc(len ? len : 1), *in = malloc(len ? len : 1);
    weft_transport_completion_t cs, cr;
    int64_t deadline = fuzz_tp_now_ms() + STUCK_MS;
    void *s = NULL, *r = NULL;
    int sdone = 0, rdone = 0;

    FUZZ_REQUIRE(out && in, "out of memory");
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(i * 13 + 1);
    FUZZ_REQUIRE(T->irecv(ctx[VICTIM], from, in, len, 99, 0, NULL, &r) == WEFT_SUCCESS,
                 "irecv: %s", fuzz_tp_last_error);
    FUZZ_REQUIRE(T->isend(ctx[from], VICTIM, out, len, 99, NULL, &s) == WEFT_SUCCESS,
                 "isend: %s", fuzz_tp_last_error);
    while (!sdone || !rdone) {
        FUZZ_REQUIRE(fuzz_tp_now_ms() < deadline, "rank %d to rank 0: not done in %d ms", from,
                     STUCK_MS);
        progress(VICTIM);
        progress(PEER);
        if (!sdone)
            FUZZ_REQUIRE(T->test(ctx[from], s, &sdone, &cs) == WEFT_SUCCESS, "test send");
        if (!rdone)
            FUZZ_REQUIRE(T->test(ctx[VICTIM], r, &rdone, &cr) == WEFT_SUCCESS, "test recv");
    }
    FUZZ_REQUIRE(cs.status == WEFT_SUCCESS && cr.status == WEFT_SUCCESS,
                 "rank %d to rank 0: send %d, receive %d", from, cs.status, cr.status);
    FUZZ_REQUIRE(cr.len == len && cr.peer == from && !memcmp(in, out, len),
                 "rank %d to rank 0: the message arrived changed", from);
    free(out);
    free(in);
}

static fuzz_tp_posted_t posted[] = {
    { PEER, 7, 0, 64, NULL, NULL },
    { PEER, 0, ~0ull, 0, NULL, NULL },
    { WEFT_TRANSPORT_ANY_PEER, 0, ~0ull, 3000, NULL, NULL },
    { PEER, 1, 0xff, 20000, NULL, NULL },
};
#define NPOSTED (sizeof(posted) / sizeof(posted[0]))

static void post_receives(void)
{
    fuzz_tp_post(T, ctx[VICTIM], posted, NPOSTED, CANARY);
}

/* A completion of a receive of cap bytes at buf, posted with tag and
 * ignore: documented status, from rank 1, its tag, no byte written past
 * the message. */
static void check_completion(const char *what, const weft_transport_completion_t *c,
                             const unsigned char *buf, size_t cap, uint64_t tag, uint64_t ignore)
{
    FUZZ_REQUIRE(c->status == WEFT_SUCCESS || c->status == WEFT_ERR_TRUNCATED ||
                 c->status == WEFT_ERR_PEER_LOST || c->status == WEFT_ERR_ABORTED ||
                 c->status == WEFT_ERR_INTERNAL || c->status == WEFT_ERR_SYSTEM,
                 "%s: status %d", what, c->status);
    if (c->status != WEFT_SUCCESS && c->status != WEFT_ERR_TRUNCATED)
        return;
    FUZZ_REQUIRE(c->peer == PEER, "%s: from rank %d", what, c->peer);
    FUZZ_REQUIRE((c->tag & ~ignore) == (tag & ~ignore), "%s: tag %llu", what,
                 (unsigned long long)c->tag);
    FUZZ_REQUIRE((c->status == WEFT_SUCCESS) == (c->len <= cap),
                 "%s: status %d for %zu bytes into %zu", what, c->status, c->len, cap);
    for (size_t k = c->len; k < cap; k++)
        FUZZ_REQUIRE(buf[k] == CANARY, "%s: byte %zu of a %zu-byte message written", what, k,
                     c->len);
}

static void check_receives(void)
{
    for (size_t i = 0; i < NPOSTED; i++) {
        fuzz_tp_posted_t *p = &posted[i];
        weft_transport_completion_t c;
        int done = 0;

        FUZZ_REQUIRE(T->test(ctx[VICTIM], p->req, &done, &c) == WEFT_SUCCESS, "test");
        if (!done) {
            FUZZ_REQUIRE(T->cancel(ctx[VICTIM], p->req) == WEFT_SUCCESS, "cancel: %s",
                         fuzz_tp_last_error);
            FUZZ_REQUIRE(T->test(ctx[VICTIM], p->req, &done, &c) == WEFT_SUCCESS && done,
                         "a cancelled receive does not complete");
        }
        check_completion("posted receive", &c, p->buf, p->cap, p->tag, p->ignore);
        free(p->buf);
    }
}

/* Claims every message rank 1's records left unexpected and receives it
 * into a buffer a little larger than it (at most 64 KiB), so that no more
 * than the message is written: they are the transport's to hand over
 * whole, and they must not meet the health check's receive. */
static void claim_unexpected(void)
{
    for (int n = 0; n < 256; n++) {
        weft_transport_completion_t info, c;
        void *msg = NULL, *req = NULL;
        unsigned char *buf;
        size_t cap;
        int found = 0, done = 0;

        FUZZ_REQUIRE(T->improbe(ctx[VICTIM], PEER, 0, ~0ull, &found, &msg, &info) ==
                     WEFT_SUCCESS, "improbe: %s", fuzz_tp_last_error);
        if (!found)
            return;
        FUZZ_REQUIRE(info.peer == PEER, "probed a message of rank %d", info.peer);
        cap = info.len < 65536 ? info.len + 64 : 65536;
        buf = malloc(cap ? cap : 1);
        FUZZ_REQUIRE(buf != NULL, "out of memory");
        memset(buf, CANARY, cap);
        FUZZ_REQUIRE(T->imrecv(ctx[VICTIM], msg, buf, cap, NULL, &req) == WEFT_SUCCESS,
                     "imrecv: %s", fuzz_tp_last_error);
        FUZZ_REQUIRE(T->test(ctx[VICTIM], req, &done, &c) == WEFT_SUCCESS, "test");
        if (!done) {
            /* Its records are not all in: it can only be given up. */
            FUZZ_REQUIRE(T->cancel(ctx[VICTIM], req) == WEFT_SUCCESS, "cancel: %s",
                         fuzz_tp_last_error);
            FUZZ_REQUIRE(T->test(ctx[VICTIM], req, &done, &c) == WEFT_SUCCESS && done,
                         "a cancelled claimed receive does not complete");
        }
        check_completion("claimed message", &c, buf, cap, info.tag, 0);
        if (c.status == WEFT_SUCCESS || c.status == WEFT_ERR_TRUNCATED)
            FUZZ_REQUIRE(c.len == info.len, "probed %zu bytes, received %zu", info.len, c.len);
        free(buf);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct shm_ctx *v;
    struct shm_peer *p;
    struct shm_ring saved, producer;
    struct shm_ring_ctl *ctl;
    unsigned char *ring;
    uint64_t cap;
    int64_t deadline;

    if (size < 1)
        return 0;
    pair_up();
    exchange(PEER, 100);
    v = ctx[VICTIM];
    p = &v->peers[PEER];
    FUZZ_REQUIRE(p->has_in, "rank 0 has no ring from rank 1 after a message");
    cap = v->ring_size;
    ctl = aligned_alloc(SHM_CACHELINE, sizeof(*ctl));
    ring = malloc(cap);
    FUZZ_REQUIRE(ctl && ring, "out of memory");
    memset(ctl, 0, sizeof(*ctl));
    saved = p->in;
    weft__shm_ring_attach(&p->in, ctl, ring, cap, 0);
    weft__shm_ring_attach(&producer, ctl, ring, cap, 1);
    if (data[0] & 1)
        post_receives();
    /* One push: a producer publishes whole records only. */
    FUZZ_REQUIRE(weft__shm_ring_push(&producer, data + 1,
                                     size - 1 < cap ? size - 1 : cap, NULL, 0) == 0,
                 "no room in an empty ring");
    deadline = fuzz_tp_now_ms() + STUCK_MS;
    for (uint64_t before = UINT64_MAX; before != p->in.pos;) {
        before = p->in.pos;
        progress(VICTIM);
        progress(PEER);
        FUZZ_REQUIRE(p->in.pos <= ctl->tail, "rank 0 consumed %llu bytes of %llu published",
                     (unsigned long long)p->in.pos, (unsigned long long)ctl->tail);
        FUZZ_REQUIRE(fuzz_tp_now_ms() < deadline, "draining takes over %d ms", STUCK_MS);
    }
    if (data[0] & 1)
        check_receives();
    claim_unexpected();
    /* Back to the real ring, which rank 1 writes; it was drained before. */
    weft__shm_ring_attach(&p->in, saved.ctl, saved.data, saved.cap, 0);
    exchange(VICTIM, 3000);
    if (!p->lost && !p->departed)
        exchange(PEER, 3000);
    for (int r = 0; r < NR; r++) {
        FUZZ_REQUIRE(T->finalize(ctx[r]) == WEFT_SUCCESS, "finalize: %s", fuzz_tp_last_error);
        ctx[r] = NULL;
    }
    free(ctl);
    free(ring);
    return 0;
}
