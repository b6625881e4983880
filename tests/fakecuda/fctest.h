/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fctest.h: helpers of the CUDA test double's tests. The double reads
 * its environment at cuInit, once per process, so each case runs in a
 * child of its own (fct_child) that sets WEFT_FAKECUDA_* first; the
 * test program itself never calls cuInit.
 */
#ifndef FCTEST_H
#define FCTEST_H

#include <cuda.h>

/* Exits the child with LINE when a call does not give what it should. */
#define FCT_EXPECT(call, want) \
    do { \
        CUresult fct_r_ = (call); \
        if (fct_r_ != (want)) { \
            fct_fail(__LINE__, #call, fct_r_, (want)); \
        } \
    } while (0)
#define FCT_OK(call) FCT_EXPECT(call, CUDA_SUCCESS)
#define FCT_TRUE(cond) \
    do { \
        if (!(cond)) \
            fct_fail(__LINE__, #cond, 0, 0); \
    } while (0)

void fct_fail(int line, const char *what, CUresult got, CUresult want) __attribute__((noreturn));

/* cuInit, retain device DEV's primary context and make it current. */
CUcontext fct_up(int dev);

/* Runs FN in a child process; its exit status, or 128 + signal. */
int fct_child(void (*fn)(void));

#endif
