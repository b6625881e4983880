/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_private_file.c: weft's files in /dev/shm (shared segments,
 * doorbells) are created owner-only and exclusively, and a file planted
 * at their name beforehand, by another user, open to others, of the
 * wrong type, or as a symbolic link to somewhere else, is refused rather
 * than used. The cases with another owner need root (chown); as another
 * user they are skipped with a message.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/base/private_file.h"

#define OTHER_UID 65534 /* nobody */

static char name[64], path[96], target[96];

static int setup(void **state)
{
    (void)state;
    snprintf(name, sizeof(name), "/weft-test-private-%d", (int)getpid());
    snprintf(path, sizeof(path), "/dev/shm%s", name);
    snprintf(target, sizeof(target), "/dev/shm/weft-test-private-target-%d", (int)getpid());
    unlink(path);
    unlink(target);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    unlink(target);
    return 0;
}

static void plant_file(const char *at, mode_t mode)
{
    int fd = open(at, O_CREAT | O_EXCL | O_RDWR, mode);

    assert_true(fd >= 0);
    assert_int_equal(fchmod(fd, mode), 0); /* past the umask */
    close(fd);
}

static void test_created_owner_only(void **state)
{
    char why[160] = "";
    struct stat st;
    int created = -1, fd;

    (void)state;
    fd = weft__private_shm_open(name, &created, why, sizeof(why));
    assert_true(fd >= 0);
    assert_int_equal(created, 1);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    close(fd);
    /* The job's next rank opens the same file, and it passes. */
    fd = weft__private_shm_open(name, &created, why, sizeof(why));
    assert_true(fd >= 0);
    assert_int_equal(created, 0);
    close(fd);
}

static void test_open_to_others_refused(void **state)
{
    char why[160] = "";
    int created, fd;

    (void)state;
    plant_file(path, 0666);
    fd = weft__private_shm_open(name, &created, why, sizeof(why));
    assert_int_equal(fd, -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(why, "open to other users (mode 0666)"));
}

static void test_other_owner_refused(void **state)
{
    char why[160] = "";
    int created, fd;

    (void)state;
    if (geteuid() != 0) {
        print_message("skipped: planting a file of another user needs root\n");
        skip();
    }
    plant_file(path, 0600);
    assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
    fd = weft__private_shm_open(name, &created, why, sizeof(why));
    assert_int_equal(fd, -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(why, "owned by uid 65534, not this user"));
}

static void test_symlink_refused(void **state)
{
    char why[160] = "";
    int created, fd;

    (void)state;
    /* A link to a file of this user's, which the check alone would pass:
     * only not following links keeps weft from writing through it. */
    plant_file(target, 0600);
    assert_int_equal(symlink(target, path), 0);
    fd = weft__private_shm_open(name, &created, why, sizeof(why));
    assert_int_equal(fd, -1);
    assert_non_null(strstr(why, "symbolic link"));
    fd = weft__private_fifo_open(path, why, sizeof(why));
    assert_int_equal(fd, -1);
    assert_non_null(strstr(why, "symbolic link"));
}

static void test_fifo(void **state)
{
    char why[160] = "";
    struct stat st;
    int fd;

    (void)state;
    fd = weft__private_fifo_open(path, why, sizeof(why));
    assert_true(fd >= 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    close(fd);
    unlink(path);
    /* A regular file where the FIFO should be. */
    plant_file(path, 0600);
    fd = weft__private_fifo_open(path, why, sizeof(why));
    assert_int_equal(fd, -1);
    assert_non_null(strstr(why, "not a FIFO"));
    unlink(path);
    /* A FIFO others may write to. */
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(chmod(path, 0622), 0);
    fd = weft__private_fifo_open(path, why, sizeof(why));
    assert_int_equal(fd, -1);
    assert_non_null(strstr(why, "open to other users"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_created_owner_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_to_others_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_owner_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
