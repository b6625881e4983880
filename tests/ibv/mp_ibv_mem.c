/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mp_ibv_mem.c: memory that changes under the ib-verbs transport, at 2
 * ranks (rank 0 sends, rank 1 receives).
 *
 *   mp_ibv_mem stale   each rank maps a buffer, a message goes from one to
 *                      the other, then each unmaps it and maps new memory
 *                      at the same address, and the next message must land
 *                      there: a registration made for the old pages and
 *                      served again would send the old bytes or write
 *                      into pages nobody sees (the software device's
 *                      checker also reports it). Unregistered buffers, and
 *                      buffers registered with weft_mem_register and
 *                      deregistered before the unmap.
 *   mp_ibv_mem fork    each rank registers a buffer, then forks children
 *                      that write to that buffer's pages and exit, while
 *                      messages go on from and into it: the parent's
 *                      registered pages must stay its own.
 *   mp_ibv_mem memlock run with RLIMIT_MEMLOCK of 8 MiB and no
 *                      CAP_IPC_LOCK (tests/ibv/memlock.sh): registering 16
 *                      MiB fails with WEFT_ERR_NO_MEMORY naming the limit,
 *                      and the same buffer, unregistered, still travels.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/mp/mptest.h"

#define MEM_BYTES (4u << 20)           /* above WEFT_IB_REG_MIN: a registration candidate */
#define MEM_ROUNDS 4
#define MEM_TAG 57

static unsigned char *map_at(void *where)
{
    void *p = mmap(where, MEM_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (where ? MAP_FIXED : 0), -1, 0);

    if (p == MAP_FAILED)
        MP_FAIL("mmap of %u bytes: %s", MEM_BYTES, strerror(errno));
    if (where && p != where)
        MP_FAIL("mmap gave %p, not %p", p, where);
    return p;
}

/* One message of MEM_BYTES from rank 0's buf to rank 1's, checked. */
static void one_message(weft_comm_t world, int rank, unsigned char *buf, uint64_t seed,
                        const char *what)
{
    if (rank == 0) {
        mp_fill(buf, MEM_BYTES, seed);
        MP_CHECK(weft_send(buf, MEM_BYTES, WEFT_UINT8, 1, MEM_TAG, world));
    } else {
        memset(buf, 0, MEM_BYTES);
        MP_CHECK(weft_recv(buf, MEM_BYTES, WEFT_UINT8, 0, MEM_TAG, world, NULL));
        MP_CHECK_PATTERN(buf, MEM_BYTES, seed, what);
    }
}

static void stale(weft_comm_t world, int rank)
{
    unsigned char *buf = map_at(NULL);
    char what[96];

    for (int round = 0; round < MEM_ROUNDS; round++) {
        weft_memreg_t reg = NULL;
        int registered = round % 2;

        if (registered)
            MP_CHECK(weft_mem_register(world, buf, MEM_BYTES, &reg));
        for (int i = 0; i < 2; i++) {
            snprintf(what, sizeof(what), "round %d (%s), message %d", round,
                     registered ? "registered" : "not registered", i);
            one_message(world, rank, buf, (uint64_t)round * 10 + (uint64_t)i, what);
        }
        if (reg)
            MP_CHECK(weft_mem_deregister(reg));
        /* Both ranks are done with the old pages before either remaps. */
        MP_CHECK(weft_barrier(world));
        if (munmap(buf, MEM_BYTES) != 0)
            MP_FAIL("munmap: %s", strerror(errno));
        buf = map_at(buf);
    }
    munmap(buf, MEM_BYTES);
    mp_log("%d rounds of remapped buffers, every message where it belongs", MEM_ROUNDS);
}

static void fork_children(unsigned char *buf)
{
    pid_t pid = fork();
    int status;

    if (pid < 0)
        MP_FAIL("fork: %s", strerror(errno));
    if (pid == 0) {
        /* The child's writes must stay the child's. */
        memset(buf, 0xee, MEM_BYTES);
        _exit(0);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        MP_FAIL("the child did not exit cleanly");
}

static void forks(weft_comm_t world, int rank)
{
    unsigned char *buf = map_at(NULL);
    weft_memreg_t reg = NULL;
    char what[64];

    MP_CHECK(weft_mem_register(world, buf, MEM_BYTES, &reg));
    for (int round = 0; round < MEM_ROUNDS; round++) {
        snprintf(what, sizeof(what), "round %d, before the fork", round);
        one_message(world, rank, buf, 100 + (uint64_t)round * 2, what);
        fork_children(buf);
        snprintf(what, sizeof(what), "round %d, after the fork", round);
        one_message(world, rank, buf, 101 + (uint64_t)round * 2, what);
    }
    MP_CHECK(weft_mem_deregister(reg));
    munmap(buf, MEM_BYTES);
    mp_log("%d forks with registered memory, every message right", MEM_ROUNDS);
}

static void memlock(weft_comm_t world, int rank)
{
    size_t bytes = 16u << 20;
    unsigned char *buf = mp_alloc(bytes);
    weft_memreg_t reg = NULL;
    weft_result_t rc = weft_mem_register(world, buf, bytes, &reg);

    MP_ASSERT(rc == WEFT_ERR_NO_MEMORY, "registering %zu bytes above RLIMIT_MEMLOCK gave %s",
              bytes, mp_rc_name(rc));
    MP_ASSERT(strstr(weft_last_error(), "RLIMIT_MEMLOCK") != NULL,
              "the refusal does not name RLIMIT_MEMLOCK: %s", weft_last_error());
    mp_log("registration refused: %s", weft_last_error());
    if (rank == 0) {
        mp_fill(buf, bytes, 77);
        MP_CHECK(weft_send(buf, bytes, WEFT_UINT8, 1, MEM_TAG, world));
    } else {
        memset(buf, 0, bytes);
        MP_CHECK(weft_recv(buf, bytes, WEFT_UINT8, 0, MEM_TAG, world, NULL));
        MP_CHECK_PATTERN(buf, bytes, 77, "16 MiB unregistered");
    }
    free(buf);
}

int main(int argc, char **argv)
{
    weft_comm_t world = NULL;
    int rank, size;

    if (argc != 2 || (strcmp(argv[1], "stale") != 0 && strcmp(argv[1], "fork") != 0 &&
                      strcmp(argv[1], "memlock") != 0)) {
        fprintf(stderr, "usage: mp_ibv_mem stale|fork|memlock   (under weftrun -n 2)\n");
        return 2;
    }
    MP_CHECK(weft_init(NULL, &world));
    MP_CHECK(weft_comm_rank(world, &rank));
    MP_CHECK(weft_comm_size(world, &size));
    mp_rank = rank;
    mp_size = size;
    if (size != 2)
        mp_skip("mp_ibv_mem runs at 2 ranks");
    if (strcmp(argv[1], "stale") == 0)
        stale(world, rank);
    else if (strcmp(argv[1], "fork") == 0)
        forks(world, rank);
    else
        memlock(world, rank);
    MP_CHECK(weft_comm_destroy(world));
    return 0;
}
