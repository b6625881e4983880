/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * op.c: PREMUL_SUM operators (torch's premul_sum): handles, and the
 * scaling applied to each rank's input before it is summed.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "core/base/error.h"
#include "core/dt/dtype.h"
#include "core/dt/op.h"
#include "core/dt/reduce.h"

#define PREMUL_SLOTS 1024
#define PREMUL_TAG 0x40000000u       /* no built-in operator has this bit */
#define PREMUL_GEN_SHIFT 10          /* slot in the low bits, generation above */
#define PREMUL_GEN_MASK 0xfffffu

typedef struct premul {
    int live;
    uint32_t gen;
    weft_dtype_t dt;
    unsigned char scalar[8];
} premul_t;

static premul_t premuls[PREMUL_SLOTS];
static pthread_mutex_t premul_lock = PTHREAD_MUTEX_INITIALIZER;

static weft_op_t premul_handle(int slot, uint32_t gen)
{
    return (weft_op_t)(PREMUL_TAG | ((gen & PREMUL_GEN_MASK) << PREMUL_GEN_SHIFT) |
                       (uint32_t)slot);
}

/* The slot a handle names if it is live, else -1. Caller holds the lock. */
static int premul_slot(weft_op_t op)
{
    uint32_t v = (uint32_t)op;
    int slot = (int)(v & (PREMUL_SLOTS - 1));

    if (!(v & PREMUL_TAG) || (v >> 31))
        return -1;
    if (!premuls[slot].live ||
        ((v >> PREMUL_GEN_SHIFT) & PREMUL_GEN_MASK) != (premuls[slot].gen & PREMUL_GEN_MASK))
        return -1;
    return slot;
}

WEFT_API weft_result_t weft_op_create_premul_sum(const void *scalar, weft_dtype_t dt,
                                                 weft_op_t *op)
{
    size_t esize = weft__dtype_bytes(dt);

    if (!esize)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_op_create_premul_sum: dt %d is not a "
                           "weft_dtype_t", (int)dt);
    if (!scalar)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_op_create_premul_sum: scalar is NULL");
    if (!op)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_op_create_premul_sum: op is NULL");
    pthread_mutex_lock(&premul_lock);
    for (int slot = 0; slot < PREMUL_SLOTS; slot++) {
        premul_t *p = &premuls[slot];

        if (p->live)
            continue;
        p->live = 1;
        p->gen++;
        p->dt = dt;
        memset(p->scalar, 0, sizeof(p->scalar));
        memcpy(p->scalar, scalar, esize);
        *op = premul_handle(slot, p->gen);
        pthread_mutex_unlock(&premul_lock);
        return WEFT_SUCCESS;
    }
    pthread_mutex_unlock(&premul_lock);
    return weft__error(WEFT_ERR_NO_MEMORY, "weft_op_create_premul_sum: all %d PREMUL_SUM "
                       "operators are in use (weft_op_free releases them)", PREMUL_SLOTS);
}

WEFT_API weft_result_t weft_op_free(weft_op_t op)
{
    int slot;

    if ((unsigned)op <= WEFT_BXOR)
        return WEFT_SUCCESS; /* built-in operators need no freeing */
    pthread_mutex_lock(&premul_lock);
    slot = premul_slot(op);
    if (slot >= 0)
        premuls[slot].live = 0;
    pthread_mutex_unlock(&premul_lock);
    if (slot < 0)
        return weft__error(WEFT_ERR_INVALID_ARG, "weft_op_free: op %#x is not a live "
                           "PREMUL_SUM operator", (unsigned)op);
    return WEFT_SUCCESS;
}

weft_result_t weft__op_check(const char *fn, weft_dtype_t dt, weft_op_t op,
                             unsigned char scalar[8], int *is_premul)
{
    weft_result_t rc;
    weft_dtype_t pdt;
    int slot;

    *is_premul = 0;
    if ((unsigned)op > WEFT_BXOR) {
        pthread_mutex_lock(&premul_lock);
        slot = premul_slot(op);
        if (slot >= 0) {
            pdt = premuls[slot].dt;
            memcpy(scalar, premuls[slot].scalar, 8);
        }
        pthread_mutex_unlock(&premul_lock);
        if (slot < 0)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: op %#x is neither a weft_op_t nor "
                               "a live PREMUL_SUM operator", fn, (unsigned)op);
        if (pdt != dt)
            return weft__error(WEFT_ERR_INVALID_ARG, "%s: op is a PREMUL_SUM operator of dt "
                               "%d, used with dt %d", fn, (int)pdt, (int)dt);
        *is_premul = 1;
        return WEFT_SUCCESS;
    }
    rc = weft__reduce_check(dt, op);
    return rc == WEFT_SUCCESS ? rc : weft__error(rc, "%s: %s", fn, weft__get_error());
}

#define SCALE_LOOP(T, EXPR)                                                        \
    do {                                                                           \
        T k;                                                                       \
        memcpy(&k, scalar, sizeof(T));                                             \
        for (size_t i = 0; i < count; i++) {                                       \
            T v;                                                                   \
            memcpy(&v, (const char *)src + i * sizeof(T), sizeof(T));              \
            v = (EXPR);                                                            \
            memcpy((char *)dst + i * sizeof(T), &v, sizeof(T));                    \
        }                                                                          \
    } while (0)

void weft__op_scale(void *dst, const void *src, size_t count, weft_dtype_t dt,
                    const unsigned char scalar[8])
{
    switch (dt) {
    case WEFT_INT8: SCALE_LOOP(int8_t, (int8_t)(uint8_t)((uint8_t)k * (uint8_t)v)); break;
    case WEFT_UINT8: SCALE_LOOP(uint8_t, (uint8_t)(k * v)); break;
    case WEFT_INT32: SCALE_LOOP(int32_t, (int32_t)((uint32_t)k * (uint32_t)v)); break;
    case WEFT_UINT32: SCALE_LOOP(uint32_t, k * v); break;
    case WEFT_INT64: SCALE_LOOP(int64_t, (int64_t)((uint64_t)k * (uint64_t)v)); break;
    case WEFT_UINT64: SCALE_LOOP(uint64_t, k * v); break;
    case WEFT_FLOAT16:
        SCALE_LOOP(uint16_t, weft__float_to_half(weft__half_to_float(k) *
                                                 weft__half_to_float(v)));
        break;
    case WEFT_BFLOAT16:
        SCALE_LOOP(uint16_t, weft__float_to_bf16(weft__bf16_to_float(k) *
                                                 weft__bf16_to_float(v)));
        break;
    case WEFT_FLOAT32: SCALE_LOOP(float, k * v); break;
    case WEFT_FLOAT64: SCALE_LOOP(double, k * v); break;
    }
}
