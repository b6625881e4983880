/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conf_ref.c: the serial reference of the conformance suite, its
 * tolerance, and how a wrong result is reported.
 *
 * Tolerance of floating-point reductions. weft may combine the n inputs
 * in any order and, for float16/bfloat16, rounds to the type after every
 * step (API.md). Each of the n - 1 additions, the PREMUL_SUM scaling and
 * AVG's division adds at most one rounding of relative size u (the unit
 * roundoff, eps / 2), so |got - exact| <= (n + 1) * u * sum |x_r|; the
 * suite allows (n + 1) * eps * sum |x_r| (twice that), plus n units of the
 * smallest subnormal for results near zero. Products: (n + 1) * eps *
 * |product|. MIN and MAX pick an input and are exact, as is every integer
 * result (sums wrap as the C unsigned types do).
 *
 * Over one or two ranks there is no freedom of order: the result is the
 * inputs (scaled and rounded to the type for PREMUL_SUM) combined once
 * and rounded to nearest-even once (AVG: then divided and rounded), and
 * the suite requires exactly that, bit for bit. float16/bfloat16 inputs
 * combine exactly in a double, so this checks the rounding API.md asks of
 * them.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/conf/conf.h"

static double type_eps(weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return ldexp(1, -10);
    case WEFT_BFLOAT16: return ldexp(1, -7);
    case WEFT_FLOAT32: return ldexp(1, -23);
    default: return ldexp(1, -52);
    }
}

static double type_tiny(weft_dtype_t dt)
{
    switch (dt) {
    case WEFT_FLOAT16: return ldexp(1, -24);
    case WEFT_BFLOAT16: return ldexp(1, -133);
    case WEFT_FLOAT32: return ldexp(1, -149);
    default: return ldexp(1, -1074);
    }
}

static int is_signed(weft_dtype_t dt)
{
    return dt == WEFT_INT8 || dt == WEFT_INT32 || dt == WEFT_INT64;
}

/* Integer reference in 64-bit arithmetic, wrapped to the type at the end:
 * the inputs are at most 2^53 in magnitude, so nothing is lost first. */
static double int_reference(const conf_case_t *k, uint64_t seed, int first, int last,
                            size_t i)
{
    int n = last - first + 1;
    int64_t acc = (int64_t)conf_input(k, seed, first, i);
    uint64_t uacc = (uint64_t)acc;
    char out[8];

    if (k->op == CONF_PREMUL)
        uacc *= (uint64_t)conf_premul_scalar(k->dt);
    for (int r = first + 1; r <= last; r++) {
        int64_t x = (int64_t)conf_input(k, seed, r, i);

        switch (k->op) {
        case WEFT_SUM: case WEFT_AVG: uacc += (uint64_t)x; break;
        case CONF_PREMUL: uacc += (uint64_t)x * (uint64_t)conf_premul_scalar(k->dt); break;
        case WEFT_PROD: uacc *= (uint64_t)x; break;
        case WEFT_MIN: if (x < (int64_t)uacc) uacc = (uint64_t)x; break;
        case WEFT_MAX: if (x > (int64_t)uacc) uacc = (uint64_t)x; break;
        case WEFT_BAND: uacc &= (uint64_t)x; break;
        case WEFT_BOR: uacc |= (uint64_t)x; break;
        case WEFT_BXOR: uacc ^= (uint64_t)x; break;
        }
    }
    /* MIN/MAX compared as int64 are right for unsigned inputs too: they
     * are below 2^53 and never negative. AVG truncates toward zero. */
    if (k->op == WEFT_AVG) {
        if (is_signed(k->dt))
            uacc = (uint64_t)((int64_t)uacc / n);
        else
            uacc /= (uint64_t)n;
    }
    if (is_signed(k->dt))
        conf_store(out, 0, k->dt, (double)(int64_t)uacc);
    else
        conf_store(out, 0, k->dt, (double)(uacc & (k->dt == WEFT_UINT64 ? ~0ull
                                                   : k->dt == WEFT_UINT32 ? 0xffffffffull
                                                   : 0xffull)));
    return conf_load(out, 0, k->dt);
}

static double round_to(weft_dtype_t dt, double v)
{
    char tmp[8];

    conf_store(tmp, 0, dt, v);
    return conf_load(tmp, 0, dt);
}

/* One or two ranks: one rounding per step, in the order API.md gives. */
static double exact_reference(const conf_case_t *k, uint64_t seed, int first, int last,
                              size_t i)
{
    weft_dtype_t dt = k->dt;
    double x0 = conf_input(k, seed, first, i);
    double x1 = last > first ? conf_input(k, seed, last, i) : 0;
    double r;

    if (k->op == CONF_PREMUL) {
        x0 = round_to(dt, x0 * conf_premul_scalar(dt));
        x1 = round_to(dt, x1 * conf_premul_scalar(dt));
    }
    if (last == first)
        return x0;
    switch (k->op) {
    case WEFT_PROD: r = x0 * x1; break;
    case WEFT_MIN: r = fmin(x0, x1); break;
    case WEFT_MAX: r = fmax(x0, x1); break;
    default: r = x0 + x1; break;
    }
    r = round_to(dt, r);
    if (k->op == WEFT_AVG)
        r = round_to(dt, r / 2);
    return r;
}

double conf_reference(const conf_case_t *k, uint64_t seed, int first, int last, size_t i,
                      double *tolerance)
{
    int n = last - first + 1;
    double acc, mag, x;

    *tolerance = 0;
    if (!conf_is_float(k->dt))
        return int_reference(k, seed, first, last, i);
    if (n <= 2)
        return exact_reference(k, seed, first, last, i);
    acc = conf_input(k, seed, first, i);
    if (k->op == CONF_PREMUL)
        acc *= conf_premul_scalar(k->dt);
    mag = fabs(acc);
    for (int r = first + 1; r <= last; r++) {
        x = conf_input(k, seed, r, i);
        switch (k->op) {
        case WEFT_SUM: case WEFT_AVG: acc += x; mag += fabs(x); break;
        case CONF_PREMUL:
            x *= conf_premul_scalar(k->dt);
            acc += x;
            mag += fabs(x);
            break;
        case WEFT_PROD: acc *= x; break;
        case WEFT_MIN: acc = fmin(acc, x); break;
        case WEFT_MAX: acc = fmax(acc, x); break;
        }
    }
    if (k->op == WEFT_AVG) {
        acc /= n;
        mag /= n;
    }
    if (k->op == WEFT_PROD)
        mag = fabs(acc);
    if (k->op != WEFT_MIN && k->op != WEFT_MAX)
        *tolerance = (n + 1) * type_eps(k->dt) * mag + n * type_tiny(k->dt);
    return acc;
}

void conf_fail(const conf_case_t *k, const char *fmt, ...)
{
    char detail[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] CONFORMANCE FAILURE: op=%s dtype=%s redop=%s count=%zu root=%d "
            "in_place=%d nonblocking=%d comm=%s (rank %d of %d) algo=%s: %s\n", mp_rank,
            k->func, conf_dt_names[k->dt], k->op >= 0 ? conf_op_names[k->op] : "-", k->count,
            k->root, k->in_place, k->nonblocking, k->cc->name, k->cc->rank, k->cc->size,
            conf_algo, detail);
    fflush(stderr);
    exit(MP_EXIT_FAIL);
}

void conf_check_rc(const conf_case_t *k, weft_result_t rc, const char *call)
{
    if (rc != WEFT_SUCCESS)
        conf_fail(k, "%s returned %s (%s)", call, mp_rc_name(rc), weft_last_error());
}

void conf_check_reduced(const conf_case_t *k, uint64_t seed, int first, int last,
                        const void *got, size_t count, size_t ref_off, const char *what)
{
    for (size_t j = 0; j < count; j++) {
        double tol, want = conf_reference(k, seed, first, last, ref_off + j, &tol);
        double have = conf_load(got, j, k->dt);

        if (!(fabs(have - want) <= tol) && !(tol == 0 && have == want))
            conf_fail(k, "%s: first wrong index %zu (element %zu of the reduction over ranks "
                      "%d..%d): got %.17g, expected %.17g (tolerance %.3g)", what, j,
                      ref_off + j, first, last, have, want, tol);
    }
}

void conf_check_bytes(const conf_case_t *k, const void *got, size_t nbytes, uint64_t seed,
                      int r, size_t first, const char *what)
{
    unsigned char chunk[4096];

    for (size_t done = 0; done < nbytes; done += sizeof(chunk)) {
        size_t n = nbytes - done < sizeof(chunk) ? nbytes - done : sizeof(chunk);

        conf_fill_bytes(chunk, n, seed, r, first + done);
        if (memcmp(chunk, (const char *)got + done, n)) {
            size_t b = 0;
            size_t es = conf_esize(k->dt);

            while (chunk[b] == ((const unsigned char *)got)[done + b])
                b++;
            conf_fail(k, "%s: first wrong index %zu (byte %zu; rank %d's data): got byte "
                      "0x%02x, expected 0x%02x", what, (done + b) / es, done + b, r,
                      ((const unsigned char *)got)[done + b], chunk[b]);
        }
    }
}

void conf_check_same(const conf_case_t *k, const void *got, const void *want, size_t nbytes,
                     const char *what)
{
    const unsigned char *g = got, *w = want;

    for (size_t b = 0; b < nbytes; b++)
        if (g[b] != w[b])
            conf_fail(k, "%s: first wrong index %zu (byte %zu): got byte 0x%02x, "
                      "expected 0x%02x", what, b / conf_esize(k->dt), b, g[b], w[b]);
}

static int nb_turn, spelling_turn;

int conf_pick_same_pointer(void)
{
    return spelling_turn++ & 1;
}

int conf_pick_nonblocking(void)
{
    return nb_turn++ & 1;
}

void conf_wait(const conf_case_t *k, weft_request_t *req)
{
    weft_result_t rc = weft_wait(req, NULL);

    conf_check_rc(k, rc, "weft_wait");
    if (*req)
        conf_fail(k, "weft_wait left the request set");
}
