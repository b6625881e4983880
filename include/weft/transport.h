/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft/transport.h: the interface between the weft core and its transport
 * plugins. Self-contained: a third party builds a transport with this file
 * alone (plus weft.h for the result codes), without weft's sources.
 *
 * weft-transport(7) is the plugin writer's guide: how the core applies
 * the rules below. License: this header, like the rest of weft, is under
 * the BSD 3-Clause license of COPYING (the SPDX line above), which permits
 * use and redistribution, modified or not, in source and binary form
 * under the three conditions stated there. None of them concerns the
 * license of a plugin's own code: a plugin may be written under any
 * license its author chooses.
 *
 * A transport moves tagged messages between ranks. It knows nothing of
 * communicators or collectives: the core turns those into tagged messages
 * addressed to world ranks. See plugins/example/ for a minimal transport.
 *
 * Packaging
 *   A transport is a shared object named weft-<name>.so (libtool -module
 *   -avoid-version), installed in $(libdir)/weft/ or found through
 *   WEFT_PLUGIN_PATH. It exports exactly one symbol:
 *
 *       const weft_transport_v1_t weft_transport_v1 = { ... };
 *
 *   opening with abi_version = WEFT_TRANSPORT_ABI_VERSION, struct_size =
 *   sizeof(weft_transport_v1_t) and name = "<name>" (the token users write
 *   in WEFT_TRANSPORTS). Later ABIs add weft_transport_v2 etc.; the core
 *   tries the newest symbol it knows first, so a plugin may export several.
 *   A plugin whose symbol is missing, whose version or size is wrong, or
 *   whose init() fails is skipped with a warning naming the file and the
 *   reason; nothing a plugin reports can stop the process.
 *
 * Lifecycle (per process, per plugin)
 *   1. init(core, &ctx): called once. core lists this rank and the job's
 *      size and gives logging, error and out-of-band exchange services; it
 *      stays valid until finalize. Return WEFT_ERR_UNSUPPORTED to refuse
 *      cleanly (no hardware, disabled) and explain it with core->set_error.
 *   2. query(ctx, &caps): what the transport can do.
 *   3. get_address(ctx, buf, &len): an opaque blob (at most
 *      WEFT_TRANSPORT_ADDR_MAX bytes) that lets others reach this rank. The
 *      core exchanges every rank's blob through its bootstrap.
 *   4. reach(ctx, peer_addr, len, &reach): whether and how well this
 *      transport reaches the rank that published peer_addr (the core uses
 *      it with topology to choose one transport per peer).
 *   5. connect(ctx, peer, peer_addr, len): makes peer (a world rank)
 *      addressable by isend/irecv. Connection set-up may be lazy and happen
 *      inside progress(), as may accepting the peer's side: a transport is
 *      connection-less to the core (like a libfabric FI_EP_RDM endpoint).
 *      connect is called for every peer the core routes through this
 *      transport, possibly including the rank itself. peer_addr, in reach
 *      and connect, is aligned to 16 bytes and valid during the call only:
 *      a transport copies what it keeps.
 *   6. isend / irecv / improbe / imrecv / put, test, cancel, progress: data
 *      movement, see below.
 *   7. disconnect(ctx, peer): pending operations with peer complete with
 *      WEFT_ERR_ABORTED; the peer may be connected again later.
 *   8. finalize(ctx): pending operations are dropped, resources freed.
 *
 * Matching
 *   Messages carry a 64-bit tag chosen by the core (it encodes the
 *   communicator and the user's tag). A receive matches a message when
 *   (msg_tag & ~ignore) == (recv_tag & ~ignore) and the source is the
 *   posted peer or WEFT_TRANSPORT_ANY_PEER. Receives match in the order
 *   they were posted; messages from one peer match in the order they were
 *   sent (per peer and tag). Messages that arrive before a matching receive
 *   is posted wait in an unexpected queue, whatever their size. Zero-length
 *   messages are legal. A message longer than the receive buffer fills the
 *   buffer, is otherwise discarded, and completes with WEFT_ERR_TRUNCATED
 *   (completion len gives the full length).
 *
 * Completion
 *   isend/irecv return a request handle owned by the plugin. The core calls
 *   test() until it reports done; the request is then freed by the plugin
 *   and must not be used again. A send is done when its buffer may be
 *   reused. Errors of an operation (peer lost, truncation, cancel) are
 *   reported through the completion's status, not by test()'s return value,
 *   which is reserved for misuse or internal failures.
 *   When the connection to a peer is lost, every pending operation with that
 *   peer, later operations to it, and pending ANY_PEER receives complete
 *   with WEFT_ERR_PEER_LOST.
 *
 * Progress and waiting
 *   progress(ctx) advances everything without blocking. The core calls it
 *   from weft_wait/weft_test. To sleep instead of spinning, the core polls
 *   the descriptor from get_wait_fd (readable whenever progress() has
 *   something to do, e.g. an epoll or event fd). A transport without one
 *   returns fd -1 and is polled with short sleeps.
 *
 * Threading
 *   The core never calls into one ctx from two threads at once (it holds a
 *   per-transport lock), so plugin code needs no locking of its own unless
 *   it starts threads. Callbacks in weft_transport_core_t may be called
 *   from any thread.
 *
 * Memory
 *   Buffers are host memory unless registered with a mem_type the transport
 *   announced in caps.mem_types. mem_register may be called for any buffer;
 *   the handle it gives is passed back with isend/irecv/put on that memory
 *   (NULL when the core did not register it: the transport must then cope,
 *   e.g. by copying or registering on the fly).
 */
#ifndef WEFT_TRANSPORT_H
#define WEFT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <weft.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_TRANSPORT_ABI_VERSION 1
#define WEFT_TRANSPORT_ADDR_MAX 512
#define WEFT_TRANSPORT_ANY_PEER (-1)
/* Name of the one symbol a plugin exports. */
#define WEFT_TRANSPORT_SYMBOL_V1 "weft_transport_v1"

/* Log levels of weft_transport_core_t.log (WEFT_DEBUG=WARN|INFO|TRACE). */
enum {
    WEFT_TRANSPORT_LOG_WARN = 1,
    WEFT_TRANSPORT_LOG_INFO = 2,
    WEFT_TRANSPORT_LOG_TRACE = 3
};

/* Memory types, as bits in caps.mem_types and values for mem_register. */
enum {
    WEFT_TRANSPORT_MEM_HOST = 0,
    WEFT_TRANSPORT_MEM_CUDA = 1
};

/* Capability flags (caps.flags). */
#define WEFT_TRANSPORT_CAP_PUT (1ull << 0)      /* one-sided put + mem_export */
#define WEFT_TRANSPORT_CAP_MPROBE (1ull << 1)   /* improbe + imrecv */
#define WEFT_TRANSPORT_CAP_SELF (1ull << 2)     /* reaches the own rank */

/* What a transport needs to be of use (weft_transport_v1_t.needs), as
 * bits. The core initialises a transport only where all its needs are met
 * and lists the others as "not applicable" with the need that failed
 * (logs, weft-info); WEFT_TRANSPORTS naming a transport forces it, with a
 * warning. Hardware needs are judged from the topology (hwloc): a weft
 * built without hwloc cannot judge them and leaves the decision to init.
 * LOCAL_PEER is judged after the rendezvous: such a transport is
 * initialised, and finalised again when no other rank shares the node;
 * its address stays in the rank's published record, so such a transport
 * must reach only ranks of its own node (WEFT_TRANSPORT_REACH_NODE). */
#define WEFT_TRANSPORT_NEEDS_NONE 0ull                 /* usable anywhere (sockets) */
#define WEFT_TRANSPORT_NEED_LOCAL_PEER (1ull << 0)     /* another rank on this node (shm) */
#define WEFT_TRANSPORT_NEED_RDMA_PORT (1ull << 1)      /* an OpenFabrics device with an
                                                        * active port (verbs) */
#define WEFT_TRANSPORT_NEED_CUDA_GPU (1ull << 2)       /* an NVIDIA GPU (CUDA IPC) */
#define WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH (1ull << 3) /* a GPU and an RDMA NIC below one
                                                        * PCI switch (GPUDirect RDMA) */

/* How a transport reaches a peer (reach()). */
typedef enum weft_transport_reach {
    WEFT_TRANSPORT_REACH_NONE = 0, /* cannot reach it */
    WEFT_TRANSPORT_REACH_NETWORK,  /* across a network (other hosts too) */
    WEFT_TRANSPORT_REACH_NODE      /* only on the same node (shared memory, IPC) */
} weft_transport_reach_t;

typedef struct weft_transport_caps {
    size_t struct_size;        /* set by the core to sizeof(its struct) */
    uint64_t flags;            /* WEFT_TRANSPORT_CAP_* */
    uint32_t mem_types;        /* bit (1u << WEFT_TRANSPORT_MEM_*) per type */
    size_t max_msg_size;       /* largest message; SIZE_MAX if none */
    double latency_us;         /* rough per-message cost, for the tuner */
    double bandwidth_gbps;     /* rough link bandwidth, for the tuner */
} weft_transport_caps_t;

/* What the core learns when an operation completes. */
typedef struct weft_transport_completion {
    weft_result_t status;      /* WEFT_SUCCESS, _TRUNCATED, _PEER_LOST, _ABORTED */
    int peer;                  /* source of a received message */
    uint64_t tag;              /* its tag */
    size_t len;                /* bytes sent, or full length of the message */
} weft_transport_completion_t;

/* How near a device is to the calling rank (device_nearness below),
 * nearest first: a transport with several devices tries them in this
 * order. */
typedef enum weft_transport_nearness {
    WEFT_TRANSPORT_NEAR_GPU = 0,     /* below the PCI switch of the rank's GPU */
    WEFT_TRANSPORT_NEAR_NUMA = 1,    /* on the NUMA node the rank is bound to */
    WEFT_TRANSPORT_NEAR_HOST = 2,    /* elsewhere on the host */
    WEFT_TRANSPORT_NEAR_UNKNOWN = 3  /* the node's topology does not show it */
} weft_transport_nearness_t;

/* Services the core gives a plugin at init; valid until finalize. */
typedef struct weft_transport_core {
    size_t struct_size;
    int rank;                  /* this process's world rank */
    int size;                  /* number of ranks in the job */
    /* Unique per job, safe in file names. The rendezvous gives it, so it is
     * an empty string during init and get_address and set from the first
     * connect() on (the pointer stays the same: read it when needed). */
    const char *job_id;
    const char *master_addr;   /* host of the rendezvous, may be NULL */

    /* Log through weft (level WEFT_TRANSPORT_LOG_*; subsystem TRANSPORT).
     * Cheap to call when the level is off. */
    void (*log)(int level, const char *plugin, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /* Set the text weft_last_error() shows for the failure being returned. */
    void (*set_error)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
    /* A configuration parameter (environment variable) or NULL. */
    const char *(*get_param)(const char *name);

    /* Out-of-band exchange through the job's rendezvous store (or, in a
     * job started by a PMIx launcher, PMIx's publish and lookup), for
     * set-up that needs both sides' data (queue pair numbers, IPC
     * handles), available from the first connect() on. Keys share one namespace per
     * job: start them with the plugin's name; at most 200 bytes. Values at
     * most 64 KiB. oob_get blocks until the key exists or timeout_ms
     * passes (WEFT_ERR_TIMEOUT). Both may be slow: use them for set-up. */
    weft_result_t (*oob_put)(void *core_ctx, const char *key, const void *val, size_t len);
    weft_result_t (*oob_get)(void *core_ctx, const char *key, void *val, size_t cap,
                             size_t *len, int timeout_ms);
    void *core_ctx;

    /* Added within ABI 1, after weft 0.1: read them only when struct_size
     * covers them. */
    /* How near the device the OS names name (an RDMA device "mlx5_0", or a
     * network interface) is to this rank, from the node's topology. */
    weft_transport_nearness_t (*device_nearness)(void *core_ctx, const char *name);
} weft_transport_core_t;

/* Device memory services, which a transport for an accelerator's memory
 * (cuda-ipc) offers through weft_transport_v1_t.device so that the core
 * can tell device buffers from host ones and move data between them
 * without linking the accelerator's driver. The core uses the first
 * loaded transport that offers them: it stages device buffers through
 * host memory wherever no transport moves them directly, and orders
 * operations on the user's stream (weft_comm_set_stream).
 *
 * Unlike the rest of the table, these functions may be called from any
 * thread, concurrently with each other and with the transport's other
 * functions, without the per-transport lock: they wrap driver calls that
 * are thread-safe, and a thread without the driver's context current
 * gets one (the device's primary context). All return WEFT_SUCCESS or an
 * error with core->set_error naming the driver's failure.
 *
 * Streams are the driver's handles (CUstream), passed as void *; NULL is
 * the legacy default stream. Flags are 32-bit words in memory from
 * host_alloc, aligned to 4 bytes: the device reads and writes them
 * there, the CPU reads and writes them as plain memory (with atomics). */
typedef struct weft_transport_device {
    size_t struct_size;        /* sizeof(weft_transport_device_t) */
    /* What ptr points to: *mem_type WEFT_TRANSPORT_MEM_HOST for memory
     * the host may read (plain, page-locked or managed memory), _CUDA for
     * device memory, which only the device services may touch; *device
     * the device ordinal (-1 for host memory). */
    weft_result_t (*mem_query)(void *ctx, const void *ptr, int *mem_type, int *device);
    /* Copies len bytes, host or device memory on either side; returns
     * when the copy is complete. */
    weft_result_t (*copy)(void *ctx, void *dst, const void *src, size_t len);
    /* Page-locked host memory, mapped for the device (staging buffers,
     * flags); host_free releases it. */
    weft_result_t (*host_alloc)(void *ctx, size_t len, void **ptr);
    weft_result_t (*host_free)(void *ctx, void *ptr);
    /* Whether stream is a stream of this driver the calling thread may
     * use; *memops = 1 when stream_write and stream_wait work on it. */
    weft_result_t (*stream_check)(void *ctx, void *stream, int *memops);
    /* Enqueue on stream: a copy (as copy above, done when the stream
     * reaches it); a write of value to a flag; a wait until the flag's
     * value minus value, as a signed 32-bit number, is 0 or more. */
    weft_result_t (*stream_copy)(void *ctx, void *stream, void *dst, const void *src,
                                 size_t len);
    weft_result_t (*stream_write)(void *ctx, void *stream, uint32_t *flag, uint32_t value);
    weft_result_t (*stream_wait)(void *ctx, void *stream, uint32_t *flag, uint32_t value);
    /* Waits until everything enqueued on stream so far is complete. */
    weft_result_t (*stream_sync)(void *ctx, void *stream);

    /* Added after the fields above, read only where struct_size covers
     * them: device memory shared between the processes of a node, and
     * reductions on the device. All present, or ipc_export NULL for none.
     * The core runs collectives of a node GPU to GPU with them: each
     * rank exports its buffers, opens its peers', and the ranks copy and
     * reduce each other's memory directly, synchronised through host
     * collectives between the steps. */

    /* WEFT_TRANSPORT_DEVICE_* bits: what works in this process now (the
     * same answer for the life of ctx). */
    unsigned (*features)(void *ctx);
    /* Describes [ptr, ptr + len), device memory, to another process of
     * this node: handle gets WEFT_TRANSPORT_IPC_HANDLE_MAX bytes.
     * WEFT_ERR_UNSUPPORTED where this memory cannot be shared (the core
     * then stages it through host memory). */
    weft_result_t (*ipc_export)(void *ctx, const void *ptr, size_t len, void *handle);
    /* Maps what handle describes into this process: *ptr is the address
     * of the exported ptr here, valid until ipc_close(ctx, *token).
     * WEFT_ERR_UNSUPPORTED where this process cannot reach that memory
     * (another node, another PID namespace, a device it does not see). A
     * handle of this process's own memory gives the address itself. */
    weft_result_t (*ipc_open)(void *ctx, const void *handle, void **ptr, void **token);
    weft_result_t (*ipc_close)(void *ctx, void *token);
    /* A stream of the transport's own for the core's device work, and
     * its release. */
    weft_result_t (*stream_create)(void *ctx, void **stream);
    weft_result_t (*stream_destroy)(void *ctx, void *stream);
    /* Enqueue on stream: dst[i] = a[i] op b[i] for count elements of dt
     * (op WEFT_SUM to WEFT_BXOR, WEFT_AVG adding as WEFT_SUM); and
     * buf[i] /= divisor, AVG's last step. dst may be a or b. */
    weft_result_t (*stream_reduce)(void *ctx, void *stream, void *dst, const void *a,
                                   const void *b, size_t count, weft_dtype_t dt, weft_op_t op);
    weft_result_t (*stream_avg)(void *ctx, void *stream, void *buf, size_t count,
                                weft_dtype_t dt, int divisor);
} weft_transport_device_t;

/* Bytes of an ipc_export handle. */
#define WEFT_TRANSPORT_IPC_HANDLE_MAX 256
/* features(): ipc_export, ipc_open and ipc_close work. */
#define WEFT_TRANSPORT_DEVICE_IPC (1u << 0)
/* features(): stream_reduce and stream_avg work (the kernels loaded). */
#define WEFT_TRANSPORT_DEVICE_REDUCE (1u << 1)
/* The least struct_size of a device table the core accepts: up to
 * stream_sync. */
#define WEFT_TRANSPORT_DEVICE_MIN_SIZE                \
    (offsetof(weft_transport_device_t, stream_sync) + \
     sizeof(((weft_transport_device_t *)0)->stream_sync))

typedef struct weft_transport_v1 {
    uint32_t abi_version;      /* WEFT_TRANSPORT_ABI_VERSION */
    size_t struct_size;        /* sizeof(weft_transport_v1_t) */
    const char *name;          /* "sockets": file, folder and WEFT_TRANSPORTS token */
    const char *description;   /* one line for weft-info */

    /* Set-up and tear-down: see the lifecycle above. All required. */
    weft_result_t (*init)(const weft_transport_core_t *core, void **ctx);
    weft_result_t (*query)(void *ctx, weft_transport_caps_t *caps);
    weft_result_t (*get_address)(void *ctx, void *addr, size_t *len);
    weft_result_t (*reach)(void *ctx, const void *peer_addr, size_t len,
                           weft_transport_reach_t *reach);
    weft_result_t (*connect)(void *ctx, int peer, const void *peer_addr, size_t len);
    weft_result_t (*disconnect)(void *ctx, int peer);
    weft_result_t (*finalize)(void *ctx);

    /* Memory registration. Required (a transport without registration
     * returns a NULL handle). */
    weft_result_t (*mem_register)(void *ctx, void *buf, size_t len, int mem_type,
                                  void **mhandle);
    weft_result_t (*mem_deregister)(void *ctx, void *mhandle);

    /* Tagged two-sided messages. Required. */
    weft_result_t (*isend)(void *ctx, int peer, const void *buf, size_t len,
                           uint64_t tag, void *mhandle, void **req);
    weft_result_t (*irecv)(void *ctx, int peer, void *buf, size_t len, uint64_t tag,
                           uint64_t ignore, void *mhandle, void **req);
    /* *done = 1 when finished; then *c is filled and req is freed. */
    weft_result_t (*test)(void *ctx, void *req, int *done,
                          weft_transport_completion_t *c);
    /* Asks req to finish early; it then completes (through test) with
     * WEFT_ERR_ABORTED, or normally if it had already finished. */
    weft_result_t (*cancel)(void *ctx, void *req);
    weft_result_t (*progress)(void *ctx);
    weft_result_t (*get_wait_fd)(void *ctx, int *fd);

    /* Matched probe (WEFT_TRANSPORT_CAP_MPROBE), optional (NULL): improbe
     * removes the first matching unexpected message from the queue and
     * returns a handle to it (*found = 0 when none is there); imrecv then
     * receives exactly that message. The core uses them for receives from
     * any source when several transports are active. */
    weft_result_t (*improbe)(void *ctx, int peer, uint64_t tag, uint64_t ignore,
                             int *found, void **msg, weft_transport_completion_t *info);
    weft_result_t (*imrecv)(void *ctx, void *msg, void *buf, size_t len, void *mhandle,
                            void **req);

    /* One-sided write (WEFT_TRANSPORT_CAP_PUT), optional (NULL). mem_export
     * describes registered memory in a blob (at most WEFT_TRANSPORT_ADDR_MAX
     * bytes) that the peer passes to put as rkey; put writes len bytes to
     * remote_addr in that memory. Completion through test. */
    weft_result_t (*mem_export)(void *ctx, void *mhandle, void *rkey, size_t *len);
    weft_result_t (*put)(void *ctx, int peer, const void *buf, size_t len, void *mhandle,
                         uint64_t remote_addr, const void *rkey, size_t rkey_len,
                         void **req);

    /* Added within ABI 1, after weft 0.1: WEFT_TRANSPORT_NEED_* bits. The core
     * reads it only when struct_size covers it, so a table built against
     * an older transport.h, which ends at put, still loads and needs
     * nothing. Fields added later follow the same rule. */
    uint64_t needs;

    /* Added within ABI 1, after weft 0.1: device memory services (below),
     * or NULL. Read only when struct_size covers it. */
    const struct weft_transport_device *device;
} weft_transport_v1_t;

/* Size of a weft_transport_v1_t of the first ABI 1 headers (up to put):
 * the least struct_size the core accepts. */
#define WEFT_TRANSPORT_V1_MIN_SIZE \
    (offsetof(weft_transport_v1_t, put) + sizeof(((weft_transport_v1_t *)0)->put))

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TRANSPORT_H */
