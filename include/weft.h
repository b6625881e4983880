/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * weft.h: the public C API of weft, collective communication for Linux
 * clusters.
 *
 * Conventions (see weft(7)):
 *  - Every function returns weft_result_t (WEFT_SUCCESS == 0) unless shown
 *    otherwise; results go to out-parameters, which are written only on
 *    success. Handles are opaque pointers.
 *  - On failure, weft_last_error() gives a thread-local human-readable
 *    explanation (which argument, which peer, what the OS said).
 *  - Counts are element counts of type size_t; a count of 0 is legal and
 *    completes without touching the buffers.
 *  - Threading: different communicators may be used from different threads
 *    at the same time; one communicator is used by one thread at a time.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>

#include <weft/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

/* ------------------------------------------------------------------ results */

typedef enum weft_result {
    WEFT_SUCCESS = 0,
    WEFT_ERR_INVALID_ARG = 1,  /* an argument is wrong; weft_last_error() names it */
    WEFT_ERR_NO_MEMORY = 2,    /* an allocation failed */
    WEFT_ERR_UNSUPPORTED = 3,  /* valid request this build or hardware cannot do */
    WEFT_ERR_TIMEOUT = 4,      /* a deadline (WEFT_TIMEOUT, timeout_ms) passed */
    WEFT_ERR_PEER_LOST = 5,    /* a peer process died or its connection dropped */
    WEFT_ERR_ABORTED = 6,      /* the communicator was aborted */
    WEFT_ERR_TRUNCATED = 7,    /* a message was larger than the receive buffer */
    WEFT_ERR_MISMATCH = 8,     /* ranks called a collective with different arguments */
    WEFT_ERR_BOOTSTRAP = 9,    /* rendezvous failed: bad world size, duplicate rank, ... */
    WEFT_ERR_PLUGIN = 10,      /* a transport plugin failed or none could be used */
    WEFT_ERR_SYSTEM = 11,      /* an operating-system call failed */
    WEFT_ERR_INTERNAL = 12     /* a bug in weft; please report it */
} weft_result_t;

/* Static text describing a result code; never NULL. */
WEFT_API const char *weft_strerror(weft_result_t rc);

/* Thread-local detail of the last failure in the calling thread; never NULL
 * (an empty string when nothing failed yet). Valid until the next weft call
 * in the same thread. */
WEFT_API const char *weft_last_error(void);

/* The version of the library in use (WEFT_VERSION_* give the headers'). */
WEFT_API void weft_get_version(int *major, int *minor, int *patch);

/* ------------------------------------------------------ data types, operators */

typedef enum weft_dtype {
    WEFT_INT8 = 0,
    WEFT_UINT8 = 1,
    WEFT_INT32 = 2,
    WEFT_UINT32 = 3,
    WEFT_INT64 = 4,
    WEFT_UINT64 = 5,
    WEFT_FLOAT16 = 6,
    WEFT_BFLOAT16 = 7,
    WEFT_FLOAT32 = 8,
    WEFT_FLOAT64 = 9
} weft_dtype_t;

#define WEFT_DTYPE_COUNT 10

/* Size in bytes of one element of dt. */
WEFT_API weft_result_t weft_dtype_size(weft_dtype_t dt, size_t *bytes);

typedef enum weft_op {
    WEFT_SUM = 0,
    WEFT_PROD = 1,
    WEFT_MIN = 2,
    WEFT_MAX = 3,
    WEFT_AVG = 4,
    WEFT_BAND = 5,
    WEFT_BOR = 6,
    WEFT_BXOR = 7
} weft_op_t;

/* PREMUL_SUM (torch): an operator that sums scalar * x_r over the ranks'
 * inputs x_r. scalar is one element of dt; the operator may be used with dt
 * only, and stays valid until weft_op_free. */
WEFT_API weft_result_t weft_op_create_premul_sum(const void *scalar, weft_dtype_t dt,
                                                 weft_op_t *op);
WEFT_API weft_result_t weft_op_free(weft_op_t op);

/* Frees memory that weft allocated for the caller (weft_broadcast_bytes,
 * weft_allgather_bytes). NULL is ignored. */
WEFT_API void weft_free(void *ptr);

/* ------------------------------------------------------------ communicators */

typedef struct weft_comm *weft_comm_t;
typedef struct weft_request *weft_request_t;

/* Wildcards and special values. */
#define WEFT_ANY_SOURCE (-1)
#define WEFT_ANY_TAG (-1)
#define WEFT_UNDEFINED (-32766)
#define WEFT_TAG_MAX 0x7fffffff
#define WEFT_IN_PLACE ((void *)1)
#define WEFT_MAX_DIMS 8

/* A key-value store the caller already runs (torch.distributed's c10d
 * store, say), for weft_init to meet the other ranks through instead of a
 * rendezvous of its own (weft_init_attr_t.kvs). Keys are NUL-terminated,
 * values binary. set stores val under key for every rank; get waits until
 * key exists or timeout_ms passes (WEFT_ERR_TIMEOUT), copies at most cap
 * bytes into val and the value's whole length into *len
 * (WEFT_ERR_TRUNCATED when it exceeds cap). ctx is passed back as is. */
typedef struct weft_kvs {
    void *ctx;
    weft_result_t (*set)(void *ctx, const char *key, const void *val, size_t len);
    weft_result_t (*get)(void *ctx, const char *key, void *val, size_t cap, size_t *len,
                         int timeout_ms);
} weft_kvs_t;

/* Start-up attributes. Initialise with WEFT_INIT_ATTR_INITIALIZER; later
 * releases may append fields, which struct_size tells apart. */
typedef struct weft_init_attr {
    size_t struct_size;
    int rank;                /* -1: from the environment */
    int size;                /* -1: from the environment */
    const char *init_method; /* "env://", "tcp://host:port", "file:///path"; NULL: detect */
    int timeout_ms;          /* 0: WEFT_TIMEOUT seconds, else 300 s */
    const char *name;        /* a name for logs; NULL: "world" */
    /* Meet the other ranks through this store (rank and size then
     * required, init_method NULL); NULL: weft's own rendezvous. */
    const weft_kvs_t *kvs;
} weft_init_attr_t;

#define WEFT_INIT_ATTR_INITIALIZER \
    { sizeof(weft_init_attr_t), -1, -1, NULL, 0, NULL, NULL }

/* Joins the job: finds the other ranks through the init method, loads the
 * transport plugins, exchanges addresses, and returns the communicator of
 * all ranks. Blocks until every rank joined or the timeout passed
 * (WEFT_ERR_TIMEOUT naming the ranks that never arrived). attr may be NULL. */
WEFT_API weft_result_t weft_init(const weft_init_attr_t *attr, weft_comm_t *world);

/* Local: fails what is still pending on comm and frees it. Destroying the
 * world communicator finalises the library state created by weft_init. */
WEFT_API weft_result_t weft_comm_destroy(weft_comm_t comm);

/* Local and prompt: every pending and later operation on comm fails with
 * WEFT_ERR_ABORTED; peers' operations with this rank fail rather than hang. */
WEFT_API weft_result_t weft_comm_abort(weft_comm_t comm);

WEFT_API weft_result_t weft_comm_rank(weft_comm_t comm, int *rank);
WEFT_API weft_result_t weft_comm_size(weft_comm_t comm, int *size);
/* Rank among, and number of, the members of comm on this node. */
WEFT_API weft_result_t weft_comm_local_rank(weft_comm_t comm, int *rank);
WEFT_API weft_result_t weft_comm_local_size(weft_comm_t comm, int *size);
/* World rank of each member of comm: ranks must hold comm's size entries. */
WEFT_API weft_result_t weft_comm_world_ranks(weft_comm_t comm, int *ranks);

/* New communicators. Each is collective over comm: every member calls it,
 * in the same order as the other collective calls on comm. Members whose
 * color is WEFT_UNDEFINED (or who are not in the group) get *out = NULL. */
WEFT_API weft_result_t weft_comm_split(weft_comm_t comm, int color, int key, weft_comm_t *out);
WEFT_API weft_result_t weft_comm_create_group(weft_comm_t comm, int n, const int *ranks,
                                              weft_comm_t *out);
WEFT_API weft_result_t weft_comm_split_node(weft_comm_t comm, weft_comm_t *out);
WEFT_API weft_result_t weft_comm_dup(weft_comm_t comm, weft_comm_t *out);

/* ------------------------------------------------------- memory and devices */

/* A region of memory registered with every transport of the job, for
 * transports that need registration (RDMA); without it they register on
 * the fly. */
typedef struct weft_memreg *weft_memreg_t;

WEFT_API weft_result_t weft_mem_register(weft_comm_t comm, void *ptr, size_t bytes,
                                         weft_memreg_t *reg);
WEFT_API weft_result_t weft_mem_deregister(weft_memreg_t reg);

/* Orders comm's operations on device buffers on cuda_stream (NCCL's
 * semantics); NULL clears it. WEFT_ERR_UNSUPPORTED for a stream where no
 * transport of this build handles CUDA memory. */
WEFT_API weft_result_t weft_comm_set_stream(weft_comm_t comm, void *cuda_stream);

/* ------------------------------------------------------------- device mesh */

/* The ranks of a communicator laid out row-major in an N-D shape (torch's
 * init_device_mesh: rank r at the coordinates of r in
 * arange(size).view(shape)), with this rank's communicator along each
 * dimension. weft_mesh_create and weft_mesh_comm_dims are collective over
 * the mesh's communicator; the communicators they give belong to the
 * mesh and are destroyed with it. */
typedef struct weft_mesh *weft_mesh_t;

WEFT_API weft_result_t weft_mesh_create(weft_comm_t comm, int ndims, const int *shape,
                                        const char *const *dim_names, weft_mesh_t *mesh);
WEFT_API weft_result_t weft_mesh_comm(weft_mesh_t mesh, const char *dim_name,
                                      weft_comm_t *comm);
WEFT_API weft_result_t weft_mesh_comm_dim(weft_mesh_t mesh, int dim, weft_comm_t *comm);
WEFT_API weft_result_t weft_mesh_comm_dims(weft_mesh_t mesh, int n,
                                           const char *const *dim_names, weft_comm_t *comm);
WEFT_API weft_result_t weft_mesh_ndims(weft_mesh_t mesh, int *n);
WEFT_API weft_result_t weft_mesh_shape(weft_mesh_t mesh, int *shape);
WEFT_API weft_result_t weft_mesh_coords(weft_mesh_t mesh, int *coords);
WEFT_API weft_result_t weft_mesh_destroy(weft_mesh_t mesh);

/* ----------------------------------------------------------- point-to-point */

typedef struct weft_status {
    int source;          /* rank in the communicator the message came from */
    int tag;             /* its tag */
    size_t count;        /* elements received (at most the posted count) */
    weft_result_t error; /* this operation's result (weft_waitall) */
} weft_status_t;

enum { WEFT_P2P_SEND = 1, WEFT_P2P_RECV = 2 };

typedef struct weft_p2p_op {
    int kind;            /* WEFT_P2P_SEND or WEFT_P2P_RECV */
    void *buf;
    size_t count;
    weft_dtype_t dt;
    int peer;
    int tag;
} weft_p2p_op_t;

WEFT_API weft_result_t weft_send(const void *buf, size_t count, weft_dtype_t dt,
                                 int peer, int tag, weft_comm_t comm);
WEFT_API weft_result_t weft_recv(void *buf, size_t count, weft_dtype_t dt,
                                 int peer, int tag, weft_comm_t comm,
                                 weft_status_t *status);
WEFT_API weft_result_t weft_isend(const void *buf, size_t count, weft_dtype_t dt,
                                  int peer, int tag, weft_comm_t comm,
                                  weft_request_t *req);
WEFT_API weft_result_t weft_irecv(void *buf, size_t count, weft_dtype_t dt,
                                  int peer, int tag, weft_comm_t comm,
                                  weft_request_t *req);
WEFT_API weft_result_t weft_batch_isend_irecv(int n, const weft_p2p_op_t *ops,
                                              weft_comm_t comm, weft_request_t *req);

/* Completion. weft_wait and a successful weft_test free the request and set
 * *req to NULL; a NULL *req completes at once with an empty status. */
WEFT_API weft_result_t weft_wait(weft_request_t *req, weft_status_t *status);
WEFT_API weft_result_t weft_test(weft_request_t *req, int *done, weft_status_t *status);
WEFT_API weft_result_t weft_waitall(int n, weft_request_t *reqs, weft_status_t *statuses);
/* Releases a request without waiting: the operation still completes in the
 * background (a send's buffer must stay valid until then). */
WEFT_API weft_result_t weft_request_free(weft_request_t *req);

/* -------------------------------------------------------------- collectives */

/* Every member of comm calls the same collectives in the same order. The
 * weft_i* forms start the operation and return a request (weft_wait); the
 * buffers belong to the operation until it completes. sendbuf ==
 * WEFT_IN_PLACE, or sendbuf == recvbuf, reduces in place. */
WEFT_API weft_result_t weft_barrier(weft_comm_t comm);
WEFT_API weft_result_t weft_ibarrier(weft_comm_t comm, weft_request_t *req);
WEFT_API weft_result_t weft_broadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                      weft_comm_t comm);
WEFT_API weft_result_t weft_ibroadcast(void *buf, size_t count, weft_dtype_t dt, int root,
                                       weft_comm_t comm, weft_request_t *req);
WEFT_API weft_result_t weft_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_op_t op, weft_comm_t comm);
WEFT_API weft_result_t weft_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                       weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                       weft_request_t *req);
/* recvbuf matters only at root; WEFT_IN_PLACE takes each rank's input
 * from its recvbuf. */
WEFT_API weft_result_t weft_reduce(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm);
WEFT_API weft_result_t weft_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, weft_op_t op, int root, weft_comm_t comm,
                                    weft_request_t *req);
/* recvbuf holds size x count elements, rank i's at i * count. */
WEFT_API weft_result_t weft_allgather(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_comm_t comm);
WEFT_API weft_result_t weft_iallgather(const void *sendbuf, void *recvbuf, size_t count,
                                       weft_dtype_t dt, weft_comm_t comm, weft_request_t *req);

/* count elements per rank; at root, rank i's block lands at i * count.
 * WEFT_IN_PLACE as sendbuf at root: its block is already in recvbuf. */
WEFT_API weft_result_t weft_gather(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, int root, weft_comm_t comm);
WEFT_API weft_result_t weft_igather(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, int root, weft_comm_t comm,
                                    weft_request_t *req);
/* recvcounts and displs (elements, size entries) matter only at root. */
WEFT_API weft_result_t weft_gatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *recvcounts, const size_t *displs,
                                    weft_dtype_t dt, int root, weft_comm_t comm);
WEFT_API weft_result_t weft_igatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                     const size_t *recvcounts, const size_t *displs,
                                     weft_dtype_t dt, int root, weft_comm_t comm,
                                     weft_request_t *req);
/* Rank i receives block i (count elements at i * count) of root's sendbuf.
 * WEFT_IN_PLACE as recvbuf at root: root's block stays in sendbuf. */
WEFT_API weft_result_t weft_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, int root, weft_comm_t comm);
WEFT_API weft_result_t weft_iscatter(const void *sendbuf, void *recvbuf, size_t count,
                                     weft_dtype_t dt, int root, weft_comm_t comm,
                                     weft_request_t *req);
WEFT_API weft_result_t weft_scatterv(const void *sendbuf, const size_t *sendcounts,
                                     const size_t *displs, void *recvbuf, size_t recvcount,
                                     weft_dtype_t dt, int root, weft_comm_t comm);
WEFT_API weft_result_t weft_iscatterv(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *displs, void *recvbuf, size_t recvcount,
                                      weft_dtype_t dt, int root, weft_comm_t comm,
                                      weft_request_t *req);
WEFT_API weft_result_t weft_allgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                       const size_t *recvcounts, const size_t *displs,
                                       weft_dtype_t dt, weft_comm_t comm);
WEFT_API weft_result_t weft_iallgatherv(const void *sendbuf, size_t sendcount, void *recvbuf,
                                        const size_t *recvcounts, const size_t *displs,
                                        weft_dtype_t dt, weft_comm_t comm,
                                        weft_request_t *req);
/* sendbuf holds size x recvcount elements; rank i receives block i reduced
 * over all ranks. In place: the input is recvbuf, the result its first
 * recvcount elements. */
WEFT_API weft_result_t weft_reduce_scatter(const void *sendbuf, void *recvbuf,
                                           size_t recvcount, weft_dtype_t dt, weft_op_t op,
                                           weft_comm_t comm);
WEFT_API weft_result_t weft_ireduce_scatter(const void *sendbuf, void *recvbuf,
                                            size_t recvcount, weft_dtype_t dt, weft_op_t op,
                                            weft_comm_t comm, weft_request_t *req);
/* Blocks of recvcounts[i] elements, back to back in sendbuf. */
WEFT_API weft_result_t weft_reduce_scatterv(const void *sendbuf, void *recvbuf,
                                            const size_t *recvcounts, weft_dtype_t dt,
                                            weft_op_t op, weft_comm_t comm);
WEFT_API weft_result_t weft_ireduce_scatterv(const void *sendbuf, void *recvbuf,
                                             const size_t *recvcounts, weft_dtype_t dt,
                                             weft_op_t op, weft_comm_t comm,
                                             weft_request_t *req);
/* Block j of sendbuf (count elements) goes to rank j; block i of recvbuf
 * comes from rank i. WEFT_IN_PLACE as sendbuf: the blocks are in recvbuf. */
WEFT_API weft_result_t weft_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                                     weft_dtype_t dt, weft_comm_t comm);
WEFT_API weft_result_t weft_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                                      weft_dtype_t dt, weft_comm_t comm, weft_request_t *req);
/* torch's all_to_all_single with split sizes: sendcounts[j] elements at
 * sdispls[j] go to rank j, recvcounts[i] from rank i land at rdispls[i]. */
WEFT_API weft_result_t weft_alltoallv(const void *sendbuf, const size_t *sendcounts,
                                      const size_t *sdispls, void *recvbuf,
                                      const size_t *recvcounts, const size_t *rdispls,
                                      weft_dtype_t dt, weft_comm_t comm);
WEFT_API weft_result_t weft_ialltoallv(const void *sendbuf, const size_t *sendcounts,
                                       const size_t *sdispls, void *recvbuf,
                                       const size_t *recvcounts, const size_t *rdispls,
                                       weft_dtype_t dt, weft_comm_t comm,
                                       weft_request_t *req);
/* Prefix reductions: rank r gets op over ranks 0..r (scan) or 0..r-1
 * (exscan; rank 0's recvbuf is left as it was). */
WEFT_API weft_result_t weft_scan(const void *sendbuf, void *recvbuf, size_t count,
                                 weft_dtype_t dt, weft_op_t op, weft_comm_t comm);
WEFT_API weft_result_t weft_iscan(const void *sendbuf, void *recvbuf, size_t count,
                                  weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                  weft_request_t *req);
WEFT_API weft_result_t weft_exscan(const void *sendbuf, void *recvbuf, size_t count,
                                   weft_dtype_t dt, weft_op_t op, weft_comm_t comm);
WEFT_API weft_result_t weft_iexscan(const void *sendbuf, void *recvbuf, size_t count,
                                    weft_dtype_t dt, weft_op_t op, weft_comm_t comm,
                                    weft_request_t *req);

/* ---------------------------------------- tensors split or joined on an axis */

/* Row-major arrays of ndims (1..WEFT_MAX_DIMS) dimensions, split into or
 * joined from one block per rank along axis (0 <= axis < ndims), in rank
 * order: torch.cat(tensor_list, dim=axis) and torch.chunk(t, size, axis).
 * The gather forms take each rank's local_shape (the same on every rank);
 * the others take the full shape, whose shape[axis] size must divide. */
WEFT_API weft_result_t weft_gather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                        const size_t *local_shape, int axis, weft_dtype_t dt,
                                        int root, weft_comm_t comm);
WEFT_API weft_result_t weft_igather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                         const size_t *local_shape, int axis, weft_dtype_t dt,
                                         int root, weft_comm_t comm, weft_request_t *req);
WEFT_API weft_result_t weft_allgather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                           const size_t *local_shape, int axis,
                                           weft_dtype_t dt, weft_comm_t comm);
WEFT_API weft_result_t weft_iallgather_axis(const void *sendbuf, void *recvbuf, int ndims,
                                            const size_t *local_shape, int axis,
                                            weft_dtype_t dt, weft_comm_t comm,
                                            weft_request_t *req);
WEFT_API weft_result_t weft_scatter_axis(const void *sendbuf, void *recvbuf, int ndims,
                                         const size_t *shape, int axis, weft_dtype_t dt,
                                         int root, weft_comm_t comm);
WEFT_API weft_result_t weft_iscatter_axis(const void *sendbuf, void *recvbuf, int ndims,
                                          const size_t *shape, int axis, weft_dtype_t dt,
                                          int root, weft_comm_t comm, weft_request_t *req);
WEFT_API weft_result_t weft_reduce_scatter_axis(const void *sendbuf, void *recvbuf,
                                                int ndims, const size_t *shape, int axis,
                                                weft_dtype_t dt, weft_op_t op,
                                                weft_comm_t comm);
WEFT_API weft_result_t weft_ireduce_scatter_axis(const void *sendbuf, void *recvbuf,
                                                 int ndims, const size_t *shape, int axis,
                                                 weft_dtype_t dt, weft_op_t op,
                                                 weft_comm_t comm, weft_request_t *req);
WEFT_API weft_result_t weft_alltoall_axis(const void *sendbuf, void *recvbuf, int ndims,
                                          const size_t *shape, int axis, weft_dtype_t dt,
                                          weft_comm_t comm);
WEFT_API weft_result_t weft_ialltoall_axis(const void *sendbuf, void *recvbuf, int ndims,
                                           const size_t *shape, int axis, weft_dtype_t dt,
                                           weft_comm_t comm, weft_request_t *req);

/* ------------------------------------------ byte strings of unknown length */

/* torch's broadcast_object_list and all_gather_object, for bytes the
 * caller serialised. At root *buf and *len are the input; elsewhere *buf
 * receives a buffer of *len bytes allocated by weft (weft_free). */
WEFT_API weft_result_t weft_broadcast_bytes(void **buf, size_t *len, int root,
                                            weft_comm_t comm);
WEFT_API weft_result_t weft_ibroadcast_bytes(void **buf, size_t *len, int root,
                                             weft_comm_t comm, weft_request_t *req);
/* *out receives every rank's bytes back to back in rank order (weft_free),
 * lens (size entries) their lengths. */
WEFT_API weft_result_t weft_allgather_bytes(const void *buf, size_t len, void **out,
                                            size_t *lens, weft_comm_t comm);
WEFT_API weft_result_t weft_iallgather_bytes(const void *buf, size_t len, void **out,
                                             size_t *lens, weft_comm_t comm,
                                             weft_request_t *req);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
