/*
 * topo.h: what weft knows about the machine it runs on.
 *
 * The only place that will call hwloc. For now: the identity of this node,
 * which decides which ranks share a node (local rank and size).
 */
#ifndef WEFT_TOPO_TOPO_H
#define WEFT_TOPO_TOPO_H

#include <stddef.h>

#include "weft.h"

#define WEFT__HOSTID_MAX 128

/* A string equal on two ranks exactly when they run on the same node:
 * WEFT_HOSTID when set (tests that simulate several hosts on one machine),
 * otherwise the host name and the kernel's boot id, so that two containers
 * with the same host name on different machines are told apart. */
weft_result_t weft__topo_host_id(char *buf, size_t cap);

#endif /* WEFT_TOPO_TOPO_H */
