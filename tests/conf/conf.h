/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf.h: the collectives conformance suite (tests/conf/conf*.c).
 *
 * Every rank regenerates every rank's input from a seed, computes the
 * expected result serially without weft, runs the collective and compares:
 * integers and data movement bit for bit, floating-point reductions within
 * conf_tolerance(). A wrong result prints the whole case (operation, dtype,
 * operator, count, root, in place or not, blocking or not, communicator,
 * forced algorithms, first wrong index, got and expected) and exits 1.
 */
#ifndef WEFT_TESTS_MP_CONF_H
#define WEFT_TESTS_MP_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "tests/mp/mptest.h"

/* Operator slot of the suite's PREMUL_SUM (the real handle is made per
 * dtype with weft_op_create_premul_sum). */
#define CONF_PREMUL 8
#define CONF_NOPS 9
#define CONF_NO_ROOT (-1)
#define CONF_MAX_COUNTS 8

/* What a run covers: the dtypes and operators of the full matrix, the
 * counts, and how many of them a rooted operation tries at every root. */
typedef struct conf_plan {
    unsigned dtypes;          /* bit dt set: dtype dt is tried */
    unsigned ops;             /* bit op set (CONF_PREMUL included) */
    size_t counts[CONF_MAX_COUNTS];
    int ncounts;
    size_t all_roots_max;     /* counts up to this try every root, larger the last */
    unsigned funcs;           /* bit CONF_F_* set: operation is run */
    unsigned placements;      /* bit 0: out of place, bit 1: in place */
} conf_plan_t;

/* The operations; bit positions in conf_plan_t.funcs and --ops. */
enum {
    CONF_F_BARRIER, CONF_F_BCAST, CONF_F_REDUCE, CONF_F_ALLREDUCE, CONF_F_GATHER,
    CONF_F_GATHERV, CONF_F_SCATTER, CONF_F_SCATTERV, CONF_F_ALLGATHER, CONF_F_ALLGATHERV,
    CONF_F_REDUCE_SCATTER, CONF_F_REDUCE_SCATTERV, CONF_F_ALLTOALL, CONF_F_ALLTOALLV,
    CONF_F_SCAN, CONF_F_EXSCAN, CONF_F_AXIS, CONF_F_BYTES, CONF_NFUNCS
};
extern const char *const conf_func_names[CONF_NFUNCS];

/* One communicator under test and the name printed with its cases. */
typedef struct conf_comm {
    weft_comm_t comm;
    const char *name;
    int rank, size;
    uint64_t salt;            /* mixed into seeds: comms get different data */
} conf_comm_t;

/* The case being run, printed when it fails. */
typedef struct conf_case {
    const char *func;
    weft_dtype_t dt;
    int op;                   /* 0..CONF_PREMUL, or -1 for data movement */
    size_t count;
    int root;
    int in_place;
    int nonblocking;
    const conf_comm_t *cc;
} conf_case_t;

/* ----------------------------------------------------------- conf_data.c */
extern const char *const conf_dt_names[WEFT_DTYPE_COUNT];
extern const char *const conf_op_names[CONF_NOPS];
extern uint64_t conf_cases;        /* cases checked so far on this rank */
extern const char *conf_algo;      /* WEFT_ALGO, or "auto" */

size_t conf_esize(weft_dtype_t dt);
int conf_is_float(weft_dtype_t dt);
/* Is op legal with dt (bitwise operators on floating types are not)? */
int conf_legal(weft_dtype_t dt, int op);
uint64_t conf_seed(const conf_case_t *k, int salt);
/* Rank r's input element i for a reduction with op (values chosen so that
 * integer results never overflow, except where wrapping is defined). */
double conf_input(const conf_case_t *k, uint64_t seed, int r, size_t i);
void conf_store(void *buf, size_t i, weft_dtype_t dt, double v);
double conf_load(const void *buf, size_t i, weft_dtype_t dt);
/* Fills rank r's whole input vector of count elements. */
void conf_fill_input(const conf_case_t *k, uint64_t seed, int r, void *buf, size_t count);
/* Random bytes for data-movement operations, a function of seed, rank, i. */
void conf_fill_bytes(void *buf, size_t nbytes, uint64_t seed, int r, size_t first);
uint64_t conf_hash(uint64_t x);

/* The PREMUL_SUM scalar of dt, and the handle passed to weft for op. */
double conf_premul_scalar(weft_dtype_t dt);
weft_op_t conf_weft_op(weft_dtype_t dt, int op);
void conf_free_ops(void);

/* ------------------------------------------------------------ conf_ref.c */
/* Expected element i of op over ranks first..last (inclusive) of k's
 * inputs, and its absolute tolerance (0: exact). */
double conf_reference(const conf_case_t *k, uint64_t seed, int first, int last, size_t i,
                      double *tolerance);
/* Compares count elements of got at got_off with the reduction reference
 * of element ref_off + j over ranks first..last. */
void conf_check_reduced(const conf_case_t *k, uint64_t seed, int first, int last,
                        const void *got, size_t count, size_t ref_off, const char *what);
/* Compares nbytes of got with the random bytes conf_fill_bytes gives for
 * (seed, r) starting at byte first. */
void conf_check_bytes(const conf_case_t *k, const void *got, size_t nbytes, uint64_t seed,
                      int r, size_t first, const char *what);
/* Compares nbytes of got with those of want (a buffer left untouched). */
void conf_check_same(const conf_case_t *k, const void *got, const void *want, size_t nbytes,
                     const char *what);
void conf_fail(const conf_case_t *k, const char *fmt, ...) MP_PRINTF(2, 3) MP_NORETURN;
/* Checks rc; a failure names the case. */
void conf_check_rc(const conf_case_t *k, weft_result_t rc, const char *call);

/* Block i's count in the v-variants for a nominal count: some empty,
 * the others of different sizes; all empty when count is 0. */
size_t conf_uneven(size_t count, int i);

/* -------------------------------------------------------- conf_buffers.c */
/* A data-movement case's output (span elements and a guard element) and
 * the bytes expected in it. */
typedef struct conf_move {
    conf_case_t *k;
    uint64_t seed;
    size_t es, span;
    void *got, *want;
} conf_move_t;

void conf_move_begin(conf_move_t *m, conf_case_t *k, size_t span);
/* Rank r's input elements [from, from + n) belong at element at of buf. */
void conf_expect_block(conf_move_t *m, void *buf, size_t at, int r, size_t from, size_t n);
/* Compares got with want, every byte, and frees both. */
void conf_move_end(conf_move_t *m);
/* Rank r's input of n elements (free it). */
void *conf_input_of(conf_move_t *m, int r, size_t n);
/* An input buffer must come back unchanged. */
void conf_check_input(conf_move_t *m, const void *buf, int r, size_t n);

/* Runs the blocking call, or the nonblocking one (which sets req_) and
 * waits, as the case says. */
#define CONF_RUN(k, blocking_call, nb_call)                     \
    do {                                                        \
        weft_request_t req_ = NULL;                             \
        weft_result_t rc_;                                      \
        if ((k)->nonblocking) {                                 \
            rc_ = nb_call;                                      \
            conf_check_rc(k, rc_, #nb_call);                    \
            conf_wait(k, &req_);                                \
        } else {                                                \
            rc_ = blocking_call;                                \
            conf_check_rc(k, rc_, #blocking_call);              \
        }                                                       \
    } while (0)

/* --------------------------------------------------- the operation files */
/* Each runs its operations over the plan on one communicator. */
void conf_run_reductions(const conf_comm_t *cc, const conf_plan_t *p);
void conf_run_movement(const conf_comm_t *cc, const conf_plan_t *p);
void conf_run_vectors(const conf_comm_t *cc, const conf_plan_t *p);
void conf_run_axis(const conf_comm_t *cc, const conf_plan_t *p);
void conf_run_bytes(const conf_comm_t *cc, const conf_plan_t *p);
/* Illegal arguments: WEFT_ERR_INVALID_ARG naming the argument, no hang. */
void conf_run_illegal(const conf_comm_t *cc);
/* Count 0 with NULL buffers everywhere: success, no fault. */
void conf_run_zero(const conf_comm_t *cc);
/* Nonblocking operations started on several communicators at once. */
void conf_run_overlap(conf_comm_t *ccs, int n);

/* Blocking or not, by turns: the weft_i* twin on odd cases. */
int conf_pick_nonblocking(void);
/* In place spelled WEFT_IN_PLACE or with the buffers the same (for
 * gathers: sendbuf at this rank's block of recvbuf), by turns. */
int conf_pick_same_pointer(void);
/* Waits for req, failing the case on error. */
void conf_wait(const conf_case_t *k, weft_request_t *req);

/* ---------------------------------------------------------- conf_comms.c */
/* The communicators under test at this size (world first); those this
 * rank is not a member of are left out. Returns how many. */
int conf_comms_create(weft_comm_t world, conf_comm_t *out, int max, int level);
void conf_comms_destroy(conf_comm_t *ccs, int n);

#endif /* WEFT_TESTS_MP_CONF_H */
