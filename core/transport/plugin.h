/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin.h: finding, loading and initialising transport plugins.
 *
 * Search order: every folder of WEFT_PLUGIN_PATH (colon list, empty
 * entries ignored), then the folder weft/ beside the object that holds the
 * loader (libweft.so, found with dladdr; the program itself when the core
 * is linked in statically, as in weft-info and the unit tests), then the
 * configured plugin directory (WEFT_PLUGIN_DIR). A folder reached twice
 * (same device and inode) is searched once. Candidates are files named
 * weft-<name>.so, taken folder by folder in that order and by name within
 * a folder; the first file found for a name wins and later ones are
 * SHADOWED, even when the first cannot be used. WEFT_TRANSPORTS selects
 * ("shm,sockets") or denies ("^sockets") by name before anything is opened.
 *
 * A candidate is opened with dlopen(RTLD_NOW | RTLD_LOCAL) and must export
 * a symbol of an ABI version this core knows (weft_transport_v1; the newest
 * known is tried first) whose table is as large as it claims, carries the
 * file's name, points only into loaded objects, and has every required
 * function. Then init() runs: WEFT_ERR_UNSUPPORTED means the transport
 * does not apply here (REFUSED, logged at INFO), any other error is
 * INIT_FAILED. When a topology is given, a transport whose needs
 * (WEFT_TRANSPORT_NEED_*) the machine does not meet is not initialised
 * (REFUSED, "not applicable: <need that failed>") unless WEFT_TRANSPORTS
 * names it (forced: it is started anyway, with a warning).
 * NEED_LOCAL_PEER is left to weft__plugins_drop once the job is known.
 * Every skipped file is logged at WARN with the file and the
 * reason (DENIED, SHADOWED and REFUSED only at INFO);
 * WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=PLUGIN shows every candidate.
 *
 * Nothing a plugin exports can crash the loader; code a plugin runs (its
 * constructors, init) can, and that cannot be caught in-process.
 */
#ifndef WEFT_CORE_PLUGIN_H
#define WEFT_CORE_PLUGIN_H

#include <pthread.h>

#include "weft.h"
#include "weft/transport.h"
#include "topo/topo.h"

#define WEFT__PLUGIN_NAME_MAX 32
#define WEFT__PLUGIN_MAX 16

/* What happened to a candidate file (weft-info prints these). */
typedef enum weft__plugin_state {
    WEFT__PLUGIN_LOADED = 0,     /* initialised and usable */
    WEFT__PLUGIN_DENIED,         /* excluded by WEFT_TRANSPORTS */
    WEFT__PLUGIN_SHADOWED,       /* a file of the same name was found earlier */
    WEFT__PLUGIN_DLOPEN_FAILED,
    WEFT__PLUGIN_NO_SYMBOL,
    WEFT__PLUGIN_BAD_ABI,        /* wrong ABI version, size, name, pointer or missing function */
    WEFT__PLUGIN_INIT_FAILED,    /* init or query failed, or too many plugins */
    WEFT__PLUGIN_REFUSED,        /* init returned WEFT_ERR_UNSUPPORTED */
    WEFT__PLUGIN_USABLE,         /* weft__plugins_scan: passed every check short of init */
    WEFT__PLUGIN_BAD_NAME        /* weft-<name>.so with a name that is not a plugin name */
} weft__plugin_state_t;

typedef struct weft__plugin_candidate {
    char path[4096];
    char name[WEFT__PLUGIN_NAME_MAX];
    weft__plugin_state_t state;
    /* Why it was skipped (without the path), or "" when LOADED/USABLE. */
    char reason[512];
    /* The plugin's one-line description, once its table passed the checks. */
    char description[128];
    /* WEFT_TRANSPORT_NEED_* of its table (0 for tables without the field). */
    uint64_t needs;
    int forced;                      /* named by WEFT_TRANSPORTS (not "^...") */
} weft__plugin_candidate_t;

/* Where a folder of the search came from, and what came of it. */
typedef enum weft__plugin_dir_origin {
    WEFT__PLUGIN_DIR_PATH = 0,       /* WEFT_PLUGIN_PATH */
    WEFT__PLUGIN_DIR_BESIDE,         /* weft/ beside the object holding the loader */
    WEFT__PLUGIN_DIR_CONFIGURED      /* WEFT_PLUGIN_DIR, the install folder */
} weft__plugin_dir_origin_t;

typedef enum weft__plugin_dir_status {
    WEFT__PLUGIN_DIR_SEARCHED = 0,
    WEFT__PLUGIN_DIR_MISSING,        /* does not exist or is no folder */
    WEFT__PLUGIN_DIR_UNREADABLE,     /* exists, could not be listed (logged) */
    WEFT__PLUGIN_DIR_DUPLICATE       /* the same folder as an earlier entry */
} weft__plugin_dir_status_t;

typedef struct weft__plugin_dir {
    char path[4096];
    weft__plugin_dir_origin_t origin;
    weft__plugin_dir_status_t status;
} weft__plugin_dir_t;

typedef struct weft__plugin {
    char name[WEFT__PLUGIN_NAME_MAX];
    char path[4096];
    void *dl;                        /* dlopen handle */
    const weft_transport_v1_t *ops;
    void *ctx;                       /* from ops->init */
    weft_transport_caps_t caps;
    uint64_t needs;                  /* as the candidate's */
    int forced;
    /* The ABI promises plugins one caller at a time per ctx. */
    pthread_mutex_t lock;
    int used;                        /* reaches at least one peer: progressed */
    /* Its device memory services (NULL: none), checked at load. */
    const weft_transport_device_t *device;
} weft__plugin_t;

typedef struct weft__plugin_set {
    weft__plugin_t plugins[WEFT__PLUGIN_MAX];
    int n;
    /* The first of plugins that offers device memory services, or NULL
     * (weft__plugins_device): read on every call that may stage. */
    weft__plugin_t *device;
    weft__plugin_candidate_t *candidates; /* every file looked at, malloc'd */
    int ncandidates;
    weft__plugin_dir_t *dirs;             /* every folder of the search, malloc'd */
    int ndirs;
} weft__plugin_set_t;

/* Parsed WEFT_TRANSPORTS. */
typedef struct weft__transport_filter {
    int deny;                        /* 1: names are denied, 0: only names allowed */
    int n;                           /* 0 with deny = 0 means "allow all" */
    char names[WEFT__PLUGIN_MAX][WEFT__PLUGIN_NAME_MAX];
} weft__transport_filter_t;

/* "" or NULL: allow all. "a,b": only a and b. "^a,b": all but a and b.
 * Names are plugin names (weft__plugin_name_valid), separated by single
 * commas, without blanks; a name given twice counts once.
 * WEFT_ERR_INVALID_ARG for malformed lists (empty or invalid names, a
 * lone "^", more than WEFT__PLUGIN_MAX names), with weft_last_error()
 * quoting the list; *out is written only on success. */
weft_result_t weft__transport_filter_parse(const char *spec, weft__transport_filter_t *out);
int weft__transport_filter_allows(const weft__transport_filter_t *f, const char *name);
/* 1 when f is a list of names to take ("a,b", not "^a") that holds name:
 * the user asked for that transport by name. */
int weft__transport_filter_forces(const weft__transport_filter_t *f, const char *name);

/* 1 when name[0..len) is a plugin name: 1 to WEFT__PLUGIN_NAME_MAX - 1
 * ASCII letters, digits, '-' and '_'. */
int weft__plugin_name_valid(const char *name, size_t len);

/* Short text of a state for logs and weft-info ("loaded", "bad ABI"). */
const char *weft__plugin_state_name(weft__plugin_state_t state);

/* Where to search and what to take. weft__plugins_load and _scan take it
 * from the environment; tests set it themselves. */
typedef struct weft__plugin_config {
    const char *path;          /* colon list searched first (WEFT_PLUGIN_PATH), may be NULL */
    const char *transports;    /* filter (WEFT_TRANSPORTS), may be NULL */
    int no_default_dirs;       /* 1: search only path, not beside the loader nor WEFT_PLUGIN_DIR */
    const weft__topo_t *topo;  /* judge needs against it; NULL: take every plugin */
} weft__plugin_config_t;

/* The configuration the environment gives (pointers into environ). */
void weft__plugin_config_from_env(weft__plugin_config_t *cfg);

/* The loader proper. With core, every allowed candidate that passes the
 * checks is initialised with core and queried; states end as LOADED or a
 * reason to skip. Without core (NULL) nothing is initialised: candidates
 * that pass the checks end as USABLE and are dlclosed again, set->n
 * stays 0, and no candidate is no error. set need not be initialised.
 * core->set_error must set the text of weft_last_error() (weft__set_error):
 * the loader takes init's reasons from there.
 * Results: WEFT_SUCCESS; WEFT_ERR_INVALID_ARG for a malformed transports
 * filter (nothing searched, set empty); WEFT_ERR_PLUGIN when core was given
 * and no plugin could be initialised: weft_last_error() then lists each
 * candidate file with its reason and the folders searched
 * ("no usable transport: weft-x.so: why; ...; searched: /a, /b (missing)");
 * WEFT_ERR_NO_MEMORY. Whatever the result, set->dirs and set->candidates
 * hold what was searched so far, and weft__plugins_unload(set) must be
 * called to release it. */
weft_result_t weft__plugins_open(const weft__plugin_config_t *cfg,
                                 const weft_transport_core_t *core, weft__plugin_set_t *set);

/* weft__plugins_open with the environment's configuration, core required. */
weft_result_t weft__plugins_load(const weft_transport_core_t *core, weft__plugin_set_t *set);
/* weft__plugins_open with the environment's configuration and no core:
 * lists candidates, dlopens and checks them, but initialises nothing
 * (state USABLE for those init would be tried on). */
weft_result_t weft__plugins_scan(weft__plugin_set_t *set);
/* The same, judging the plugins' needs against topo (may be NULL). */
weft_result_t weft__plugins_load_topo(const weft_transport_core_t *core, const weft__topo_t *topo,
                                      weft__plugin_set_t *set);
weft_result_t weft__plugins_scan_topo(const weft__topo_t *topo, weft__plugin_set_t *set);

/* Finalises and dlcloses loaded plugin i (a need turned out unmet once the
 * job was known), marks its candidate REFUSED with "not applicable: why",
 * and closes the gap in set->plugins. Only before any peer points at a
 * plugin: later plugins move down by one. */
void weft__plugins_drop(weft__plugin_set_t *set, int i, const char *why);

/* Fills core's struct_size and its log, set_error, get_param and
 * device_nearness (unknown for every device) services
 * (plugin_services.c); the caller sets the rest. */
void weft__transport_core_defaults(weft_transport_core_t *core);

/* Hands every WARN and INFO line a plugin logs to sink as well, whatever
 * WEFT_DEBUG says (NULL stops it): weft-info shows what each transport
 * found (devices, ports, addresses) under its entry. Not thread-safe: set
 * it before plugins load. */
typedef void (*weft__plugin_log_sink_t)(void *arg, const char *plugin, int level,
                                        const char *msg);
void weft__plugin_log_capture(weft__plugin_log_sink_t sink, void *arg);

/* Finalises and dlcloses every loaded plugin in reverse load order, frees
 * candidates and folders, and leaves set zeroed (calling it again, or on a
 * zeroed set, does nothing). */
void weft__plugins_unload(weft__plugin_set_t *set);

/* Whether device table d has the sharing group (ipc_export and the rest,
 * weft/transport.h): it is long enough and ipc_export is set. */
static inline int weft__device_has_ipc(const weft_transport_device_t *d)
{
    return d->struct_size >= offsetof(weft_transport_device_t, stream_avg) +
                                 sizeof(d->stream_avg) &&
           d->ipc_export;
}

/* The first loaded plugin that offers device memory services, or NULL:
 * the one the core stages device buffers and orders streams with. */
static inline weft__plugin_t *weft__plugins_device(weft__plugin_set_t *set)
{
    return set->device;
}

#endif /* WEFT_CORE_PLUGIN_H */
