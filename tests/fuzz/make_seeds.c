/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * make_seeds.c: writes the seed inputs of the harnesses, valid examples
 * of what each one reads, into the corpus folders (committed; run this
 * again after changing a format):
 *
 *     tests/fuzz/make_seeds $srcdir/tests/fuzz/corpus
 *
 * Seeds are named seed-*; inputs that once crashed are crash-*, and this
 * program leaves them alone. The topology seeds are tests/topo's
 * fixtures, copied by hand.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/boot/frame.h"
#include "core/transport/addr_record.h"
#include "plugins/shm/shm.h"
#include "plugins/sockets/sockets.h"
#include "tests/fuzz/fuzz_env_vars.h"

static const char *root;

/* A growing byte string. */
struct buf {
    unsigned char data[65536];
    size_t len;
};

static void put(struct buf *b, const void *p, size_t n)
{
    if (b->len + n > sizeof(b->data)) {
        fprintf(stderr, "make_seeds: a seed over %zu bytes\n", sizeof(b->data));
        exit(1);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_byte(struct buf *b, unsigned char c)
{
    put(b, &c, 1);
}

static void save(const char *what, const char *name, const struct buf *b)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s/seed-%s", root, what, name);
    f = fopen(path, "wb");
    if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        fprintf(stderr, "make_seeds: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

/* ------------------------------------------------------------ store frames */

static void frame(struct buf *b, const weft__msg_t *m)
{
    weft__wbuf_t w = { 0 };

    if (weft__msg_encode(m, &w) != WEFT_SUCCESS) {
        fprintf(stderr, "make_seeds: %s\n", weft__get_error());
        exit(1);
    }
    put(b, w.data, w.len);
    weft__wbuf_free(&w);
}

static weft__msg_t msg(uint32_t type, const char *text)
{
    weft__msg_t m;

    memset(&m, 0, sizeof(m));
    m.type = type;
    snprintf(m.text, sizeof(m.text), "%s", text ? text : "");
    return m;
}

static void frames(void)
{
    static const unsigned char blob[] = "rank's address record";
    uint32_t ranks[2];
    weft__wbuf_t records = { 0 };
    weft__msg_t m[13];
    struct buf all = { .len = 0 };
    char name[32];
    int n = 0;

    ranks[0] = htonl(0);
    ranks[1] = htonl(2);
    m[n++] = msg(WEFT__FRAME_HELLO, "fuzz-token");
    m[n++] = msg(WEFT__FRAME_OK, "fuzz-job");
    m[n] = msg(WEFT__FRAME_ERROR, "rank 1 joined twice");
    m[n++].code = WEFT_ERR_BOOTSTRAP;
    m[n] = msg(WEFT__FRAME_JOIN, "node1");
    m[n].rank = 1;
    m[n].size = 3;
    m[n].pid = 4242;
    m[n].data = blob;
    m[n++].len = sizeof(blob);
    weft__wbuf_bytes(&records, blob, sizeof(blob));
    weft__wbuf_bytes(&records, "", 0);
    m[n] = msg(WEFT__FRAME_JOINED, "fuzz-job");
    m[n].size = 2;
    m[n].data = records.data;
    m[n++].len = records.len;
    m[n++] = msg(WEFT__FRAME_QUERY, NULL);
    m[n] = msg(WEFT__FRAME_QUERIED, NULL);
    m[n].size = 3;
    m[n].count = 2;
    m[n].data = (const unsigned char *)ranks;
    m[n++].len = sizeof(ranks);
    m[n] = msg(WEFT__FRAME_SET, "key");
    m[n].data = blob;
    m[n++].len = 5;
    m[n++] = msg(WEFT__FRAME_GET, "key");
    m[n] = msg(WEFT__FRAME_VALUE, NULL);
    m[n].data = blob;
    m[n++].len = 5;
    m[n] = msg(WEFT__FRAME_BARRIER, "init");
    m[n++].count = 2;
    m[n++] = msg(WEFT__FRAME_CANCEL, NULL);
    m[n++] = msg(WEFT__FRAME_CANCELLED, NULL);
    for (int i = 0; i < n; i++) {
        struct buf one = { .len = 0 }, payload = { .len = 0 };

        frame(&one, &m[i]);
        snprintf(name, sizeof(name), "frame-type%u", m[i].type);
        save("frame", name, &one);
        /* The payload alone, after a byte naming its type. */
        put_byte(&payload, (unsigned char)m[i].type);
        put(&payload, one.data + WEFT__FRAME_HEADER, one.len - WEFT__FRAME_HEADER);
        snprintf(name, sizeof(name), "payload-type%u", m[i].type);
        save("frame", name, &payload);
        put(&all, one.data, one.len);
    }
    save("frame", "every-type", &all);
    weft__wbuf_free(&records);
}

/* ------------------------------------------------------------ the store */

#define SEP "\n@@\n"

static void store(void)
{
    static const char *const keys[] = { "a", "rank0/addr" };
    struct buf b;
    weft__msg_t m;

    /* Authenticated: join alone, then keys, a barrier, a query. */
    b.len = 0;
    put_byte(&b, 1);
    m = msg(WEFT__FRAME_JOIN, "node0");
    m.size = 1;
    frame(&b, &m);
    for (int i = 0; i < 2; i++) {
        m = msg(WEFT__FRAME_SET, keys[i]);
        m.data = (const unsigned char *)"value";
        m.len = 5;
        frame(&b, &m);
        m = msg(WEFT__FRAME_GET, keys[i]);
        frame(&b, &m);
    }
    m = msg(WEFT__FRAME_BARRIER, "b");
    m.count = 1;
    frame(&b, &m);
    m = msg(WEFT__FRAME_QUERY, NULL);
    frame(&b, &m);
    save("store_server", "authed-requests", &b);

    /* Its own hello, then a get that waits and is cancelled. */
    b.len = 0;
    put_byte(&b, 0);
    m = msg(WEFT__FRAME_HELLO, "fuzz-token");
    frame(&b, &m);
    m = msg(WEFT__FRAME_GET, "never-set");
    frame(&b, &m);
    m = msg(WEFT__FRAME_CANCEL, NULL);
    frame(&b, &m);
    save("store_server", "hello-get-cancel", &b);

    /* A wrong token. */
    b.len = 0;
    put_byte(&b, 0);
    m = msg(WEFT__FRAME_HELLO, "not-the-token");
    frame(&b, &m);
    save("store_server", "wrong-token", &b);

    /* Two ranks of a job of two (known to the store: bit 1), and a
     * barrier between them. */
    b.len = 0;
    put_byte(&b, 3);
    for (int r = 0; r < 2; r++) {
        if (r)
            put(&b, SEP, strlen(SEP));
        m = msg(WEFT__FRAME_JOIN, r ? "node1" : "node0");
        m.rank = r;
        m.size = 2;
        m.pid = 100 + (uint32_t)r;
        m.data = (const unsigned char *)"addr";
        m.len = 4;
        frame(&b, &m);
    }
    save("store_server", "join-two", &b);

    b.len = 0;
    put_byte(&b, 1);
    m = msg(WEFT__FRAME_BARRIER, "b2");
    m.count = 2;
    frame(&b, &m);
    put(&b, SEP, strlen(SEP));
    frame(&b, &m);
    save("store_server", "barrier-two", &b);

    /* A get on one connection that a set on the other answers. */
    b.len = 0;
    put_byte(&b, 1);
    m = msg(WEFT__FRAME_GET, "k");
    frame(&b, &m);
    put(&b, SEP, strlen(SEP));
    m = msg(WEFT__FRAME_SET, "k");
    m.data = (const unsigned char *)"v";
    m.len = 1;
    frame(&b, &m);
    save("store_server", "get-then-set", &b);
}

/* ------------------------------------------------------------ sockets */

static void sock_frame(struct buf *b, uint64_t id, uint64_t tag, uint64_t total, uint64_t off,
                       uint32_t len, uint32_t flags)
{
    struct sock_frame f;

    memset(&f, 0, sizeof(f));
    f.msg_id = id;
    f.tag = tag;
    f.total = total;
    f.offset = off;
    f.len = len;
    f.flags = flags;
    put(b, &f, sizeof(f));
    for (uint32_t i = 0; i < len; i++)
        put_byte(b, (unsigned char)(i * 3));
}

static void sockets(void)
{
    struct sock_hello h;
    struct buf b;

    /* The harness's hello on stream 0: a whole message, one in two
     * frames, and a goodbye. */
    b.len = 0;
    put_byte(&b, 1);
    sock_frame(&b, 0, 7, 10, 0, 10, SOCK_FRAME_START);
    sock_frame(&b, 1, 1, 3000, 0, 1000, SOCK_FRAME_START);
    sock_frame(&b, 1, 1, 3000, 1000, 2000, 0);
    sock_frame(&b, 2, 0, 0, 0, 0, SOCK_FRAME_START);
    sock_frame(&b, 3, 0, 0, 0, 0, SOCK_FRAME_BYE);
    save("sockets_handshake", "messages-bye", &b);

    /* A frame that overtakes its start (on stream 1), then the start. */
    b.len = 0;
    put_byte(&b, 1 | 1 << 1);
    sock_frame(&b, 0, 0, 100, 50, 50, 0);
    save("sockets_handshake", "stream1-overtaking", &b);

    /* The input's own hello. */
    memset(&h, 0, sizeof(h));
    h.magic = SOCK_HELLO_MAGIC;
    h.wire_version = SOCK_WIRE_VERSION;
    h.abi_version = WEFT_TRANSPORT_ABI_VERSION;
    h.rank = 0;
    h.stream = 0;
    snprintf(h.job_id, sizeof(h.job_id), "fuzz-job");
    b.len = 0;
    put_byte(&b, 0);
    put(&b, &h, sizeof(h));
    sock_frame(&b, 0, 7, 64, 0, 64, SOCK_FRAME_START);
    save("sockets_handshake", "own-hello", &b);
    snprintf(h.job_id, sizeof(h.job_id), "another-job");
    b.len = 1;
    put(&b, &h, sizeof(h));
    save("sockets_handshake", "other-job", &b);
}

/* ------------------------------------------------------------ address records */

static void put_u32le(struct buf *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        put_byte(b, (unsigned char)(v >> (8 * i)));
}

static void addr_entry(struct buf *b, const char *name, const void *addr, size_t len)
{
    char n[WEFT__PLUGIN_NAME_MAX] = { 0 };

    snprintf(n, sizeof(n), "%s", name);
    put(b, n, sizeof(n));
    put_u32le(b, (uint32_t)len);
    put(b, addr, len);
}

static void addresses(void)
{
    weft__topo_summary_t s;
    unsigned char wire[WEFT__TOPO_SUMMARY_WIRE];
    char host[WEFT__HOSTID_MAX] = { 0 };
    struct sock_addr a4, a6;
    struct shm_addr shm;
    struct buf b;

    memset(&a4, 0, sizeof(a4));
    a4.magic = SOCK_ADDR_MAGIC;
    a4.version = SOCK_WIRE_VERSION;
    a4.family = AF_INET;
    a4.port = htons(4242);
    a4.ip[0] = 127;
    a4.ip[3] = 1;
    a6 = a4;
    a6.family = AF_INET6;
    memset(a6.ip, 0, sizeof(a6.ip));
    a6.ip[15] = 1;
    memset(&shm, 0, sizeof(shm));
    shm.magic = SHM_ADDR_MAGIC;
    shm.version = SHM_VERSION;
    shm.pid = 4242;
    snprintf(shm.host, sizeof(shm.host), "node0");
    memset(&s, 0, sizeof(s));
    s.numa = 0;
    s.package = 0;
    s.cpu = -1;
    s.ncpus = 8;
    s.ngpus = 1;
    s.nnics = 1;
    snprintf(s.gpu, sizeof(s.gpu), "0000:07:00.0");
    snprintf(s.nic, sizeof(s.nic), "mlx5_0");
    snprintf(s.machine, sizeof(s.machine), "0123456789abcdef");
    weft__topo_summary_encode(&s, wire);
    snprintf(host, sizeof(host), "node0/0123456789abcdef");

    b.len = 0;
    put_u32le(&b, WEFT__ADDR_RECORD_MAGIC);
    put_u32le(&b, WEFT__ADDR_RECORD_VERSION);
    put_u32le(&b, 4242);
    put_u32le(&b, 3);
    put(&b, host, sizeof(host));
    put(&b, wire, sizeof(wire));
    addr_entry(&b, "sockets", &a4, sizeof(a4));
    addr_entry(&b, "shm", &shm, sizeof(shm));
    addr_entry(&b, "example", "x", 1);
    save("addr_record", "record-three", &b);

    b.len = 0;
    put_u32le(&b, WEFT__ADDR_RECORD_MAGIC);
    put_u32le(&b, WEFT__ADDR_RECORD_VERSION);
    put_u32le(&b, 1);
    put_u32le(&b, 1);
    put(&b, host, sizeof(host));
    put(&b, wire, sizeof(wire));
    addr_entry(&b, "sockets", &a6, sizeof(a6));
    save("addr_record", "record-ipv6", &b);

    b.len = 0;
    put(&b, &a4, sizeof(a4));
    save("addr_record", "sockets-ipv4", &b);
    b.len = 0;
    put(&b, &a6, sizeof(a6));
    save("addr_record", "sockets-ipv6", &b);
}

/* ------------------------------------------------------------ shm records */

static void shm_rec(struct buf *b, uint32_t type, uint32_t len, uint64_t tag, uint64_t total,
                    uint64_t id)
{
    struct shm_rec r;

    memset(&r, 0, sizeof(r));
    r.type = type;
    r.len = len;
    r.tag = tag;
    r.total = total;
    r.id = id;
    put(b, &r, sizeof(r));
    for (uint32_t i = 0; i < len; i++)
        put_byte(b, (unsigned char)(i * 5));
}

static void shm_records(void)
{
    struct buf b;

    for (int posted = 0; posted < 2; posted++) {
        b.len = 0;
        put_byte(&b, (unsigned char)posted);
        shm_rec(&b, SHM_REC_EAGER, 10, 7, 10, 0);
        shm_rec(&b, SHM_REC_START, 1000, 1, 2500, 0);
        shm_rec(&b, SHM_REC_DATA, 1000, 0, 0, 0);
        shm_rec(&b, SHM_REC_DATA, 500, 0, 0, 0);
        shm_rec(&b, SHM_REC_EAGER, 0, 3, 0, 0);
        save("shm_records", posted ? "messages-posted" : "messages-unexpected", &b);
    }
    b.len = 0;
    put_byte(&b, 1);
    shm_rec(&b, SHM_REC_FIN, 0, 0, 0, 5);
    shm_rec(&b, SHM_REC_EAGER, 4, 7, 4, 0);
    shm_rec(&b, SHM_REC_BYE, 0, 0, 0, 0);
    save("shm_records", "fin-bye", &b);
}

/* ------------------------------------------------------------ environment */

static void env_line(struct buf *b, const char *name, const char *value)
{
    int i = fuzz_env_index(name);

    if (i < 0 || i > 255) {
        fprintf(stderr, "make_seeds: %s is not in fuzz_env_vars.h\n", name);
        exit(1);
    }
    put_byte(b, (unsigned char)i);
    put(b, value, strlen(value));
    put_byte(b, '\n');
}

static void env_seed(const char *name, ...)
{
    struct buf b = { .len = 0 };
    va_list ap;
    const char *var;

    va_start(ap, name);
    while ((var = va_arg(ap, const char *)))
        env_line(&b, var, va_arg(ap, const char *));
    va_end(ap);
    save("env", name, &b);
}

static void environment(void)
{
    env_seed("weft-vars", "WEFT_INIT_METHOD", "env://", "WEFT_RANK", "1", "WEFT_SIZE", "4",
             "WEFT_LOCAL_RANK", "1", "WEFT_LOCAL_SIZE", "2", "WEFT_MASTER_ADDR", "node0",
             "WEFT_MASTER_PORT", "29500", "WEFT_TIMEOUT", "60", "WEFT_AUTH_TOKEN", "s3cret",
             "WEFT_STORE_EXTERNAL", "1", NULL);
    env_seed("weft-tcp-v6", "WEFT_INIT_METHOD", "tcp://[fe80::1]:4000", "WEFT_RANK", "0",
             "WEFT_SIZE", "1", NULL);
    env_seed("weft-file", "attr.init_method", "file:///tmp/rendezvous", "RANK", "0",
             "WORLD_SIZE", "2", NULL);
    env_seed("torchrun", "RANK", "3", "WORLD_SIZE", "8", "LOCAL_RANK", "3",
             "LOCAL_WORLD_SIZE", "4", "MASTER_ADDR", "10.0.0.1", "MASTER_PORT", "29400", NULL);
    env_seed("slurm", "SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_LOCALID", "1",
             "SLURM_JOB_NODELIST", "gpu[07-09,12]-ib,cpu1", "SLURM_JOB_ID", "123456",
             "SLURM_NODEID", "1", "SLURM_TASKS_PER_NODE", "4(x2),3", NULL);
    env_seed("open-mpi", "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE", "4",
             "OMPI_COMM_WORLD_LOCAL_RANK", "0", "OMPI_COMM_WORLD_LOCAL_SIZE", "2",
             "MASTER_ADDR", "[::1]:5000", NULL);
    env_seed("numbers", "WEFT_SPIN_US", "50", "WEFT_COLL_CHUNK", "0x40000",
             "WEFT_ALLTOALL_THROTTLE", "8", "WEFT_STREAM_THRESHOLD", "33554432",
             "WEFT_CUDA_COLL", "stage", "WEFT_CUDA_COLL_MIN", "65536", NULL);
    env_seed("words", "WEFT_DEBUG", "info", "WEFT_DEBUG_SUBSYS", "^COLL,TUNING",
             "WEFT_ALGO", "allreduce:ring,bcast:binomial", "WEFT_TRANSPORTS", "^shm,ib-verbs",
             "WEFT_HOSTID", "node7", "WEFT_TUNE", "0", "WEFT_TUNE_ADAPT", "1", NULL);
    env_seed("transports", "WEFT_SOCKET_IFNAME", "^docker,lo", "WEFT_SOCKET_NSOCKS", "4",
             "WEFT_SOCKET_CHUNK", "65536", "WEFT_SHM_RING_SIZE", "1048576", "WEFT_SHM_CMA", "0",
             "WEFT_IB_HCA", "mlx5_0:1,=mlx5_1", "WEFT_IB_GID_INDEX", "-1",
             "WEFT_CUDA_DEVICE", "1", "WEFT_CUDA_MEMOPS", "0", NULL);
}

/* ------------------------------------------------------------ tune file */

static void tune_files(void)
{
    static const char *const files[][2] = {
        { "saved", "weft-tune 1\n# alpha: seconds per message step\nintra_alpha 1.5e-05\n"
                   "intra_beta 8.0000000000000003e-10\ninter_alpha 5.0000000000000002e-05\n"
                   "inter_beta 1.0000000000000001e-09\ngamma 2.5e-10\n" },
        { "edited", "\r\n# by hand\nweft-tune 1 \r\n  gamma 0   # not reducing\r\n"
                    "inter_beta 1e-9\ninter_alpha 4e-5\nintra_beta 1e-10\nintra_alpha 1e-6" },
        { "missing-key", "weft-tune 1\nintra_alpha 1e-5\nintra_beta 1e-9\n" },
        { "twice", "weft-tune 1\ngamma 1e-9\ngamma 2e-9\n" },
    };

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        struct buf b = { .len = 0 };

        put(&b, files[i][1], strlen(files[i][1]));
        save("tune_file", files[i][0], &b);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds CORPUS_DIR (tests/fuzz/corpus)\n");
        return 2;
    }
    root = argv[1];
    frames();
    store();
    sockets();
    addresses();
    shm_records();
    environment();
    tune_files();
    return 0;
}
