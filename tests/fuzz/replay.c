/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.c: runs a harness over its committed corpus, for make check (no
 * libFuzzer there: gcc builds it). Without arguments the corpus is
 * $abs_top_srcdir/tests/fuzz/corpus/<what> for a program called
 * fuzz_<what>; arguments name files or folders to run instead, which is
 * how a crash input from check-long is looked at under a debugger.
 *
 * Every file is one input, run in name order so that a failure is
 * reproducible; a property the harness finds broken aborts, which fails
 * the test with the harness's message.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

/* An input that hangs weft fails the test rather than make check:
 * libFuzzer's -timeout does this for check-long. */
#define INPUT_SECONDS 60

static const char *current;

static void on_alarm(int sig)
{
    static const char msg[] = "replay: an input ran for over 60 s: ";

    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, current, strlen(current)) < 0 ||
        write(2, "\n", 1) < 0)
        _exit(1);
    abort();
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    do {
        if (len == cap) {
            unsigned char *p = realloc(buf, cap ? 2 * cap : 4096);

            if (!p) {
                fprintf(stderr, "replay: out of memory reading %s\n", path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = p;
            cap = cap ? 2 * cap : 4096;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    /* An exact-size copy: reading past the input is what ASan builds of
     * this driver should catch, as libFuzzer's would. */
    {
        unsigned char *exact = malloc(len ? len : 1);

        if (!exact) {
            free(buf);
            return -1;
        }
        if (len)
            memcpy(exact, buf, len);
        free(buf);
        current = path;
        alarm(INPUT_SECONDS);
        LLVMFuzzerTestOneInput(exact, len);
        alarm(0);
        free(exact);
    }
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Runs every file of dir; the number run, or -1. */
static int run_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name), ran = 0, rc = 0;

    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                rc = -1;
            ran++;
        }
        free(names[i]);
    }
    free(names);
    return rc ? -1 : ran;
}

static int run_path(const char *path)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return run_dir(path);
    return run_file(path) == 0 ? 1 : -1;
}

int main(int argc, char **argv)
{
    const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    const char *src = getenv("abs_top_srcdir");
    int total = 0;

    signal(SIGALRM, on_alarm);
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            int n = run_path(argv[i]);

            if (n < 0)
                return 1;
            total += n;
        }
    } else {
        char dir[4096];
        int n;

        /* libtool may run the program as lt-fuzz_<what>. */
        if (!strncmp(self, "lt-", 3))
            self += 3;
        if (strncmp(self, "fuzz_", 5) != 0) {
            fprintf(stderr, "replay: called %s, not fuzz_<what>: name the inputs\n", self);
            return 1;
        }
        snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src ? src : WEFT_TEST_SRCDIR,
                 self + 5);
        n = run_dir(dir);
        if (n < 0)
            return 1;
        if (n == 0) {
            fprintf(stderr, "replay: no inputs in %s\n", dir);
            return 1;
        }
        total = n;
    }
    printf("%s: %d inputs replayed, every property held\n", self, total);
    return 0;
}
