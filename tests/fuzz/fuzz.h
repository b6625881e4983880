/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz.h: what every harness of tests/fuzz shares.
 *
 * A harness defines LLVMFuzzerTestOneInput and is built twice: with
 * clang's libFuzzer by tests/fuzz/run.sh (make check-long), which
 * generates inputs, and with replay.c by make check, which feeds it the
 * committed corpus, crash inputs included. A harness checks properties of
 * what weft did with the input, not only that it survived: a violated
 * property is reported by FUZZ_REQUIRE, which aborts, so that libFuzzer
 * saves the input and make check fails on it.
 */
#ifndef WEFT_TESTS_FUZZ_H
#define WEFT_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports the broken property with where it is checked, then aborts. */
#define FUZZ_REQUIRE(cond, ...)                                                  \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: property violated: %s: ", __FILE__, __LINE__, \
                    #cond);                                                      \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
            abort();                                                             \
        }                                                                        \
    } while (0)

/* Logging off unless WEFT_DEBUG asks for it: weft warns about every
 * malformed input, which would bury the fuzzer's own output and slow it. */
void weft_fuzz_quiet(void);

#endif /* WEFT_TESTS_FUZZ_H */
