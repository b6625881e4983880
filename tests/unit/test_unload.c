/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_unload.c: libweft unloaded (dlclose) while a thread that used it
 * lives on, as a Python program using ctypes or a plugin host may do. The
 * thread's exit must not run code of the unloaded library: it would
 * crash. The thread joins a job of one rank, runs a blocking collective
 * and a send and receive so that its caches of requests and collectives
 * hold something, finalises, and waits while the main thread unloads the
 * library; then it exits. Exit 0 when nothing crashed, 77 when the
 * library cannot be found or does not unload (nothing to test then).
 */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft.h"

#define SKIP 77

typedef struct api {
    weft_result_t (*init)(const weft_init_attr_t *, weft_comm_t *);
    weft_result_t (*allreduce)(const void *, void *, size_t, weft_dtype_t, weft_op_t,
                               weft_comm_t);
    weft_result_t (*irecv)(void *, size_t, weft_dtype_t, int, int, weft_comm_t,
                           weft_request_t *);
    weft_result_t (*send)(const void *, size_t, weft_dtype_t, int, int, weft_comm_t);
    weft_result_t (*wait)(weft_request_t *, weft_status_t *);
    weft_result_t (*comm_destroy)(weft_comm_t);
    const char *(*last_error)(void);
} api_t;

static api_t api;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int used;         /* the thread is done with weft */
static int unloaded;     /* the main thread closed the library */

static void fail(const char *what, weft_result_t rc)
{
    fprintf(stderr, "test_unload: %s failed (%d): %s\n", what, (int)rc, api.last_error());
    exit(1);
}

static void *use_weft(void *unused)
{
    weft_comm_t world;
    weft_request_t req;
    double in = 1.5, out = 0;
    int sent = 7, got = 0;
    weft_result_t rc;

    (void)unused;
    if ((rc = api.init(NULL, &world)) != WEFT_SUCCESS)
        fail("weft_init", rc);
    if ((rc = api.allreduce(&in, &out, 1, WEFT_FLOAT64, WEFT_SUM, world)) != WEFT_SUCCESS)
        fail("weft_allreduce", rc);
    if ((rc = api.irecv(&got, 1, WEFT_INT32, 0, 1, world, &req)) != WEFT_SUCCESS)
        fail("weft_irecv", rc);
    if ((rc = api.send(&sent, 1, WEFT_INT32, 0, 1, world)) != WEFT_SUCCESS)
        fail("weft_send", rc);
    if ((rc = api.wait(&req, NULL)) != WEFT_SUCCESS)
        fail("weft_wait", rc);
    if (out != 1.5 || got != 7) {
        fprintf(stderr, "test_unload: allreduce gave %g, the message %d\n", out, got);
        exit(1);
    }
    if ((rc = api.comm_destroy(world)) != WEFT_SUCCESS)
        fail("weft_comm_destroy", rc);

    pthread_mutex_lock(&lock);
    used = 1;
    pthread_cond_signal(&cond);
    while (!unloaded)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL; /* thread-specific data destructors run here */
}

/* Whether a mapping of path is left in this process. */
static int still_mapped(const char *path)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;

    if (!maps)
        return 0;
    while (!found && fgets(line, sizeof(line), maps))
        found = strstr(line, path) != NULL;
    fclose(maps);
    return found;
}

int main(void)
{
    const char *path = WEFT_TEST_BUILDDIR "/.libs/libweft.so";
    char real[4096];
    pthread_t th;
    void *lib;

    if (!realpath(path, real)) {
        fprintf(stderr, "test_unload: no %s: skipped\n", path);
        return SKIP;
    }
    /* The plugins of the build tree, as tests/mp/run.sh points at them. */
    setenv("WEFT_PLUGIN_PATH", WEFT_TEST_BUILDDIR "/plugins/sockets/.libs", 0);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "test_unload: %s: skipped\n", dlerror());
        return SKIP;
    }
    *(void **)&api.init = dlsym(lib, "weft_init");
    *(void **)&api.allreduce = dlsym(lib, "weft_allreduce");
    *(void **)&api.irecv = dlsym(lib, "weft_irecv");
    *(void **)&api.send = dlsym(lib, "weft_send");
    *(void **)&api.wait = dlsym(lib, "weft_wait");
    *(void **)&api.comm_destroy = dlsym(lib, "weft_comm_destroy");
    *(void **)&api.last_error = dlsym(lib, "weft_last_error");
    if (!api.init || !api.allreduce || !api.irecv || !api.send || !api.wait ||
        !api.comm_destroy || !api.last_error) {
        fprintf(stderr, "test_unload: libweft lacks a symbol: %s\n", dlerror());
        return 1;
    }
    if (pthread_create(&th, NULL, use_weft, NULL) != 0) {
        perror("test_unload: pthread_create");
        return 1;
    }
    pthread_mutex_lock(&lock);
    while (!used)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);

    memset(&api, 0, sizeof(api));
    if (dlclose(lib) != 0) {
        fprintf(stderr, "test_unload: dlclose: %s\n", dlerror());
        return 1;
    }
    if (still_mapped(real)) {
        /* Something keeps it loaded: its code stays, nothing to test. */
        fprintf(stderr, "test_unload: %s stays mapped after dlclose: skipped\n", real);
        pthread_mutex_lock(&lock);
        unloaded = 1;
        pthread_cond_signal(&cond);
        pthread_mutex_unlock(&lock);
        pthread_join(th, NULL);
        return SKIP;
    }
    pthread_mutex_lock(&lock);
    unloaded = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(th, NULL);
    return 0;
}
