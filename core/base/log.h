/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h: weft's one logging macro.
 *
 * WEFT_DEBUG=WARN|INFO|TRACE sets the level (WARN by default),
 * WEFT_DEBUG_SUBSYS=INIT,PLUGIN,... the subsystems (ALL by default) and
 * WEFT_DEBUG_FILE a file to write to instead of stderr ("%h" becomes the
 * host name, "%p" the pid). The level is tested before formatting, and TRACE
 * compiles out unless configured with --enable-debug.
 */
#ifndef WEFT_CORE_LOG_H
#define WEFT_CORE_LOG_H

#include <stdarg.h>

enum weft__log_level {
    WEFT__LOG_NONE = 0,
    WEFT__LOG_WARN = 1,
    WEFT__LOG_INFO = 2,
    WEFT__LOG_TRACE = 3
};

enum weft__log_subsys {
    WEFT__SUBSYS_INIT = 1u << 0,
    WEFT__SUBSYS_TOPO = 1u << 1,
    WEFT__SUBSYS_PLUGIN = 1u << 2,
    WEFT__SUBSYS_TRANSPORT = 1u << 3,
    WEFT__SUBSYS_COLL = 1u << 4,
    WEFT__SUBSYS_TUNING = 1u << 5,
    WEFT__SUBSYS_ALL = 0xffffffffu
};

/* Read once from the environment on first use; tests may call
 * weft__log_reload() after changing it. */
extern int weft__log_level;
extern unsigned weft__log_subsys;

void weft__log_init(void);
void weft__log_reload(void);
/* Rank shown in every line from now on (-1: unknown yet). */
void weft__log_set_rank(int rank);
int weft__log_enabled(int level, unsigned subsys);
void weft__log_write(int level, unsigned subsys, const char *file, int line,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void weft__log_vwrite(int level, unsigned subsys, const char *prefix,
                      const char *fmt, va_list ap);

#define WEFT_LOG(level, subsys, ...)                                          \
    do {                                                                      \
        if (weft__log_enabled((level), (subsys)))                             \
            weft__log_write((level), (subsys), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define WEFT_WARN(subsys, ...) WEFT_LOG(WEFT__LOG_WARN, WEFT__SUBSYS_##subsys, __VA_ARGS__)
#define WEFT_INFO(subsys, ...) WEFT_LOG(WEFT__LOG_INFO, WEFT__SUBSYS_##subsys, __VA_ARGS__)
#ifdef WEFT_ENABLE_TRACE
#define WEFT_TRACE(subsys, ...) WEFT_LOG(WEFT__LOG_TRACE, WEFT__SUBSYS_##subsys, __VA_ARGS__)
#else
#define WEFT_TRACE(subsys, ...) do { } while (0)
#endif

#endif /* WEFT_CORE_LOG_H */
