/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets.h: internals of the sockets transport, shared by its files.
 *
 * Wire design
 *   The sender dials: each ordered pair of ranks (sender, receiver) has its
 *   own set of 1 to SOCK_MAX_STREAMS TCP connections ("streams",
 *   WEFT_SOCKET_NSOCKS), opened lazily by the first send. A stream opens
 *   with a hello (magic, versions, job id, sender rank, stream index); the
 *   accepting side closes it on any mismatch. Messages travel as frames:
 *   a header (message id, tag, total length, offset, chunk length) and at
 *   most `chunk` payload bytes. A message's first frame ("start", it
 *   carries the tag) always travels on stream 0, so starts arrive in send
 *   order and matching order is send order. The other frames may travel on
 *   any stream once the start has been written, and are written where the
 *   receiver's buffer wants them by offset. With several streams, stream 0
 *   carries only starts, so a small message never waits behind bulk data
 *   in a socket buffer; with one, starts and chunks of the messages queued
 *   for a peer take turns.
 *
 *   The receiving side never writes to a stream except a goodbye frame at
 *   finalize: it tells the peer that the rank left on purpose, so its
 *   receives from any source are not failed as they are for a crash.
 *
 * Frames are in host byte order: a job runs one kind of machine, and the
 * hello's magic shows a mismatch.
 *
 * Ownership: a context owns everything below; no state is global, so
 * several contexts live in one process. The core serialises calls into a
 * context, so nothing here locks.
 */
#ifndef WEFT_SOCKETS_H
#define WEFT_SOCKETS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "weft/transport.h"

#define SOCK_NAME "sockets"
#define SOCK_ADDR_MAGIC 0x5753434bu     /* address blob */
#define SOCK_HELLO_MAGIC 0x57534831u    /* first bytes of every stream */
#define SOCK_WIRE_VERSION 3u
#define SOCK_MAX_STREAMS 8
#define SOCK_DEFAULT_CHUNK (512u << 10)
#define SOCK_MIN_CHUNK 4096u
#define SOCK_MAX_CHUNK (1u << 30)
#define SOCK_JOB_ID_BYTES 64
/* Payload bytes one stream may read per progress() call, so that a big
 * message does not hold up the other connections. */
#define SOCK_READ_BUDGET (4u << 20)
#define SOCK_DISCARD_BYTES (64u << 10)

#define SOCK_FRAME_START 1u             /* first frame of a message: tag valid */
#define SOCK_FRAME_BYE 2u               /* the sender finalized */

/* The published address (get_address). */
struct sock_addr {
    uint32_t magic;
    uint16_t version;
    uint16_t family;                    /* AF_INET or AF_INET6 */
    uint16_t port;                      /* network byte order */
    uint16_t reserved;
    uint8_t ip[16];                     /* network byte order, 4 used for IPv4 */
};

struct sock_hello {
    uint32_t magic;
    uint16_t wire_version;
    uint16_t abi_version;
    uint32_t rank;                      /* the dialing rank */
    uint32_t stream;
    char job_id[SOCK_JOB_ID_BYTES];     /* NUL-padded */
};

struct sock_frame {
    uint64_t msg_id;                    /* per (sender, receiver), from 0 up */
    uint64_t tag;
    uint64_t total;                     /* bytes of the whole message */
    uint64_t offset;                    /* of this frame's payload */
    uint32_t len;                       /* payload bytes that follow */
    uint32_t flags;                     /* SOCK_FRAME_* */
};

enum { SOCK_SEND = 1, SOCK_RECV = 2 };

struct sock_msg;

/* A request handed to the core; it lives until test() reports it done. */
struct sock_req {
    struct sock_req *prev, *next;       /* ctx->reqs: every live request */
    int kind;
    int done;
    int cancelled;
    weft_result_t status;
    int peer;                           /* destination, or source / ANY_PEER */
    uint64_t tag, ignore;
    unsigned char *buf;
    size_t len;                         /* send length, or receive capacity */
    /* completion */
    int src;
    uint64_t mtag;
    size_t total;
    /* queue links: a send in its peer's send queue, a receive in the
     * posted list */
    struct sock_req *qprev, *qnext;
    int queued;
    /* sends */
    int picked;                         /* its start frame was handed to stream 0 */
    int started;                        /* ... and written */
    uint64_t msg_id;
    size_t assigned;                    /* payload bytes handed to streams */
    size_t written;                     /* payload bytes of frames fully written */
    struct sock_req *act_next;          /* peer's round-robin of started sends */
    int in_active;
    /* receives */
    struct sock_msg *msg;               /* message being received into buf */
};

struct sock_range {
    size_t lo, hi;
};

/* A message from a peer: arriving, or arrived and not yet received. */
struct sock_msg {
    int peer;
    uint64_t id;
    uint64_t tag;
    size_t total, got;
    unsigned started : 1;               /* its start frame arrived (tag known) */
    unsigned in_flight : 1;             /* in the peer's flight list */
    unsigned in_unexp : 1;              /* in ctx->unexp */
    unsigned claimed : 1;               /* taken by improbe, in ctx->claimed */
    unsigned orphan : 1;                /* its receive was cancelled: discard */
    unsigned dead : 1;                  /* can never complete (peer gone) */
    unsigned rg_all : 1;                /* rg lost track: all of ubuf counts */
    unsigned char *ubuf;                /* bytes arriving before a receive matched */
    struct sock_range *rg;              /* which bytes of ubuf arrived, sorted */
    int nrg, caprg;
    struct sock_req *req;               /* the receive it is bound to */
    struct sock_msg *fprev, *fnext;     /* peer's flight list (incomplete ones) */
    struct sock_msg *qprev, *qnext;     /* ctx->unexp or ctx->claimed */
};

enum sock_rstate {
    RS_HELLO = 0,                       /* accepted, waiting for the hello */
    RS_HELD,                            /* hello read, job id not known yet */
    RS_HDR,
    RS_PAYLOAD
};

enum sock_rd {
    SOCK_RD_OK = 0,
    SOCK_RD_EOF,
    SOCK_RD_ERR,                        /* errno in conn->err */
    SOCK_RD_PROTO,                      /* reason in conn->why */
    SOCK_RD_REJECT                      /* a hello we refuse: close quietly */
};

struct sock_conn {
    struct sock_conn *prev, *next;      /* ctx->conns, or ctx->zombies once closed */
    int fd;
    int peer;                           /* -1 until the hello (accepted side) */
    int stream;
    int outgoing;                       /* dialed by us: we send on it */
    int closed;
    int connecting;
    int wblocked;                       /* EPOLLOUT armed: waiting for room */
    int got_bye;
    int err;
    const char *why;
    uint32_t events;
    /* reading */
    int rstate;
    union {
        struct sock_hello hello;
        struct sock_frame frame;
        unsigned char raw[sizeof(struct sock_hello)];
    } rbuf;
    size_t rgot;
    struct sock_frame cur;              /* frame whose payload is being read */
    struct sock_msg *rmsg;
    size_t rdone;
    /* writing */
    struct sock_hello whello;
    size_t hello_left;
    struct sock_req *wreq;              /* frame being written, NULL when idle */
    int cut;                            /* a frame was abandoned half written */
    struct sock_frame wframe;
    size_t wframe_sent, wpay_sent;
};

struct sock_peer {
    struct sock_addr addr;
    int known;                          /* connect() called */
    int lost;                           /* crashed: PEER_LOST from now on */
    int departed;                       /* said goodbye */
    int disconnected;                   /* disconnect() called: refuse its streams */
    struct sock_conn *out[SOCK_MAX_STREAMS];
    struct sock_conn *in[SOCK_MAX_STREAMS];
    /* sending: every unfinished send in send order; next_start is the
     * first whose start frame is not handed out yet (the ones after it
     * are not either) */
    struct sock_req *sq_head, *sq_tail, *next_start;
    struct sock_req *act_head, *act_tail;
    int start_turn;
    uint64_t next_msg_id;
    uint64_t starts_written;            /* start frames wholly written, in order */
    int streams_dialed;                 /* outgoing streams ever opened */
    /* receiving */
    uint64_t next_start_id;             /* lowest id a new start may carry */
    unsigned in_seen;                   /* bit k: its stream k was accepted */
    /* What its goodbye said: it started bye_msgs messages to this rank, on
     * bye_streams streams. Until they all arrived, it is not mute, even if
     * a stream still waits in the listen backlog. */
    uint64_t bye_msgs;
    int bye_streams;
    struct sock_msg *flight;
};

struct sock_ctx {
    const weft_transport_core_t *core;
    int rank, size;
    int nsocks;
    size_t chunk;
    int bufsize;                        /* SO_SNDBUF/SO_RCVBUF, 0: kernel's */
    int epfd;
    int listen_fd;
    struct sock_addr self;
    struct sock_peer *peers;
    struct sock_conn *conns;
    struct sock_conn *zombies;          /* closed, freed at the end of progress */
    int nheld;
    struct sock_req *reqs;
    struct sock_req *post_head, *post_tail;
    struct sock_msg *unexp_head, *unexp_tail;
    struct sock_msg *claimed;
    unsigned char discard[SOCK_DISCARD_BYTES];
};

#define SOCK_LOG(ctx, level, ...) (ctx)->core->log((level), SOCK_NAME, __VA_ARGS__)
#define SOCK_WARN(ctx, ...) SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_WARN, __VA_ARGS__)
#define SOCK_INFO(ctx, ...) SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_INFO, __VA_ARGS__)
#define SOCK_TRACE(ctx, ...) SOCK_LOG(ctx, WEFT_TRANSPORT_LOG_TRACE, __VA_ARGS__)

static inline size_t sock_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* sockets_addr.c: the address blob */
int weft__sock_addr_valid(const void *blob, size_t len);
void weft__sock_addr_from_sa(struct sock_addr *a, const struct sockaddr *sa);
socklen_t weft__sock_addr_to_sa(const struct sock_addr *a, struct sockaddr_storage *ss);
void weft__sock_sa_str(const struct sockaddr *sa, char *buf, size_t cap);

/* sockets_iface.c: which local address to listen on */
struct ifaddrs;
int weft__sock_ifname_match(const char *spec, const char *ifname);
const struct ifaddrs *weft__sock_iface_pick(const struct ifaddrs *list, const char *spec);
int weft__sock_route_to(const char *host, struct sockaddr_storage *ss, socklen_t *len);
weft_result_t weft__sock_pick_address(const weft_transport_core_t *core,
                                      struct sockaddr_storage *ss, socklen_t *len,
                                      char *desc, size_t desc_cap);

/* sockets_req.c: requests */
struct sock_req *weft__sock_req_new(struct sock_ctx *ctx, int kind, int peer, void *buf,
                                    size_t len, uint64_t tag, uint64_t ignore);
void weft__sock_req_complete(struct sock_req *r, weft_result_t status);
void weft__sock_req_free(struct sock_ctx *ctx, struct sock_req *r);

/* sockets_msg.c: incoming messages */
struct sock_msg *weft__sock_msg_new(struct sock_ctx *ctx, int peer, uint64_t id, size_t total);
int weft__sock_msg_buffer(struct sock_msg *m);
void weft__sock_msg_arrived(struct sock_msg *m, size_t lo, size_t hi);
struct sock_msg *weft__sock_msg_find(struct sock_peer *p, uint64_t id);
void weft__sock_msg_flight_remove(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_msg_free(struct sock_msg *m);
void weft__sock_msg_bind(struct sock_ctx *ctx, struct sock_req *r, struct sock_msg *m);
void weft__sock_msg_check_done(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_msgs_fail(struct sock_ctx *ctx, int peer, weft_result_t status);

/* sockets_match.c: posted receives and the unexpected queue */
int weft__sock_tag_match(uint64_t want, uint64_t ignore, uint64_t got);
int weft__sock_msg_started(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_posted_fail(struct sock_ctx *ctx, int peer, int any_too, weft_result_t status);
void weft__sock_unexp_drop(struct sock_ctx *ctx, int peer);
void weft__sock_unexp_remove(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_claimed_remove(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_recv_cancel(struct sock_ctx *ctx, struct sock_req *r);
weft_result_t weft__sock_irecv(void *vctx, int peer, void *buf, size_t len, uint64_t tag,
                               uint64_t ignore, void *mh, void **out);
weft_result_t weft__sock_improbe(void *vctx, int peer, uint64_t tag, uint64_t ignore,
                                 int *found, void **msg, weft_transport_completion_t *info);
weft_result_t weft__sock_imrecv(void *vctx, void *msg, void *buf, size_t len, void *mh,
                                void **out);

/* sockets_send.c: the send queues and the write side of streams */
weft_result_t weft__sock_isend(void *vctx, int peer, const void *buf, size_t len,
                               uint64_t tag, void *mh, void **out);
int weft__sock_pump(struct sock_ctx *ctx, int peer);
void weft__sock_sends_fail(struct sock_ctx *ctx, int peer, weft_result_t status);
void weft__sock_send_cancel(struct sock_ctx *ctx, struct sock_req *r);
int weft__sock_stream_idle(const struct sock_conn *c);

/* sockets_recv.c: the read side of streams */
enum sock_rd weft__sock_conn_read(struct sock_ctx *ctx, struct sock_conn *c, size_t budget);

/* sockets_conn.c: connections, peers' fate and the event loop */
void weft__sock_set_events(struct sock_ctx *ctx, struct sock_conn *c, uint32_t events);
int weft__sock_dial(struct sock_ctx *ctx, int peer);
int weft__sock_hello_check(struct sock_ctx *ctx, struct sock_conn *c);
void weft__sock_conn_close(struct sock_ctx *ctx, struct sock_conn *c);
void weft__sock_conn_failed(struct sock_ctx *ctx, struct sock_conn *c, const char *what);
/* The peer said goodbye: it had started msgs messages to this rank, on
 * streams streams. */
void weft__sock_peer_departed(struct sock_ctx *ctx, int peer, uint64_t msgs, int streams);
void weft__sock_peer_close_all(struct sock_ctx *ctx, int peer);
void weft__sock_say_goodbye(struct sock_ctx *ctx);
void weft__sock_free_zombies(struct sock_ctx *ctx);
weft_result_t weft__sock_progress(void *vctx);

#endif /* WEFT_SOCKETS_H */
