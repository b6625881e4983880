/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_init_method.c: turning init methods and environments into
 * rendezvous parameters, and every way they can be wrong.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/base/error.h"
#include "core/boot/init_method.h"

/* A fake environment: NULL-terminated name=value list. */
static const char *const *fake_env;

static const char *env_get(const char *name)
{
    size_t n = strlen(name);

    for (const char *const *e = fake_env; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static weft_result_t resolve(const char *method, int rank, int size, const char *const *env,
                             weft__boot_params_t *p)
{
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;

    attr.init_method = method;
    attr.rank = rank;
    attr.size = size;
    fake_env = env;
    return weft__boot_params_resolve(&attr, env_get, p);
}

static void expect_invalid(const char *method, int rank, int size, const char *const *env,
                           const char *needle)
{
    weft__boot_params_t p;
    weft_result_t rc = resolve(method, rank, size, env, &p);

    if (rc != WEFT_ERR_INVALID_ARG || !strstr(weft_last_error(), needle))
        fail_msg("%s: rc %d, error '%s', expected WEFT_ERR_INVALID_ARG mentioning '%s'",
                 method ? method : "(detect)", rc, weft_last_error(), needle);
}

static void test_env_method(void **state)
{
    const char *env[] = { "MASTER_ADDR=node7", "MASTER_PORT=1234", "RANK=3", "WORLD_SIZE=8",
                          "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "WEFT_AUTH_TOKEN=s3cret", NULL };
    const char *defaults[] = { "MASTER_ADDR=[::1]", "RANK=0", "WORLD_SIZE=1", NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve("env://", -1, -1, env, &p), WEFT_SUCCESS);
    assert_int_equal(p.kind, WEFT__BOOT_TCP);
    assert_string_equal(p.host, "node7");
    assert_int_equal(p.port, 1234);
    assert_int_equal(p.rank, 3);
    assert_int_equal(p.size, 8);
    assert_int_equal(p.local_rank, 1);
    assert_int_equal(p.local_size, 2);
    assert_string_equal(p.token, "s3cret");
    assert_int_equal(p.timeout_ms, WEFT__DEFAULT_TIMEOUT_MS);
    assert_int_equal(p.store_external, 0);
    assert_string_equal(p.source, "env://");
    assert_int_equal(resolve("env://", -1, -1, defaults, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "::1");
    assert_int_equal(p.port, WEFT__DEFAULT_PORT);
    assert_int_equal(p.local_rank, -1);
    assert_int_equal(p.local_size, -1);
    assert_string_equal(p.token, "");
}

static void test_tcp_ipv4_ipv6(void **state)
{
    const char *env[] = { "RANK=0", "WORLD_SIZE=2", "WEFT_TIMEOUT=7", NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve("tcp://10.1.2.3:29501", -1, -1, env, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "10.1.2.3");
    assert_int_equal(p.port, 29501);
    assert_int_equal(p.timeout_ms, 7000);
    assert_int_equal(resolve("tcp://[fe80::1]:4000", 1, 2, env, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "fe80::1");
    assert_int_equal(p.port, 4000);
    assert_int_equal(p.rank, 1); /* the attribute wins over RANK */
    assert_int_equal(resolve("tcp://[::1]", 0, 1, env, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "::1");
    assert_int_equal(p.port, WEFT__DEFAULT_PORT);
    assert_int_equal(resolve("tcp://::1", 0, 1, env, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "::1");
    assert_int_equal(resolve("tcp://head.example.org:80", 0, 1, env, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "head.example.org");
    assert_int_equal(p.port, 80);
}

static void test_file_method(void **state)
{
    const char *env[] = { "RANK=1", "WORLD_SIZE=2", NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve("file:///tmp/job.rdv", -1, -1, env, &p), WEFT_SUCCESS);
    assert_int_equal(p.kind, WEFT__BOOT_FILE);
    assert_string_equal(p.path, "/tmp/job.rdv");
    expect_invalid("file://relative", -1, -1, env, "absolute");
}

static void test_attributes(void **state)
{
    const char *none[] = { NULL };
    const char *env[] = { "RANK=1", "WORLD_SIZE=4", "MASTER_ADDR=h", "WEFT_TIMEOUT=9", NULL };
    weft__boot_params_t p;
    weft_init_attr_t attr = WEFT_INIT_ATTR_INITIALIZER;

    (void)state;
    /* rank and size given, the rest from the environment. */
    assert_int_equal(resolve("env://", 2, 3, env, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 2);
    assert_int_equal(p.size, 3);
    /* The attribute's timeout wins over WEFT_TIMEOUT. */
    attr.timeout_ms = 1500;
    fake_env = env;
    assert_int_equal(weft__boot_params_resolve(&attr, env_get, &p), WEFT_SUCCESS);
    assert_int_equal(p.timeout_ms, 1500);
    assert_string_equal(p.source, "torchrun variables (env://)");
    expect_invalid("env://", -1, 0, env, "attr->size 0");
    expect_invalid("env://", -7, -1, env, "attr->rank -7");
    expect_invalid("tcp://h:1", 3, 3, none, "attr->rank 3 is not below the world size "
                                            "(attr->size 3)");
    expect_invalid("tcp://h:1", 5, -1, env, "attr->rank 5 is not below the world size "
                                            "(WORLD_SIZE=4)");
}

static void test_weft_variables(void **state)
{
    const char *env[] = { "WEFT_RANK=2", "WEFT_SIZE=4", "WEFT_LOCAL_RANK=0",
                          "WEFT_LOCAL_SIZE=2", "WEFT_MASTER_ADDR=a", "WEFT_MASTER_PORT=99",
                          "RANK=0", "WORLD_SIZE=9", "MASTER_ADDR=b", "WEFT_STORE_EXTERNAL=1",
                          NULL };
    const char *file[] = { "WEFT_INIT_METHOD=file:///shared/rdv", "WEFT_RANK=1",
                           "WEFT_SIZE=2", NULL };
    const char *no_rank[] = { "WEFT_INIT_METHOD=tcp://h:5", NULL };
    /* What weftrun sets: torchrun's names, MASTER_PORT the framework's. */
    const char *weftrun[] = { "RANK=1", "WORLD_SIZE=3", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=3",
                              "MASTER_ADDR=127.0.0.1", "MASTER_PORT=40001", "WEFT_RANK=1",
                              "WEFT_SIZE=3", "WEFT_LOCAL_RANK=1", "WEFT_LOCAL_SIZE=3",
                              "WEFT_MASTER_ADDR=127.0.0.1", "WEFT_MASTER_PORT=40002",
                              "WEFT_INIT_METHOD=env://", "WEFT_STORE_EXTERNAL=1", NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve(NULL, -1, -1, env, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 2);
    assert_int_equal(p.size, 4);
    assert_int_equal(p.local_rank, 0);
    assert_int_equal(p.local_size, 2);
    assert_string_equal(p.host, "a");
    assert_int_equal(p.port, 99);
    assert_int_equal(p.store_external, 1);
    assert_string_equal(p.source, "WEFT_* variables");
    assert_int_equal(resolve(NULL, -1, -1, file, &p), WEFT_SUCCESS);
    assert_int_equal(p.kind, WEFT__BOOT_FILE);
    assert_string_equal(p.path, "/shared/rdv");
    expect_invalid(NULL, -1, -1, no_rank, "WEFT_SIZE is not set");

    /* weft's store, whether detected or named env://; tcp:// stays as given. */
    assert_int_equal(resolve(NULL, -1, -1, weftrun, &p), WEFT_SUCCESS);
    assert_int_equal(p.port, 40002);
    assert_int_equal(p.store_external, 1);
    assert_int_equal(resolve("env://", -1, -1, weftrun, &p), WEFT_SUCCESS);
    assert_string_equal(p.source, "env:// (WEFT_* variables)");
    assert_string_equal(p.host, "127.0.0.1");
    assert_int_equal(p.port, 40002);
    assert_int_equal(p.rank, 1);
    assert_int_equal(p.size, 3);
    assert_int_equal(p.local_rank, 1);
    assert_int_equal(p.local_size, 3);
    assert_int_equal(p.store_external, 1);
    assert_int_equal(resolve("tcp://h:5", -1, -1, weftrun, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "h");
    assert_int_equal(p.port, 5);
}

static void test_detection_order(void **state)
{
    const char *torch[] = { "RANK=5", "WORLD_SIZE=9", "MASTER_ADDR=b", "SLURM_PROCID=1",
                            "SLURM_NTASKS=2", NULL };
    const char *torch_no_addr[] = { "RANK=1", "WORLD_SIZE=2", NULL };
    const char *slurm[] = { "SLURM_PROCID=3", "SLURM_NTASKS=4", "SLURM_LOCALID=1",
                            "SLURM_JOB_NODELIST=gpu[07-09,12],cpu1", "SLURM_JOB_ID=4242",
                            "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=2(x2)",
                            "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", NULL };
    const char *slurm_master[] = { "SLURM_PROCID=0", "SLURM_NTASKS=2", "MASTER_ADDR=head",
                                   "MASTER_PORT=4000", "SLURM_JOB_ID=1", NULL };
    const char *ompi[] = { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3",
                           "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                           "MASTER_ADDR=head", NULL };
    const char *ompi_bare[] = { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", NULL };
    const char *none[] = { NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve(NULL, -1, -1, torch, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 5);
    assert_string_equal(p.host, "b");
    expect_invalid(NULL, -1, -1, torch_no_addr, "MASTER_ADDR");

    assert_int_equal(resolve(NULL, -1, -1, slurm, &p), WEFT_SUCCESS);
    assert_string_equal(p.source, "Slurm");
    assert_int_equal(p.rank, 3);
    assert_int_equal(p.size, 4);
    assert_int_equal(p.local_rank, 1);
    assert_int_equal(p.local_size, 2);
    assert_string_equal(p.host, "gpu07");
    assert_int_equal(p.port, 20000 + 4242 % 20000);
    assert_int_equal(resolve(NULL, -1, -1, slurm_master, &p), WEFT_SUCCESS);
    assert_string_equal(p.host, "head");
    assert_int_equal(p.port, 4000);

    assert_int_equal(resolve(NULL, -1, -1, ompi, &p), WEFT_SUCCESS);
    assert_string_equal(p.source, "Open MPI");
    assert_int_equal(p.rank, 1);
    assert_int_equal(p.size, 3);
    assert_int_equal(p.local_rank, 1);
    assert_int_equal(p.local_size, 2);
    assert_string_equal(p.host, "head");
    assert_int_equal(p.port, WEFT__DEFAULT_PORT);
    expect_invalid(NULL, -1, -1, ompi_bare, "set MASTER_ADDR");
    expect_invalid(NULL, -1, -1, ompi_bare, "weftrun");

#ifndef WEFT_HAVE_PMIX
    {
        /* Without PMIx support a PMIx launcher's variables are not ours:
         * the next method (here Open MPI's) takes over. */
        const char *pmix[] = { "PMIX_RANK=1", "PMIX_NAMESPACE=ns", "OMPI_COMM_WORLD_RANK=1",
                               "OMPI_COMM_WORLD_SIZE=2", "MASTER_ADDR=h", NULL };

        assert_int_equal(resolve(NULL, -1, -1, pmix, &p), WEFT_SUCCESS);
        assert_string_equal(p.source, "Open MPI");
    }
#endif

    /* Nothing at all: a job of one process on a free loopback port. */
    assert_int_equal(resolve(NULL, -1, -1, none, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 0);
    assert_int_equal(p.size, 1);
    assert_int_equal(p.port, 0);
    assert_string_equal(p.host, "127.0.0.1");
    expect_invalid(NULL, 1, 4, none, "no init method");
}

static void test_slurm_details(void **state)
{
    const char *tasks[] = { "SLURM_PROCID=9", "SLURM_NTASKS=11", "SLURM_JOB_NODELIST=n[1-3]",
                            "SLURM_JOB_ID=7", "SLURM_NODEID=2", "SLURM_TASKS_PER_NODE=4(x2),3",
                            NULL };
    const char *per_node[] = { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=n1",
                               "SLURM_JOB_ID=7", "SLURM_NTASKS_PER_NODE=4", NULL };
    const char *bad_job[] = { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=n1",
                              "SLURM_JOB_ID=12x", NULL };
    const char *no_port[] = { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=n1",
                              NULL };
    const char *bad_list[] = { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=n[",
                               "SLURM_JOB_ID=7", NULL };
    const char *no_list[] = { "SLURM_PROCID=0", "SLURM_NTASKS=4", "SLURM_JOB_ID=7", NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve(NULL, -1, -1, tasks, &p), WEFT_SUCCESS);
    assert_int_equal(p.local_size, 3); /* node 2 of 4(x2),3 */
    assert_string_equal(p.host, "n1");
    assert_int_equal(p.port, 20007);
    assert_int_equal(resolve(NULL, -1, -1, per_node, &p), WEFT_SUCCESS);
    assert_int_equal(p.local_size, 4);
    expect_invalid(NULL, -1, -1, bad_job, "SLURM_JOB_ID=12x");
    expect_invalid(NULL, -1, -1, no_port, "MASTER_PORT");
    expect_invalid(NULL, -1, -1, bad_list, "SLURM_JOB_NODELIST='n['");
    expect_invalid(NULL, -1, -1, no_list, "SLURM_JOB_NODELIST");
}

static void test_bad_values(void **state)
{
    static const struct {
        const char *env[6];
        const char *method;
        const char *needle;
    } cases[] = {
        { { "RANK=abc", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "RANK=abc" },
        { { "RANK=2", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://",
          "RANK=2 is not below the world size (WORLD_SIZE=2)" },
        { { "RANK=-1", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "RANK=-1" },
        { { "RANK=1x", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "RANK=1x" },
        { { "RANK=0", "WORLD_SIZE=0", "MASTER_ADDR=h", NULL }, "env://", "WORLD_SIZE=0" },
        { { "RANK=0", "WORLD_SIZE=99999999999", "MASTER_ADDR=h", NULL }, "env://",
          "WORLD_SIZE=99999999999" },
        { { "RANK=0", "WORLD_SIZE=2000000", "MASTER_ADDR=h", NULL }, "env://",
          "WORLD_SIZE=2000000" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "env://", "MASTER_ADDR" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=70000", NULL }, "env://",
          "MASTER_PORT=70000" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=", "LOCAL_RANK=q", NULL },
          "env://", "LOCAL_RANK=q" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h:0", NULL }, "env://", "port '0'" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=[::1", NULL }, "env://", "']'" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=2",
            NULL }, "env://", "LOCAL_RANK=3 is not below the local size (LOCAL_WORLD_SIZE=2)" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://host:0", "port '0'" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://host:http", "port 'http'" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://:5", "host is empty" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://[::1", "]" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://[::1]x", "junk" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "udp://x:1", "udp://x:1" },
        { { "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "RANK is not set" },
        { { "RANK=0", "MASTER_ADDR=h", NULL }, "env://", "WORLD_SIZE is not set" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "WEFT_TIMEOUT=-3", NULL }, "env://",
          "WEFT_TIMEOUT=-3" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "WEFT_TIMEOUT=0", NULL }, "env://",
          "WEFT_TIMEOUT=0" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "WEFT_STORE_EXTERNAL=yes", NULL },
          "env://", "WEFT_STORE_EXTERNAL=yes" },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_invalid(cases[i].method, -1, -1, cases[i].env, cases[i].needle);
}

static void test_long_values(void **state)
{
    static char token[300], addr[300], path[4200];
    const char *env_token[] = { "RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=h", token, NULL };
    const char *env_addr[] = { "RANK=0", "WORLD_SIZE=1", addr, NULL };
    const char *env[] = { "RANK=0", "WORLD_SIZE=1", NULL };

    (void)state;
    snprintf(token, sizeof(token), "WEFT_AUTH_TOKEN=%0280d", 7);
    expect_invalid("env://", -1, -1, env_token, "WEFT_AUTH_TOKEN");
    snprintf(addr, sizeof(addr), "MASTER_ADDR=%0280d", 7);
    expect_invalid("env://", -1, -1, env_addr, "longer than");
    memset(path, 'p', sizeof(path) - 1);
    memcpy(path, "file:///", 8);
    path[sizeof(path) - 1] = '\0';
    expect_invalid(path, -1, -1, env, "absolute path");
}

static void test_slurm_nodelist(void **state)
{
    static const struct {
        const char *list, *first;
    } good[] = {
        { "node01", "node01" },
        { "a1,b2", "a1" },
        { "n[007-009],m3", "n007" },
        { "rack[3,5]", "rack3" },
        { "n[01-04,7]", "n01" },
        { "n[12-14]-ib,n[20-21]-ib", "n12-ib" },
        { "r[1-2]n[01-04]", "r1n01" },
        { "gpu-a100-[3-4]", "gpu-a100-3" },
    };
    static const char *const bad[] = { "n[x]", "", "[", "n]", "n[1-2", ",n1", "n[]" };
    char host[64];

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        if (weft__slurm_first_host(good[i].list, host, sizeof(host)) != WEFT_SUCCESS)
            fail_msg("'%s': %s", good[i].list, weft_last_error());
        assert_string_equal(host, good[i].first);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (weft__slurm_first_host(bad[i], host, sizeof(host)) != WEFT_ERR_INVALID_ARG)
            fail_msg("'%s' was taken as a node list (first host '%s')", bad[i], host);
    assert_int_equal(weft__slurm_first_host(NULL, host, sizeof(host)), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__slurm_first_host("averyveryverylongname", host, 8),
                     WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__slurm_first_host("n[0000000001-2]", host, 8), WEFT_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_method),      cmocka_unit_test(test_tcp_ipv4_ipv6),
        cmocka_unit_test(test_file_method),     cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_weft_variables),  cmocka_unit_test(test_detection_order),
        cmocka_unit_test(test_slurm_details),   cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_long_values),     cmocka_unit_test(test_slurm_nodelist),
    };

    return cmocka_run_group_tests_name("init_method", tests, NULL, NULL);
}
