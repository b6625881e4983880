/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin_filter.c: plugin names and the WEFT_TRANSPORTS list (plugin.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "core/base/error.h"
#include "core/transport/plugin.h"

/* Quoted in error messages; a longer list is cut. */
#define SPEC_QUOTE_MAX 200

int weft__plugin_name_valid(const char *name, size_t len)
{
    if (!name || len == 0 || len >= WEFT__PLUGIN_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];

        /* Not isalnum(): the locale must not widen what a file may be called. */
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

weft_result_t weft__transport_filter_parse(const char *spec, weft__transport_filter_t *out)
{
    weft__transport_filter_t f;
    const char *p;

    if (!out)
        return weft__error(WEFT_ERR_INVALID_ARG, "transport filter: out is NULL");
    memset(&f, 0, sizeof(f));
    if (!spec || !*spec) {
        *out = f;
        return WEFT_SUCCESS;
    }
    p = spec;
    if (*p == '^') {
        f.deny = 1;
        p++;
    }
    if (!*p)
        return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TRANSPORTS=\"%s\": no names after '^' "
                           "(write the transports to exclude, e.g. ^sockets)", spec);
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int dup = 0;

        if (len == 0)
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TRANSPORTS=\"%.*s\": empty name at "
                               "character %d (names are separated by single commas)",
                               SPEC_QUOTE_MAX, spec, (int)(p - spec) + 1);
        if (!weft__plugin_name_valid(p, len))
            return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TRANSPORTS=\"%.*s\": \"%.*s\" is not "
                               "a transport name (1 to %d letters, digits, '-' or '_'%s)",
                               SPEC_QUOTE_MAX, spec, (int)(len < 64 ? len : 64), p,
                               WEFT__PLUGIN_NAME_MAX - 1,
                               p != spec && memchr(p, '^', len) ? "; '^' may only start the list"
                                                                 : "");
        for (int i = 0; i < f.n; i++)
            dup |= strlen(f.names[i]) == len && !memcmp(f.names[i], p, len);
        if (!dup) {
            if (f.n == WEFT__PLUGIN_MAX)
                return weft__error(WEFT_ERR_INVALID_ARG, "WEFT_TRANSPORTS=\"%.*s\": more than "
                                   "%d names", SPEC_QUOTE_MAX, spec, WEFT__PLUGIN_MAX);
            memcpy(f.names[f.n], p, len);
            f.names[f.n][len] = '\0';
            f.n++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    *out = f;
    return WEFT_SUCCESS;
}

int weft__transport_filter_allows(const weft__transport_filter_t *f, const char *name)
{
    int listed = 0;

    if (!f->deny && f->n == 0)
        return 1;
    for (int i = 0; i < f->n && !listed; i++)
        listed = !strcmp(f->names[i], name);
    return f->deny ? !listed : listed;
}

int weft__transport_filter_forces(const weft__transport_filter_t *f, const char *name)
{
    return !f->deny && f->n > 0 && weft__transport_filter_allows(f, name);
}
