#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# libweft.so exports only the weft_* API under the WEFT_1.0 version node and
# needs no library beyond libc, libdl, pthreads, hwloc (and PMIx when built
# with it) and carries none of plugins/cuda-common; each plugin exports
# only its weft_transport_vN entry point, links neither libibverbs nor
# libcuda and needs no symbol of libweft, libibverbs or libcuda.
set -u
top=${abs_top_builddir:?}
fail=0

lib=$top/.libs/libweft.so
[ -f "$lib" ] || { echo "SKIP: $lib not built (static build?)"; exit 77; }
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf missing"; exit 77; }

needed=$(readelf -d "$lib" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
for n in $needed; do
    case "$n" in
    libc.so.*|libdl.so.*|libpthread.so.*|libhwloc.so.*|libpmix.so.*|ld-linux*|libasan.so.*|libubsan.so.*) ;;
    *) echo "FAIL: libweft.so needs $n"; fail=1 ;;
    esac
done

exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^WEFT_1\.0$')
bad=$(printf '%s\n' "$exported" | grep -v '^weft_' || true)
if [ -n "$bad" ]; then
    echo "FAIL: libweft.so exports non-API symbols:"; printf '  %s\n' $bad; fail=1
fi
internal=$(printf '%s\n' "$exported" | grep '^weft__' || true)
if [ -n "$internal" ]; then
    echo "FAIL: libweft.so exports internal symbols:"; printf '  %s\n' $internal; fail=1
fi
count=$(printf '%s\n' "$exported" | grep -c '^weft_')
[ "$count" -gt 0 ] || { echo "FAIL: libweft.so exports no weft_ symbol"; fail=1; }
# The GPU transports' CUDA helper (libcudadrv) is for them alone: its
# hidden symbols would still show in the full symbol table.
cudrv=$(nm "$lib" 2>/dev/null | awk '{print $NF}' | grep '^weft__cudrv_' || true)
if [ -n "$cudrv" ]; then
    echo "FAIL: libweft.so carries plugins/cuda-common:"; printf '  %s\n' $cudrv; fail=1
fi
nm -D --defined-only "$lib" | grep -q 'weft_init@@WEFT_1.0' ||
    { echo "FAIL: weft_init is not versioned WEFT_1.0"; fail=1; }

for so in "$top"/plugins/*/.libs/weft-*.so; do
    [ -f "$so" ] || continue
    syms=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$')
    if [ "$syms" != "weft_transport_v1" ]; then
        echo "FAIL: $(basename "$so") exports: $syms"; fail=1
    fi
    # ib-verbs opens libibverbs at run time, so that it loads and says why
    # it does not apply where rdma-core is missing: no plugin links it.
    if readelf -d "$so" | grep -q 'NEEDED.*libibverbs'; then
        echo "FAIL: $(basename "$so") links libibverbs"; fail=1
    fi
    # The GPU transports open libcuda the same way (plugins/cuda-common).
    if readelf -d "$so" | grep -q 'NEEDED.*libcuda'; then
        echo "FAIL: $(basename "$so") links libcuda"; fail=1
    fi
    # A plugin does not link libweft: a weft_, ibv_ or cu symbol it leaves
    # undefined makes dlopen fail.
    undef=$(nm -D --undefined-only "$so" | awk '{print $2}' | grep -E '^(weft_|ibv_|_ibv_|cu[A-Z])' || true)
    if [ -n "$undef" ]; then
        echo "FAIL: $(basename "$so") needs symbols from outside:"; printf '  %s\n' $undef; fail=1
    fi
done

[ "$fail" = 0 ] && echo "PASS: libweft.so exports $count API symbols, needs only: $(echo $needed)"
exit "$fail"
