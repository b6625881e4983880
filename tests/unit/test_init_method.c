/*
 * test_init_method.c: turning init methods and environments into
 * rendezvous parameters, and every way they can be wrong.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/error.h"
#include "core/init_method.h"

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

static void test_env_method(void **state)
{
    const char *env[] = { "MASTER_ADDR=node7", "MASTER_PORT=1234", "RANK=3", "WORLD_SIZE=8",
                          "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2", "WEFT_AUTH_TOKEN=s3cret", NULL };
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
}

static void test_file_method(void **state)
{
    const char *env[] = { "RANK=1", "WORLD_SIZE=2", NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve("file:///tmp/job.rdv", -1, -1, env, &p), WEFT_SUCCESS);
    assert_int_equal(p.kind, WEFT__BOOT_FILE);
    assert_string_equal(p.path, "/tmp/job.rdv");
    assert_int_equal(resolve("file://relative", -1, -1, env, &p), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "absolute"));
}

static void test_detection_order(void **state)
{
    const char *weft[] = { "WEFT_RANK=2", "WEFT_SIZE=4", "WEFT_MASTER_ADDR=a", "RANK=0",
                           "WORLD_SIZE=9", "MASTER_ADDR=b", NULL };
    const char *torch[] = { "RANK=5", "WORLD_SIZE=9", "MASTER_ADDR=b", "SLURM_PROCID=1",
                            "SLURM_NTASKS=2", NULL };
    const char *slurm[] = { "SLURM_PROCID=3", "SLURM_NTASKS=4", "SLURM_LOCALID=1",
                            "SLURM_JOB_NODELIST=gpu[07-09,12],cpu1", "SLURM_JOB_ID=4242",
                            "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=1", NULL };
    const char *ompi[] = { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3",
                           "OMPI_COMM_WORLD_LOCAL_RANK=1", "MASTER_ADDR=head", NULL };
    const char *ompi_bare[] = { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", NULL };
    const char *none[] = { NULL };
    weft__boot_params_t p;

    (void)state;
    assert_int_equal(resolve(NULL, -1, -1, weft, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 2);
    assert_string_equal(p.host, "a");
    assert_int_equal(resolve(NULL, -1, -1, torch, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 5);
    assert_int_equal(resolve(NULL, -1, -1, slurm, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 3);
    assert_int_equal(p.local_rank, 1);
    assert_string_equal(p.host, "gpu07");
    assert_int_equal(p.port, 20000 + 4242 % 20000);
    assert_int_equal(resolve(NULL, -1, -1, ompi, &p), WEFT_SUCCESS);
    assert_int_equal(p.size, 3);
    assert_string_equal(p.host, "head");
    assert_int_equal(resolve(NULL, -1, -1, ompi_bare, &p), WEFT_ERR_INVALID_ARG);
    assert_non_null(strstr(weft_last_error(), "MASTER_ADDR"));
    /* Nothing at all: a job of one process. */
    assert_int_equal(resolve(NULL, -1, -1, none, &p), WEFT_SUCCESS);
    assert_int_equal(p.rank, 0);
    assert_int_equal(p.size, 1);
}

static void test_bad_values(void **state)
{
    static const struct {
        const char *env[5];
        const char *method;
        const char *needle;
    } cases[] = {
        { { "RANK=abc", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "RANK=abc" },
        { { "RANK=2", "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "rank 2" },
        { { "RANK=0", "WORLD_SIZE=0", "MASTER_ADDR=h", NULL }, "env://", "WORLD_SIZE=0" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "env://", "MASTER_ADDR" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=70000", NULL }, "env://",
          "MASTER_PORT=70000" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://host:0", "port" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "tcp://[::1", "]" },
        { { "RANK=0", "WORLD_SIZE=2", NULL }, "udp://x:1", "udp://x:1" },
        { { "WORLD_SIZE=2", "MASTER_ADDR=h", NULL }, "env://", "RANK" },
        { { "RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "WEFT_TIMEOUT=-3", NULL }, "env://",
          "WEFT_TIMEOUT" },
    };
    weft__boot_params_t p;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        weft_result_t rc = resolve(cases[i].method, -1, -1, cases[i].env, &p);

        if (rc != WEFT_ERR_INVALID_ARG || !strstr(weft_last_error(), cases[i].needle)) {
            print_error("case %zu (%s): rc %d, error '%s', expected to mention '%s'\n", i,
                        cases[i].method, rc, weft_last_error(), cases[i].needle);
            fail();
        }
    }
}

static void test_slurm_nodelist(void **state)
{
    char host[64];

    (void)state;
    assert_int_equal(weft__slurm_first_host("node01", host, sizeof(host)), WEFT_SUCCESS);
    assert_string_equal(host, "node01");
    assert_int_equal(weft__slurm_first_host("a1,b2", host, sizeof(host)), WEFT_SUCCESS);
    assert_string_equal(host, "a1");
    assert_int_equal(weft__slurm_first_host("n[007-009],m3", host, sizeof(host)), WEFT_SUCCESS);
    assert_string_equal(host, "n007");
    assert_int_equal(weft__slurm_first_host("rack[3,5]", host, sizeof(host)), WEFT_SUCCESS);
    assert_string_equal(host, "rack3");
    assert_int_equal(weft__slurm_first_host("n[x]", host, sizeof(host)), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__slurm_first_host("", host, sizeof(host)), WEFT_ERR_INVALID_ARG);
    assert_int_equal(weft__slurm_first_host("averyveryverylongname", host, 8),
                     WEFT_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_method),     cmocka_unit_test(test_tcp_ipv4_ipv6),
        cmocka_unit_test(test_file_method),    cmocka_unit_test(test_detection_order),
        cmocka_unit_test(test_bad_values),     cmocka_unit_test(test_slurm_nodelist),
    };

    return cmocka_run_group_tests_name("init_method", tests, NULL, NULL);
}
