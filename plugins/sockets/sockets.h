/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sockets.h: internals of the sockets transport, shared by its files.
 *
 * Wire design
 *   A pair of ranks talks over 1 to SOCK_MAX_STREAMS TCP connections per
 *   direction ("streams", WEFT_SOCKET_NSOCKS). The first send to a peer
 *   picks, for each stream index, the connection it writes on for good:
 *   for stream 0 the one the peer dialed when it is already accepted (the
 *   stream then carries both directions), else one it dials now. The
 *   bulk streams 1 and up stay one-way: both directions of bulk data on
 *   one connection share its socket lock. A stream opens with
 *   a hello (magic, versions, job id, dialer's rank, stream index); the
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
 *   At finalize every connection carries a goodbye frame after this
 *   rank's last data on it: it tells the peer that the rank left on
 *   purpose, so its receives from any source are not failed as they are
 *   for a crash, and which streams it had dialed (some may still wait in
 *   the peer's listen backlog).
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
#include "plugins/common/tp.h"

#define SOCK_NAME "sockets"
#define SOCK_ADDR_MAGIC 0x5753434bu     /* address blob */
#define SOCK_HELLO_MAGIC 0x57534831u    /* first bytes of every stream */
#define SOCK_WIRE_VERSION 4u
#define SOCK_MAX_STREAMS 8
#define SOCK_DEFAULT_CHUNK (512u << 10)
#define SOCK_MIN_CHUNK 4096u
#define SOCK_MAX_CHUNK (1u << 30)
#define SOCK_JOB_ID_BYTES 64
/* Payload bytes one stream may read per progress() call, so that a big
 * message does not hold up the other connections. */
#define SOCK_READ_BUDGET (4u << 20)
#define SOCK_DISCARD_BYTES (64u << 10)
/* A stream reads into its stage what follows the bytes it knows where to
 * put: the next frames' headers and small payloads, many per system call
 * (sockets_recv.c). */
#define SOCK_STAGE_BYTES (8u << 10)

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

/* A request: the common head (plugins/common/tp_req.h), then what a send
 * needs. */
struct sock_req {
    TP_REQ_HEAD;                        /* first (plugins/common/tp_req.h) */
    int picked;                         /* its start frame was handed to stream 0 */
    int started;                        /* ... and written */
    uint64_t msg_id;
    size_t assigned;                    /* payload bytes handed to streams */
    size_t written;                     /* payload bytes of frames fully written */
    struct sock_req *act_next;          /* peer's round-robin of started sends */
    int in_active;
};

struct sock_range {
    size_t lo, hi;
};

/* A message from a peer: arriving, or arrived and not yet received. The
 * common head (plugins/common/tp_match.h) is the matcher's from its start
 * frame on. */
struct sock_msg {
    TP_MSG_HEAD;                        /* first (plugins/common/tp_match.h) */
    uint64_t id;
    unsigned started : 1;               /* its start frame arrived (tag known) */
    unsigned in_flight : 1;             /* in the peer's flight list */
    unsigned rg_all : 1;                /* rg lost track: all of ubuf counts */
    unsigned char *ubuf;                /* bytes arriving before a receive matched */
    struct sock_range *rg;              /* which bytes of ubuf arrived, sorted */
    int nrg, caprg;
    struct sock_msg *fprev, *fnext;     /* peer's flight list (incomplete ones) */
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
    int outgoing;                       /* dialed by us */
    int tx;                             /* we write on it (peer->tx) */
    int rx_data;                        /* dialed by us, and the peer writes on it too */
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
    unsigned char *stage;               /* SOCK_STAGE_BYTES, from the first read */
    size_t stage_pos, stage_len;        /* bytes stage[stage_pos, stage_len) unread */
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
    struct sock_conn *out[SOCK_MAX_STREAMS];  /* dialed by us */
    struct sock_conn *in[SOCK_MAX_STREAMS];   /* dialed by the peer */
    /* Where this rank writes stream k, chosen at the first send and kept,
     * so that each stream's frames stay in order: for stream 0 the peer's
     * in[0] when it dialed first, else out[k]. One connection carrying
     * both directions lets each side's data carry its acknowledgements:
     * two one-way connections cost a bare ACK segment per message (4
     * packets a round trip of a ping-pong between hosts, where 2 do). */
    struct sock_conn *tx[SOCK_MAX_STREAMS];
    /* sending: every unfinished send in send order; next_start is the
     * first whose start frame is not handed out yet (the ones after it
     * are not either) */
    struct tp_req_queue sq;
    struct sock_req *next_start;
    struct sock_req *act_head, *act_tail;
    int start_turn;
    uint64_t next_msg_id;
    uint64_t starts_written;            /* start frames wholly written, in order */
    unsigned dialed;                    /* bit k: stream k ever dialed */
    /* receiving */
    uint64_t next_start_id;             /* lowest id a new start may carry */
    unsigned in_seen;                   /* bit k: its stream k was accepted */
    /* What its goodbye said: it started bye_msgs messages to this rank, and
     * dialed the streams of bye_dialed. Until they all arrived, it is not
     * mute, even if a stream still waits in the listen backlog. */
    uint64_t bye_msgs;
    unsigned bye_dialed;
    struct sock_msg *flight;
};

struct sock_ctx {
    TP_CTX_HEAD;                        /* first (plugins/common/tp.h) */
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
    unsigned char discard[SOCK_DISCARD_BYTES];
};

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

/* sockets_msg.c: incoming messages, where their bytes wait for the common
 * matcher */
extern const struct tp_match_ops weft__sock_msg_ops;
struct sock_msg *weft__sock_msg_new(struct sock_ctx *ctx, int peer, uint64_t id, size_t total);
int weft__sock_msg_buffer(struct sock_msg *m);
void weft__sock_msg_arrived(struct sock_msg *m, size_t lo, size_t hi);
struct sock_msg *weft__sock_msg_find(struct sock_peer *p, uint64_t id);
void weft__sock_msg_flight_remove(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_msg_free(struct sock_msg *m);
void weft__sock_msg_check_done(struct sock_ctx *ctx, struct sock_msg *m);
void weft__sock_msgs_fail(struct sock_ctx *ctx, int peer, weft_result_t status);

/* sockets_send.c: the send queues and the write side of streams */
weft_result_t weft__sock_isend(void *vctx, int peer, const void *buf, size_t len,
                               uint64_t tag, void *mh, void **out);
int weft__sock_pump(struct sock_ctx *ctx, int peer);
void weft__sock_sends_fail(struct sock_ctx *ctx, int peer, weft_result_t status);
void weft__sock_send_cancel(struct tp_ctx *tp, struct tp_req *r);
int weft__sock_stream_idle(const struct sock_conn *c);

/* sockets_recv.c: the read side of streams */
enum sock_rd weft__sock_conn_read(struct sock_ctx *ctx, struct sock_conn *c, size_t budget);

/* sockets_conn.c: connections, peers' fate and the event loop */
void weft__sock_set_events(struct sock_ctx *ctx, struct sock_conn *c, uint32_t events);
int weft__sock_tx_open(struct sock_ctx *ctx, int peer);
int weft__sock_hello_check(struct sock_ctx *ctx, struct sock_conn *c);
void weft__sock_conn_close(struct sock_ctx *ctx, struct sock_conn *c);
void weft__sock_conn_failed(struct sock_ctx *ctx, struct sock_conn *c, const char *what);
/* The peer said goodbye: it had started msgs messages to this rank, and
 * dialed the streams of the mask dialed. */
void weft__sock_peer_departed(struct sock_ctx *ctx, int peer, uint64_t msgs, unsigned dialed);
void weft__sock_peer_close_all(struct sock_ctx *ctx, int peer);
void weft__sock_say_goodbye(struct sock_ctx *ctx);
void weft__sock_free_zombies(struct sock_ctx *ctx);
weft_result_t weft__sock_progress(void *vctx);

#endif /* WEFT_SOCKETS_H */
