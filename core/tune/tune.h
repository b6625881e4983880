/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tune.h: the tuner, which chooses a collective's algorithm from a cost
 * model rather than fixed byte thresholds.
 *
 * Every algorithm of the registry (coll/algo/registry.h) has a cost
 * formula (model.c), indexed by its id, in the alpha-beta-gamma model:
 * alpha seconds per message step, beta seconds per byte on the link,
 * gamma seconds per byte reduced, with one (alpha, beta) pair for links
 * inside a node and one for links between nodes. The parameters are
 * measured on the running job at init (probe.c), loaded from a file
 * written by weft-bench --tune, or the built-in defaults (params.c);
 * every rank of a job holds identical parameters, so every rank of a
 * communicator predicts the same times and picks the same algorithm. Per
 * communicator the choice is cached per operation and power-of-two size
 * bucket (table.c). select.c is the one place that decides a
 * collective's algorithm, WEFT_ALGO's forced choices included; where the
 * model finds two algorithms close, adapt.c times both on the program's
 * calls, and the ranks agree on the faster (WEFT_TUNE_ADAPT).
 */
#ifndef WEFT_CORE_TUNE_H
#define WEFT_CORE_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft.h"
#include "core/coll/algo/registry.h"
#include "core/coll/coll.h"
#include "core/comm/comm.h"

/* One kind of link: time of a step moving n bytes is alpha + n * beta. */
typedef struct weft__tune_link {
    double alpha;   /* seconds */
    double beta;    /* seconds per byte */
} weft__tune_link_t;

typedef struct weft__tune_params {
    weft__tune_link_t intra;   /* between ranks of one node */
    weft__tune_link_t inter;   /* between nodes */
    double gamma;              /* seconds per byte combined by a reduction */
} weft__tune_params_t;

/* Where a job's parameters came from (WEFT_TUNE, WEFT_TUNE_FILE). */
typedef enum weft__tune_source {
    WEFT__TUNE_DEFAULTS, WEFT__TUNE_MEASURED, WEFT__TUNE_FILE
} weft__tune_source_t;

/* The tuner's state of a job (inst->tune), identical on every rank
 * (weft__tune_agree), set once at init before any communicator runs a
 * collective. */
struct weft__tune_job {
    weft__tune_params_t params;
    weft__tune_source_t source;
    double probe_ms;           /* the probe's time at init, 0 if none ran */
    int adapt;                 /* rank 0's WEFT_TUNE_ADAPT: time close candidates (adapt.c) */
};

/* What a cost formula needs to know of a communicator. */
typedef struct weft__tune_shape {
    int ranks;          /* communicator size */
    int nodes;          /* nodes it spans */
    int per_node;       /* ranks on its most populated node */
    int contiguous;     /* each node's ranks are consecutive */
    int shared;         /* it may use a node-shared segment (weft__shared_usable) */
    /* Bytes of output, over the ranks of the node together, beyond which
     * the pipelined shared algorithms stream it (copy_stream.h), at the
     * default WEFT_STREAM_THRESHOLD; 0: they never do. */
    double stream_from;
} weft__tune_shape_t;

/* Predicted seconds of one algorithm for a call moving bytes (as
 * weft__tune_choose counts them for the operation). */
typedef double (*weft__tune_cost_fn)(const weft__tune_params_t *p,
                                     const weft__tune_shape_t *s, size_t bytes);

/* model.c: the cost formula of algorithm id; NULL for an id out of range
 * or without one (a unit test keeps every algorithm's). */
weft__tune_cost_fn weft__tune_cost_of(int id);

/* params.c */
/* The built-in parameters (WEFT_TUNE=0), close to loopback TCP on one
 * host, which reproduce the former fixed thresholds roughly. */
void weft__tune_defaults(weft__tune_params_t *p);
/* Writes p as a cache file; WEFT_ERR_SYSTEM with the cause on failure. */
weft_result_t weft__tune_save(const char *path, const weft__tune_params_t *p);
/* Reads a cache file; WEFT_ERR_INVALID_ARG naming the file, line and what
 * is wrong when it is malformed (p untouched then). */
weft_result_t weft__tune_load(const char *path, weft__tune_params_t *p);
const char *weft__tune_source_name(weft__tune_source_t src);

/* mode.c: rank 0's decision at init, as probe.c broadcasts it (a
 * double: the values are small integers). */
typedef enum weft__tune_mode {
    WEFT__TUNE_MODE_ERROR = -1,   /* a setting is malformed: why says which */
    WEFT__TUNE_MODE_DEFAULTS,     /* WEFT_TUNE=0: the built-in parameters */
    WEFT__TUNE_MODE_MEASURE,      /* probe them (the default, and weft-bench --tune) */
    WEFT__TUNE_MODE_FILE          /* WEFT_TUNE_FILE, loaded into *p */
} weft__tune_mode_t;
/* Reads WEFT_TUNE_ADAPT into *adapt (1 unless it is "0"), then WEFT_TUNE
 * and WEFT_TUNE_FILE; reps_scale > 0 (weft-bench --tune) measures
 * whatever they say. WEFT__TUNE_MODE_ERROR with why (cap bytes) naming the
 * variable and its value, or the file's error. */
weft__tune_mode_t weft__tune_mode(int reps_scale, weft__tune_params_t *p, int *adapt, char *why,
                                  size_t cap);

/* probe.c: agrees on the parameters of the job on its world
 * communicator, as every rank of it must call: rank 0's WEFT_TUNE and
 * WEFT_TUNE_FILE decide between the defaults, the file and a probe (under
 * 100 ms) whose results are the maximum over the ranks. Stores them in
 * inst->tune (allocated the first time). reps_scale > 1 measures longer
 * (weft-bench --tune). */
weft_result_t weft__tune_agree(struct weft_comm *world, int reps_scale);
/* Frees inst->tune (the instance goes). */
void weft__tune_fini(weft__instance_t *inst);

/* table.c */
/* Whether algorithm a may run a call of bytes (as weft__tune_choose
 * counts them) on a communicator of shape s with equal blocks on every
 * rank (even). */
int weft__tune_applies(const weft__algo_t *a, const weft__tune_shape_t *s, int even,
                       size_t bytes);
/* The id (coll/algo/registry.h) of the algorithm of operation kind (a
 * weft__coll_kind_t) predicted fastest for bytes on a communicator of
 * shape s, among those with a cost formula that apply (even: equal blocks
 * on every rank; flat_only: no node-aware one); its predicted seconds in
 * *t when t is not NULL. -1 when none has a formula. Ties go to the lower
 * id, so identical parameters and shapes give identical choices. */
int weft__tune_best(const weft__tune_params_t *p, const weft__tune_shape_t *s, int kind,
                    size_t bytes, int even, int flat_only, double *t);
/* weft__tune_best for a call on comm with its job's parameters, cached
 * per operation and power-of-two size bucket; the first call on comm
 * logs the predicted table on its rank 0 (WEFT_DEBUG=INFO,
 * WEFT_DEBUG_SUBSYS=TUNING).
 * Not thread safe for one comm, as a communicator is used by one thread
 * at a time. */
int weft__tune_pick(struct weft_comm *comm, int kind, size_t bytes, int even);
/* Whether the table predicts a time for algorithm id at bytes on shape s
 * with equal blocks on every rank: it has a cost formula, it applies, and
 * it is not node-aware unless s spans several nodes of several ranks
 * (weft__tune_best's candidates); the predicted seconds in *t then. */
int weft__tune_predict(const weft__tune_params_t *p, const weft__tune_shape_t *s, int id,
                       size_t bytes, double *t);
/* The size bucket of bytes: b for 2^(b-1) < bytes <= 2^b (0 for 0 and 1). */
int weft__tune_bucket(size_t bytes);
/* The shape of comm. */
void weft__tune_shape_of(const struct weft_comm *comm, weft__tune_shape_t *s);
/* Prints the predicted times of every operation, size bucket and
 * algorithm for this shape, and the choices, to f (or to the TUNING log
 * when f is NULL). */
void weft__tune_print_table(FILE *f, const weft__tune_params_t *p,
                            const weft__tune_shape_t *s);

/* select.c: the one place that sets a collective's algorithm. */
/* Chooses and sets the algorithm of a collective of kind moving bytes per
 * rank: WEFT_ALGO's choice where it applies, else the tuner's, else the
 * operation's default; even: every rank's block has the same size, at
 * rank-order displacements, and every rank knows it (the even forms of
 * the rooted and all-to-all calls). For kinds without a choice it does
 * nothing. A node-aware allreduce also gets the flat algorithm the tuner
 * predicts fastest between the nodes' leaders (c->leaders_algo). */
void weft__tune_choose(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                       int even);
/* Parses WEFT_ALGO (NULL: none); WEFT_ERR_INVALID_ARG names what is wrong
 * and lists the valid choices. */
weft_result_t weft__tune_algo_parse(const char *spec);

/* apply.c: sets algorithm pick on c as weft__tune_choose would have
 * chosen it (with the node-aware allreduce's leaders and the ring's
 * order). */
void weft__tune_apply(weft__coll_t *c, weft_comm_t comm, int pick);

/* adapt.c: where the model finds two algorithms close, times both on the
 * calls the program makes and runs the faster, again and again, so that
 * the choice follows what the machine does now. */
typedef struct weft__tune_adapt weft__tune_adapt_t;
/* What a call is to time: entry NULL when nothing. */
typedef struct weft__tune_sample {
    weft__tune_adapt_t *entry;
    int cand;                  /* which of the entry's two candidates runs */
} weft__tune_sample_t;
/* weft__tune_choose for the host path of a call that can be timed: the
 * same choice, except where adapt.c is measuring or has measured; then
 * *sample says what the caller times (a blocking call's duration, given
 * to weft__tune_adapt_record). */
void weft__tune_choose_timed(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind,
                             size_t bytes, int even, weft__tune_sample_t *sample);
/* The algorithm for this call of the entry of (kind, bytes) on comm,
 * given the model's pick, with *sample set where the call is timed; or
 * -1 when c was made to wait for a calibration in flight and sets its
 * algorithm itself once every rank agreed. Every rank of comm must make
 * the call with the same kind and bytes (the even forms). */
int weft__tune_adapt(weft__coll_t *c, weft_comm_t comm, weft__coll_kind_t kind, size_t bytes,
                     int pick, weft__tune_sample_t *sample);
/* Records a timed call's nanoseconds, as weft__tune_now_ns measured them
 * (rc: how it ended; a failed one counts nothing). */
void weft__tune_adapt_record(const weft__tune_sample_t *sample, weft_result_t rc, int64_t ns);
int64_t weft__tune_now_ns(void);
/* table.c: comm's entry for (kind, bucket of bytes), NULL without a
 * cache (out of memory); the entry is malloc'd, and freed with comm. */
weft__tune_adapt_t **weft__tune_adapt_slot(struct weft_comm *comm, int kind, size_t bytes);
/* table.c: the candidates that weft__tune_best weighs for this call on
 * comm, in id order, as weft__tune_predict gives them: ids and predicted
 * seconds at the bucket's size, up to cap of them; how many. */
int weft__tune_candidates(struct weft_comm *comm, int kind, size_t bytes, int *ids,
                          double *t, int cap);

#endif /* WEFT_CORE_TUNE_H */
