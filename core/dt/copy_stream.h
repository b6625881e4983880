/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * copy_stream.h: copies whose destination bypasses the caches, for
 * outputs too large to stay in them.
 */
#ifndef WEFT_CORE_COPY_STREAM_H
#define WEFT_CORE_COPY_STREAM_H

#include <stddef.h>

/* memcpy(dst, src, len) with non-temporal stores where the CPU has them
 * (x86-64), plain memcpy elsewhere. The stores are fenced before it
 * returns: a release store after it (a progress word) orders them like
 * ordinary stores. The buffers must not overlap. */
void weft__copy_stream(void *dst, const void *src, size_t len);

/* Whether a collective that writes bytes of output on each of nlocal
 * ranks of a node should write it with weft__copy_stream: when the
 * outputs together exceed threshold, about the size of the node's
 * last-level cache, where written lines would be evicted unread anyway. */
int weft__copy_stream_worth(size_t bytes, int nlocal, unsigned long long threshold);

#endif /* WEFT_CORE_COPY_STREAM_H */
