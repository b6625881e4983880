/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin.c: the plugin loader against real shared objects of the
 * build tree: the example transport (which must load and move messages
 * to its own rank) and the broken plugins of tests/plugins/ (each of which
 * must be skipped with its own state and reason, without harm). Also the
 * WEFT_TRANSPORTS parser, shadowing, folder order and the error listing.
 *
 * The log goes to a file (WEFT_DEBUG_FILE) so that tests can check what
 * the loader reports, and plugins get a fake core that records what they
 * log through it.
 */
#include "config.h"

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/transport/plugin.h"
#include "tests/plugins/broken.h"

/* LT_OBJDIR is libtool's ".libs/", with its slash. */
#define EXAMPLE_DIR WEFT_TEST_BUILDDIR "/plugins/example/" LT_OBJDIR
#define BROKEN_DIR WEFT_TEST_BUILDDIR "/tests/plugins/" LT_OBJDIR

/* ------------------------------------------------------------ fake core */

/* What plugins logged through the core, one "plugin: text" per line. */
static char plugin_log[16384];

static void fake_log(int level, const char *plugin, const char *fmt, ...)
{
    size_t o = strlen(plugin_log);
    va_list ap;

    if (o + 2 >= sizeof(plugin_log))
        return;
    o += (size_t)snprintf(plugin_log + o, sizeof(plugin_log) - o, "%s: ", plugin);
    va_start(ap, fmt);
    if (o < sizeof(plugin_log))
        o += (size_t)vsnprintf(plugin_log + o, sizeof(plugin_log) - o, fmt, ap);
    va_end(ap);
    if (o + 1 < sizeof(plugin_log))
        strcat(plugin_log, "\n");
}

/* The loader reads a refusal's reason from weft_last_error(), as the real
 * core's set_error sets it. */
static void fake_set_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    weft__set_error_v(fmt, ap);
    va_end(ap);
}

static const char *fake_get_param(const char *name)
{
    return getenv(name);
}

static weft_result_t fake_oob_put(void *core_ctx, const char *key, const void *val, size_t len)
{
    return WEFT_ERR_UNSUPPORTED;
}

static weft_result_t fake_oob_get(void *core_ctx, const char *key, void *val, size_t cap,
                                  size_t *len, int timeout_ms)
{
    return WEFT_ERR_UNSUPPORTED;
}

static const weft_transport_core_t fake_core = {
    .struct_size = sizeof(weft_transport_core_t),
    .rank = 0,
    .size = 1,
    .job_id = "",
    .master_addr = NULL,
    .log = fake_log,
    .set_error = fake_set_error,
    .get_param = fake_get_param,
    .oob_put = fake_oob_put,
    .oob_get = fake_oob_get,
    .core_ctx = NULL,
};

/* ------------------------------------------------------------- helpers */

static char log_path[256];
static char tmp_root[256];

/* Sends the weft log at level (and subsystems) to a fresh log file. */
static void log_capture(const char *level, const char *subsys)
{
    FILE *f = fopen(log_path, "w");

    assert_non_null(f);
    fclose(f);
    setenv("WEFT_DEBUG_FILE", log_path, 1);
    setenv("WEFT_DEBUG", level, 1);
    if (subsys)
        setenv("WEFT_DEBUG_SUBSYS", subsys, 1);
    else
        unsetenv("WEFT_DEBUG_SUBSYS");
    weft__log_reload();
}

/* The log file's text; free it. */
static char *log_text(void)
{
    FILE *f = fopen(log_path, "r");
    char *text = calloc(1, 1 << 20);
    size_t n;

    assert_non_null(f);
    assert_non_null(text);
    n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* 1 when some line of text holds both a and b. */
static int line_with(const char *text, const char *a, const char *b)
{
    const char *p = text;

    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *line = strndup(p, len);
        int hit = line && strstr(line, a) && strstr(line, b);

        free(line);
        if (hit)
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

/* dir as the loader lists it: without the trailing slash. */
static const char *no_slash(const char *dir)
{
    static char buf[4096];
    size_t len = strlen(dir);

    while (len > 1 && dir[len - 1] == '/')
        len--;
    snprintf(buf, sizeof(buf), "%.*s", (int)len, dir);
    return buf;
}

static const weft__plugin_candidate_t *find(const weft__plugin_set_t *set, const char *name)
{
    for (int i = 0; i < set->ncandidates; i++)
        if (!strcmp(set->candidates[i].name, name))
            return &set->candidates[i];
    return NULL;
}

static const weft__plugin_candidate_t *find_path(const weft__plugin_set_t *set,
                                                 const char *path)
{
    for (int i = 0; i < set->ncandidates; i++)
        if (!strcmp(set->candidates[i].path, path))
            return &set->candidates[i];
    return NULL;
}

static weft__plugin_t *loaded(weft__plugin_set_t *set, const char *name)
{
    for (int i = 0; i < set->n; i++)
        if (!strcmp(set->plugins[i].name, name))
            return &set->plugins[i];
    return NULL;
}

static weft__plugin_set_t *set_new(void)
{
    weft__plugin_set_t *set = calloc(1, sizeof(*set));

    assert_non_null(set);
    return set;
}

static void set_free(weft__plugin_set_t *set)
{
    weft__plugins_unload(set);
    free(set);
}

/* Loads with only the given folders (no installed plugins can interfere). */
static weft_result_t open_only(const char *path, const char *transports,
                               const weft_transport_core_t *core, weft__plugin_set_t *set)
{
    weft__plugin_config_t cfg = { .path = path, .transports = transports, .no_default_dirs = 1 };

    return weft__plugins_open(&cfg, core, set);
}

/* A fresh folder under tmp_root. */
static void make_dir(char *out, size_t len, const char *leaf)
{
    snprintf(out, len, "%s/%s", tmp_root, leaf);
    assert_int_equal(mkdir(out, 0700), 0);
}

static void link_into(const char *dir, const char *file, const char *target)
{
    char path[4096];

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    assert_int_equal(symlink(target, path), 0);
}

static int setup_group(void **state)
{
    snprintf(tmp_root, sizeof(tmp_root), "%s/weft-test-plugin.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp_root))
        return -1;
    if (snprintf(log_path, sizeof(log_path), "%s/log", tmp_root) >= (int)sizeof(log_path))
        return -1;
    unsetenv("WEFT_PLUGIN_PATH");
    unsetenv("WEFT_TRANSPORTS");
    unsetenv("WEFT_EXAMPLE_DISABLE");
    return 0;
}

static int teardown_group(void **state)
{
    char cmd[512];

    unsetenv("WEFT_DEBUG_FILE");
    weft__log_reload();
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
    return system(cmd) == 0 ? 0 : -1;
}

static int setup(void **state)
{
    plugin_log[0] = '\0';
    weft__clear_error();
    log_capture("WARN", NULL);
    return 0;
}

/* ------------------------------------------------- WEFT_TRANSPORTS parsing */

static void test_filter_empty(void **state)
{
    weft__transport_filter_t f;

    assert_int_equal(weft__transport_filter_parse(NULL, &f), WEFT_SUCCESS);
    assert_int_equal(f.deny, 0);
    assert_int_equal(f.n, 0);
    assert_true(weft__transport_filter_allows(&f, "sockets"));
    memset(&f, 0x5a, sizeof(f));
    assert_int_equal(weft__transport_filter_parse("", &f), WEFT_SUCCESS);
    assert_int_equal(f.deny, 0);
    assert_int_equal(f.n, 0);
    assert_true(weft__transport_filter_allows(&f, "anything"));
}

static void test_filter_allow(void **state)
{
    weft__transport_filter_t f;

    assert_int_equal(weft__transport_filter_parse("shm,sockets,cuda-ipc", &f), WEFT_SUCCESS);
    assert_int_equal(f.deny, 0);
    assert_int_equal(f.n, 3);
    assert_string_equal(f.names[0], "shm");
    assert_string_equal(f.names[2], "cuda-ipc");
    assert_true(weft__transport_filter_allows(&f, "shm"));
    assert_true(weft__transport_filter_allows(&f, "sockets"));
    assert_true(weft__transport_filter_allows(&f, "cuda-ipc"));
    assert_false(weft__transport_filter_allows(&f, "example"));
    assert_false(weft__transport_filter_allows(&f, "sock"));
    assert_false(weft__transport_filter_allows(&f, "sockets2"));
}

static void test_filter_deny(void **state)
{
    weft__transport_filter_t f;

    assert_int_equal(weft__transport_filter_parse("^ib-verbs,gdr", &f), WEFT_SUCCESS);
    assert_int_equal(f.deny, 1);
    assert_int_equal(f.n, 2);
    assert_false(weft__transport_filter_allows(&f, "ib-verbs"));
    assert_false(weft__transport_filter_allows(&f, "gdr"));
    assert_true(weft__transport_filter_allows(&f, "sockets"));
    assert_true(weft__transport_filter_allows(&f, "ib"));
}

static void test_filter_duplicates(void **state)
{
    weft__transport_filter_t f;

    assert_int_equal(weft__transport_filter_parse("a,b,a,b,a", &f), WEFT_SUCCESS);
    assert_int_equal(f.n, 2);
    assert_true(weft__transport_filter_allows(&f, "a"));
    assert_true(weft__transport_filter_allows(&f, "b"));
}

static void test_filter_malformed(void **state)
{
    weft__transport_filter_t f;
    static const char *bad[] = {
        "^", ",", "a,", ",a", "a,,b", "^,a", "a b", " a", "a,^b", "^^a", "sock/ets",
        "a;b", "a.b", "x23456789012345678901234567890123", "a,\tb",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        weft__transport_filter_t before;

        memset(&f, 0x5a, sizeof(f));
        before = f;
        weft__clear_error();
        if (weft__transport_filter_parse(bad[i], &f) != WEFT_ERR_INVALID_ARG)
            fail_msg("WEFT_TRANSPORTS=\"%s\" was accepted", bad[i]);
        /* Out-parameters are written only on success. */
        assert_memory_equal(&f, &before, sizeof(f));
        if (!strstr(weft_last_error(), "WEFT_TRANSPORTS"))
            fail_msg("error for \"%s\" does not name WEFT_TRANSPORTS: %s", bad[i],
                     weft_last_error());
    }
    assert_int_equal(weft__transport_filter_parse("a,,b", NULL), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__transport_filter_parse("a,,b", &f), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "empty name at character 3"));
    assert_int_equal(weft__transport_filter_parse("a,^b", &f), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "'^' may only start the list"));
}

static void test_filter_too_many(void **state)
{
    weft__transport_filter_t f;
    char spec[512] = "";

    for (int i = 0; i < WEFT__PLUGIN_MAX; i++)
        snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%st%d", i ? "," : "", i);
    assert_int_equal(weft__transport_filter_parse(spec, &f), WEFT_SUCCESS);
    assert_int_equal(f.n, WEFT__PLUGIN_MAX);
    assert_true(weft__transport_filter_allows(&f, "t15"));
    strcat(spec, ",t16");
    assert_int_equal(weft__transport_filter_parse(spec, &f), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "more than 16 names"));
    /* A repeated name is no extra name. */
    spec[strlen(spec) - strlen(",t16")] = '\0';
    strcat(spec, ",t0");
    assert_int_equal(weft__transport_filter_parse(spec, &f), WEFT_SUCCESS);
}

/* Every function a core's struct_size covers is set, also in a core
 * without a job (weft-info's): a plugin may call what the size covers. */
static void test_core_defaults_complete(void **state)
{
    weft_transport_core_t core;

    (void)state;
    memset(&core, 0, sizeof(core));
    weft__transport_core_defaults(&core);
    assert_int_equal(core.struct_size, sizeof(core));
    assert_non_null(core.log);
    assert_non_null(core.set_error);
    assert_non_null(core.get_param);
    assert_non_null(core.device_nearness);
    assert_int_equal(core.device_nearness(NULL, "mlx5_0"), WEFT_TRANSPORT_NEAR_UNKNOWN);
}

static void test_name_valid(void **state)
{
    assert_true(weft__plugin_name_valid("sockets", 7));
    assert_true(weft__plugin_name_valid("cuda-ipc", 8));
    assert_true(weft__plugin_name_valid("ib_verbs2", 9));
    assert_true(weft__plugin_name_valid("x234567890123456789012345678901", 31));
    assert_false(weft__plugin_name_valid("x2345678901234567890123456789012", 32));
    assert_false(weft__plugin_name_valid("", 0));
    assert_false(weft__plugin_name_valid("a.b", 3));
    assert_false(weft__plugin_name_valid("a/b", 3));
    assert_false(weft__plugin_name_valid("\xc3\xa9", 2));
    /* Only len bytes count. */
    assert_true(weft__plugin_name_valid("ab.so", 2));
}

/* ------------------------------------------- the example transport works */

static void *post_recv(const weft__plugin_t *pl, int peer, void *buf, size_t len, uint64_t tag,
                       uint64_t ignore)
{
    void *req = NULL;

    assert_int_equal(pl->ops->irecv(pl->ctx, peer, buf, len, tag, ignore, NULL, &req),
                     WEFT_SUCCESS);
    assert_non_null(req);
    return req;
}

static void send_done(const weft__plugin_t *pl, const void *buf, size_t len, uint64_t tag)
{
    weft_transport_completion_t c;
    void *req = NULL;
    int done = 0;

    assert_int_equal(pl->ops->isend(pl->ctx, 0, buf, len, tag, NULL, &req), WEFT_SUCCESS);
    assert_int_equal(pl->ops->test(pl->ctx, req, &done, &c), WEFT_SUCCESS);
    assert_int_equal(done, 1);
    assert_int_equal(c.status, WEFT_SUCCESS);
    assert_int_equal(c.len, len);
}

/* Tests req, which must be done, and returns its completion. */
static weft_transport_completion_t finished(const weft__plugin_t *pl, void *req)
{
    weft_transport_completion_t c;
    int done = 0;

    memset(&c, 0xff, sizeof(c));
    assert_int_equal(pl->ops->test(pl->ctx, req, &done, &c), WEFT_SUCCESS);
    assert_int_equal(done, 1);
    return c;
}

static void still_pending(const weft__plugin_t *pl, void *req)
{
    weft_transport_completion_t c;
    int done = 1;

    assert_int_equal(pl->ops->test(pl->ctx, req, &done, &c), WEFT_SUCCESS);
    assert_int_equal(done, 0);
}

static int readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };

    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_example_loads_and_works(void **state)
{
    weft__plugin_set_t *set = set_new();
    const weft__plugin_candidate_t *c;
    weft__plugin_t *pl;
    unsigned char addr[WEFT_TRANSPORT_ADDR_MAX], other[WEFT_TRANSPORT_ADDR_MAX];
    size_t alen = sizeof(addr);
    weft_transport_reach_t reach;
    weft_transport_completion_t comp, info;
    char buf[32];
    void *r1, *r2, *req, *msg;
    int fd = -1, found;

    assert_int_equal(open_only(EXAMPLE_DIR, NULL, &fake_core, set), WEFT_SUCCESS);
    assert_int_equal(set->n, 1);
    pl = loaded(set, "example");
    assert_non_null(pl);
    assert_non_null(strstr(pl->path, "/plugins/example/"));
    c = find(set, "example");
    assert_non_null(c);
    assert_int_equal(c->state, WEFT__PLUGIN_LOADED);
    assert_string_equal(c->reason, "");
    assert_non_null(strstr(c->description, "loopback"));
    assert_int_equal(pl->caps.struct_size, sizeof(pl->caps));
    assert_true(pl->caps.flags & WEFT_TRANSPORT_CAP_SELF);
    assert_true(pl->caps.flags & WEFT_TRANSPORT_CAP_MPROBE);
    assert_true(pl->caps.mem_types & (1u << WEFT_TRANSPORT_MEM_HOST));
    assert_non_null(strstr(plugin_log, "example: rank 0 of 1"));

    /* Addresses: only its own blob is reachable. */
    assert_int_equal(pl->ops->get_address(pl->ctx, addr, &alen), WEFT_SUCCESS);
    assert_true(alen > 0 && alen <= WEFT_TRANSPORT_ADDR_MAX);
    assert_int_equal(pl->ops->reach(pl->ctx, addr, alen, &reach), WEFT_SUCCESS);
    assert_int_not_equal(reach, WEFT_TRANSPORT_REACH_NONE);
    memcpy(other, addr, alen);
    other[alen - 1] ^= 0x01;
    assert_int_equal(pl->ops->reach(pl->ctx, other, alen, &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NONE);
    assert_int_equal(pl->ops->reach(pl->ctx, addr, alen - 1, &reach), WEFT_SUCCESS);
    assert_int_equal(reach, WEFT_TRANSPORT_REACH_NONE);
    assert_int_not_equal(pl->ops->connect(pl->ctx, 1, addr, alen), WEFT_SUCCESS);
    assert_int_not_equal(pl->ops->connect(pl->ctx, 0, other, alen), WEFT_SUCCESS);
    /* Not connected yet: no traffic. */
    assert_int_not_equal(pl->ops->isend(pl->ctx, 0, "x", 1, 1, NULL, &req), WEFT_SUCCESS);
    assert_int_equal(pl->ops->connect(pl->ctx, 0, addr, alen), WEFT_SUCCESS);
    assert_int_not_equal(pl->ops->isend(pl->ctx, 1, "x", 1, 1, NULL, &req), WEFT_SUCCESS);
    assert_non_null(strstr(weft_last_error(), "rank 1"));

    /* A receive posted first completes when the send arrives, and wakes
     * the wait descriptor. */
    assert_int_equal(pl->ops->get_wait_fd(pl->ctx, &fd), WEFT_SUCCESS);
    assert_true(fd >= 0);
    memset(buf, '#', sizeof(buf));
    r1 = post_recv(pl, 0, buf, sizeof(buf), 0x1234, 0);
    still_pending(pl, r1);
    assert_false(readable(fd));
    send_done(pl, "hello", 6, 0x1234);
    assert_true(readable(fd));
    comp = finished(pl, r1);
    assert_int_equal(comp.status, WEFT_SUCCESS);
    assert_int_equal(comp.len, 6);
    assert_int_equal(comp.peer, 0);
    assert_int_equal(comp.tag, 0x1234);
    assert_string_equal(buf, "hello");
    assert_int_equal(pl->ops->progress(pl->ctx), WEFT_SUCCESS);
    assert_false(readable(fd));

    /* Unexpected messages wait; tags select, in arrival order. */
    send_done(pl, "abc", 4, 7);
    send_done(pl, "defg", 5, 8);
    send_done(pl, "second7", 8, 7);
    r1 = post_recv(pl, 0, buf, sizeof(buf), 8, 0);
    comp = finished(pl, r1);
    assert_string_equal(buf, "defg");
    assert_int_equal(comp.tag, 8);
    r1 = post_recv(pl, WEFT_TRANSPORT_ANY_PEER, buf, sizeof(buf), 0, UINT64_MAX);
    comp = finished(pl, r1);
    assert_string_equal(buf, "abc");
    assert_int_equal(comp.tag, 7);
    assert_int_equal(comp.peer, 0);
    r1 = post_recv(pl, 0, buf, sizeof(buf), 7, 0);
    comp = finished(pl, r1);
    assert_string_equal(buf, "second7");

    /* ignore masks bits on both sides; a non-matching receive stays. */
    r2 = post_recv(pl, 0, buf, sizeof(buf), 0xcd00, 0);
    r1 = post_recv(pl, 0, buf, sizeof(buf), 0xab11, 0xff);
    send_done(pl, "masked", 7, 0xab00);
    comp = finished(pl, r1);
    assert_int_equal(comp.tag, 0xab00);
    assert_string_equal(buf, "masked");
    still_pending(pl, r2);

    /* Receives match in post order. */
    {
        char a[8] = "", b[8] = "";
        void *ra = post_recv(pl, 0, a, sizeof(a), 0, UINT64_MAX);
        void *rb = post_recv(pl, WEFT_TRANSPORT_ANY_PEER, b, sizeof(b), 0, UINT64_MAX);

        /* r2 (tag 0xcd00, posted earlier) takes the first matching message. */
        send_done(pl, "one", 4, 0xcd00);
        comp = finished(pl, r2);
        assert_string_equal(buf, "one");
        send_done(pl, "two", 4, 1);
        send_done(pl, "three", 6, 2);
        comp = finished(pl, ra);
        assert_string_equal(a, "two");
        comp = finished(pl, rb);
        assert_string_equal(b, "three");
    }

    /* Truncation: what fits is copied, the full length reported. */
    memset(buf, '#', sizeof(buf));
    send_done(pl, "0123456789", 10, 3);
    r1 = post_recv(pl, 0, buf, 4, 3, 0);
    comp = finished(pl, r1);
    assert_int_equal(comp.status, WEFT_ERR_TRUNCATED);
    assert_int_equal(comp.len, 10);
    assert_memory_equal(buf, "0123#", 5);

    /* Zero-length messages. */
    r1 = post_recv(pl, 0, buf, sizeof(buf), 4, 0);
    send_done(pl, NULL, 0, 4);
    comp = finished(pl, r1);
    assert_int_equal(comp.status, WEFT_SUCCESS);
    assert_int_equal(comp.len, 0);

    /* Cancel ends a waiting receive with WEFT_ERR_ABORTED. */
    r1 = post_recv(pl, 0, buf, sizeof(buf), 99, 0);
    assert_int_equal(pl->ops->cancel(pl->ctx, r1), WEFT_SUCCESS);
    comp = finished(pl, r1);
    assert_int_equal(comp.status, WEFT_ERR_ABORTED);

    /* Matched probe takes a message out of the queue for exactly one imrecv. */
    found = 1;
    assert_int_equal(pl->ops->improbe(pl->ctx, WEFT_TRANSPORT_ANY_PEER, 5, 0, &found, &msg,
                                      &info), WEFT_SUCCESS);
    assert_int_equal(found, 0);
    send_done(pl, "probed", 7, 5);
    assert_int_equal(pl->ops->improbe(pl->ctx, WEFT_TRANSPORT_ANY_PEER, 5, 0, &found, &msg,
                                      &info), WEFT_SUCCESS);
    assert_int_equal(found, 1);
    assert_int_equal(info.len, 7);
    assert_int_equal(info.tag, 5);
    assert_int_equal(pl->ops->improbe(pl->ctx, 0, 5, 0, &found, &req, &info), WEFT_SUCCESS);
    assert_int_equal(found, 0);
    r1 = post_recv(pl, 0, buf, sizeof(buf), 5, 0);
    still_pending(pl, r1);
    assert_int_equal(pl->ops->imrecv(pl->ctx, msg, buf, sizeof(buf), NULL, &req), WEFT_SUCCESS);
    comp = finished(pl, req);
    assert_string_equal(buf, "probed");

    /* Disconnect aborts what waits for the peer and closes the way. */
    assert_int_equal(pl->ops->disconnect(pl->ctx, 0), WEFT_SUCCESS);
    comp = finished(pl, r1);
    assert_int_equal(comp.status, WEFT_ERR_ABORTED);
    assert_int_not_equal(pl->ops->isend(pl->ctx, 0, "x", 1, 1, NULL, &req), WEFT_SUCCESS);

    /* A message left unreceived is dropped at finalize (no leak under ASan). */
    assert_int_equal(pl->ops->connect(pl->ctx, 0, addr, alen), WEFT_SUCCESS);
    send_done(pl, "left", 5, 6);
    set_free(set);
    assert_non_null(strstr(plugin_log, "example: finalized: 0 requests and 1 unreceived"));
}

static void test_example_refuses_when_disabled(void **state)
{
    weft__plugin_set_t *set = set_new();
    const weft__plugin_candidate_t *c;
    char *text;

    setenv("WEFT_EXAMPLE_DISABLE", "1", 1);
    log_capture("INFO", "PLUGIN");
    assert_int_equal(open_only(EXAMPLE_DIR, NULL, &fake_core, set), WEFT_ERR_PLUGIN);
    unsetenv("WEFT_EXAMPLE_DISABLE");
    c = find(set, "example");
    assert_non_null(c);
    assert_int_equal(c->state, WEFT__PLUGIN_REFUSED);
    assert_string_equal(c->reason, "not applicable: disabled by WEFT_EXAMPLE_DISABLE=1");
    assert_non_null(strstr(weft_last_error(), "weft-example.so: not applicable: disabled"));
    text = log_text();
    assert_true(line_with(text, "INFO", "not applicable: disabled by WEFT_EXAMPLE_DISABLE"));
    assert_null(strstr(text, "WARN"));
    free(text);
    set_free(set);
}

/* ------------------------------------------------- broken plugins skipped */

static void expect(const weft__plugin_set_t *set, const char *name, weft__plugin_state_t state,
                   const char *in_reason)
{
    const weft__plugin_candidate_t *c = find(set, name);

    if (!c)
        fail_msg("no candidate %s", name);
    if (c->state != state)
        fail_msg("%s: state %s, expected %s (%s)", name, weft__plugin_state_name(c->state),
                 weft__plugin_state_name(state), c->reason);
    if (in_reason && !strstr(c->reason, in_reason))
        fail_msg("%s: reason \"%s\" lacks \"%s\"", name, c->reason, in_reason);
    if (!strstr(c->path, BROKEN_DIR) && !strstr(c->path, EXAMPLE_DIR) &&
        !strstr(c->path, tmp_root))
        fail_msg("%s: unexpected path %s", name, c->path);
}

static void test_broken_plugins_skipped(void **state)
{
    weft__plugin_set_t *set = set_new();
    const char *order;
    char *text;
    static const char *warned[] = { "badabi", "nosym", "initfail", "badname", "nullfn",
                                    "oversize", "badptr" };

    assert_int_equal(open_only(BROKEN_DIR ":" EXAMPLE_DIR, NULL, &fake_core, set),
                     WEFT_SUCCESS);
    expect(set, "badabi", WEFT__PLUGIN_BAD_ABI, "ABI version 99");
    expect(set, "nosym", WEFT__PLUGIN_NO_SYMBOL, "weft_transport_v1");
    expect(set, "initfail", WEFT__PLUGIN_INIT_FAILED, BROKEN_INITFAIL_TEXT);
    expect(set, "initfail", WEFT__PLUGIN_INIT_FAILED, weft_strerror(WEFT_ERR_SYSTEM));
    expect(set, "refuse", WEFT__PLUGIN_REFUSED, "not applicable: " BROKEN_REFUSE_TEXT);
    expect(set, "badname", WEFT__PLUGIN_BAD_ABI, "\"somethingelse\"");
    expect(set, "nullfn", WEFT__PLUGIN_BAD_ABI, "isend is NULL");
    expect(set, "oversize", WEFT__PLUGIN_BAD_ABI, "struct_size");
    expect(set, "badptr", WEFT__PLUGIN_BAD_ABI, "name points outside every loaded object");
    expect(set, "stub", WEFT__PLUGIN_LOADED, NULL);
    expect(set, "example", WEFT__PLUGIN_LOADED, NULL);
    /* Without a topology needs are read but not judged. A table of the
     * first ABI 1 headers still loads, its needs beyond struct_size unread. */
    expect(set, "needgdr", WEFT__PLUGIN_LOADED, NULL);
    expect(set, "needlocal", WEFT__PLUGIN_LOADED, NULL);
    expect(set, "oldabi", WEFT__PLUGIN_LOADED, NULL);
    assert_int_equal(find(set, "needgdr")->needs, WEFT_TRANSPORT_NEED_GPU_NIC_SWITCH);
    assert_int_equal(loaded(set, "needlocal")->needs, WEFT_TRANSPORT_NEED_LOCAL_PEER);
    assert_int_equal(find(set, "oldabi")->needs, WEFT_TRANSPORT_NEEDS_NONE);
    assert_int_equal(find(set, "stub")->needs, WEFT_TRANSPORT_NEEDS_NONE);
    assert_int_equal(set->ncandidates, 13);
    assert_int_equal(set->n, 5);
    /* Folder order, then name order within a folder. */
    assert_string_equal(set->candidates[0].name, "badabi");
    assert_string_equal(set->candidates[12].name, "example");
    assert_string_equal(set->plugins[0].name, "needgdr");
    assert_string_equal(set->plugins[3].name, "stub");
    assert_string_equal(set->plugins[4].name, "example");

    /* Every skipped file is named in a WARN line with its reason; a
     * refusal is no warning. */
    text = log_text();
    for (size_t i = 0; i < sizeof(warned) / sizeof(warned[0]); i++) {
        const weft__plugin_candidate_t *c = find(set, warned[i]);

        if (!line_with(text, c->path, c->reason) || !line_with(text, "WARN", c->path))
            fail_msg("no WARN line names %s with \"%s\":\n%s", c->path, c->reason, text);
    }
    assert_null(strstr(text, "weft-refuse.so"));
    free(text);

    /* Unload finalizes in reverse load order. */
    plugin_log[0] = '\0';
    set_free(set);
    order = strstr(plugin_log, "example: finalized");
    assert_non_null(order);
    assert_non_null(strstr(order, "stub: " BROKEN_FINALIZE_TEXT));
}

static void test_scan_initialises_nothing(void **state)
{
    weft__plugin_set_t *set = set_new();

    assert_int_equal(open_only(BROKEN_DIR ":" EXAMPLE_DIR, NULL, NULL, set), WEFT_SUCCESS);
    assert_int_equal(set->n, 0);
    expect(set, "initfail", WEFT__PLUGIN_USABLE, NULL);
    expect(set, "refuse", WEFT__PLUGIN_USABLE, NULL);
    expect(set, "stub", WEFT__PLUGIN_USABLE, NULL);
    expect(set, "example", WEFT__PLUGIN_USABLE, NULL);
    expect(set, "badabi", WEFT__PLUGIN_BAD_ABI, "99");
    expect(set, "nosym", WEFT__PLUGIN_NO_SYMBOL, NULL);
    assert_non_null(strstr(find(set, "example")->description, "loopback"));
    assert_non_null(strstr(find(set, "stub")->description, "test plugin stub"));
    assert_string_equal(plugin_log, "");
    set_free(set);
}

/* ---------------------------------------------------------- WEFT_TRANSPORTS */

static void test_transports_allow(void **state)
{
    weft__plugin_set_t *set = set_new();

    assert_int_equal(open_only(BROKEN_DIR ":" EXAMPLE_DIR, "example", &fake_core, set),
                     WEFT_SUCCESS);
    assert_int_equal(set->n, 1);
    assert_non_null(loaded(set, "example"));
    /* Denied files are not even opened: initfail would fail otherwise. */
    expect(set, "initfail", WEFT__PLUGIN_DENIED, "WEFT_TRANSPORTS=example");
    expect(set, "badabi", WEFT__PLUGIN_DENIED, NULL);
    expect(set, "stub", WEFT__PLUGIN_DENIED, NULL);
    expect(set, "example", WEFT__PLUGIN_LOADED, NULL);
    set_free(set);
}

static void test_transports_deny(void **state)
{
    weft__plugin_set_t *set = set_new();
    char expect_dirs[4200];
    const char *err;

    assert_int_equal(open_only(EXAMPLE_DIR, "^example", &fake_core, set), WEFT_ERR_PLUGIN);
    assert_int_equal(set->n, 0);
    expect(set, "example", WEFT__PLUGIN_DENIED, "^example");
    err = weft_last_error();
    assert_non_null(strstr(err, "no usable transport: weft-example.so: excluded by "
                                "WEFT_TRANSPORTS=^example"));
    assert_non_null(strstr(err, "; searched: "));
    assert_non_null(strstr(strstr(err, "; searched: "), no_slash(EXAMPLE_DIR)));
    set_free(set);

    set = set_new();
    assert_int_equal(open_only(BROKEN_DIR ":" EXAMPLE_DIR,
                               "^example,stub,needgdr,needlocal,oldabi", &fake_core, set),
                     WEFT_ERR_PLUGIN);
    err = weft_last_error();
    assert_non_null(strstr(err, "weft-badabi.so: weft_transport_v1 says ABI version 99"));
    assert_non_null(strstr(err, "weft-initfail.so: init failed"));
    /* The message lists candidates up to its budget, then counts the rest. */
    assert_non_null(strstr(err, "weft-refuse.so: not applicable: " BROKEN_REFUSE_TEXT) ?
                    strstr(err, "weft-refuse.so") : strstr(err, " more (WEFT_DEBUG=INFO"));
    expect(set, "refuse", WEFT__PLUGIN_REFUSED, "not applicable: " BROKEN_REFUSE_TEXT);
    snprintf(expect_dirs, sizeof(expect_dirs), "searched: %s, ", no_slash(BROKEN_DIR));
    assert_non_null(strstr(err, expect_dirs));
    set_free(set);
}

static void test_transports_unknown_and_debug_listing(void **state)
{
    weft__plugin_set_t *set = set_new();
    char *text;

    log_capture("INFO", "PLUGIN");
    assert_int_equal(open_only(BROKEN_DIR ":" EXAMPLE_DIR, "example,nosuch", &fake_core, set),
                     WEFT_SUCCESS);
    text = log_text();
    assert_true(line_with(text, "INFO", "\"nosuch\""));
    assert_false(line_with(text, "\"example\"", "no file"));
    /* Every candidate and its fate. */
    for (int i = 0; i < set->ncandidates; i++) {
        const weft__plugin_candidate_t *c = &set->candidates[i];

        if (!line_with(text, "candidate", c->path))
            fail_msg("%s not listed:\n%s", c->path, text);
        if (c->state == WEFT__PLUGIN_DENIED && !line_with(text, c->path, "excluded by"))
            fail_msg("%s: denial not logged:\n%s", c->path, text);
    }
    assert_true(line_with(text, "weft-example.so", "loaded transport example"));
    free(text);
    set_free(set);
}

static void test_transports_invalid(void **state)
{
    weft__plugin_set_t *set = set_new();

    assert_int_equal(open_only(EXAMPLE_DIR, "example,,x", &fake_core, set),
                     WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "WEFT_TRANSPORTS=\"example,,x\""));
    assert_int_equal(set->n, 0);
    assert_int_equal(set->ncandidates, 0);
    set_free(set);
}

/* ------------------------------------------------------ folders, shadowing */

static void test_shadowing(void **state)
{
    weft__plugin_set_t *set = set_new();
    char first[512], path[4096], ex[4096], bad[4096];
    const weft__plugin_candidate_t *c;

    make_dir(first, sizeof(first), "shadow");
    snprintf(ex, sizeof(ex), "%sweft-example.so", EXAMPLE_DIR);
    link_into(first, "weft-example.so", ex);
    snprintf(path, sizeof(path), "%s:%s", first, EXAMPLE_DIR);
    assert_int_equal(open_only(path, NULL, &fake_core, set), WEFT_SUCCESS);
    assert_int_equal(set->ncandidates, 2);
    assert_int_equal(set->n, 1);
    snprintf(path, sizeof(path), "%s/weft-example.so", first);
    c = find_path(set, path);
    assert_non_null(c);
    assert_int_equal(c->state, WEFT__PLUGIN_LOADED);
    assert_string_equal(set->plugins[0].path, path);
    c = &set->candidates[1];
    assert_string_equal(c->name, "example");
    assert_int_equal(c->state, WEFT__PLUGIN_SHADOWED);
    assert_non_null(strstr(c->reason, path));
    set_free(set);

    /* The first file wins even when it is unusable. */
    make_dir(first, sizeof(first), "shadow-broken");
    snprintf(bad, sizeof(bad), "%sweft-badname.so", BROKEN_DIR);
    link_into(first, "weft-example.so", bad);
    snprintf(path, sizeof(path), "%s:%s", first, EXAMPLE_DIR);
    set = set_new();
    assert_int_equal(open_only(path, NULL, &fake_core, set), WEFT_ERR_PLUGIN);
    assert_int_equal(set->candidates[0].state, WEFT__PLUGIN_BAD_ABI);
    assert_non_null(strstr(set->candidates[0].reason, "\"somethingelse\" differs from \"example\""));
    assert_int_equal(set->candidates[1].state, WEFT__PLUGIN_SHADOWED);
    set_free(set);

    /* One folder named twice (even spelled differently) is searched once. */
    set = set_new();
    assert_int_equal(open_only(EXAMPLE_DIR ":" EXAMPLE_DIR "/./", NULL, &fake_core, set),
                     WEFT_SUCCESS);
    assert_int_equal(set->ndirs, 2);
    assert_int_equal(set->dirs[1].status, WEFT__PLUGIN_DIR_DUPLICATE);
    assert_int_equal(set->ncandidates, 1);
    set_free(set);
}

static void test_odd_files(void **state)
{
    weft__plugin_set_t *set = set_new();
    char dir[512], path[4096];
    const weft__plugin_candidate_t *c;
    FILE *f;

    make_dir(dir, sizeof(dir), "odd");
    snprintf(path, sizeof(path), "%s/weft-garbage.so", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("not an ELF file\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%sweft-example.so", EXAMPLE_DIR);
    link_into(dir, "weft-bad.name.so", path);
    link_into(dir, "weft-x23456789012345678901234567890123.so", path);
    link_into(dir, "libweft-example.so", path);
    link_into(dir, "weft-example.so.1", path);
    link_into(dir, "weft-.so", path);
    snprintf(path, sizeof(path), "%s/weft-dir.so", dir);
    assert_int_equal(mkdir(path, 0700), 0);

    assert_int_equal(open_only(dir, NULL, &fake_core, set), WEFT_ERR_PLUGIN);
    /* Only weft-<something>.so files are candidates. */
    assert_int_equal(set->ncandidates, 4);
    expect(set, "garbage", WEFT__PLUGIN_DLOPEN_FAILED, NULL);
    c = find(set, "garbage");
    assert_true(strlen(c->reason) > 0);
    expect(set, "dir", WEFT__PLUGIN_DLOPEN_FAILED, NULL);
    expect(set, "bad.name", WEFT__PLUGIN_BAD_NAME, "\"bad.name\" is not a transport name");
    assert_int_equal(set->candidates[3].state, WEFT__PLUGIN_BAD_NAME);
    set_free(set);
}

static void test_no_plugins(void **state)
{
    weft__plugin_set_t *set = set_new();
    char empty[512], path[4096];
    const char *err;

    make_dir(empty, sizeof(empty), "empty");
    snprintf(path, sizeof(path), "%s/:%s/does-not-exist", empty, tmp_root);
    assert_int_equal(open_only(path, NULL, &fake_core, set), WEFT_ERR_PLUGIN);
    assert_int_equal(set->ncandidates, 0);
    assert_int_equal(set->ndirs, 2);
    assert_int_equal(set->dirs[0].status, WEFT__PLUGIN_DIR_SEARCHED);
    assert_int_equal(set->dirs[1].status, WEFT__PLUGIN_DIR_MISSING);
    err = weft_last_error();
    assert_non_null(strstr(err, "no usable transport: no file weft-<name>.so found"));
    snprintf(path, sizeof(path), "; searched: %s, %s/does-not-exist (missing)", empty,
             tmp_root);
    assert_non_null(strstr(err, path));
    set_free(set);

    /* Scanning finds nothing without failing. */
    set = set_new();
    assert_int_equal(open_only(empty, NULL, NULL, set), WEFT_SUCCESS);
    assert_int_equal(set->ncandidates, 0);
    set_free(set);

    /* No folder at all. */
    set = set_new();
    assert_int_equal(open_only("::", NULL, &fake_core, set), WEFT_ERR_PLUGIN);
    assert_int_equal(set->ndirs, 0);
    assert_non_null(strstr(weft_last_error(), "searched: no folder"));
    set_free(set);
}

/* The environment's entry points and the default folders. */
static void test_environment(void **state)
{
    weft__plugin_set_t *set = set_new();
    char exe[4096], beside[4096];
    ssize_t n;

    setenv("WEFT_PLUGIN_PATH", "::" EXAMPLE_DIR ":", 1);
    setenv("WEFT_TRANSPORTS", "example", 1);
    assert_int_equal(weft__plugins_load(&fake_core, set), WEFT_SUCCESS);
    assert_non_null(loaded(set, "example"));
    assert_true(set->ndirs >= 3);
    assert_string_equal(set->dirs[0].path, no_slash(EXAMPLE_DIR));
    assert_int_equal(set->dirs[0].origin, WEFT__PLUGIN_DIR_PATH);
    /* This program holds the loader (linked in statically). */
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    assert_true(snprintf(beside, sizeof(beside), "%s/weft", exe) < (int)sizeof(beside));
    assert_int_equal(set->dirs[1].origin, WEFT__PLUGIN_DIR_BESIDE);
    assert_string_equal(set->dirs[1].path, beside);
    assert_int_equal(set->dirs[set->ndirs - 1].origin, WEFT__PLUGIN_DIR_CONFIGURED);
    assert_string_equal(set->dirs[set->ndirs - 1].path, WEFT_PLUGIN_DIR);
    set_free(set);

    set = set_new();
    assert_int_equal(weft__plugins_scan(set), WEFT_SUCCESS);
    expect(set, "example", WEFT__PLUGIN_USABLE, NULL);
    set_free(set);

    setenv("WEFT_TRANSPORTS", "^", 1);
    set = set_new();
    assert_int_equal(weft__plugins_load(&fake_core, set), WEFT_ERR_INVALID_ARG);
    set_free(set);
    unsetenv("WEFT_TRANSPORTS");
    unsetenv("WEFT_PLUGIN_PATH");
}

static void test_unload_twice(void **state)
{
    weft__plugin_set_t *set = set_new();

    assert_int_equal(open_only(EXAMPLE_DIR, NULL, &fake_core, set), WEFT_SUCCESS);
    weft__plugins_unload(set);
    assert_int_equal(set->n, 0);
    assert_null(set->candidates);
    weft__plugins_unload(set);
    set_free(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_filter_empty, setup),
        cmocka_unit_test_setup(test_filter_allow, setup),
        cmocka_unit_test_setup(test_filter_deny, setup),
        cmocka_unit_test_setup(test_filter_duplicates, setup),
        cmocka_unit_test_setup(test_filter_malformed, setup),
        cmocka_unit_test_setup(test_filter_too_many, setup),
        cmocka_unit_test_setup(test_core_defaults_complete, setup),
        cmocka_unit_test_setup(test_name_valid, setup),
        cmocka_unit_test_setup(test_example_loads_and_works, setup),
        cmocka_unit_test_setup(test_example_refuses_when_disabled, setup),
        cmocka_unit_test_setup(test_broken_plugins_skipped, setup),
        cmocka_unit_test_setup(test_scan_initialises_nothing, setup),
        cmocka_unit_test_setup(test_transports_allow, setup),
        cmocka_unit_test_setup(test_transports_deny, setup),
        cmocka_unit_test_setup(test_transports_unknown_and_debug_listing, setup),
        cmocka_unit_test_setup(test_transports_invalid, setup),
        cmocka_unit_test_setup(test_shadowing, setup),
        cmocka_unit_test_setup(test_odd_files, setup),
        cmocka_unit_test_setup(test_no_plugins, setup),
        cmocka_unit_test_setup(test_environment, setup),
        cmocka_unit_test_setup(test_unload_twice, setup),
    };

    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
