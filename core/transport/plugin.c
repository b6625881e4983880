/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin.c: finds transport plugins, checks what they export against the
 * ABI versions this core knows, and initialises them (see plugin.h).
 *
 * The checks exist so that no file, however wrong, can crash the loader:
 * the exported table must be as large as it claims (the ELF symbol size
 * says how large it is), and every pointer in it must lie in a loaded
 * object (dladdr) before it is followed. Code the plugin runs itself, its
 * constructors and init(), is beyond any in-process guard.
 */
#include "config.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/log.h"
#include "core/transport/plugin.h"

#ifndef WEFT_PLUGIN_DIR
#error "the build must define WEFT_PLUGIN_DIR, the installed plugin folder"
#endif

#define FILE_PREFIX "weft-"
#define FILE_SUFFIX ".so"
/* Folders beyond these are ignored with a warning: a PATH-like variable
 * gone wrong should not make every weft_init list thousands of folders. */
#define MAX_DIRS 64

#ifdef WEFT_SANITIZERS
/* A sanitizer names code by the objects mapped when it reports, at exit for
 * leaks: keep plugins mapped after dlclose so their frames are named. */
#define PLUGIN_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#else
#define PLUGIN_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif
/* Candidates named in the WEFT_ERR_PLUGIN message before it is cut short
 * (weft_last_error() holds about 1 KiB). */
#define ERROR_LIST_BUDGET 640

/* One search: the configuration and what is needed to tell folders apart. */
struct search {
    const weft__plugin_config_t *cfg;
    const weft_transport_core_t *core;   /* NULL: scan only */
    weft__plugin_set_t *set;
    weft__transport_filter_t filter;
    struct {
        dev_t dev;
        ino_t ino;
    } ids[MAX_DIRS];
};

const char *weft__plugin_state_name(weft__plugin_state_t state)
{
    switch (state) {
    case WEFT__PLUGIN_LOADED: return "loaded";
    case WEFT__PLUGIN_DENIED: return "denied";
    case WEFT__PLUGIN_SHADOWED: return "shadowed";
    case WEFT__PLUGIN_DLOPEN_FAILED: return "dlopen failed";
    case WEFT__PLUGIN_NO_SYMBOL: return "no symbol";
    case WEFT__PLUGIN_BAD_ABI: return "bad ABI";
    case WEFT__PLUGIN_INIT_FAILED: return "init failed";
    case WEFT__PLUGIN_REFUSED: return "not applicable";
    case WEFT__PLUGIN_USABLE: return "usable";
    case WEFT__PLUGIN_BAD_NAME: return "bad name";
    }
    return "unknown";
}

static const char *origin_name(weft__plugin_dir_origin_t origin)
{
    switch (origin) {
    case WEFT__PLUGIN_DIR_PATH: return "WEFT_PLUGIN_PATH";
    case WEFT__PLUGIN_DIR_BESIDE: return "beside the weft library";
    case WEFT__PLUGIN_DIR_CONFIGURED: return "configured plugin directory";
    }
    return "?";
}

/* ------------------------------------------------------------ ABI versions */

/* Checks a table exported under one symbol name. sym_size is the ELF size
 * of the symbol, 0 when unknown. Returns the operations the core uses, or
 * NULL with why filled. */
typedef const weft_transport_v1_t *(*abi_check_fn)(const void *sym, size_t sym_size,
                                                   const char *name, char *why, size_t why_len);

static int in_loaded_object(const void *p)
{
    Dl_info info;

    return p && dladdr(p, &info) != 0;
}

/* The function pointers of weft_transport_v1_t, for checking them in a loop. */
static const struct {
    size_t offset;
    const char *name;
    int required;
    const char *pair;    /* the function it must come with, or NULL */
} v1_functions[] = {
    { offsetof(weft_transport_v1_t, init), "init", 1, NULL },
    { offsetof(weft_transport_v1_t, query), "query", 1, NULL },
    { offsetof(weft_transport_v1_t, get_address), "get_address", 1, NULL },
    { offsetof(weft_transport_v1_t, reach), "reach", 1, NULL },
    { offsetof(weft_transport_v1_t, connect), "connect", 1, NULL },
    { offsetof(weft_transport_v1_t, disconnect), "disconnect", 1, NULL },
    { offsetof(weft_transport_v1_t, finalize), "finalize", 1, NULL },
    { offsetof(weft_transport_v1_t, mem_register), "mem_register", 1, NULL },
    { offsetof(weft_transport_v1_t, mem_deregister), "mem_deregister", 1, NULL },
    { offsetof(weft_transport_v1_t, isend), "isend", 1, NULL },
    { offsetof(weft_transport_v1_t, irecv), "irecv", 1, NULL },
    { offsetof(weft_transport_v1_t, test), "test", 1, NULL },
    { offsetof(weft_transport_v1_t, cancel), "cancel", 1, NULL },
    { offsetof(weft_transport_v1_t, progress), "progress", 1, NULL },
    { offsetof(weft_transport_v1_t, get_wait_fd), "get_wait_fd", 1, NULL },
    { offsetof(weft_transport_v1_t, improbe), "improbe", 0, "imrecv" },
    { offsetof(weft_transport_v1_t, imrecv), "imrecv", 0, "improbe" },
    { offsetof(weft_transport_v1_t, mem_export), "mem_export", 0, "put" },
    { offsetof(weft_transport_v1_t, put), "put", 0, "mem_export" },
};

#define N_V1_FUNCTIONS ((int)(sizeof(v1_functions) / sizeof(v1_functions[0])))

static void *v1_function(const weft_transport_v1_t *t, int i)
{
    void (*fn)(void);

    /* Every member at these offsets is a function pointer; reading it as
     * one generic type is what POSIX dlsym already assumes. */
    memcpy(&fn, (const char *)t + v1_functions[i].offset, sizeof(fn));
    return (void *)fn;
}

static void *v1_function_named(const weft_transport_v1_t *t, const char *name)
{
    for (int i = 0; i < N_V1_FUNCTIONS; i++)
        if (!strcmp(v1_functions[i].name, name))
            return v1_function(t, i);
    return NULL;
}

static const weft_transport_v1_t *check_v1(const void *sym, size_t sym_size, const char *name,
                                           char *why, size_t why_len)
{
    const weft_transport_v1_t *t = sym;
    size_t name_len = strlen(name);

    /* Read nothing past the object: the size comes first. */
    /* Tables of older ABI 1 headers end at put: that much is required,
     * later fields are read only when struct_size covers them. */
    if (sym_size && sym_size < WEFT_TRANSPORT_V1_MIN_SIZE) {
        snprintf(why, why_len, "weft_transport_v1 is %zu bytes, smaller than "
                 "weft_transport_v1_t (%zu): built against another weft ABI?",
                 sym_size, (size_t)WEFT_TRANSPORT_V1_MIN_SIZE);
        return NULL;
    }
    if (t->abi_version != WEFT_TRANSPORT_ABI_VERSION) {
        snprintf(why, why_len, "weft_transport_v1 says ABI version %u, this weft knows %d",
                 t->abi_version, WEFT_TRANSPORT_ABI_VERSION);
        return NULL;
    }
    if (t->struct_size < WEFT_TRANSPORT_V1_MIN_SIZE) {
        snprintf(why, why_len, "struct_size %zu is smaller than weft_transport_v1_t (%zu)",
                 t->struct_size, (size_t)WEFT_TRANSPORT_V1_MIN_SIZE);
        return NULL;
    }
    if (sym_size && t->struct_size > sym_size) {
        snprintf(why, why_len, "struct_size %zu is larger than the weft_transport_v1 object "
                 "(%zu bytes)", t->struct_size, sym_size);
        return NULL;
    }
    if (!t->name) {
        snprintf(why, why_len, "name is NULL, expected \"%s\"", name);
        return NULL;
    }
    if (!in_loaded_object(t->name)) {
        snprintf(why, why_len, "name points outside every loaded object (%p)",
                 (const void *)t->name);
        return NULL;
    }
    /* Bounded: compares at most name_len + 1 bytes of the plugin's string. */
    if (strncmp(t->name, name, name_len + 1) != 0) {
        snprintf(why, why_len, "name \"%.*s\" differs from \"%s\" of the file name",
                 WEFT__PLUGIN_NAME_MAX, t->name, name);
        return NULL;
    }
    if (t->description && !in_loaded_object(t->description)) {
        snprintf(why, why_len, "description points outside every loaded object (%p)",
                 (const void *)t->description);
        return NULL;
    }
    for (int i = 0; i < N_V1_FUNCTIONS; i++) {
        void *fn = v1_function(t, i);
        const char *pair = v1_functions[i].pair;

        if (!fn && v1_functions[i].required) {
            snprintf(why, why_len, "required function %s is NULL", v1_functions[i].name);
            return NULL;
        }
        if (fn && !in_loaded_object(fn)) {
            snprintf(why, why_len, "function %s points outside every loaded object (%p)",
                     v1_functions[i].name, fn);
            return NULL;
        }
        if (pair && !fn != !v1_function_named(t, pair)) {
            snprintf(why, why_len, "%s is %s but %s is not: they go together",
                     v1_functions[i].name, fn ? "set" : "NULL", pair);
            return NULL;
        }
    }
    return t;
}

/* The ABI versions this core understands, newest first: a plugin may
 * export several, and the newest one known wins. A v2 adds a row above v1
 * whose check returns what the core then uses (the v1 table, or a v2 table
 * once the core runs on v2 and adapts v1 plugins). */
static const struct {
    const char *symbol;
    abi_check_fn check;
} abi_versions[] = {
    { WEFT_TRANSPORT_SYMBOL_V1, check_v1 },
};

#define N_ABI_VERSIONS ((int)(sizeof(abi_versions) / sizeof(abi_versions[0])))

/* ------------------------------------------------------- candidates, dirs */

/* Makes room for one more element of size elem in *array holding n. */
static int grow(void *array, int n, size_t elem)
{
    void **p = array;
    void *bigger;

    /* Capacity doubles from 4, so it is full exactly when n is 0 or a
     * power of two from 4 on. */
    if (n > 0 && (n < 4 || (n & (n - 1))))
        return 0;
    bigger = realloc(*p, (size_t)(n == 0 ? 4 : 2 * n) * elem);
    if (!bigger)
        return -1;
    *p = bigger;
    return 0;
}

static weft__plugin_candidate_t *candidate_add(weft__plugin_set_t *set, const char *dir,
                                               const char *file)
{
    weft__plugin_candidate_t *c;
    size_t len = strlen(file) - strlen(FILE_PREFIX) - strlen(FILE_SUFFIX);

    if (grow(&set->candidates, set->ncandidates, sizeof(*c)) != 0)
        return NULL;
    c = &set->candidates[set->ncandidates++];
    memset(c, 0, sizeof(*c));
    /* consider() made sure that the path fits. */
    memcpy(c->path, dir, strlen(dir));
    c->path[strlen(dir)] = '/';
    memcpy(c->path + strlen(dir) + 1, file, strlen(file) + 1);
    /* Cut to fit when too long; such a name is BAD_NAME anyway. */
    snprintf(c->name, sizeof(c->name), "%.*s", (int)len, file + strlen(FILE_PREFIX));
    return c;
}

static void set_reason(weft__plugin_candidate_t *c, weft__plugin_state_t state,
                       const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_reason(weft__plugin_candidate_t *c, weft__plugin_state_t state,
                       const char *fmt, ...)
{
    va_list ap;

    c->state = state;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
    va_end(ap);
    if (state == WEFT__PLUGIN_DENIED || state == WEFT__PLUGIN_SHADOWED ||
        state == WEFT__PLUGIN_REFUSED)
        WEFT_INFO(PLUGIN, "%s: skipped: %s", c->path, c->reason);
    else
        WEFT_WARN(PLUGIN, "%s: skipped (%s): %s", c->path, weft__plugin_state_name(state),
                  c->reason);
}

/* The folder that holds the object the loader is part of: libweft.so, or
 * the program when the core is linked into it. */
static int loader_dir(char *out, size_t len)
{
    Dl_info info;
    struct link_map *map = NULL;
    char exe[4096];
    const char *file;
    const char *slash;

    if (!dladdr1((void *)weft__plugins_open, &info, (void **)&map, RTLD_DL_LINKMAP) ||
        !info.dli_fname)
        return -1;
    file = info.dli_fname;
    /* For the main program glibc gives argv[0], which may be relative to a
     * PATH entry rather than to the working folder. */
    if (!map || !map->l_name || !map->l_name[0] || !strchr(file, '/')) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        if (n <= 0)
            return -1;
        exe[n] = '\0';
        file = exe;
    }
    slash = strrchr(file, '/');
    if (!slash)
        return -1;
    if (snprintf(out, len, "%.*s/weft", (int)(slash - file), file) >= (int)len)
        return -1;
    return 0;
}

static weft_result_t dir_add(struct search *s, const char *path, size_t len,
                             weft__plugin_dir_origin_t origin)
{
    weft__plugin_set_t *set = s->set;
    weft__plugin_dir_t *d;
    struct stat st;

    /* "/a/b/" and "/a/b" are one folder, and file paths read better
     * without "//". */
    while (len > 1 && path[len - 1] == '/')
        len--;
    if (len == 0)
        return WEFT_SUCCESS;
    if (set->ndirs == MAX_DIRS) {
        WEFT_WARN(PLUGIN, "more than %d plugin folders; %.*s (%s) is not searched", MAX_DIRS,
                  (int)len, path, origin_name(origin));
        return WEFT_SUCCESS;
    }
    if (len >= sizeof(d->path)) {
        WEFT_WARN(PLUGIN, "plugin folder name of %zu bytes (%s) is too long; not searched", len,
                  origin_name(origin));
        return WEFT_SUCCESS;
    }
    if (grow(&set->dirs, set->ndirs, sizeof(*d)) != 0)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the plugin folder list");
    d = &set->dirs[set->ndirs];
    memset(d, 0, sizeof(*d));
    memcpy(d->path, path, len);
    d->path[len] = '\0';
    d->origin = origin;
    if (stat(d->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        d->status = WEFT__PLUGIN_DIR_MISSING;
    } else {
        s->ids[set->ndirs].dev = st.st_dev;
        s->ids[set->ndirs].ino = st.st_ino;
        for (int i = 0; i < set->ndirs; i++)
            if (set->dirs[i].status != WEFT__PLUGIN_DIR_MISSING &&
                s->ids[i].dev == st.st_dev && s->ids[i].ino == st.st_ino)
                d->status = WEFT__PLUGIN_DIR_DUPLICATE;
    }
    set->ndirs++;
    return WEFT_SUCCESS;
}

static weft_result_t dirs_collect(struct search *s)
{
    const char *p = s->cfg->path;
    char beside[4096];
    weft_result_t rc;

    while (p && *p) {
        size_t len = strcspn(p, ":");

        rc = dir_add(s, p, len, WEFT__PLUGIN_DIR_PATH);
        if (rc != WEFT_SUCCESS)
            return rc;
        p += len;
        if (*p == ':')
            p++;
    }
    if (s->cfg->no_default_dirs)
        return WEFT_SUCCESS;
    if (loader_dir(beside, sizeof(beside)) == 0) {
        rc = dir_add(s, beside, strlen(beside), WEFT__PLUGIN_DIR_BESIDE);
        if (rc != WEFT_SUCCESS)
            return rc;
    } else {
        WEFT_INFO(PLUGIN, "cannot tell which file holds the loader (dladdr); not searching "
                  "beside it");
    }
    return dir_add(s, WEFT_PLUGIN_DIR, strlen(WEFT_PLUGIN_DIR), WEFT__PLUGIN_DIR_CONFIGURED);
}

/* ------------------------------------------------------- opening a plugin */

/* Looks up the newest known symbol and checks its table. */
static const weft_transport_v1_t *find_table(weft__plugin_candidate_t *c, void *dl)
{
    char why[sizeof(c->reason)];

    for (int v = 0; v < N_ABI_VERSIONS; v++) {
        const ElfW(Sym) *esym = NULL;
        const weft_transport_v1_t *ops;
        Dl_info info;
        void *sym;

        dlerror();
        sym = dlsym(dl, abi_versions[v].symbol);
        if (!sym)
            continue;
        /* The first version found decides: falling back to an older one
         * would hide what is wrong with the newer. */
        if (!dladdr1(sym, &info, (void **)&esym, RTLD_DL_SYMENT))
            esym = NULL;
        /* ELF32_ST_TYPE and ELF64_ST_TYPE are the same macro. */
        if (esym && ELF64_ST_TYPE(esym->st_info) == STT_FUNC) {
            set_reason(c, WEFT__PLUGIN_BAD_ABI, "%s is a function, not the const struct of "
                       "operations", abi_versions[v].symbol);
            return NULL;
        }
        ops = abi_versions[v].check(sym, esym ? (size_t)esym->st_size : 0, c->name, why,
                                    sizeof(why));
        if (!ops)
            set_reason(c, WEFT__PLUGIN_BAD_ABI, "%s", why);
        return ops;
    }
    set_reason(c, WEFT__PLUGIN_NO_SYMBOL, "exports no %s%s (a transport exports one const "
               "struct under that name, with default visibility)", abi_versions[0].symbol,
               N_ABI_VERSIONS > 1 ? " nor an older known version" : "");
    return NULL;
}

/* The text a plugin gave with core->set_error, or a fallback. */
static const char *plugin_error(void)
{
    const char *text = weft__get_error();

    return text && *text ? text : "no reason given";
}

/* set->device, after a plugin came or went. */
static void find_device(weft__plugin_set_t *set)
{
    set->device = NULL;
    for (int i = 0; i < set->n && !set->device; i++)
        if (set->plugins[i].device)
            set->device = &set->plugins[i];
}

/* The device services of a table built with a header that has them,
 * when they are whole: NULL otherwise, with a warning when the table
 * offers services it cannot back. */
static const weft_transport_device_t *table_device(const weft_transport_v1_t *ops,
                                                   const char *path)
{
    const weft_transport_device_t *d;
    const void *fns[17];
    int nfns = 9;

    if (ops->struct_size < offsetof(weft_transport_v1_t, device) + sizeof(ops->device) ||
        !(d = ops->device))
        return NULL;
    if (!in_loaded_object(d) || d->struct_size < WEFT_TRANSPORT_DEVICE_MIN_SIZE) {
        WEFT_WARN(PLUGIN, "%s: its device services are %s: not used for device memory", path,
                  !in_loaded_object(d) ? "outside every loaded object"
                                       : "a table too small to hold them");
        return NULL;
    }
    fns[0] = (const void *)d->mem_query;
    fns[1] = (const void *)d->copy;
    fns[2] = (const void *)d->host_alloc;
    fns[3] = (const void *)d->host_free;
    fns[4] = (const void *)d->stream_check;
    fns[5] = (const void *)d->stream_copy;
    fns[6] = (const void *)d->stream_write;
    fns[7] = (const void *)d->stream_wait;
    fns[8] = (const void *)d->stream_sync;
    /* The sharing group: all of it or none (ipc_export NULL). */
    if (weft__device_has_ipc(d)) {
        fns[nfns++] = (const void *)d->features;
        fns[nfns++] = (const void *)d->ipc_export;
        fns[nfns++] = (const void *)d->ipc_open;
        fns[nfns++] = (const void *)d->ipc_close;
        fns[nfns++] = (const void *)d->stream_create;
        fns[nfns++] = (const void *)d->stream_destroy;
        fns[nfns++] = (const void *)d->stream_reduce;
        fns[nfns++] = (const void *)d->stream_avg;
    }
    for (int i = 0; i < nfns; i++)
        if (!fns[i] || !in_loaded_object(fns[i])) {
            WEFT_WARN(PLUGIN, "%s: device service %d of its table is %s: not used for "
                      "device memory", path, i, fns[i] ? "outside every loaded object" : "NULL");
            return NULL;
        }
    return d;
}

/* init and query one plugin whose table passed the checks. */
static void start(struct search *s, weft__plugin_candidate_t *c, void *dl,
                  const weft_transport_v1_t *ops)
{
    weft__plugin_set_t *set = s->set;
    weft__plugin_t *pl;
    weft_transport_caps_t caps;
    void *ctx = NULL;
    weft_result_t rc;

    if (set->n == WEFT__PLUGIN_MAX) {
        set_reason(c, WEFT__PLUGIN_INIT_FAILED, "not initialised: %d transports are loaded "
                   "already, the most weft supports", WEFT__PLUGIN_MAX);
        goto err_close;
    }
    weft__clear_error();
    rc = ops->init(s->core, &ctx);
    if (rc == WEFT_ERR_UNSUPPORTED) {
        set_reason(c, WEFT__PLUGIN_REFUSED, "not applicable: %s", plugin_error());
        goto err_close;
    }
    if (rc != WEFT_SUCCESS) {
        set_reason(c, WEFT__PLUGIN_INIT_FAILED, "init failed: %s (%s)", weft_strerror(rc),
                   plugin_error());
        goto err_close;
    }
    memset(&caps, 0, sizeof(caps));
    caps.struct_size = sizeof(caps);
    weft__clear_error();
    rc = ops->query(ctx, &caps);
    caps.struct_size = sizeof(caps);
    if (rc != WEFT_SUCCESS) {
        set_reason(c, WEFT__PLUGIN_INIT_FAILED, "query failed: %s (%s)", weft_strerror(rc),
                   plugin_error());
        goto err_finalize;
    }
    if ((caps.flags & WEFT_TRANSPORT_CAP_MPROBE) && !ops->improbe) {
        set_reason(c, WEFT__PLUGIN_BAD_ABI, "announces matched probe but improbe is NULL");
        goto err_finalize;
    }
    if ((caps.flags & WEFT_TRANSPORT_CAP_PUT) && !ops->put) {
        set_reason(c, WEFT__PLUGIN_BAD_ABI, "announces put but put is NULL");
        goto err_finalize;
    }

    pl = &set->plugins[set->n];
    memset(pl, 0, sizeof(*pl));
    snprintf(pl->name, sizeof(pl->name), "%s", c->name);
    snprintf(pl->path, sizeof(pl->path), "%s", c->path);
    pl->dl = dl;
    pl->ops = ops;
    pl->ctx = ctx;
    pl->caps = caps;
    pl->needs = c->needs;
    pl->forced = c->forced;
    pl->device = table_device(ops, c->path);
    pthread_mutex_init(&pl->lock, NULL);
    set->n++;
    find_device(set);
    c->state = WEFT__PLUGIN_LOADED;
    if (ops->struct_size > sizeof(*ops))
        WEFT_INFO(PLUGIN, "%s: table of %zu bytes, %zu known: fields past those are ignored",
                  c->path, ops->struct_size, sizeof(*ops));
    WEFT_INFO(PLUGIN, "%s: loaded transport %s (%s)", c->path, c->name, c->description);
    return;

err_finalize:
    weft__clear_error();
    if (ops->finalize(ctx) != WEFT_SUCCESS)
        WEFT_WARN(PLUGIN, "%s: finalize after a failed start failed too: %s", c->path,
                  plugin_error());
err_close:
    dlclose(dl);
}

/* The needs field exists only in tables built with a header that has it. */
static uint64_t table_needs(const weft_transport_v1_t *ops)
{
    if (ops->struct_size < offsetof(weft_transport_v1_t, needs) + sizeof(ops->needs))
        return WEFT_TRANSPORT_NEEDS_NONE;
    return ops->needs;
}

/* 1 when c must not be started: the machine lacks what it needs and the
 * user did not ask for it by name. */
static int needs_unmet(struct search *s, weft__plugin_candidate_t *c)
{
    char why[sizeof(c->reason) - 32];

    if (!s->cfg->topo || !weft__topo_unmet_needs(s->cfg->topo, c->needs, why, sizeof(why)))
        return 0;
    if (c->forced) {
        WEFT_WARN(PLUGIN, "%s: started because WEFT_TRANSPORTS names it, although not "
                  "applicable: %s", c->path, why);
        return 0;
    }
    set_reason(c, WEFT__PLUGIN_REFUSED, "not applicable: %s", why);
    return 1;
}

static void open_candidate(struct search *s, weft__plugin_candidate_t *c)
{
    const weft_transport_v1_t *ops;
    void *dl;

    dlerror();
    dl = dlopen(c->path, PLUGIN_DLOPEN_FLAGS);
    if (!dl) {
        const char *err = dlerror();

        set_reason(c, WEFT__PLUGIN_DLOPEN_FAILED, "%s", err ? err : "dlopen failed");
        return;
    }
    ops = find_table(c, dl);
    if (!ops) {
        dlclose(dl);
        return;
    }
    if (ops->description)
        snprintf(c->description, sizeof(c->description), "%.*s",
                 (int)sizeof(c->description) - 1, ops->description);
    c->needs = table_needs(ops);
    c->forced = weft__transport_filter_forces(&s->filter, c->name);
    if (needs_unmet(s, c)) {
        dlclose(dl);
        return;
    }
    if (!s->core) {
        c->state = WEFT__PLUGIN_USABLE;
        WEFT_INFO(PLUGIN, "%s: usable (not initialised)", c->path);
        dlclose(dl);
        return;
    }
    start(s, c, dl, ops);
}

/* Decides the fate of one file found in a folder. */
static weft_result_t consider(struct search *s, const char *dir, const char *file)
{
    weft__plugin_set_t *set = s->set;
    weft__plugin_candidate_t *c;
    size_t len = strlen(file) - strlen(FILE_PREFIX) - strlen(FILE_SUFFIX);

    if (strlen(dir) + 1 + strlen(file) >= sizeof(c->path)) {
        WEFT_WARN(PLUGIN, "%s/%.64s...: path too long; skipped", dir, file);
        return WEFT_SUCCESS;
    }
    c = candidate_add(set, dir, file);
    if (!c)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the plugin candidate list");
    WEFT_INFO(PLUGIN, "candidate %s", c->path);
    if (!weft__plugin_name_valid(file + strlen(FILE_PREFIX), len)) {
        set_reason(c, WEFT__PLUGIN_BAD_NAME, "\"%.*s\" is not a transport name (1 to %d "
                   "letters, digits, '-' or '_')", (int)(len < 64 ? len : 64),
                   file + strlen(FILE_PREFIX), WEFT__PLUGIN_NAME_MAX - 1);
        return WEFT_SUCCESS;
    }
    if (!weft__transport_filter_allows(&s->filter, c->name)) {
        set_reason(c, WEFT__PLUGIN_DENIED, "excluded by WEFT_TRANSPORTS=%.100s",
                   s->cfg->transports);
        return WEFT_SUCCESS;
    }
    for (int i = 0; i < set->ncandidates - 1; i++) {
        const weft__plugin_candidate_t *first = &set->candidates[i];

        if (first->state != WEFT__PLUGIN_BAD_NAME && !strcmp(first->name, c->name)) {
            set_reason(c, WEFT__PLUGIN_SHADOWED, "shadowed by %.400s, found first",
                       first->path);
            return WEFT_SUCCESS;
        }
    }
    open_candidate(s, c);
    return WEFT_SUCCESS;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_candidate_file(const char *file)
{
    size_t len = strlen(file);

    return len > strlen(FILE_PREFIX) + strlen(FILE_SUFFIX) &&
           !strncmp(file, FILE_PREFIX, strlen(FILE_PREFIX)) &&
           !strcmp(file + len - strlen(FILE_SUFFIX), FILE_SUFFIX);
}

/* Considers the files of one folder, by name so that every run agrees. */
static weft_result_t search_dir(struct search *s, weft__plugin_dir_t *d)
{
    char **files = NULL;
    int nfiles = 0;
    struct dirent *e;
    weft_result_t rc = WEFT_SUCCESS;
    DIR *dir;

    WEFT_INFO(PLUGIN, "searching %s (%s)", d->path, origin_name(d->origin));
    dir = opendir(d->path);
    if (!dir) {
        if (errno == ENOENT || errno == ENOTDIR) {
            d->status = WEFT__PLUGIN_DIR_MISSING;
        } else {
            d->status = WEFT__PLUGIN_DIR_UNREADABLE;
            WEFT_WARN(PLUGIN, "cannot list plugin folder %s (%s): %m", d->path,
                      origin_name(d->origin));
        }
        return WEFT_SUCCESS;
    }
    while ((e = readdir(dir))) {
        if (!is_candidate_file(e->d_name))
            continue;
        if (grow(&files, nfiles, sizeof(*files)) != 0 ||
            !(files[nfiles] = strdup(e->d_name))) {
            rc = weft__error(WEFT_ERR_NO_MEMORY, "cannot list plugin folder %s", d->path);
            goto out_free;
        }
        nfiles++;
    }
    if (nfiles > 1)
        qsort(files, (size_t)nfiles, sizeof(*files), compare_names);
    for (int i = 0; i < nfiles && rc == WEFT_SUCCESS; i++)
        rc = consider(s, d->path, files[i]);

out_free:
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    closedir(dir);
    return rc;
}

/* Names of the filter no file provides are worth a hint: a typo otherwise
 * shows only as the transport being absent. */
static void report_unknown_names(const struct search *s)
{
    const weft__plugin_set_t *set = s->set;

    for (int i = 0; i < s->filter.n; i++) {
        int found = 0;

        for (int j = 0; j < set->ncandidates && !found; j++)
            found = set->candidates[j].state != WEFT__PLUGIN_BAD_NAME &&
                    !strcmp(set->candidates[j].name, s->filter.names[i]);
        if (!found)
            WEFT_INFO(PLUGIN, "WEFT_TRANSPORTS names \"%s\", but no file weft-%s.so was found",
                      s->filter.names[i], s->filter.names[i]);
    }
}

static weft_result_t no_usable_transport(const weft__plugin_set_t *set)
{
    char msg[4096];
    size_t o = 0;
    int listed = 0;

#define APPEND(...)                                                               \
    do {                                                                          \
        if (o < sizeof(msg))                                                      \
            o += (size_t)snprintf(msg + o, sizeof(msg) - o, __VA_ARGS__);         \
    } while (0)

    APPEND("no usable transport:");
    if (set->ncandidates == 0)
        APPEND(" no file weft-<name>.so found");
    for (int i = 0; i < set->ncandidates && o < ERROR_LIST_BUDGET; i++, listed++) {
        const weft__plugin_candidate_t *c = &set->candidates[i];
        const char *file = strrchr(c->path, '/');

        APPEND("%s %s: %.160s", i ? ";" : "", file ? file + 1 : c->path, c->reason);
    }
    if (listed < set->ncandidates)
        APPEND("; and %d more (WEFT_DEBUG=INFO WEFT_DEBUG_SUBSYS=PLUGIN lists all)",
               set->ncandidates - listed);
    APPEND("; searched:");
    for (int i = 0, first = 1; i < set->ndirs; i++) {
        const weft__plugin_dir_t *d = &set->dirs[i];

        if (d->status == WEFT__PLUGIN_DIR_DUPLICATE)
            continue;
        APPEND("%s %s%s", first ? "" : ",", d->path,
               d->status == WEFT__PLUGIN_DIR_MISSING ? " (missing)" :
               d->status == WEFT__PLUGIN_DIR_UNREADABLE ? " (unreadable)" : "");
        first = 0;
    }
    if (set->ndirs == 0)
        APPEND(" no folder (set WEFT_PLUGIN_PATH)");
#undef APPEND
    return weft__error(WEFT_ERR_PLUGIN, "%s", msg);
}

/* ----------------------------------------------------------------- entry */

void weft__plugin_config_from_env(weft__plugin_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->path = getenv("WEFT_PLUGIN_PATH");
    cfg->transports = getenv("WEFT_TRANSPORTS");
}

weft_result_t weft__plugins_open(const weft__plugin_config_t *cfg,
                                 const weft_transport_core_t *core, weft__plugin_set_t *set)
{
    struct search *s;
    weft_result_t rc;

    weft__log_init();
    memset(set, 0, sizeof(*set));
    /* The folder ids are 1 KiB: kept off the stack of weft_init's caller. */
    s = calloc(1, sizeof(*s));
    if (!s)
        return weft__error(WEFT_ERR_NO_MEMORY, "cannot allocate the plugin search");
    s->cfg = cfg;
    s->core = core;
    s->set = set;
    rc = weft__transport_filter_parse(cfg->transports, &s->filter);
    if (rc != WEFT_SUCCESS)
        goto out_free;
    rc = dirs_collect(s);
    for (int i = 0; i < set->ndirs && rc == WEFT_SUCCESS; i++) {
        weft__plugin_dir_t *d = &set->dirs[i];

        if (d->status == WEFT__PLUGIN_DIR_MISSING)
            WEFT_INFO(PLUGIN, "plugin folder %s (%s) does not exist", d->path,
                      origin_name(d->origin));
        else if (d->status == WEFT__PLUGIN_DIR_DUPLICATE)
            WEFT_INFO(PLUGIN, "plugin folder %s (%s) was searched already", d->path,
                      origin_name(d->origin));
        else
            rc = search_dir(s, d);
    }
    if (rc != WEFT_SUCCESS)
        goto out_free;
    report_unknown_names(s);
    if (core && set->n == 0)
        rc = no_usable_transport(set);

out_free:
    free(s);
    return rc;
}

weft_result_t weft__plugins_load_topo(const weft_transport_core_t *core, const weft__topo_t *topo,
                                      weft__plugin_set_t *set)
{
    weft__plugin_config_t cfg;

    if (!core)
        return weft__error(WEFT_ERR_INVALID_ARG, "plugin load: core is NULL");
    weft__plugin_config_from_env(&cfg);
    cfg.topo = topo;
    return weft__plugins_open(&cfg, core, set);
}

weft_result_t weft__plugins_load(const weft_transport_core_t *core, weft__plugin_set_t *set)
{
    return weft__plugins_load_topo(core, NULL, set);
}

weft_result_t weft__plugins_scan_topo(const weft__topo_t *topo, weft__plugin_set_t *set)
{
    weft__plugin_config_t cfg;

    weft__plugin_config_from_env(&cfg);
    cfg.topo = topo;
    return weft__plugins_open(&cfg, NULL, set);
}

weft_result_t weft__plugins_scan(weft__plugin_set_t *set)
{
    return weft__plugins_scan_topo(NULL, set);
}

void weft__plugins_drop(weft__plugin_set_t *set, int i, const char *why)
{
    weft__plugin_t *pl = &set->plugins[i];
    weft_result_t rc;

    for (int j = 0; j < set->ncandidates; j++)
        if (!strcmp(set->candidates[j].path, pl->path))
            set_reason(&set->candidates[j], WEFT__PLUGIN_REFUSED, "not applicable: %s", why);
    weft__clear_error();
    rc = pl->ops->finalize(pl->ctx);
    if (rc != WEFT_SUCCESS)
        WEFT_WARN(PLUGIN, "%s: finalize failed: %s (%s)", pl->path, weft_strerror(rc),
                  plugin_error());
    if (dlclose(pl->dl) != 0)
        WEFT_WARN(PLUGIN, "%s: dlclose failed: %s", pl->path, dlerror());
    pthread_mutex_destroy(&pl->lock);
    /* No thread holds these locks yet (no peer uses a plugin), and a
     * mutex must not be copied: each moved plugin gets a fresh one. */
    for (int j = i; j < set->n - 1; j++) {
        set->plugins[j] = set->plugins[j + 1];
        pthread_mutex_init(&set->plugins[j].lock, NULL);
    }
    set->n--;
    memset(&set->plugins[set->n], 0, sizeof(set->plugins[set->n]));
    find_device(set);
}

void weft__plugins_unload(weft__plugin_set_t *set)
{
    /* Reverse order: a later transport may rely on an earlier one being up
     * until it is gone, never the other way round. */
    for (int i = set->n - 1; i >= 0; i--) {
        weft__plugin_t *pl = &set->plugins[i];
        weft_result_t rc;

        weft__clear_error();
        rc = pl->ops->finalize(pl->ctx);
        if (rc != WEFT_SUCCESS)
            WEFT_WARN(PLUGIN, "%s: finalize failed: %s (%s)", pl->path, weft_strerror(rc),
                      plugin_error());
        if (dlclose(pl->dl) != 0)
            WEFT_WARN(PLUGIN, "%s: dlclose failed: %s", pl->path, dlerror());
        pthread_mutex_destroy(&pl->lock);
    }
    free(set->candidates);
    free(set->dirs);
    memset(set, 0, sizeof(*set));
}

