/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c: WEFT_DEBUG / WEFT_DEBUG_SUBSYS / WEFT_DEBUG_FILE handling.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/base/log.h"

int weft__log_level = -1;
unsigned weft__log_subsys = WEFT__SUBSYS_ALL;

static FILE *log_file;
static int log_rank = -1;
static char log_host[64];
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
/* Serialises writers so lines from several threads do not interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct {
    const char *name;
    unsigned bit;
} subsys_names[] = {
    { "INIT", WEFT__SUBSYS_INIT },     { "TOPO", WEFT__SUBSYS_TOPO },
    { "PLUGIN", WEFT__SUBSYS_PLUGIN }, { "TRANSPORT", WEFT__SUBSYS_TRANSPORT },
    { "COLL", WEFT__SUBSYS_COLL },     { "TUNING", WEFT__SUBSYS_TUNING },
    { "ALL", WEFT__SUBSYS_ALL },
};

static const char *subsys_name(unsigned bit)
{
    for (size_t i = 0; i < sizeof(subsys_names) / sizeof(subsys_names[0]); i++)
        if (subsys_names[i].bit == bit)
            return subsys_names[i].name;
    return "?";
}

static int parse_level(const char *s)
{
    if (!s || !*s || !strcasecmp(s, "WARN"))
        return WEFT__LOG_WARN;
    if (!strcasecmp(s, "NONE"))
        return WEFT__LOG_NONE;
    if (!strcasecmp(s, "INFO"))
        return WEFT__LOG_INFO;
    if (!strcasecmp(s, "TRACE"))
        return WEFT__LOG_TRACE;
    fprintf(stderr, "weft: WEFT_DEBUG=%s is not one of NONE, WARN, INFO, TRACE; using WARN\n", s);
    return WEFT__LOG_WARN;
}

/* "INIT,PLUGIN" selects those; "^COLL" keeps all but COLL. */
static unsigned parse_subsys(const char *s)
{
    unsigned mask = 0;
    int deny = 0;
    char buf[256], *save = NULL;

    if (!s || !*s)
        return WEFT__SUBSYS_ALL;
    if (*s == '^') {
        deny = 1;
        s++;
    }
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t i, n = sizeof(subsys_names) / sizeof(subsys_names[0]);

        for (i = 0; i < n; i++)
            if (!strcasecmp(tok, subsys_names[i].name))
                break;
        if (i == n)
            fprintf(stderr, "weft: WEFT_DEBUG_SUBSYS: unknown subsystem '%s' ignored\n", tok);
        else
            mask |= subsys_names[i].bit;
    }
    return deny ? ~mask : mask;
}

static void open_log_file(const char *pattern)
{
    char path[4096];
    size_t o = 0;

    for (const char *p = pattern; *p && o + 64 < sizeof(path); p++) {
        if (p[0] == '%' && p[1] == 'h') {
            o += snprintf(path + o, sizeof(path) - o, "%s", log_host);
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            o += snprintf(path + o, sizeof(path) - o, "%d", (int)getpid());
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = '\0';
    log_file = fopen(path, "a");
    if (!log_file)
        fprintf(stderr, "weft: cannot open WEFT_DEBUG_FILE %s: %m; logging to stderr\n", path);
    else
        setvbuf(log_file, NULL, _IOLBF, 0);
}

void weft__log_reload(void)
{
    const char *file = getenv("WEFT_DEBUG_FILE");

    if (gethostname(log_host, sizeof(log_host)) != 0)
        snprintf(log_host, sizeof(log_host), "unknown");
    log_host[sizeof(log_host) - 1] = '\0';
    weft__log_subsys = parse_subsys(getenv("WEFT_DEBUG_SUBSYS"));
    if (log_file) {
        fclose(log_file);
        log_file = NULL;
    }
    if (file && *file)
        open_log_file(file);
    /* Published last: other threads test the level without the lock. */
    __atomic_store_n(&weft__log_level, parse_level(getenv("WEFT_DEBUG")), __ATOMIC_RELEASE);
}

void weft__log_init(void)
{
    pthread_once(&log_once, weft__log_reload);
}

void weft__log_set_rank(int rank)
{
    log_rank = rank;
}

int weft__log_enabled(int level, unsigned subsys)
{
    if (__atomic_load_n(&weft__log_level, __ATOMIC_ACQUIRE) < 0)
        weft__log_init();
    return level <= weft__log_level && (subsys & weft__log_subsys);
}

void weft__log_vwrite(int level, unsigned subsys, const char *prefix, const char *fmt,
                      va_list ap)
{
    static const char *level_names[] = { "NONE", "WARN", "INFO", "TRACE" };
    FILE *out = log_file ? log_file : stderr;
    char who[96], msg[2048];
    struct timeval tv;

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (log_rank >= 0)
        snprintf(who, sizeof(who), "%s:%d:%d", log_host, (int)getpid(), log_rank);
    else
        snprintf(who, sizeof(who), "%s:%d", log_host, (int)getpid());
    gettimeofday(&tv, NULL);
    pthread_mutex_lock(&log_lock);
    fprintf(out, "%s [%ld.%06ld] weft %s %s %s%s%s\n", who, (long)tv.tv_sec, (long)tv.tv_usec,
            level_names[level], subsys_name(subsys), prefix ? prefix : "", prefix ? ": " : "",
            msg);
    pthread_mutex_unlock(&log_lock);
}

void weft__log_write(int level, unsigned subsys, const char *file, int line, const char *fmt,
                     ...)
{
    va_list ap;

    (void)file;
    (void)line;
    va_start(ap, fmt);
    weft__log_vwrite(level, subsys, NULL, fmt, ap);
    va_end(ap);
}
