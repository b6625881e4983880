/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault.c: fault injection, set per process by WEFT_SWRDMA_FAULTS:
 *   fail_wr=N[:STATUS]   the Nth work request this process posts (1-based,
 *                        over all its QPs) completes with STATUS (a name:
 *                        retry_exc, rnr_retry_exc, rem_access, rem_op,
 *                        rem_inv_req, loc_prot, loc_len, loc_qp_op,
 *                        general, fatal; or a number; default retry_exc),
 *                        and its QP goes to error as after a real one
 *   delay_us=N           every request waits N microseconds before it
 *                        executes (the NIC thread sleeps meanwhile)
 *   rnr_storm=N          each request that needs a receive meets N RNR
 *                        NAKs first, posted receives or not (RC: a UD
 *                        datagram meets no RNR)
 *   port_down=P@MS[+D]   port P of this host goes down MS milliseconds
 *                        after the first ibv_open_device(), for every
 *                        process of the host (IBV_EVENT_PORT_ERR), and
 *                        comes back after D more (IBV_EVENT_PORT_ACTIVE)
 *   lose_after_wr=N      after its Nth request this process is off the
 *   lose_after_ms=MS     fabric (or after MS milliseconds): nothing it
 *                        sends arrives, nothing sent to it is answered
 * The clock and the port changes run on the NIC thread.
 */
#include "config.h"

#include <stdio.h>

#include "tests/swrdma/swrdma.h"

static void lose(const char *why)
{
    if (atomic_exchange(&sw.lost, true))
        return;
    atomic_store(&sw.reg->proc[sw.proc].lost, 1);
    sw_log("fault injection: process %d is off the fabric (%s)", (int)sw.pid, why);
}

void sw_fault_tick(uint64_t now, uint64_t *wake)
{
    const struct sw_faults *f = &sw.env.fault;
    uint64_t since = now - sw.open_ns;
    if (f->port_down && f->port_down <= sw.reg->host[sw.host].conf.nports) {
        uint64_t down_at = f->port_down_ms * 1000000ull;
        uint64_t up_at = down_at + f->port_up_ms * 1000000ull;
        if (!sw.port_taken_down) {
            if (since >= down_at) {
                sw.port_taken_down = true;
                sw_log("fault injection: port %u goes down", f->port_down);
                sw_port_set(sw.host, f->port_down, IBV_PORT_DOWN);
            } else if (sw.open_ns + down_at < *wake) {
                *wake = sw.open_ns + down_at;
            }
        } else if (f->port_up_ms && !sw.port_brought_up) {
            if (since >= up_at) {
                sw.port_brought_up = true;
                sw_log("fault injection: port %u comes back", f->port_down);
                sw_port_set(sw.host, f->port_down, IBV_PORT_ACTIVE);
            } else if (sw.open_ns + up_at < *wake) {
                *wake = sw.open_ns + up_at;
            }
        }
    }
    if (f->lose_after_ms && !atomic_load(&sw.lost)) {
        uint64_t at = f->lose_after_ms * 1000000ull;
        if (since >= at)
            lose("lose_after_ms");
        else if (sw.open_ns + at < *wake)
            *wake = sw.open_ns + at;
    }
}

bool sw_fault_fail_wr(const struct sw_swqe *w, uint32_t *status)
{
    const struct sw_faults *f = &sw.env.fault;
    if (f->lose_after_wr && w->seqno > f->lose_after_wr)
        lose("lose_after_wr");
    if (!f->fail_wr || w->seqno != f->fail_wr || w->tries || w->rnr_tries)
        return false;
    sw_log("fault injection: work request %llu (wr_id 0x%llx) fails with status %u",
           (unsigned long long)w->seqno, (unsigned long long)w->wr_id, f->fail_status);
    *status = f->fail_status;
    return true;
}

bool sw_fault_rnr(struct sw_swqe *w)
{
    return w->rnr_tries < sw.env.fault.rnr_storm;
}
