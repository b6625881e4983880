/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_sym.c: libibverbs opened at run time, and the calls verbs.h makes
 * inline or through macros done the same way here.
 *
 * Each symbol is looked up at the version rdma-core exports it under
 * (objdump -T libibverbs.so.1): a library of the wrong ABI then fails
 * loudly here instead of misbehaving later. dlvsym never matches a
 * definition without a version, so a library that defines no versions at
 * all (a test double built without a version script) is resolved by
 * name instead, and says so.
 */
#include "config.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "plugins/ib-verbs/ibv.h"

static const struct wib_sym {
    const char *name;
    const char *version;
    size_t off;
    int optional;
} syms[] = {
#define REQ(fn, field, ver) { #fn, ver, offsetof(struct wib_fns, field), 0 }
#define OPT(fn, field, ver) { #fn, ver, offsetof(struct wib_fns, field), 1 }
    REQ(ibv_get_device_list, get_device_list, "IBVERBS_1.1"),
    REQ(ibv_free_device_list, free_device_list, "IBVERBS_1.1"),
    REQ(ibv_get_device_name, get_device_name, "IBVERBS_1.1"),
    REQ(ibv_open_device, open_device, "IBVERBS_1.1"),
    REQ(ibv_close_device, close_device, "IBVERBS_1.1"),
    REQ(ibv_query_device, query_device, "IBVERBS_1.1"),
    REQ(ibv_query_port, query_port, "IBVERBS_1.1"),
    REQ(ibv_query_gid, query_gid, "IBVERBS_1.1"),
    REQ(ibv_alloc_pd, alloc_pd, "IBVERBS_1.1"),
    REQ(ibv_dealloc_pd, dealloc_pd, "IBVERBS_1.1"),
    REQ(ibv_reg_mr, reg_mr, "IBVERBS_1.1"),
    REQ(ibv_dereg_mr, dereg_mr, "IBVERBS_1.1"),
    REQ(ibv_create_comp_channel, create_comp_channel, "IBVERBS_1.0"),
    REQ(ibv_destroy_comp_channel, destroy_comp_channel, "IBVERBS_1.0"),
    REQ(ibv_create_cq, create_cq, "IBVERBS_1.1"),
    REQ(ibv_resize_cq, resize_cq, "IBVERBS_1.1"),
    REQ(ibv_destroy_cq, destroy_cq, "IBVERBS_1.1"),
    REQ(ibv_get_cq_event, get_cq_event, "IBVERBS_1.1"),
    REQ(ibv_ack_cq_events, ack_cq_events, "IBVERBS_1.1"),
    REQ(ibv_create_qp, create_qp, "IBVERBS_1.1"),
    REQ(ibv_modify_qp, modify_qp, "IBVERBS_1.1"),
    REQ(ibv_destroy_qp, destroy_qp, "IBVERBS_1.1"),
    REQ(ibv_create_ah, create_ah, "IBVERBS_1.1"),
    REQ(ibv_destroy_ah, destroy_ah, "IBVERBS_1.1"),
    REQ(ibv_get_async_event, get_async_event, "IBVERBS_1.1"),
    REQ(ibv_ack_async_event, ack_async_event, "IBVERBS_1.1"),
    REQ(ibv_fork_init, fork_init, "IBVERBS_1.1"),
    OPT(ibv_reg_mr_iova2, reg_mr_iova2, "IBVERBS_1.8"),
    OPT(_ibv_query_gid_ex, query_gid_ex, "IBVERBS_1.11"),
    OPT(ibv_reg_dmabuf_mr, reg_dmabuf_mr, "IBVERBS_1.12"),
    OPT(ibv_is_fork_initialized, is_fork_initialized, "IBVERBS_1.13"),
#undef REQ
#undef OPT
};

#define NSYMS (sizeof(syms) / sizeof(syms[0]))

/* Whether the object defines symbol versions: its dynamic section has a
 * DT_VERDEF entry (only the tag is read, never what it points to). */
static int defines_versions(void *dl)
{
    struct link_map *lm = NULL;

    if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld)
        return 1;       /* cannot tell: be strict */
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_VERDEF)
            return 1;
    return 0;
}

int weft__ibv_sym_load(struct wib_fns *f, const char *path, char *why, size_t cap)
{
    const char *file = path && *path ? path : WIB_DEFAULT_LIB;

    memset(f, 0, sizeof(*f));
    snprintf(f->path, sizeof(f->path), "%s", file);
    /* RTLD_LOCAL: the verbs stay this plugin's, whatever else the
     * process loads; libibverbs' providers link it by name themselves. */
    f->dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!f->dl) {
        const char *err = dlerror();

        snprintf(why, cap, "cannot open %s%s: %s", file,
                 path && *path ? " (WEFT_IBVERBS_LIB)" : " (install rdma-core's libibverbs1)",
                 err ? err : "unknown error");
        return -1;
    }
    f->unversioned = !defines_versions(f->dl);
    for (size_t i = 0; i < NSYMS; i++) {
        void *sym = f->unversioned ? dlsym(f->dl, syms[i].name)
                                   : dlvsym(f->dl, syms[i].name, syms[i].version);

        if (!sym && !syms[i].optional) {
            if (f->unversioned)
                snprintf(why, cap, "%s has no %s (and no symbol versions): not a "
                         "libibverbs", file, syms[i].name);
            else
                snprintf(why, cap, "%s has no %s@%s: not rdma-core's libibverbs, or older "
                         "than rdma-core 13", file, syms[i].name, syms[i].version);
            dlclose(f->dl);
            memset(f, 0, sizeof(*f));
            return -1;
        }
        /* POSIX: a function's address travels through void * (dlsym). */
        memcpy((char *)f + syms[i].off, &sym, sizeof(sym));
    }
    return 0;
}

void weft__ibv_sym_unload(struct wib_fns *f)
{
    if (f->dl)
        dlclose(f->dl);
    memset(f, 0, sizeof(*f));
}

void weft__ibv_sym_missing(const struct wib_fns *f, char *buf, size_t cap)
{
    size_t o = 0;

    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < NSYMS && o < cap; i++) {
        void *sym;

        if (!syms[i].optional)
            continue;
        memcpy(&sym, (const char *)f + syms[i].off, sizeof(sym));
        if (!sym)
            o += (size_t)snprintf(buf + o, cap - o, "%s%s@%s", o ? " " : "", syms[i].name,
                                  syms[i].version);
    }
}

int weft__ibv_query_port(const struct wib_fns *f, struct ibv_context *ctx, uint8_t port,
                         struct ibv_port_attr *attr)
{
    /* verbs_get_ctx_op only reads the context, which the library made:
     * the extended op fills the whole struct, the compat call its start. */
    struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);

    if (vctx)
        return vctx->query_port(ctx, port, attr, sizeof(*attr));
    memset(attr, 0, sizeof(*attr));
    return f->query_port(ctx, port, (struct _compat_ibv_port_attr *)attr);
}

struct ibv_mr *weft__ibv_reg_mr(const struct wib_fns *f, struct ibv_pd *pd, void *addr,
                                size_t len, unsigned int access)
{
    if ((access & IBV_ACCESS_OPTIONAL_RANGE) && f->reg_mr_iova2)
        return f->reg_mr_iova2(pd, addr, len, (uintptr_t)addr, access);
    /* ibv_reg_mr@1.1 refuses flags it does not know: these are hints. */
    return f->reg_mr(pd, addr, len, (int)(access & ~IBV_ACCESS_OPTIONAL_RANGE));
}
