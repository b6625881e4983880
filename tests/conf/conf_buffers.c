/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_buffers.c: output buffers of the data-movement cases. Each starts
 * as a guard pattern; the case builds the buffer it expects (the same
 * pattern with the blocks written in where they belong) and every byte is
 * compared, gaps between blocks and one guard element past the end
 * included, so that a write out of place is caught as surely as a
 * missing one.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

#define GUARD_SEED 0xbb67ae8584caa73bull

void conf_move_begin(conf_move_t *m, conf_case_t *k, size_t span)
{
    size_t bytes = (span + 1) * conf_esize(k->dt);

    m->k = k;
    m->seed = conf_seed(k, 1);
    m->es = conf_esize(k->dt);
    m->span = span;
    m->got = mp_alloc(bytes);
    m->want = mp_alloc(bytes);
    conf_fill_bytes(m->got, bytes, GUARD_SEED, k->cc->rank, 0);
    memcpy(m->want, m->got, bytes);
}

void conf_expect_block(conf_move_t *m, void *buf, size_t at, int r, size_t from, size_t n)
{
    conf_fill_bytes((char *)buf + at * m->es, n * m->es, m->seed, r, from * m->es);
}

void conf_move_end(conf_move_t *m)
{
    conf_check_same(m->k, m->got, m->want, (m->span + 1) * m->es, "recvbuf");
    free(m->got);
    free(m->want);
}

void *conf_input_of(conf_move_t *m, int r, size_t n)
{
    void *buf = mp_alloc(n * m->es + 1);

    conf_expect_block(m, buf, 0, r, 0, n);
    return buf;
}

void conf_check_input(conf_move_t *m, const void *buf, int r, size_t n)
{
    void *want = conf_input_of(m, r, n);

    conf_check_same(m->k, buf, want, n * m->es, "sendbuf (must stay as it was)");
    free(want);
}
