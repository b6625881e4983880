/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cipc_test.h: what the unit tests of the cuda-ipc plugin share
 * (cipc_test.c): checks for a child process, running a case in one, and
 * a core for the plugin that records its logs and errors.
 *
 * The CUDA test double reads its environment (WEFT_FAKECUDA_*) once, at
 * cuInit, so each case runs in a child process of its own that sets it
 * first; the parent never touches the driver. A failed check in the child
 * prints its line and exits 1; the parent's cmocka assertion on the exit
 * status reports the case.
 */
#ifndef WEFT_TESTS_UNIT_CIPC_TEST_H
#define WEFT_TESTS_UNIT_CIPC_TEST_H

#include "weft/transport.h"

#define FAKECUDA WEFT_TEST_BUILDDIR "/tests/fakecuda/.libs/libfakecuda.so"

/* What the plugin last gave core.set_error. */
extern char last_error[1024];

void fail_at(int line, const char *what, long long got, long long want)
    __attribute__((noreturn));

#define CHECK_EQ(got, want)                                                             \
    do {                                                                                \
        long long got_ = (long long)(got), want_ = (long long)(want);                   \
        if (got_ != want_)                                                              \
            fail_at(__LINE__, #got, got_, want_);                                       \
    } while (0)
#define CHECK(cond) CHECK_EQ(!!(cond), 1)
#define CHECK_OK(call) CHECK_EQ((call), WEFT_SUCCESS)
#define CHECK_CU(call) CHECK_EQ((call), CUDA_SUCCESS)
#define CHECK_ERROR_SAYS(text) CHECK(strstr(last_error, (text)) != NULL)

/* Runs fn in a child, which an alarm of seconds ends if it hangs (a
 * stream waiting forever); its exit status, or 128 + the signal that
 * ended it. A crash (a host load of device memory faults) ends the child
 * too: cmocka's handlers, inherited, would resume the parent's test loop
 * in it instead. */
int cipc_in_child(void (*fn)(void), unsigned seconds);

/* The core the plugin is started with (rank 0 of 1, parameters from the
 * environment), which keeps what the plugin logs; and one that logs
 * nothing, for the test's own handle on the driver. */
extern weft_transport_core_t core, quiet_core;
/* Messages logged at level that contain text. */
int count_logs(int level, const char *text);

/* The plugin and the test on the double, with that many devices and,
 * unless NULL, those faults (WEFT_FAKECUDA_FAULTS). */
void use_double(const char *devices, const char *faults);

#endif /* WEFT_TESTS_UNIT_CIPC_TEST_H */
