/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * p2p.h: the subcommands of mp_p2p, the point-to-point test program.
 * Each runs on every rank of world after weft_init and returns only when
 * everything it checked was right (it fails the test otherwise).
 */
#ifndef WEFT_TESTS_MP_P2P_H
#define WEFT_TESTS_MP_P2P_H

#include <weft.h>

/* mp_p2p_basic.c */
void mp_p2p_pingpong(weft_comm_t world, int rank, int size);
void mp_p2p_ring(weft_comm_t world, int rank, int size);
void mp_p2p_anysource(weft_comm_t world, int rank, int size);
void mp_p2p_ordering(weft_comm_t world, int rank, int size);
void mp_p2p_selfsend(weft_comm_t world, int rank, int size);

/* mp_p2p_edge.c */
void mp_p2p_truncation(weft_comm_t world, int rank, int size);
void mp_p2p_zerolen(weft_comm_t world, int rank, int size);
void mp_p2p_big(weft_comm_t world, int rank, int size);

/* mp_p2p_args.c */
void mp_p2p_args(weft_comm_t world, int rank, int size);

/* mp_p2p_nb.c */
void mp_p2p_batch(weft_comm_t world, int rank, int size);
void mp_p2p_nonblocking(weft_comm_t world, int rank, int size);

/* mp_p2p_abort.c */
void mp_p2p_abort(weft_comm_t world, int rank, int size);
void mp_p2p_subabort(weft_comm_t world, int rank, int size);

/* mp_p2p_peerlost.c: needs the marker directory of run.sh */
void mp_p2p_peerlost_prepare(void);
void mp_p2p_peerlost(weft_comm_t world, int rank, int size);

#endif /* WEFT_TESTS_MP_P2P_H */
