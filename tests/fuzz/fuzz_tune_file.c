/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_tune_file.c: the tuner's parameter file, WEFT_TUNE_FILE
 * (core/tune/params.c): the input is written to a file and loaded.
 *
 * Properties, from params.c's contract: a file that loads gave every
 * parameter, finite, from 0 to 1 and above 0 for alpha and beta, and
 * what weft__tune_save writes of them loads back to the same values; a
 * file refused is WEFT_ERR_INVALID_ARG with a message naming it, and
 * leaves the parameters as they were.
 */
#include "config.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/tune/tune.h"
#include "tests/fuzz/fuzz.h"

/* A file of this process, written again for every input. */
static const char *scratch(char *path, size_t cap, const char *what)
{
    const char *dir = getenv("TMPDIR");

    snprintf(path, cap, "%s/weft-fuzz-%s-%d", dir && *dir ? dir : "/tmp", what, (int)getpid());
    return path;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");

    FUZZ_REQUIRE(f != NULL, "cannot write %s", path);
    FUZZ_REQUIRE(fwrite(data, 1, size, f) == size && fclose(f) == 0, "cannot write %s", path);
}

static int in_range(double v, int positive)
{
    return isfinite(v) && v >= 0 && v <= 1.0 && (!positive || v > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const weft__tune_params_t sentinel = { { 1.25, 2.5 }, { 3.75, 5.0 }, 6.25 };
    char path[256], again[256];
    weft__tune_params_t p = sentinel, q;
    weft_result_t rc;

    scratch(path, sizeof(path), "tune");
    write_file(path, data, size);
    rc = weft__tune_load(path, &p);
    if (rc != WEFT_SUCCESS) {
        FUZZ_REQUIRE(rc == WEFT_ERR_INVALID_ARG, "refused with %d", rc);
        FUZZ_REQUIRE(strstr(weft__get_error(), path), "the refusal does not name the file: %s",
                     weft__get_error());
        FUZZ_REQUIRE(!memcmp(&p, &sentinel, sizeof(p)), "a refused file changed the parameters");
        unlink(path);
        return 0;
    }
    FUZZ_REQUIRE(in_range(p.intra.alpha, 1) && in_range(p.intra.beta, 1) &&
                 in_range(p.inter.alpha, 1) && in_range(p.inter.beta, 1) &&
                 in_range(p.gamma, 0), "loaded out of range: %g %g %g %g %g", p.intra.alpha,
                 p.intra.beta, p.inter.alpha, p.inter.beta, p.gamma);
    scratch(again, sizeof(again), "tune-saved");
    FUZZ_REQUIRE(weft__tune_save(again, &p) == WEFT_SUCCESS, "save: %s", weft__get_error());
    q = sentinel;
    FUZZ_REQUIRE(weft__tune_load(again, &q) == WEFT_SUCCESS, "what save wrote does not load: %s",
                 weft__get_error());
    FUZZ_REQUIRE(!memcmp(&p, &q, sizeof(p)), "parameters change over save and load");
    unlink(again);
    unlink(path);
    return 0;
}
