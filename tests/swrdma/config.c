/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.c: what the device looks like (WEFT_SWRDMA_CONFIG: ports, link
 * layer, MTU, limits) and how this process misbehaves or is watched
 * (WEFT_SWRDMA_FAULTS, WEFT_SWRDMA_CHECK, WEFT_SWRDMA_REGISTRY). Both are
 * lists of key=value separated by commas, semicolons, blanks or newlines;
 * WEFT_SWRDMA_CONFIG=@FILE reads the list from FILE, where # starts a
 * comment. An unknown key or a bad value is an error, not a default: a
 * test that asked for a small limit must get it.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/swrdma/swrdma.h"

void sw_config_defaults(struct sw_conf *conf)
{
    memset(conf, 0, sizeof(*conf));
    /* Far below a ConnectX (262144 QPs, 4 Mi CQEs) so that a program that
     * never checks its sizes against ibv_query_device meets the limits. */
    conf->lim.max_qp = 256;
    conf->lim.max_qp_wr = 1024;
    conf->lim.max_sge = 16;
    conf->lim.max_cq = 256;
    conf->lim.max_cqe = 4095;
    conf->lim.max_mr = 1024;
    conf->lim.max_pd = 256;
    conf->lim.max_inline = 64;
    conf->lim.max_qp_rd_atom = 16;
    conf->lim.max_qp_init_rd_atom = 16;
    conf->lim.comp_vectors = 4;
    conf->lim.max_mr_size = 1ull << 40;
    conf->nports = 1;
    for (int p = 0; p < SW_MAX_PORTS; p++) {
        conf->port[p].link_layer = IBV_LINK_LAYER_ETHERNET;
        conf->port[p].active_mtu = 0;
        conf->port[p].max_mtu = IBV_MTU_4096;
    }
}

static int parse_mtu(const char *v, uint32_t *out)
{
    static const unsigned bytes[] = { 256, 512, 1024, 2048, 4096 };
    unsigned long n = strtoul(v, NULL, 10);
    for (unsigned i = 0; i < 5; i++)
        if (n == bytes[i]) {
            *out = IBV_MTU_256 + i;
            return 0;
        }
    return -1;
}

static int parse_link(const char *v, uint32_t *out)
{
    if (!strcmp(v, "roce") || !strcmp(v, "eth") || !strcmp(v, "ethernet"))
        *out = IBV_LINK_LAYER_ETHERNET;
    else if (!strcmp(v, "ib") || !strcmp(v, "infiniband"))
        *out = IBV_LINK_LAYER_INFINIBAND;
    else
        return -1;
    return 0;
}

static int parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 0);
    if (errno || end == v || *end || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

/* One key=value of WEFT_SWRDMA_CONFIG. */
static int conf_item(struct sw_conf *c, const char *k, const char *v, char *err, size_t errlen)
{
    struct { const char *name; uint32_t *field; uint64_t lo, hi; } lims[] = {
        { "max_qp", &c->lim.max_qp, 1, SW_REG_QPS - 2 },
        { "max_qp_wr", &c->lim.max_qp_wr, 1, 65536 },
        { "max_sge", &c->lim.max_sge, 1, SW_MAX_SGE_CAP },
        { "max_cq", &c->lim.max_cq, 1, 65536 },
        { "max_cqe", &c->lim.max_cqe, 1, (1u << 22) - 1 },
        { "max_mr", &c->lim.max_mr, 1, SW_REG_MRS - 2 },
        { "max_pd", &c->lim.max_pd, 1, 65536 },
        { "max_inline", &c->lim.max_inline, 0, 4096 },
        { "max_rd_atom", &c->lim.max_qp_rd_atom, 0, 255 },
        { "max_init_rd_atom", &c->lim.max_qp_init_rd_atom, 0, 255 },
        { "comp_vectors", &c->lim.comp_vectors, 1, 64 },
    };
    uint64_t n;
    for (size_t i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
        if (strcmp(k, lims[i].name))
            continue;
        if (parse_u64(v, lims[i].lo, lims[i].hi, &n)) {
            snprintf(err, errlen, "%s=%s: want %llu..%llu", k, v,
                     (unsigned long long)lims[i].lo, (unsigned long long)lims[i].hi);
            return -1;
        }
        *lims[i].field = (uint32_t)n;
        return 0;
    }
    if (!strcmp(k, "max_mr_size")) {
        if (parse_u64(v, 4096, UINT64_MAX, &c->lim.max_mr_size))
            goto bad;
        return 0;
    }
    if (!strcmp(k, "ports")) {
        if (parse_u64(v, 1, SW_MAX_PORTS, &n))
            goto bad;
        c->nports = (uint32_t)n;
        return 0;
    }
    if (!strcmp(k, "gids")) {
        if (!strcmp(v, "v2"))
            c->roce_v1 = 0;
        else if (!strcmp(v, "v1v2"))
            c->roce_v1 = 1;
        else
            goto bad;
        return 0;
    }
    /* link, mtu and max_mtu apply to every port; portN.X to port N only */
    int first = 0, last = SW_MAX_PORTS - 1;
    if (!strncmp(k, "port", 4) && isdigit((unsigned char)k[4]) && k[5] == '.') {
        first = last = k[4] - '1';
        if (first < 0 || first >= SW_MAX_PORTS)
            goto bad;
        k += 6;
    }
    uint32_t val;
    if (!strcmp(k, "link")) {
        if (parse_link(v, &val))
            goto bad;
        for (int p = first; p <= last; p++)
            c->port[p].link_layer = val;
        return 0;
    }
    if (!strcmp(k, "mtu") || !strcmp(k, "max_mtu")) {
        if (parse_mtu(v, &val))
            goto bad;
        for (int p = first; p <= last; p++) {
            if (k[0] == 'm' && k[1] == 'a')
                c->port[p].max_mtu = val;
            else
                c->port[p].active_mtu = val;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown key '%s'", k);
    return -1;
bad:
    snprintf(err, errlen, "bad value in %s=%s", k, v);
    return -1;
}

/* Splits TEXT into key=value items and hands each to FN. */
static int for_items(const char *text, int (*fn)(void *, const char *, const char *, char *, size_t),
                     void *arg, char *err, size_t errlen)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* comments run to the end of their line */
    for (char *p = copy; (p = strchr(p, '#'));) {
        while (*p && *p != '\n')
            *p++ = ' ';
    }
    int rc = 0;
    for (char *tok = strtok_r(copy, ",; \t\r\n", &save); tok;
         tok = strtok_r(NULL, ",; \t\r\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "'%s' is not key=value", tok);
            rc = -1;
            break;
        }
        *eq = '\0';
        if ((rc = fn(arg, tok, eq + 1, err, errlen)))
            break;
    }
    free(copy);
    return rc;
}

static int conf_item_cb(void *arg, const char *k, const char *v, char *err, size_t errlen)
{
    return conf_item(arg, k, v, err, errlen);
}

int sw_config_parse(const char *text, struct sw_conf *conf, char *err, size_t errlen)
{
    if (for_items(text, conf_item_cb, conf, err, errlen))
        return -1;
    for (uint32_t p = 0; p < conf->nports; p++)
        if (conf->port[p].active_mtu > conf->port[p].max_mtu) {
            snprintf(err, errlen, "port %u: mtu above max_mtu", p + 1);
            return -1;
        }
    if (conf->lim.max_qp_init_rd_atom > conf->lim.max_qp_rd_atom) {
        snprintf(err, errlen, "max_init_rd_atom above max_rd_atom");
        return -1;
    }
    return 0;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (len < cap - 1)
            break;
        char *bigger = realloc(buf, cap *= 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
        }
        buf = bigger;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

int sw_config_load(struct sw_conf *conf)
{
    sw_config_defaults(conf);
    const char *v = getenv("WEFT_SWRDMA_CONFIG");
    if (!v || !*v)
        return 0;
    char err[256];
    char *text = v[0] == '@' ? read_file(v + 1) : strdup(v);
    if (!text) {
        sw_log("WEFT_SWRDMA_CONFIG: cannot read %s: %m", v + 1);
        return -1;
    }
    int rc = sw_config_parse(text, conf, err, sizeof(err));
    free(text);
    if (rc)
        sw_log("WEFT_SWRDMA_CONFIG: %s", err);
    return rc;
}

static const struct { const char *name; enum ibv_wc_status st; } status_names[] = {
    { "retry_exc", IBV_WC_RETRY_EXC_ERR }, { "rnr_retry_exc", IBV_WC_RNR_RETRY_EXC_ERR },
    { "rem_access", IBV_WC_REM_ACCESS_ERR }, { "rem_op", IBV_WC_REM_OP_ERR },
    { "rem_inv_req", IBV_WC_REM_INV_REQ_ERR }, { "loc_prot", IBV_WC_LOC_PROT_ERR },
    { "loc_len", IBV_WC_LOC_LEN_ERR }, { "loc_qp_op", IBV_WC_LOC_QP_OP_ERR },
    { "general", IBV_WC_GENERAL_ERR }, { "fatal", IBV_WC_FATAL_ERR },
};

static int fault_item(void *arg, const char *k, const char *v, char *err, size_t errlen)
{
    struct sw_faults *f = arg;
    uint64_t n;
    if (!strcmp(k, "fail_wr")) {
        char num[32];
        const char *colon = strchr(v, ':');
        size_t len = colon ? (size_t)(colon - v) : strlen(v);
        if (len >= sizeof(num))
            goto bad;
        memcpy(num, v, len);
        num[len] = '\0';
        if (parse_u64(num, 1, UINT64_MAX, &f->fail_wr))
            goto bad;
        f->fail_status = IBV_WC_RETRY_EXC_ERR;
        if (colon) {
            size_t i;
            for (i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
                if (!strcmp(colon + 1, status_names[i].name))
                    break;
            if (i < sizeof(status_names) / sizeof(status_names[0]))
                f->fail_status = status_names[i].st;
            else if (!parse_u64(colon + 1, 1, IBV_WC_TM_RNDV_INCOMPLETE, &n))
                f->fail_status = (uint32_t)n;
            else
                goto bad;
        }
        return 0;
    }
    if (!strcmp(k, "delay_us")) {
        if (parse_u64(v, 0, 10000000, &n))
            goto bad;
        f->delay_us = (uint32_t)n;
        return 0;
    }
    if (!strcmp(k, "rnr_storm")) {
        if (parse_u64(v, 0, 1000000, &n))
            goto bad;
        f->rnr_storm = (uint32_t)n;
        return 0;
    }
    if (!strcmp(k, "port_down")) {
        /* PORT@MS or PORT@MS+DURATION_MS */
        unsigned port, at, dur = 0;
        int m = sscanf(v, "%u@%u+%u", &port, &at, &dur);
        if (m < 2 || port < 1 || port > SW_MAX_PORTS)
            goto bad;
        f->port_down = port;
        f->port_down_ms = at;
        f->port_up_ms = dur;
        return 0;
    }
    if (!strcmp(k, "lose_after_wr")) {
        if (parse_u64(v, 1, UINT64_MAX, &f->lose_after_wr))
            goto bad;
        return 0;
    }
    if (!strcmp(k, "lose_after_ms")) {
        if (parse_u64(v, 1, 86400000, &n))
            goto bad;
        f->lose_after_ms = (uint32_t)n;
        return 0;
    }
    snprintf(err, errlen, "unknown fault '%s'", k);
    return -1;
bad:
    snprintf(err, errlen, "bad value in %s=%s", k, v);
    return -1;
}

int sw_env_load(struct sw_env *env)
{
    memset(env, 0, sizeof(*env));
    const char *v = getenv("WEFT_SWRDMA_REGISTRY");
    if (v && *v) {
        if (strchr(v, '/'))
            snprintf(env->registry, sizeof(env->registry), "%s", v);
        else
            snprintf(env->registry, sizeof(env->registry), "/dev/shm/%s", v);
    } else {
        snprintf(env->registry, sizeof(env->registry), "/dev/shm/weft-swrdma-%u",
                 (unsigned)getuid());
    }
    env->check = SW_CHECK_WARN;
    v = getenv("WEFT_SWRDMA_CHECK");
    if (v && *v) {
        if (!strcmp(v, "0") || !strcmp(v, "off"))
            env->check = SW_CHECK_OFF;
        else if (!strcmp(v, "abort"))
            env->check = SW_CHECK_ABORT;
        else if (!strcmp(v, "1") || !strcmp(v, "warn"))
            env->check = SW_CHECK_WARN;
        else {
            sw_log("WEFT_SWRDMA_CHECK=%s: want off, warn or abort", v);
            return -1;
        }
    }
    v = getenv("WEFT_SWRDMA_CHECK_LOG");
    if (v)
        snprintf(env->check_log, sizeof(env->check_log), "%s", v);
    v = getenv("WEFT_SWRDMA_VERBOSE");
    env->verbose = v && *v && strcmp(v, "0");
    v = getenv("WEFT_SWRDMA_FAULTS");
    if (v && *v) {
        char err[256];
        if (for_items(v, fault_item, &env->fault, err, sizeof(err))) {
            sw_log("WEFT_SWRDMA_FAULTS: %s", err);
            return -1;
        }
    }
    return 0;
}
