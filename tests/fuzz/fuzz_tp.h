/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tp.h: what the harnesses that drive a transport plugin through its
 * ABI (sockets_handshake, shm_records) give it as its core: logging that
 * stays quiet unless WEFT_DEBUG is set, the last error the plugin set, and
 * a clock for their deadlines.
 */
#ifndef WEFT_TESTS_FUZZ_TP_H
#define WEFT_TESTS_FUZZ_TP_H

#include <stddef.h>
#include <stdint.h>

#include "weft/transport.h"

/* The text of the plugin's last set_error. */
extern char fuzz_tp_last_error[1024];

/* weft_transport_core_t's log and set_error. */
void fuzz_tp_log(int level, const char *plugin, const char *fmt, ...);
void fuzz_tp_set_error(const char *fmt, ...);

/* CLOCK_MONOTONIC in ms. */
int64_t fuzz_tp_now_ms(void);

/* A receive a harness posts before it feeds its input, to see what the
 * input does to it. */
typedef struct fuzz_tp_posted {
    int peer;
    uint64_t tag, ignore;
    size_t cap;
    unsigned char *buf;
    void *req;
} fuzz_tp_posted_t;

/* Posts each of the n receives on ctx of transport t, into buffers of
 * exactly cap bytes (a write past one is ASan's to see) filled with
 * canary (a write past the message is the harness's). */
void fuzz_tp_post(const weft_transport_v1_t *t, void *ctx, fuzz_tp_posted_t *p, size_t n,
                  unsigned char canary);

#endif /* WEFT_TESTS_FUZZ_TP_H */
