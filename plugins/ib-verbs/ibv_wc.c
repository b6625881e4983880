/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_wc.c: error completions put into words. A failed work request says
 * little more than a status number; what the user needs is the status,
 * the QP and the peer, what was being done, and what that status usually
 * means on a real fabric. The texts are ours, not libibverbs'
 * ibv_wc_status_str, so that they are the same whatever library is
 * loaded and are testable without one.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

static const struct {
    int status;
    const char *name;
    int cls;
    const char *meaning;
    const char *hint;
} wc_table[] = {
    { IBV_WC_SUCCESS, "IBV_WC_SUCCESS", WIB_WC_CLASS_OK, "success", "" },
    { IBV_WC_LOC_LEN_ERR, "IBV_WC_LOC_LEN_ERR", WIB_WC_CLASS_LOCAL, "local length error",
      "a message was larger than the receive buffer it landed in, or than the port's "
      "limit: a weft bug, please report it" },
    { IBV_WC_LOC_QP_OP_ERR, "IBV_WC_LOC_QP_OP_ERR", WIB_WC_CLASS_LOCAL,
      "local QP operation error", "a work request the QP cannot do (too many "
      "scatter entries, inline data too long): a weft bug, please report it" },
    { IBV_WC_LOC_EEC_OP_ERR, "IBV_WC_LOC_EEC_OP_ERR", WIB_WC_CLASS_LOCAL,
      "local EE context operation error", "not used on RC QPs: the device or driver is "
      "confused" },
    { IBV_WC_LOC_PROT_ERR, "IBV_WC_LOC_PROT_ERR", WIB_WC_CLASS_LOCAL, "local protection error",
      "a buffer was not covered by the memory region given for it, or the region was "
      "deregistered while in use (memory freed during a transfer?)" },
    { IBV_WC_WR_FLUSH_ERR, "IBV_WC_WR_FLUSH_ERR", WIB_WC_CLASS_FLUSH, "work request flushed",
      "the QP had already failed: the first error completion of this QP says why" },
    { IBV_WC_MW_BIND_ERR, "IBV_WC_MW_BIND_ERR", WIB_WC_CLASS_LOCAL, "memory window bind error",
      "weft binds no memory windows: the device or driver is confused" },
    { IBV_WC_BAD_RESP_ERR, "IBV_WC_BAD_RESP_ERR", WIB_WC_CLASS_PEER, "bad response",
      "the peer answered with something unexpected: a fabric or firmware problem" },
    { IBV_WC_LOC_ACCESS_ERR, "IBV_WC_LOC_ACCESS_ERR", WIB_WC_CLASS_LOCAL, "local access error",
      "incoming data hit a local region without write access, or outside it" },
    { IBV_WC_REM_INV_REQ_ERR, "IBV_WC_REM_INV_REQ_ERR", WIB_WC_CLASS_REMOTE,
      "remote invalid request", "the peer's QP refused the operation or its length "
      "(MTU or message size mismatch, or the peer's QP is not connected to this one)" },
    { IBV_WC_REM_ACCESS_ERR, "IBV_WC_REM_ACCESS_ERR", WIB_WC_CLASS_REMOTE,
      "remote access error", "the address or rkey was refused by the peer: its buffer "
      "was deregistered or freed before the transfer finished, or is smaller than sent" },
    { IBV_WC_REM_OP_ERR, "IBV_WC_REM_OP_ERR", WIB_WC_CLASS_REMOTE, "remote operation error",
      "the peer could not complete the operation, e.g. its receive was too short or its "
      "QP failed" },
    { IBV_WC_RETRY_EXC_ERR, "IBV_WC_RETRY_EXC_ERR", WIB_WC_CLASS_PEER,
      "transport retry counter exceeded", "the peer did not acknowledge within "
      "WEFT_IB_TIMEOUT x WEFT_IB_RETRY_CNT: it died, its port or a link went down, or the "
      "fabric drops packets (on RoCE: PFC or ECN not set up, MTU mismatch, wrong GID)" },
    { IBV_WC_RNR_RETRY_EXC_ERR, "IBV_WC_RNR_RETRY_EXC_ERR", WIB_WC_CLASS_PEER,
      "receiver-not-ready retry counter exceeded", "the peer had no receive posted for "
      "WEFT_IB_RNR_RETRY retries: it stopped progressing (hung or stopped) or its "
      "receive queue ran dry" },
    { IBV_WC_LOC_RDD_VIOL_ERR, "IBV_WC_LOC_RDD_VIOL_ERR", WIB_WC_CLASS_LOCAL,
      "local RDD violation", "not used on RC QPs: the device or driver is confused" },
    { IBV_WC_REM_INV_RD_REQ_ERR, "IBV_WC_REM_INV_RD_REQ_ERR", WIB_WC_CLASS_REMOTE,
      "remote invalid RD request", "not used on RC QPs: the device or driver is confused" },
    { IBV_WC_REM_ABORT_ERR, "IBV_WC_REM_ABORT_ERR", WIB_WC_CLASS_PEER, "remote aborted",
      "the peer aborted the operation: it is going away" },
    { IBV_WC_INV_EECN_ERR, "IBV_WC_INV_EECN_ERR", WIB_WC_CLASS_LOCAL, "invalid EE context "
      "number", "not used on RC QPs: the device or driver is confused" },
    { IBV_WC_INV_EEC_STATE_ERR, "IBV_WC_INV_EEC_STATE_ERR", WIB_WC_CLASS_LOCAL,
      "invalid EE context state", "not used on RC QPs: the device or driver is confused" },
    { IBV_WC_FATAL_ERR, "IBV_WC_FATAL_ERR", WIB_WC_CLASS_PEER, "fatal error",
      "the device reported a fatal error: see the kernel log (dmesg); a reset of the "
      "device is usually needed" },
    { IBV_WC_RESP_TIMEOUT_ERR, "IBV_WC_RESP_TIMEOUT_ERR", WIB_WC_CLASS_PEER,
      "response timeout", "the peer did not answer a read or atomic in time: it died or "
      "the path to it is broken" },
    { IBV_WC_GENERAL_ERR, "IBV_WC_GENERAL_ERR", WIB_WC_CLASS_LOCAL, "general error",
      "the driver gave no detail: the vendor error code may say more" },
    { IBV_WC_TM_ERR, "IBV_WC_TM_ERR", WIB_WC_CLASS_LOCAL, "tag matching error",
      "weft uses no hardware tag matching: the device or driver is confused" },
    { IBV_WC_TM_RNDV_INCOMPLETE, "IBV_WC_TM_RNDV_INCOMPLETE", WIB_WC_CLASS_LOCAL,
      "tag matching rendezvous incomplete",
      "weft uses no hardware tag matching: the device or driver is confused" },
};

#define NWC ((int)(sizeof(wc_table) / sizeof(wc_table[0])))

static int wc_find(int status)
{
    for (int i = 0; i < NWC; i++)
        if (wc_table[i].status == status)
            return i;
    return -1;
}

const char *weft__ibv_wc_status_name(int status)
{
    int i = wc_find(status);

    return i < 0 ? "IBV_WC_(unknown)" : wc_table[i].name;
}

int weft__ibv_wc_class(int status)
{
    int i = wc_find(status);

    /* A status this table does not know is taken as the worst: the
     * peer's connection is unusable. */
    return i < 0 ? WIB_WC_CLASS_PEER : wc_table[i].cls;
}

const char *weft__ibv_wc_opcode_name(int opcode)
{
    switch (opcode) {
    case IBV_WC_SEND: return "a send";
    case IBV_WC_RDMA_WRITE: return "an RDMA write";
    case IBV_WC_RDMA_READ: return "an RDMA read";
    case IBV_WC_COMP_SWAP: return "a compare-and-swap";
    case IBV_WC_FETCH_ADD: return "a fetch-and-add";
    case IBV_WC_BIND_MW: return "a memory window bind";
    case IBV_WC_RECV: return "a receive";
    case IBV_WC_RECV_RDMA_WITH_IMM: return "a receive of an RDMA write with immediate";
    default: return "an operation";
    }
}

void weft__ibv_wc_explain(int status, int opcode, uint32_t vendor_err, uint32_t qpn, int peer,
                          char *buf, size_t cap)
{
    int i = wc_find(status);
    char who[32] = "";
    char vendor[32] = "";
    size_t o;

    if (peer >= 0)
        snprintf(who, sizeof(who), " to rank %d", peer);
    if (vendor_err)
        snprintf(vendor, sizeof(vendor), " [vendor error 0x%x]", vendor_err);
    if (i < 0) {
        snprintf(buf, cap, "completion status %d (unknown to weft) on QP 0x%x%s during %s%s: "
                 "the connection is taken as lost", status, qpn, who,
                 weft__ibv_wc_opcode_name(opcode), vendor);
        return;
    }
    o = (size_t)snprintf(buf, cap, "%s (%s) on QP 0x%x%s", wc_table[i].name,
                         wc_table[i].meaning, qpn, who);
    /* The opcode of an error completion is valid only for some statuses
     * (verbs.h): flushed ones may carry anything. */
    if (o < cap && status != IBV_WC_WR_FLUSH_ERR)
        o += (size_t)snprintf(buf + o, cap - o, " during %s", weft__ibv_wc_opcode_name(opcode));
    if (o < cap)
        o += (size_t)snprintf(buf + o, cap - o, "%s", vendor);
    if (o < cap && wc_table[i].hint[0])
        snprintf(buf + o, cap - o, ": %s", wc_table[i].hint);
}
