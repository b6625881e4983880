/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_bootstrap.c: weft__bootstrap_run with ranks as threads of one
 * process: tcp:// with rank 0 hosting the store, a store hosted outside
 * (as weftrun does), file:// with a stale file from an earlier job, and
 * the ways each fails.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/boot/bootstrap.h"
#include "core/base/error.h"
#include "core/boot/frame.h"

struct rank {
    weft__boot_params_t p;
    int delay_ms;
    char blob[32];
    weft_result_t rc;
    char err[1024];
    weft__bootstrap_t *b;
    int64_t took_ms;
    pthread_t th;
};

static void *rank_main(void *arg)
{
    struct rank *r = arg;

    int64_t t0;

    poll(NULL, 0, r->delay_ms);
    t0 = weft__frame_clock_ms();
    r->rc = weft__bootstrap_run(&r->p, r->blob, strlen(r->blob), &r->b);
    r->took_ms = weft__frame_clock_ms() - t0;
    if (r->rc != WEFT_SUCCESS)
        snprintf(r->err, sizeof(r->err), "%s", weft_last_error());
    return NULL;
}

static void rank_init(struct rank *r, int kind, int rank, int size)
{
    memset(r, 0, sizeof(*r));
    r->p.kind = kind;
    r->p.rank = rank;
    r->p.size = size;
    r->p.local_rank = r->p.local_size = -1;
    r->p.timeout_ms = 5000;
    snprintf(r->p.host, sizeof(r->p.host), "127.0.0.1");
    snprintf(r->p.token, sizeof(r->p.token), "tok");
    snprintf(r->blob, sizeof(r->blob), "addr of %d%.*s", rank, rank, "+++++++");
}

static void run_all(struct rank *rs, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&rs[i].th, NULL, rank_main, &rs[i]), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(rs[i].th, NULL), 0);
}

static void expect_all_joined(struct rank *rs, int n)
{
    for (int i = 0; i < n; i++) {
        if (rs[i].rc != WEFT_SUCCESS)
            fail_msg("rank %d: %s", rs[i].p.rank, rs[i].err);
        assert_string_equal(rs[i].b->job_id, rs[0].b->job_id);
        for (int r = 0; r < n; r++) {
            size_t len;
            const char *blob = weft__bootstrap_blob(rs[i].b, r, &len);

            assert_int_equal(len, strlen(rs[r].blob));
            assert_memory_equal(blob, rs[r].blob, len);
        }
    }
}

static void finalize_all(struct rank *rs, int n)
{
    /* Rank 0 last: it may host the store the others still talk to. */
    for (int i = n - 1; i >= 0; i--) {
        weft__bootstrap_finalize(rs[i].b);
        rs[i].b = NULL;
    }
}

static int free_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t sl = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &sl), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_tcp_rank0_hosts(void **state)
{
    struct rank rs[4];
    int port = free_port();

    (void)state;
    for (int i = 0; i < 4; i++) {
        rank_init(&rs[i], WEFT__BOOT_TCP, i, 4);
        rs[i].p.port = port;
    }
    /* The others start before rank 0 and wait for its store. */
    rs[0].delay_ms = 200;
    run_all(rs, 4);
    expect_all_joined(rs, 4);
    assert_non_null(rs[0].b->server);
    assert_null(rs[1].b->server);
    assert_string_equal(rs[0].b->job_id, weft__store_server_job_id(rs[0].b->server));
    /* The store stays for later exchanges. */
    assert_int_equal(weft__store_set(rs[2].b->store, "later", "x", 1), WEFT_SUCCESS);
    finalize_all(rs, 4);
}

static void test_singleton(void **state)
{
    struct rank r;

    (void)state;
    rank_init(&r, WEFT__BOOT_TCP, 0, 1);
    r.p.port = 0; /* a free port of the host named */
    run_all(&r, 1);
    expect_all_joined(&r, 1);
    assert_true(weft__store_server_port(r.b->server) > 0);
    finalize_all(&r, 1);
}

static void test_external_store(void **state)
{
    weft__store_server_t *srv = NULL;
    struct rank rs[3];

    (void)state;
    assert_int_equal(weft__store_server_start("127.0.0.1", 0, "tok", 3, "job-name", &srv),
                     WEFT_SUCCESS);
    for (int i = 0; i < 3; i++) {
        rank_init(&rs[i], WEFT__BOOT_TCP, i, 3);
        rs[i].p.port = weft__store_server_port(srv);
        rs[i].p.store_external = 1;
    }
    run_all(rs, 3);
    expect_all_joined(rs, 3);
    assert_null(rs[0].b->server);
    assert_string_equal(rs[0].b->job_id, "job-name");
    finalize_all(rs, 3);
    weft__store_server_stop(srv);
}

static void test_port_taken(void **state)
{
    weft__store_server_t *srv = NULL;
    struct rank r;

    (void)state;
    assert_int_equal(weft__store_server_start(NULL, 0, "tok", 2, NULL, &srv), WEFT_SUCCESS);
    rank_init(&r, WEFT__BOOT_TCP, 0, 2);
    r.p.port = weft__store_server_port(srv);
    run_all(&r, 1);
    assert_int_equal(r.rc, WEFT_ERR_BOOTSTRAP);
    assert_non_null(strstr(r.err, "ddress already in use"));
    assert_null(r.b);
    weft__store_server_stop(srv);
}

static void test_tcp_timeout(void **state)
{
    struct rank rs[2];

    (void)state;
    /* Rank 1 of 3 never comes. Rank 0, which hosts the store, gives up
     * first; rank 2, with a longer timeout, hears from the store who
     * was missing as it goes away. */
    rank_init(&rs[0], WEFT__BOOT_TCP, 0, 3);
    rank_init(&rs[1], WEFT__BOOT_TCP, 2, 3);
    rs[0].p.port = rs[1].p.port = free_port();
    rs[0].p.timeout_ms = 600;
    rs[1].p.timeout_ms = 5000;
    run_all(rs, 2);
    assert_int_equal(rs[0].rc, WEFT_ERR_TIMEOUT);
    if (!strstr(rs[0].err, "timed out after 600 ms waiting for rank 1 (2 of 3 joined)"))
        fail_msg("rank 0: '%s'", rs[0].err);
    assert_int_equal(rs[1].rc, WEFT_ERR_TIMEOUT);
    if (!strstr(rs[1].err, "stopped waiting") || !strstr(rs[1].err, "missing rank 1)"))
        fail_msg("rank 2: '%s'", rs[1].err);
    assert_true(rs[1].took_ms < 4000);
}

/* A temporary directory for rendezvous files. */
static void tmp_path(char *dir, size_t cap, char *path, size_t pcap)
{
    snprintf(dir, cap, "/tmp/weft-test-boot.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, pcap, "%s/rendezvous", dir);
}

static void test_file_with_stale_file(void **state)
{
    char dir[64], path[128];
    struct rank rs[3];
    FILE *f;

    (void)state;
    tmp_path(dir, sizeof(dir), path, sizeof(path));
    /* An earlier job's file: its store is gone. */
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "weft-store 2 127.0.0.1 %d tok 0123456789abcdef\n", free_port());
    fclose(f);
    for (int i = 0; i < 3; i++) {
        rank_init(&rs[i], WEFT__BOOT_FILE, i, 3);
        snprintf(rs[i].p.path, sizeof(rs[i].p.path), "%s", path);
        rs[i].p.token[0] = '\0'; /* rank 0 makes one and publishes it */
    }
    rs[0].delay_ms = 300;
    run_all(rs, 3);
    expect_all_joined(rs, 3);
    /* Everyone is in: the file is gone. */
    assert_int_equal(access(path, F_OK), -1);
    finalize_all(rs, 3);
    rmdir(dir);
}

static void *file_rank0(void *arg)
{
    return rank_main(arg);
}

static void test_file_publication(void **state)
{
    char dir[64], path[128], line[512];
    struct rank r;
    struct stat stb;
    pthread_t th;
    FILE *f = NULL;

    (void)state;
    tmp_path(dir, sizeof(dir), path, sizeof(path));
    /* Rank 0 of 2, alone: it publishes, waits, gives up and withdraws. */
    rank_init(&r, WEFT__BOOT_FILE, 0, 2);
    snprintf(r.p.path, sizeof(r.p.path), "%s", path);
    r.p.timeout_ms = 600;
    assert_int_equal(pthread_create(&th, NULL, file_rank0, &r), 0);
    for (int i = 0; i < 100 && !f; i++) {
        poll(NULL, 0, 10);
        f = fopen(path, "r");
    }
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_int_equal(strncmp(line, "weft-store 2 ", 13), 0);
    assert_non_null(strstr(line, " tok "));
    assert_int_equal(stat(path, &stb), 0);
    assert_int_equal(stb.st_mode & 0777, 0600);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(r.rc, WEFT_ERR_TIMEOUT);
    assert_non_null(strstr(r.err, "rank 1"));
    assert_int_equal(access(path, F_OK), -1);
    rmdir(dir);
}

static void test_file_no_rank0(void **state)
{
    char dir[64], path[128];
    struct rank r;
    FILE *f;

    (void)state;
    tmp_path(dir, sizeof(dir), path, sizeof(path));
    rank_init(&r, WEFT__BOOT_FILE, 1, 2);
    snprintf(r.p.path, sizeof(r.p.path), "%s", path);
    r.p.timeout_ms = 300;
    run_all(&r, 1);
    assert_int_equal(r.rc, WEFT_ERR_TIMEOUT);
    assert_non_null(strstr(r.err, "did not appear within 300 ms"));
    assert_non_null(strstr(r.err, path));
    /* A stale file only: the message says so. */
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "weft-store 2 127.0.0.1 %d tok cafe\n", free_port());
    fclose(f);
    run_all(&r, 1);
    assert_int_equal(r.rc, WEFT_ERR_TIMEOUT);
    assert_non_null(strstr(r.err, "named no store that accepted"));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tcp_rank0_hosts),
        cmocka_unit_test(test_singleton),
        cmocka_unit_test(test_external_store),
        cmocka_unit_test(test_port_taken),
        cmocka_unit_test(test_tcp_timeout),
        cmocka_unit_test(test_file_with_stale_file),
        cmocka_unit_test(test_file_publication),
        cmocka_unit_test(test_file_no_rank0),
    };

    return cmocka_run_group_tests_name("bootstrap", tests, NULL, NULL);
}
