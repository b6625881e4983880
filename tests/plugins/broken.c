/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * broken.c: transport plugins with one fault each, for the loader's unit
 * test (tests/unit/test_plugin.c). One source, built once per fault with
 * -DBROKEN_<FAULT> into weft-<name>.so:
 *
 *   BROKEN_BADABI    badabi    abi_version 99
 *   BROKEN_NOSYM     nosym     exports no weft_transport_v1
 *   BROKEN_INITFAIL  initfail  init fails with WEFT_ERR_SYSTEM and a reason
 *   BROKEN_REFUSE    refuse    init refuses with WEFT_ERR_UNSUPPORTED
 *   BROKEN_BADNAME   badname   name field "somethingelse"
 *   BROKEN_NULLFN    nullfn    required function isend is NULL
 *   BROKEN_OVERSIZE  oversize  struct_size claims more than the object holds
 *   BROKEN_BADPTR    badptr    name points into no loaded object
 *   BROKEN_NONE      stub      no fault: starts, moves nothing, logs finalize
 *   BROKEN_NEEDGDR   needgdr   no fault; needs a GPU and an RDMA NIC under one switch
 *   BROKEN_NEEDLOCAL needlocal no fault; needs another rank on the node
 *   BROKEN_OLDABI    oldabi    no fault; a table of the first ABI 1 headers (ending
 *                              at put): its needs field, set, must be ignored
 *
 * The texts the test looks for are defined here once.
 */
#include "config.h"

#include <stdlib.h>

#include <weft/transport.h>

#include "tests/plugins/broken.h"

#if defined(BROKEN_BADABI)
#define NAME "badabi"
#elif defined(BROKEN_NOSYM)
#define NAME "nosym"
#elif defined(BROKEN_INITFAIL)
#define NAME "initfail"
#elif defined(BROKEN_REFUSE)
#define NAME "refuse"
#elif defined(BROKEN_BADNAME)
#define NAME "badname"
#elif defined(BROKEN_NULLFN)
#define NAME "nullfn"
#elif defined(BROKEN_OVERSIZE)
#define NAME "oversize"
#elif defined(BROKEN_BADPTR)
#define NAME "badptr"
#elif defined(BROKEN_NONE)
#define NAME "stub"
#elif defined(BROKEN_NEEDGDR)
#define NAME "needgdr"
#elif defined(BROKEN_NEEDLOCAL)
#define NAME "needlocal"
#elif defined(BROKEN_OLDABI)
#define NAME "oldabi"
#else
#error "define one BROKEN_<FAULT>"
#endif

struct stub_ctx {
    const weft_transport_core_t *core;
};

static weft_result_t b_init(const weft_transport_core_t *core, void **ctxp)
{
    struct stub_ctx *ctx;

#if defined(BROKEN_INITFAIL)
    core->set_error("%s", BROKEN_INITFAIL_TEXT);
    return WEFT_ERR_SYSTEM;
#elif defined(BROKEN_REFUSE)
    core->set_error("%s", BROKEN_REFUSE_TEXT);
    return WEFT_ERR_UNSUPPORTED;
#endif
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return WEFT_ERR_NO_MEMORY;
    ctx->core = core;
    *ctxp = ctx;
    return WEFT_SUCCESS;
}

static weft_result_t b_query(void *ctx, weft_transport_caps_t *caps)
{
    /* Only the fields every caps struct has: flags, mem_types. */
    caps->flags = 0;
    caps->mem_types = 1u << WEFT_TRANSPORT_MEM_HOST;
    return WEFT_SUCCESS;
}

static weft_result_t b_get_address(void *ctx, void *addr, size_t *len)
{
    *len = 0;
    return WEFT_SUCCESS;
}

static weft_result_t b_reach(void *ctx, const void *peer_addr, size_t len,
                             weft_transport_reach_t *reach)
{
    *reach = WEFT_TRANSPORT_REACH_NONE;
    return WEFT_SUCCESS;
}

static weft_result_t b_connect(void *ctx, int peer, const void *peer_addr, size_t len)
{
    return WEFT_ERR_UNSUPPORTED;
}

static weft_result_t b_disconnect(void *ctx, int peer)
{
    return WEFT_SUCCESS;
}

static weft_result_t b_finalize(void *ctxp)
{
    struct stub_ctx *ctx = ctxp;

    ctx->core->log(WEFT_TRANSPORT_LOG_INFO, NAME, "%s", BROKEN_FINALIZE_TEXT);
    free(ctx);
    return WEFT_SUCCESS;
}

static weft_result_t b_mem_register(void *ctx, void *buf, size_t len, int mem_type,
                                    void **mhandle)
{
    *mhandle = NULL;
    return WEFT_SUCCESS;
}

static weft_result_t b_mem_deregister(void *ctx, void *mhandle)
{
    return WEFT_SUCCESS;
}

#if !defined(BROKEN_NULLFN)
static weft_result_t b_isend(void *ctx, int peer, const void *buf, size_t len, uint64_t tag,
                             void *mhandle, void **req)
{
    return WEFT_ERR_UNSUPPORTED;
}
#endif

static weft_result_t b_irecv(void *ctx, int peer, void *buf, size_t len, uint64_t tag,
                             uint64_t ignore, void *mhandle, void **req)
{
    return WEFT_ERR_UNSUPPORTED;
}

static weft_result_t b_test(void *ctx, void *req, int *done, weft_transport_completion_t *c)
{
    return WEFT_ERR_INVALID_ARG;
}

static weft_result_t b_cancel(void *ctx, void *req)
{
    return WEFT_ERR_INVALID_ARG;
}

static weft_result_t b_progress(void *ctx)
{
    return WEFT_SUCCESS;
}

static weft_result_t b_get_wait_fd(void *ctx, int *fd)
{
    *fd = -1;
    return WEFT_SUCCESS;
}

#if defined(BROKEN_NOSYM)
/* Same table, under a name the loader does not look for. */
#define TABLE_SYMBOL weft_transport_table_of_nosym
#else
#define TABLE_SYMBOL weft_transport_v1
#endif

__attribute__((visibility("default")))
const weft_transport_v1_t TABLE_SYMBOL = {
#if defined(BROKEN_BADABI)
    .abi_version = 99,
#else
    .abi_version = WEFT_TRANSPORT_ABI_VERSION,
#endif
#if defined(BROKEN_OVERSIZE)
    .struct_size = sizeof(weft_transport_v1_t) + 64,
#elif defined(BROKEN_OLDABI)
    .struct_size = WEFT_TRANSPORT_V1_MIN_SIZE,
#else
    .struct_size = sizeof(weft_transport_v1_t),
#endif
#if defined(BROKEN_BADNAME)
    .name = "somethingelse",
#elif defined(BROKEN_BADPTR)
    /* The first page is never mapped: following it would crash. */
    .name = (const char *)64,
#else
    .name = NAME,
#endif
    .description = "test plugin " NAME " (tests/plugins/broken.c)",
    .init = b_init,
    .query = b_query,
    .get_address = b_get_address,
    .reach = b_reach,
    .connect = b_connect,
    .disconnect = b_disconnect,
    .finalize = b_finalize,
    .mem_register = b_mem_register,
    .mem_deregister = b_mem_deregister,
#if defined(BROKEN_NULLFN)
    .isend = NULL,
#else
    .isend = b_isend,
#endif
    .irecv = b_irecv,
    .test = b_test,
    .cancel = b_cancel,
    .progress = b_progress,
    .get_wait_fd = b_get_wait_fd,
#if defined(BROKEN_NEEDGDR)
    .needs = WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH,
#elif defined(BROKEN_NEEDLOCAL)
    .needs = WEFT_TRANSPORT_NEED_LOCAL_PEER,
#elif defined(BROKEN_OLDABI)
    /* Beyond struct_size: a loader that read it would refuse the plugin
     * on every node without a GPU. */
    .needs = WEFT_TRANSPORT_NEED_CUDA_GPU,
#endif
};
