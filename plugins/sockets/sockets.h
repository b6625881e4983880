/*
 * sockets.h: internals of the sockets transport, shared by its files.
 *
 * Each ordered pair of ranks has its own TCP connection: the sender dials
 * (lazily, at its first send), so the bytes from a peer arrive on one
 * stream in send order and matching order is send order. Messages travel
 * as chunks (header + at most `chunk` payload bytes); the chunks of the
 * messages queued on a connection are sent round-robin, so a small message
 * overtakes a large one instead of waiting behind it.
 */
#ifndef WEFT_SOCKETS_H
#define WEFT_SOCKETS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "weft/transport.h"

#define SOCK_ADDR_MAGIC 0x5753434bu   /* "WSCK" */
#define SOCK_HELLO_MAGIC 0x57534831u  /* "WSH1" */
#define SOCK_BYE_ID 0xffffffffu       /* msg_id of the goodbye chunk */
#define SOCK_DEFAULT_CHUNK (512u << 10)
#define SOCK_JOB_ID_MAX 40

/* The wire header of one chunk (host byte order: both ends run weft on the
 * same kind of machine; a job never mixes byte orders). */
struct sock_chunk_hdr {
    uint32_t msg_id;
    uint32_t len;          /* payload bytes of this chunk */
    uint64_t tag;
    uint64_t total;        /* bytes of the whole message */
    uint64_t offset;       /* of this chunk in the message */
};

struct sock_hello {
    uint32_t magic;
    uint32_t rank;
    char job_id[SOCK_JOB_ID_MAX];
};

/* The published address. */
struct sock_addr {
    uint32_t magic;
    uint16_t family;
    uint16_t port;
    uint8_t ip[16];
};

enum { SREQ_SEND = 1, SREQ_RECV = 2 };

struct sock_inmsg;

struct sock_req {
    int kind;
    int done;
    weft_result_t status;
    int peer;                   /* destination, or source (ANY_PEER for receives) */
    uint64_t tag, ignore;
    unsigned char *buf;         /* NULL once cancelled: payload is discarded */
    size_t cap;                 /* receive buffer size / send length */
    int src;                    /* completion: source */
    uint64_t mtag;              /* completion: tag of the message */
    size_t total;               /* completion: message length */
    /* sends: progress of the message on its connection */
    uint32_t msg_id;
    size_t offset;              /* payload bytes fully sent in finished chunks */
    struct sock_inmsg *bound;   /* receives: message being received into buf */
    struct sock_req *next;      /* posted list, or connection send queue */
};

/* A message arriving (or arrived) from a peer. */
struct sock_inmsg {
    uint32_t msg_id;
    int peer;
    uint64_t tag;
    size_t total, got;
    unsigned char *ubuf;        /* unexpected: buffered payload */
    struct sock_req *req;       /* matched receive */
    int complete;
    struct sock_inmsg *next_conn;   /* connection's in-progress list */
    struct sock_inmsg *next_unexp;  /* context's unexpected queue */
};

enum conn_rstate { RS_HELLO = 0, RS_HDR, RS_PAYLOAD };

struct sock_conn {
    int fd;
    int peer;                   /* -1 until the hello arrived (accepted side) */
    int outgoing;               /* dialed by us: we send on it */
    int connecting;             /* nonblocking connect in progress */
    uint32_t events;            /* registered epoll events */
    /* receive state */
    int rstate;
    unsigned char rbuf[sizeof(struct sock_hello) > sizeof(struct sock_chunk_hdr)
                           ? sizeof(struct sock_hello) : sizeof(struct sock_chunk_hdr)];
    size_t rgot;
    struct sock_chunk_hdr hdr;
    struct sock_inmsg *cur;     /* message the current chunk belongs to */
    size_t chunk_left;
    struct sock_inmsg *inflight;
    int said_bye;
    /* send state */
    struct sock_req *sq_head, *sq_tail;
    unsigned char whdr[sizeof(struct sock_chunk_hdr) + sizeof(struct sock_hello)];
    size_t whdr_len, whdr_sent;
    size_t wchunk_len, wchunk_sent;
    int hello_pending;
    struct sock_conn *next;     /* all connections of the context */
};

struct sock_peer {
    struct sock_addr addr;
    int known;                  /* connect() was called */
    int lost;                   /* WEFT_ERR_PEER_LOST from now on */
    int departed;               /* said goodbye: no more messages will come */
    struct sock_conn *out;
    struct sock_conn *in;
    uint32_t next_msg_id;
};

struct sock_ctx {
    const weft_transport_core_t *core;
    int rank, size;
    int epfd;
    int listen_fd;
    struct sock_addr self;
    size_t chunk;
    struct sock_peer *peers;
    struct sock_conn *conns;
    struct sock_req *posted_head, *posted_tail;
    struct sock_inmsg *unexp_head, *unexp_tail;
    unsigned char discard[64 << 10];
};

#define SOCK_LOG(ctx, level, ...) (ctx)->core->log((level), "sockets", __VA_ARGS__)

/* sockets_iface.c */
weft_result_t sock_pick_address(const weft_transport_core_t *core, struct sockaddr_storage *ss,
                                socklen_t *len, char *desc, size_t desc_cap);
int sock_ifname_match(const char *spec, const char *ifname);

#endif /* WEFT_SOCKETS_H */
