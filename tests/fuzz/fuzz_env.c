/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_env.c: weft's settings from the environment, each through the code
 * that parses it, called directly rather than through weft_init.
 *
 * Input: settings one a line, a byte choosing the variable (its number
 * in fuzz_env_vars.h, modulo their count, so that any byte names one)
 * then its value up to the end of the line. Every parser then reads what
 * it reads of them:
 *   - the rendezvous settings, weft's and the launchers' (RANK, Slurm's,
 *     Open MPI's), through weft__boot_params_resolve, from the input
 *     alone rather than this process's environment;
 *   - the numeric settings of the layers (WEFT_SPIN_US, WEFT_COLL_CHUNK,
 *     ...), WEFT_CUDA_COLL, WEFT_DEBUG and WEFT_DEBUG_SUBSYS, WEFT_ALGO,
 *     WEFT_TRANSPORTS, WEFT_HOSTID, WEFT_TUNE and WEFT_TUNE_ADAPT, set in
 *     the environment as weft_init finds them;
 *   - the transports' numeric parameters (weft__tp_param_long, with the
 *     ranges the transports give it), WEFT_SOCKET_IFNAME, and where those
 *     transports are built WEFT_IB_HCA and cuda-ipc's WEFT_CUDA_DEVICE
 *     and WEFT_CUDA_MEMOPS.
 * WEFT_TUNE_FILE and WEFT_TOPO_FILE have harnesses of their own; the
 * variables that name a library or folder to open, or a log file to
 * write, are left out: their values are paths, not parsed.
 *
 * Properties: a setting is taken within its documented range, exactly as
 * written (a number means that number: no sign, no overflow), or refused
 * with WEFT_ERR_INVALID_ARG and a message naming the variable.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/api/coll_device.h"
#include "core/base/error.h"
#include "core/base/log.h"
#include "core/boot/init_method.h"
#include "core/boot/store.h"
#include "core/coll/algo/algo.h"
#include "core/coll/shared/shared.h"
#include "core/progress/progress.h"
#include "core/transport/plugin.h"
#include "core/tune/tune.h"
#include "plugins/common/tp.h"
#include "plugins/sockets/sockets.h"
#include "topo/topo.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_env_vars.h"
#ifdef WEFT_FUZZ_IB_VERBS
#include "plugins/ib-verbs/ibv.h"
#endif
#ifdef WEFT_FUZZ_CUDA_IPC
#include "plugins/cuda-ipc/cuda_ipc.h"
#endif

static const char *values[NVARS]; /* this input's, NULL: unset */

static const char *value_of(const char *name)
{
    for (size_t i = 0; i < NVARS; i++)
        if (!strcmp(fuzz_env_name(i), name))
            return values[i];
    return NULL;
}

static void require_names(weft_result_t rc, const char *text, const char *name)
{
    FUZZ_REQUIRE(rc == WEFT_ERR_INVALID_ARG, "%s refused with %d", name, rc);
    FUZZ_REQUIRE(strstr(text, name), "the refusal of %s does not name it: %s", name, text);
}

/* ------------------------------------------------------------ rendezvous */

static void rendezvous(void)
{
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;
    weft__boot_params_t bp;
    weft_result_t rc;

    attr.init_method = value_of("attr.init_method");
    rc = weft__boot_params_resolve(&attr, value_of, &bp);
    if (rc != WEFT_SUCCESS) {
        const char *msg = weft__get_error();
        int named = strstr(msg, "init method") != NULL;

        FUZZ_REQUIRE(rc == WEFT_ERR_INVALID_ARG, "rendezvous settings refused with %d", rc);
        for (size_t i = 1; i < FIRST_ENV && !named; i++)
            named = strstr(msg, env_names[i]) != NULL;
        FUZZ_REQUIRE(named, "the refusal names no variable: %s", msg);
        return;
    }
    FUZZ_REQUIRE(bp.rank >= 0 && bp.rank < bp.size && bp.size <= WEFT__STORE_MAX_RANKS,
                 "rank %d of %d", bp.rank, bp.size);
    FUZZ_REQUIRE(bp.local_rank >= -1 && (bp.local_size == -1 || bp.local_size >= 1) &&
                 (bp.local_rank < 0 || bp.local_size < 1 || bp.local_rank < bp.local_size),
                 "local rank %d of %d", bp.local_rank, bp.local_size);
    FUZZ_REQUIRE(bp.timeout_ms > 0, "timeout %d ms", bp.timeout_ms);
    FUZZ_REQUIRE(bp.store_external == 0 || bp.store_external == 1, "store_external %d",
                 bp.store_external);
    FUZZ_REQUIRE(strnlen(bp.token, sizeof(bp.token)) < sizeof(bp.token) &&
                 strnlen(bp.source, sizeof(bp.source)) < sizeof(bp.source),
                 "a string runs past its field");
    if (bp.kind == WEFT__BOOT_TCP) {
        FUZZ_REQUIRE(bp.host[0] && strnlen(bp.host, sizeof(bp.host)) < sizeof(bp.host),
                     "empty or unterminated host");
        FUZZ_REQUIRE(bp.port >= 0 && bp.port <= 65535, "port %d", bp.port);
    } else {
        FUZZ_REQUIRE(bp.kind == WEFT__BOOT_FILE && bp.path[0] == '/' &&
                     strnlen(bp.path, sizeof(bp.path)) < sizeof(bp.path),
                     "kind %d, path '%.40s'", bp.kind, bp.path);
    }
}

/* ------------------------------------------------------------ numbers */

/* What an unsigned setting of the environment means when it is taken: a
 * whole number without sign that fits; -1 when it is not one. */
static int as_unsigned(const char *v, unsigned long long *out)
{
    char *end;

    errno = 0;
    *out = strtoull(v, &end, 0);
    return *v && !*end && !strchr(v, '-') && errno != ERANGE ? 0 : -1;
}

/* A numeric setting weft__env_ullong read for the layers: taken as
 * written and within [lo, hi], or refused naming it. got: what the layer
 * holds now, given that the parse succeeded. */
static void check_number(const char *name, weft_result_t rc, unsigned long long lo,
                         unsigned long long hi, unsigned long long got, unsigned long long def)
{
    const char *v = value_of(name);
    unsigned long long want = def;

    if (rc != WEFT_SUCCESS) {
        require_names(rc, weft__get_error(), name);
        return;
    }
    if (v) {
        FUZZ_REQUIRE(as_unsigned(v, &want) == 0, "%s=\"%s\" taken, but it is not a number", name,
                     v);
        FUZZ_REQUIRE(want >= lo && want <= hi, "%s=%s taken outside %llu..%llu", name, v, lo,
                     hi);
    }
    FUZZ_REQUIRE(got == want, "%s=%s taken as %llu", name, v ? v : "(unset)", got);
}

static void numbers(void)
{
    weft_result_t rc;

    rc = weft__progress_settings_parse();
    check_number("WEFT_SPIN_US", rc, 0, 1000000,
                 (unsigned long long)weft__progress_spin_us(), (unsigned long long)-1);
    rc = weft__algo_settings_parse();
    if (rc != WEFT_SUCCESS && !strstr(weft__get_error(), "WEFT_COLL_CHUNK")) {
        require_names(rc, weft__get_error(), "WEFT_ALLTOALL_THROTTLE");
    } else {
        check_number("WEFT_COLL_CHUNK", rc, 4096, SIZE_MAX / 2, weft__algo_chunk_bytes(),
                     256 * 1024);
        if (rc == WEFT_SUCCESS)
            check_number("WEFT_ALLTOALL_THROTTLE", rc, 0, INT_MAX,
                         (unsigned long long)weft__algo_alltoall_window(), 32);
    }
    rc = weft__shared_settings_parse();
    /* Unset, the threshold is the cache's size: 1 byte here. */
    check_number("WEFT_STREAM_THRESHOLD", rc, 0, ULLONG_MAX - 1, weft__shared_stream_threshold(1),
                 1);
    rc = weft__coll_device_settings_parse();
    if (rc != WEFT_SUCCESS) {
        const char *mode = value_of("WEFT_CUDA_COLL");

        if (mode && *mode && strcmp(mode, "ipc") && strcmp(mode, "stage"))
            require_names(rc, weft__get_error(), "WEFT_CUDA_COLL");
        else
            require_names(rc, weft__get_error(), "WEFT_CUDA_COLL_MIN");
    } else {
        const char *mode = value_of("WEFT_CUDA_COLL"), *min = value_of("WEFT_CUDA_COLL_MIN");
        unsigned long long v;

        FUZZ_REQUIRE(!mode || !*mode || !strcmp(mode, "ipc") || !strcmp(mode, "stage"),
                     "WEFT_CUDA_COLL=%s taken", mode);
        FUZZ_REQUIRE(!min || as_unsigned(min, &v) == 0,
                     "WEFT_CUDA_COLL_MIN=\"%s\" taken, but it is not a number", min);
    }
}

/* ------------------------------------------------------------ words and lists */

static void debug_settings(void)
{
    static const char *const levels[] = { "NONE", "WARN", "INFO", "TRACE" };
    const char *v = value_of("WEFT_DEBUG"), *s = value_of("WEFT_DEBUG_SUBSYS");
    int want = WEFT__LOG_WARN, err = dup(2), null = open("/dev/null", O_WRONLY);

    /* A value it does not know is said on stderr, for every input. */
    if (err >= 0 && null >= 0)
        dup2(null, 2);
    weft__log_reload();
    if (err >= 0) {
        dup2(err, 2);
        close(err);
    }
    if (null >= 0)
        close(null);
    for (int l = 0; v && l < 4; l++)
        if (!strcasecmp(v, levels[l]))
            want = l;
    FUZZ_REQUIRE(weft__log_level == want, "WEFT_DEBUG=%s gave level %d", v ? v : "(unset)",
                 weft__log_level);
    if (!s || !*s)
        FUZZ_REQUIRE(weft__log_subsys == WEFT__SUBSYS_ALL, "WEFT_DEBUG_SUBSYS unset gave %#x",
                     weft__log_subsys);
    /* Back to quiet for the rest. */
    setenv("WEFT_DEBUG", "NONE", 1);
    unsetenv("WEFT_DEBUG_SUBSYS");
    weft__log_reload();
}

static void transports_filter(void)
{
    const char *v = value_of("WEFT_TRANSPORTS");
    weft__transport_filter_t f;
    weft_result_t rc = weft__transport_filter_parse(v, &f);

    if (rc != WEFT_SUCCESS) {
        require_names(rc, weft__get_error(), "WEFT_TRANSPORTS");
        return;
    }
    FUZZ_REQUIRE(f.n >= 0 && f.n <= WEFT__PLUGIN_MAX, "%d names", f.n);
    FUZZ_REQUIRE(f.deny == (v && v[0] == '^'), "deny %d for '%s'", f.deny, v ? v : "");
    for (int i = 0; i < f.n; i++) {
        FUZZ_REQUIRE(weft__plugin_name_valid(f.names[i], strlen(f.names[i])), "name '%s'",
                     f.names[i]);
        FUZZ_REQUIRE(weft__transport_filter_allows(&f, f.names[i]) == !f.deny,
                     "'%s' listed but not %s", f.names[i], f.deny ? "denied" : "allowed");
        for (int j = 0; j < i; j++)
            FUZZ_REQUIRE(strcmp(f.names[i], f.names[j]), "'%s' listed twice", f.names[i]);
    }
}

static void words(void)
{
    weft_result_t rc = weft__tune_algo_parse(value_of("WEFT_ALGO"));
    weft__tune_params_t p;
    char buf[WEFT__HOSTID_MAX], why[512];
    const char *v;
    int adapt = -1;
    weft__tune_mode_t mode;

    if (rc != WEFT_SUCCESS)
        require_names(rc, weft__get_error(), "WEFT_ALGO");
    weft__tune_algo_parse(NULL); /* no choice forced for the inputs after */
    transports_filter();

    rc = weft__topo_host_id(buf, sizeof(buf));
    v = value_of("WEFT_HOSTID");
    if (rc != WEFT_SUCCESS)
        require_names(rc, weft__get_error(), "WEFT_HOSTID");
    else if (v && *v)
        FUZZ_REQUIRE(!strcmp(buf, v), "WEFT_HOSTID=%s gave host id %s", v, buf);

    weft__tune_defaults(&p);
    why[0] = '\0';
    mode = weft__tune_mode(0, &p, &adapt, why, sizeof(why));
    v = value_of("WEFT_TUNE_ADAPT");
    if (mode == WEFT__TUNE_MODE_ERROR) {
        FUZZ_REQUIRE(strstr(why, "WEFT_TUNE_ADAPT") || strstr(why, "WEFT_TUNE"),
                     "the refusal names no variable: %s", why);
        return;
    }
    FUZZ_REQUIRE(!v || !*v || !strcmp(v, "0") || !strcmp(v, "1"), "WEFT_TUNE_ADAPT=%s taken", v);
    FUZZ_REQUIRE(adapt == !(v && !strcmp(v, "0")), "WEFT_TUNE_ADAPT=%s gave %d", v ? v : "",
                 adapt);
    v = value_of("WEFT_TUNE");
    FUZZ_REQUIRE(mode == (v && !strcmp(v, "0") ? WEFT__TUNE_MODE_DEFAULTS
                                                : WEFT__TUNE_MODE_MEASURE),
                 "WEFT_TUNE=%s gave mode %d", v ? v : "(unset)", mode);
    FUZZ_REQUIRE(!v || !*v || !strcmp(v, "0") || !strcmp(v, "1"), "WEFT_TUNE=%s taken", v);
}

/* ------------------------------------------------------------ transports */

static char tp_error[600];

static void tp_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(tp_error, sizeof(tp_error), fmt, ap);
    va_end(ap);
}

static const char *tp_get_param(const char *name)
{
    return value_of(name);
}

static void transport_numbers(void)
{
    weft_transport_core_t core;
    struct tp_ctx tp;

    memset(&core, 0, sizeof(core));
    core.struct_size = sizeof(core);
    core.set_error = tp_set_error;
    core.get_param = tp_get_param;
    memset(&tp, 0, sizeof(tp));
    tp.core = &core;
    tp.name = "fuzz";
    for (size_t i = 0; i <= NTP; i++) {
        const struct tp_param *t = i < NTP ? &tp_params[i] : &fuzz_tp_timeout;
        const char *v = value_of(t->name);
        long got = 12345, want = t->def;
        char *end;

        tp_error[0] = '\0';
        if (weft__tp_param_long(&tp, t->name, t->lo, t->hi, t->def, &got) != 0) {
            FUZZ_REQUIRE(strstr(tp_error, t->name), "the refusal of %s does not name it: %s",
                         t->name, tp_error);
            continue;
        }
        if (v && *v) {
            errno = 0;
            want = strtol(v, &end, 10);
            FUZZ_REQUIRE(!errno && *end == '\0', "%s=\"%s\" taken, but it is not a number",
                         t->name, v);
            FUZZ_REQUIRE(want >= t->lo && want <= t->hi, "%s=%s taken outside %ld..%ld",
                         t->name, v, t->lo, t->hi);
        }
        FUZZ_REQUIRE(got == want, "%s=%s taken as %ld", t->name, v ? v : "(unset)", got);
    }
}

static void socket_ifname(void)
{
    static const char *const ifnames[] = { "lo", "eth0", "eth1", "ib0", "docker0", "enp1s0" };
    struct sockaddr_in a4 = { .sin_family = AF_INET };
    struct ifaddrs ifs[6];
    const char *spec = value_of("WEFT_SOCKET_IFNAME");
    const struct ifaddrs *pick;

    for (int i = 0; i < 6; i++) {
        memset(&ifs[i], 0, sizeof(ifs[i]));
        ifs[i].ifa_name = (char *)ifnames[i];
        ifs[i].ifa_addr = (struct sockaddr *)&a4;
        ifs[i].ifa_flags = IFF_UP | IFF_RUNNING | (i == 0 ? IFF_LOOPBACK : 0);
        ifs[i].ifa_next = i < 5 ? &ifs[i + 1] : NULL;
    }
    pick = weft__sock_iface_pick(ifs, spec);
    if (pick) {
        FUZZ_REQUIRE(pick >= ifs && pick < ifs + 6, "picked an interface not listed");
        FUZZ_REQUIRE(!spec || !*spec || weft__sock_ifname_match(spec, pick->ifa_name),
                     "WEFT_SOCKET_IFNAME=%s picked %s", spec, pick->ifa_name);
    } else {
        for (int i = 0; i < 6; i++)
            FUZZ_REQUIRE(spec && *spec && !weft__sock_ifname_match(spec, ifnames[i]),
                         "WEFT_SOCKET_IFNAME=%s picked none, but %s matches", spec ? spec : "",
                         ifnames[i]);
    }
}

#ifdef WEFT_FUZZ_IB_VERBS
static void ib_hca(void)
{
    const char *v = value_of("WEFT_IB_HCA");
    struct wib_hca_spec s;
    char why[256] = "";

    if (weft__ibv_hca_parse(v, &s, why, sizeof(why)) != 0) {
        FUZZ_REQUIRE(why[0], "WEFT_IB_HCA=%s refused without a reason", v);
        return;
    }
    FUZZ_REQUIRE(s.n >= 0 && s.n <= WIB_HCA_MAX, "%d entries", s.n);
    for (int i = 0; i < s.n; i++) {
        FUZZ_REQUIRE(s.e[i].name[0] && strnlen(s.e[i].name, WIB_DEVNAME_MAX) < WIB_DEVNAME_MAX,
                     "entry %d: empty or unterminated name", i);
        FUZZ_REQUIRE(s.e[i].port >= 0 && s.e[i].port <= 255, "entry %d: port %d", i,
                     s.e[i].port);
        FUZZ_REQUIRE(weft__ibv_hca_match(&s, s.e[i].name, s.e[i].port ? s.e[i].port : 1) ==
                     !s.exclude, "entry %d: %s does not select itself", i, s.e[i].name);
    }
}
#endif

#ifdef WEFT_FUZZ_CUDA_IPC
static void cuda_ipc(void)
{
    const char *dev = value_of("WEFT_CUDA_DEVICE"), *memops = value_of("WEFT_CUDA_MEMOPS");
    char why[256] = "";
    int ordinal = -1, on = -1;

    if (weft__cuda_ipc_param_device(dev, 4, &ordinal, why, sizeof(why)) != 0)
        FUZZ_REQUIRE(strstr(why, "WEFT_CUDA_DEVICE"), "refusal: %s", why);
    else
        FUZZ_REQUIRE(ordinal >= 0 && ordinal < 4, "WEFT_CUDA_DEVICE=%s gave %d", dev, ordinal);
    why[0] = '\0';
    if (weft__cuda_ipc_param_memops(memops, &on, why, sizeof(why)) != 0)
        FUZZ_REQUIRE(strstr(why, "WEFT_CUDA_MEMOPS"), "refusal: %s", why);
    else
        FUZZ_REQUIRE(on == 0 || on == 1, "WEFT_CUDA_MEMOPS=%s gave %d", memops, on);
}
#endif

/* ------------------------------------------------------------ the input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    char *copy = malloc(size + 1), *p = copy, *end;

    FUZZ_REQUIRE(copy != NULL, "out of memory");
    if (!quiet++)
        weft_fuzz_quiet();
    memcpy(copy, data, size);
    copy[size] = '\0';
    end = copy + size;
    memset(values, 0, sizeof(values));
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t i = (unsigned char)*p % NVARS;

        if (nl)
            *nl = '\0';
        values[i] = p + 1;
        p = nl ? nl + 1 : end;
    }
    for (size_t i = FIRST_ENV; i < FIRST_TRANSPORT; i++) {
        if (values[i])
            setenv(env_names[i], values[i], 1);
        else
            unsetenv(env_names[i]);
    }
    unsetenv("WEFT_TUNE_FILE");

    rendezvous();
    numbers();
    debug_settings();
    words();
    transport_numbers();
    socket_ifname();
#ifdef WEFT_FUZZ_IB_VERBS
    ib_hca();
#endif
#ifdef WEFT_FUZZ_CUDA_IPC
    cuda_ipc();
#endif
    free(copy);
    return 0;
}
