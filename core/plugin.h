/*
 * plugin.h: finding, loading and initialising transport plugins.
 *
 * Search order: every folder of WEFT_PLUGIN_PATH (colon list), then the
 * folder weft/ beside libweft.so (found with dladdr), then the configured
 * plugin directory (WEFT_PLUGIN_DIR). Candidates are files named
 * weft-<name>.so; the first file found for a name wins. WEFT_TRANSPORTS
 * selects ("shm,sockets") or denies ("^sockets") by name. A plugin that
 * cannot be loaded, exports no usable symbol, has a wrong ABI version or
 * size, or whose init fails is skipped with a WARN naming the file and the
 * reason. WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=PLUGIN shows every candidate.
 */
#ifndef WEFT_CORE_PLUGIN_H
#define WEFT_CORE_PLUGIN_H

#include <pthread.h>

#include "weft.h"
#include "weft/transport.h"

#define WEFT__PLUGIN_NAME_MAX 32
#define WEFT__PLUGIN_MAX 16

/* What happened to a candidate file (weft-info prints these). */
typedef enum weft__plugin_state {
    WEFT__PLUGIN_LOADED = 0,     /* initialised and usable */
    WEFT__PLUGIN_DENIED,         /* excluded by WEFT_TRANSPORTS */
    WEFT__PLUGIN_SHADOWED,       /* a file of the same name was found earlier */
    WEFT__PLUGIN_DLOPEN_FAILED,
    WEFT__PLUGIN_NO_SYMBOL,
    WEFT__PLUGIN_BAD_ABI,        /* wrong ABI version, struct size or missing function */
    WEFT__PLUGIN_INIT_FAILED,
    WEFT__PLUGIN_REFUSED         /* init returned WEFT_ERR_UNSUPPORTED */
} weft__plugin_state_t;

typedef struct weft__plugin_candidate {
    char path[4096];
    char name[WEFT__PLUGIN_NAME_MAX];
    weft__plugin_state_t state;
    char reason[512];
} weft__plugin_candidate_t;

typedef struct weft__plugin {
    char name[WEFT__PLUGIN_NAME_MAX];
    char path[4096];
    void *dl;                        /* dlopen handle */
    const weft_transport_v1_t *ops;
    void *ctx;                       /* from ops->init */
    weft_transport_caps_t caps;
    /* The ABI promises plugins one caller at a time per ctx. */
    pthread_mutex_t lock;
} weft__plugin_t;

typedef struct weft__plugin_set {
    weft__plugin_t plugins[WEFT__PLUGIN_MAX];
    int n;
    weft__plugin_candidate_t *candidates; /* every file looked at, malloc'd */
    int ncandidates;
} weft__plugin_set_t;

/* Parsed WEFT_TRANSPORTS. */
typedef struct weft__transport_filter {
    int deny;                        /* 1: names are denied, 0: only names allowed */
    int n;                           /* 0 with deny = 0 means "allow all" */
    char names[WEFT__PLUGIN_MAX][WEFT__PLUGIN_NAME_MAX];
} weft__transport_filter_t;

/* "" or NULL: allow all. "a,b": only a and b. "^a,b": all but a and b.
 * WEFT_ERR_INVALID_ARG for malformed lists (empty names, too many). */
weft_result_t weft__transport_filter_parse(const char *spec, weft__transport_filter_t *out);
int weft__transport_filter_allows(const weft__transport_filter_t *f, const char *name);

/* Loads and initialises every allowed plugin (core is passed to each
 * init). Always fills set->candidates. Fails with WEFT_ERR_PLUGIN when no
 * plugin could be initialised, listing why for each candidate. */
weft_result_t weft__plugins_load(const weft_transport_core_t *core, weft__plugin_set_t *set);
/* Lists candidates without initialising anything (weft-info). */
weft_result_t weft__plugins_scan(weft__plugin_set_t *set);
/* Finalises and dlcloses every loaded plugin; frees candidates. */
void weft__plugins_unload(weft__plugin_set_t *set);

#endif /* WEFT_CORE_PLUGIN_H */
