/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_pmix.c: joining a job started by a PMIx launcher (Open MPI's
 * mpirun, prterun, srun --mpi=pmix): rank and size come from PMIx, and the
 * address records travel through PMIx put / fence / get instead of weft's
 * own store. Later key-value exchanges (the transports' out-of-band set-up)
 * go through PMIx's publish and lookup.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/boot/bootstrap.h"
#include "core/base/error.h"
#include "core/base/log.h"

#ifdef WEFT_HAVE_PMIX

#include <pmix.h>

#define PMIX_KEY_ADDR "weft.addr"
/* Out-of-band keys live under this prefix among the job's published ones. */
#define PMIX_KEY_OOB "weft.oob."
/* A lookup that finds nothing is asked again, at first soon, then at most
 * every 20 ms: PMIx's own wait (PMIX_WAIT with PMIX_TIMEOUT) never times
 * out under Open MPI 4's mpirun, and a set-up exchange must. */
#define PMIX_LOOKUP_FIRST_US 200
#define PMIX_LOOKUP_MAX_US 20000

static pmix_proc_t pmix_self;
static int pmix_refs;

weft_result_t weft__pmix_probe(int *rank, int *size)
{
    pmix_proc_t wild;
    pmix_value_t *val = NULL;
    pmix_status_t rc;

    if (pmix_refs == 0) {
        rc = PMIx_Init(&pmix_self, NULL, 0);
        if (rc != PMIX_SUCCESS)
            return weft__error(WEFT_ERR_BOOTSTRAP, "PMIx_Init failed: %s",
                               PMIx_Error_string(rc));
    }
    pmix_refs++;
    PMIX_PROC_CONSTRUCT(&wild);
    PMIX_LOAD_PROCID(&wild, pmix_self.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || !val) {
        weft__pmix_release();
        return weft__error(WEFT_ERR_BOOTSTRAP, "PMIx has no job size: %s",
                           PMIx_Error_string(rc));
    }
    *rank = (int)pmix_self.rank;
    *size = (int)val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    return WEFT_SUCCESS;
}

void weft__pmix_release(void)
{
    if (pmix_refs > 0 && --pmix_refs == 0)
        PMIx_Finalize(NULL, 0);
}

weft_result_t weft__pmix_exchange(const weft__boot_params_t *p, const void *blob, size_t len,
                                  weft__bootstrap_t *b)
{
    pmix_value_t value, *got = NULL;
    pmix_info_t info[2];
    bool collect = true;
    int timeout_s = (p->timeout_ms + 999) / 1000;
    size_t total = 0, o;
    pmix_status_t rc;
    char *all;

    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = (char *)blob;
    value.data.bo.size = len;
    rc = PMIx_Put(PMIX_GLOBAL, PMIX_KEY_ADDR, &value);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS)
        return weft__error(WEFT_ERR_BOOTSTRAP, "PMIx put of the address record failed: %s",
                           PMIx_Error_string(rc));
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout_s, PMIX_INT);
    rc = PMIx_Fence(NULL, 0, info, 2);
    if (rc != PMIX_SUCCESS)
        return weft__error(rc == PMIX_ERR_TIMEOUT ? WEFT_ERR_TIMEOUT : WEFT_ERR_BOOTSTRAP,
                           "PMIx fence of the job's %d ranks failed after at most %d s: %s",
                           p->size, timeout_s, PMIx_Error_string(rc));

    b->lens = calloc((size_t)p->size, sizeof(size_t));
    b->offsets = calloc((size_t)p->size, sizeof(size_t));
    if (!b->lens || !b->offsets)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate %d address records", p->size);
    all = NULL;
    for (int r = 0; r < p->size; r++) {
        pmix_proc_t proc;
        char *grown;

        PMIX_PROC_CONSTRUCT(&proc);
        PMIX_LOAD_PROCID(&proc, pmix_self.nspace, (pmix_rank_t)r);
        rc = PMIx_Get(&proc, PMIX_KEY_ADDR, NULL, 0, &got);
        if (rc != PMIX_SUCCESS || !got || got->type != PMIX_BYTE_OBJECT) {
            free(all);
            return weft__error(WEFT_ERR_BOOTSTRAP, "PMIx has no address record of rank %d: %s",
                               r, PMIx_Error_string(rc));
        }
        grown = realloc(all, total + got->data.bo.size + 1);
        if (!grown) {
            PMIX_VALUE_RELEASE(got);
            free(all);
            return weft__error(WEFT_ERR_NO_MEMORY, "cannot store the address records");
        }
        all = grown;
        memcpy(all + total, got->data.bo.bytes, got->data.bo.size);
        b->offsets[r] = total;
        b->lens[r] = got->data.bo.size;
        total += got->data.bo.size;
        PMIX_VALUE_RELEASE(got);
    }
    b->blobs = all;
    /* The namespace names the job; keep what is safe in a file name. */
    o = 0;
    for (const char *c = pmix_self.nspace; *c && o + 1 < sizeof(b->job_id); c++)
        b->job_id[o++] = ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                          (*c >= '0' && *c <= '9') || *c == '-') ? *c : '_';
    b->job_id[o] = '\0';
    return WEFT_SUCCESS;
}

static weft_result_t oob_key(const char *key, char *out, size_t cap)
{
    if (!key || !*key || strlen(PMIX_KEY_OOB) + strlen(key) >= cap ||
        strlen(PMIX_KEY_OOB) + strlen(key) > PMIX_MAX_KEYLEN)
        return weft__error(WEFT_ERR_INVALID_ARG, "out-of-band key '%.64s%s' is empty or longer "
                           "than PMIx allows", key ? key : "", key && strlen(key) > 64 ? "..." : "");
    snprintf(out, cap, "%s%s", PMIX_KEY_OOB, key);
    return WEFT_SUCCESS;
}

weft_result_t weft__pmix_put(const char *key, const void *val, size_t len)
{
    char full[PMIX_MAX_KEYLEN + 1];
    pmix_byte_object_t bo;
    pmix_info_t info;
    pmix_status_t rc;
    weft_result_t wrc = oob_key(key, full, sizeof(full));

    if (wrc != WEFT_SUCCESS)
        return wrc;
    bo.bytes = (char *)val;
    bo.size = len;
    PMIX_INFO_CONSTRUCT(&info);
    PMIX_INFO_LOAD(&info, full, &bo, PMIX_BYTE_OBJECT);
    rc = PMIx_Publish(&info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS)
        return weft__error(WEFT_ERR_BOOTSTRAP, "PMIx publish of out-of-band key '%s' failed: %s",
                           key, PMIx_Error_string(rc));
    return WEFT_SUCCESS;
}

static int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

weft_result_t weft__pmix_get(const char *key, void *val, size_t cap, size_t *len, int timeout_ms)
{
    int64_t deadline = now_us() + (int64_t)timeout_ms * 1000;
    long pause_us = PMIX_LOOKUP_FIRST_US;
    pmix_status_t rc;
    pmix_pdata_t pd;
    weft_result_t wrc;

    PMIX_PDATA_CONSTRUCT(&pd);
    if ((wrc = oob_key(key, pd.key, sizeof(pd.key))) != WEFT_SUCCESS)
        return wrc;
    for (;;) {
        struct timespec pause;

        rc = PMIx_Lookup(&pd, 1, NULL, 0);
        if (rc == PMIX_SUCCESS)
            break;
        if (rc != PMIX_ERR_NOT_FOUND)
            return weft__error(WEFT_ERR_BOOTSTRAP, "PMIx lookup of out-of-band key '%s' "
                               "failed: %s", key, PMIx_Error_string(rc));
        if (now_us() >= deadline)
            return weft__error(WEFT_ERR_TIMEOUT, "out-of-band key '%s' was not published "
                               "within %d ms", key, timeout_ms);
        pause.tv_sec = 0;
        pause.tv_nsec = pause_us * 1000;
        nanosleep(&pause, NULL);
        pause_us = pause_us * 2 > PMIX_LOOKUP_MAX_US ? PMIX_LOOKUP_MAX_US : pause_us * 2;
    }
    if (pd.value.type != PMIX_BYTE_OBJECT) {
        wrc = weft__error(WEFT_ERR_BOOTSTRAP, "out-of-band key '%s' holds no bytes", key);
    } else if (pd.value.data.bo.size > cap) {
        wrc = weft__error(WEFT_ERR_TRUNCATED, "the value of out-of-band key '%s' has %zu bytes, "
                          "the buffer %zu", key, pd.value.data.bo.size, cap);
    } else {
        if (pd.value.data.bo.size)
            memcpy(val, pd.value.data.bo.bytes, pd.value.data.bo.size);
        *len = pd.value.data.bo.size;
        wrc = WEFT_SUCCESS;
    }
    PMIX_PDATA_DESTRUCT(&pd);
    return wrc;
}

#endif /* WEFT_HAVE_PMIX */
