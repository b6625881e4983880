/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tp.h: what the harnesses that drive a transport plugin through its
 * ABI (sockets_handshake, shm_records) give it as its core: logging that
 * stays quiet unless WEFT_DEBUG is set, the last error the plugin set, and
 * a clock for their deadlines.
 */
#ifndef WEFT_TESTS_FUZZ_TP_H
#define WEFT_TESTS_FUZZ_TP_H

#include <stdint.h>

/* The text of the plugin's last set_error. */
extern char fuzz_tp_last_error[1024];

/* weft_transport_core_t's log and set_error. */
void fuzz_tp_log(int level, const char *plugin, const char *fmt, ...);
void fuzz_tp_set_error(const char *fmt, ...);

/* CLOCK_MONOTONIC in ms. */
int64_t fuzz_tp_now_ms(void);

#endif /* WEFT_TESTS_FUZZ_TP_H */
