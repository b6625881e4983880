/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.c: the checker, and the device's messages. The checker reports
 * what a real NIC would let pass silently or turn into corruption later:
 *  - a send or write buffer changed between ibv_post_send() and the NIC
 *    reading it, or before its completion was polled (a real NIC may
 *    read it again to retransmit); an RDMA read's buffer changed before
 *    its completion was polled;
 *  - a memory region deregistered while posted requests name it, a PD
 *    freed while in use, a device opened from a freed list, a verbs
 *    object used in the child of a fork();
 *  - memory under a registration freed and mapped again (mr.c);
 *  - leaks: objects left when a context closes, contexts left open at
 *    exit, events not acknowledged.
 * WEFT_SWRDMA_CHECK=warn (default) prints "swrdma check: ..." on stderr,
 * =abort aborts after the first report, =off stops the checks that cost
 * time (buffer hashes). WEFT_SWRDMA_CHECK_LOG=FILE also appends each
 * report to FILE, one line each, for tests to read.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

void sw_log(const char *fmt, ...)
{
    int saved = errno;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    errno = saved;
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "swrdma: %s\n", msg);
    errno = saved;
}

void sw_check_report(const char *fmt, ...)
{
    int saved = errno;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof(msg), "swrdma check: pid %d: ", (int)getpid());
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&sw.check_reports, 1);
    fprintf(stderr, "%s\n", msg);
    if (sw.env.check_log[0]) {
        int fd = open(sw.env.check_log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
            size_t len = strlen(msg);
            msg[len] = '\n';
            if (write(fd, msg, len + 1) < 0)
                fprintf(stderr, "swrdma: cannot write %s: %m\n", sw.env.check_log);
            close(fd);
        }
    }
    if (sw.env.check == SW_CHECK_ABORT)
        abort();
    errno = saved;
}

/* A hash of the bytes a request reads (or, for a read, the bytes it
 * wrote). Read through process_vm_readv so that a bad address gives a
 * different hash instead of a crash; 0 means "not hashed". */
uint64_t sw_check_sum(const struct sw_swqe *w)
{
    if (sw.env.check == SW_CHECK_OFF)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t buf[8192];
    for (uint32_t i = 0; i < w->num_sge; i++) {
        struct sw_reg_mr m;
        const struct ibv_sge *s = &w->sge[i];
        if (!s->length || !sw_reg_mr_read(s->lkey, &m) || m.proc != sw.proc ||
            s->addr < m.iova || s->addr - m.iova + s->length > m.length)
            continue;
        uint64_t va = m.addr + (s->addr - m.iova);
        for (uint64_t off = 0; off < s->length;) {
            size_t n = (size_t)SW_MIN(sizeof(buf), s->length - off);
            struct iovec l = { buf, n }, r = { (void *)(uintptr_t)(va + off), n };
            /* the last word's bytes past the data hash as zeros */
            if (n & 7)
                memset((char *)buf + n, 0, 8 - (n & 7));
            if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)n)
                return h | 1;
            for (size_t k = 0; k < (n + 7) / 8; k++) {
                h ^= buf[k];
                h *= 0x100000001b3ull;
                h ^= h >> 29;
            }
            off += n;
        }
    }
    return h | 1;
}

void sw_check_close(struct sw_context *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    uint32_t qp = ctx->n_qp, cq = ctx->n_cq, mr = ctx->n_mr, pd = ctx->n_pd, ch = ctx->n_channel;
    uint32_t ah = ctx->n_ah, unacked = ctx->async_unacked;
    pthread_mutex_unlock(&ctx->lock);
    if (qp || cq || mr || ah || pd || ch)
        sw_check_report("ibv_close_device() leaves %u QPs, %u CQs, %u MRs, %u AHs, %u PDs and "
                        "%u completion channels behind (leaked)", qp, cq, mr, ah, pd, ch);
    if (unacked)
        sw_check_report("ibv_close_device() with %u async events never acknowledged", unacked);
}

void sw_check_exit(void)
{
    for (struct sw_context *ctx = sw.contexts; ctx; ctx = ctx->next) {
        sw_check_report("exit with a device context still open (ibv_close_device() never called)");
        sw_check_close(ctx);
    }
}
