/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * params.c: the tuner's built-in parameters and its cache file.
 *
 * The file is text, one "key value" pair a line after a "weft-tune 1"
 * header, '#' starting a comment, so that a user can read and edit it:
 *
 *   weft-tune 1
 *   intra_alpha 1.5e-05
 *   ...
 *
 * Every key must be present, once, with a finite value >= 0 (alpha and
 * beta > 0), or the file is refused as a whole: half a parameter set
 * would silently mix measured and default figures.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/error.h"
#include "core/tune/tune.h"

#define TUNE_FILE_HEADER "weft-tune 1"

void weft__tune_defaults(weft__tune_params_t *p)
{
    /* Loopback TCP between processes of one small host, oversubscribed,
     * as the former thresholds were measured: allreduce switches from
     * recursive doubling to Rabenseifner near 32 KiB, allgather from
     * Bruck to the ring at a few KiB per block, and the node-aware
     * algorithms win until about 1 MiB across nodes. */
    p->intra.alpha = 15e-6;
    p->intra.beta = 0.8e-9;
    p->inter.alpha = 50e-6;
    p->inter.beta = 1.0e-9;
    p->gamma = 0.25e-9;
}

const char *weft__tune_source_name(weft__tune_source_t src)
{
    switch (src) {
    case WEFT__TUNE_MEASURED: return "measured";
    case WEFT__TUNE_FILE: return "file";
    default: return "defaults";
    }
}

static const struct field {
    const char *key;
    size_t offset;
    int positive;   /* must be > 0, not just >= 0 */
} fields[] = {
    { "intra_alpha", offsetof(weft__tune_params_t, intra.alpha), 1 },
    { "intra_beta", offsetof(weft__tune_params_t, intra.beta), 1 },
    { "inter_alpha", offsetof(weft__tune_params_t, inter.alpha), 1 },
    { "inter_beta", offsetof(weft__tune_params_t, inter.beta), 1 },
    { "gamma", offsetof(weft__tune_params_t, gamma), 0 },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static double *field_of(weft__tune_params_t *p, const struct field *f)
{
    return (double *)((char *)p + f->offset);
}

weft_result_t weft__tune_save(const char *path, const weft__tune_params_t *p)
{
    weft__tune_params_t copy = *p;
    FILE *f = fopen(path, "w");

    if (!f)
        return weft__error(WEFT_ERR_SYSTEM, "cannot write the tuning file %s: %s", path,
                           strerror(errno));
    fprintf(f, "%s\n# alpha: seconds per message step, beta: seconds per byte on the link,\n"
            "# gamma: seconds per byte reduced; intra: within a node, inter: between nodes\n",
            TUNE_FILE_HEADER);
    for (size_t i = 0; i < NFIELDS; i++)
        fprintf(f, "%s %.17g\n", fields[i].key, *field_of(&copy, &fields[i]));
    if (fclose(f) != 0)
        return weft__error(WEFT_ERR_SYSTEM, "cannot write the tuning file %s: %s", path,
                           strerror(errno));
    return WEFT_SUCCESS;
}

/* Strips the comment and the line end; whether anything is left. */
static int meaningful(char *line)
{
    char *hash = strchr(line, '#');

    if (hash)
        *hash = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    return line[strspn(line, " \t")] != '\0';
}

static weft_result_t parse_line(const char *path, int lineno, char *line,
                                weft__tune_params_t *p, int *seen)
{
    char key[64], rest[2];
    double v;
    size_t i;

    if (sscanf(line, " %63s %lf %1s", key, &v, rest) != 2)
        return weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s line %d: expected "
                           "'key number', got '%s'", path, lineno, line);
    for (i = 0; i < NFIELDS; i++)
        if (!strcmp(key, fields[i].key))
            break;
    if (i == NFIELDS)
        return weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s line %d: unknown key '%s'",
                           path, lineno, key);
    if (seen[i])
        return weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s line %d: '%s' given twice",
                           path, lineno, key);
    if (!isfinite(v) || v < 0 || (fields[i].positive && v == 0) || v > 1.0)
        return weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s line %d: %s %g is out of "
                           "range", path, lineno, key, v);
    seen[i] = 1;
    *field_of(p, &fields[i]) = v;
    return WEFT_SUCCESS;
}

weft_result_t weft__tune_load(const char *path, weft__tune_params_t *p)
{
    weft__tune_params_t got = *p;
    int seen[NFIELDS] = { 0 }, lineno = 0, header = 0;
    weft_result_t rc = WEFT_SUCCESS;
    char line[256];
    FILE *f;

    if (!path || !*path)
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TUNE_FILE is empty");
    if (!(f = fopen(path, "r")))
        return weft__error(WEFT_ERR_INVALID_ARG, "cannot read the tuning file %s: %s", path,
                           strerror(errno));
    while (rc == WEFT_SUCCESS && fgets(line, sizeof(line), f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s line %d is too long",
                             path, lineno);
            break;
        }
        if (!meaningful(line))
            continue;
        if (!header) {
            if (strcmp(line, TUNE_FILE_HEADER))
                rc = weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s does not start with "
                                 "'%s' (written by weft-bench --tune)", path, TUNE_FILE_HEADER);
            header = 1;
            continue;
        }
        rc = parse_line(path, lineno, line, &got, seen);
    }
    fclose(f);
    if (rc == WEFT_SUCCESS && !header)
        rc = weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s is empty", path);
    for (size_t i = 0; rc == WEFT_SUCCESS && i < NFIELDS; i++)
        if (!seen[i])
            rc = weft__error(WEFT_ERR_INVALID_ARG, "tuning file %s lacks '%s'", path,
                             fields[i].key);
    if (rc == WEFT_SUCCESS)
        *p = got;
    return rc;
}
