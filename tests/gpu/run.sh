#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run.sh: weft's GPU checks on a machine with an NVIDIA GPU, its driver
# (libcuda.so.1) and the CUDA toolkit, within five minutes and without
# the network:
#
#   sh tests/gpu/run.sh OUTDIR
#
#   1 system      nvidia-smi -L, the GPU's name, driver and compute
#                 capability, uname -a                  (OUTDIR/system.txt)
#   2 build       weft built with --with-cuda in OUTDIR/build (configure
#                 from the source tree, autogen.sh first where there is no
#                 configure; the source tree itself where it is configured
#                 in place, as a VPATH build is then refused), make, and
#                 make check TESTS= to build the test programs only
#   3 contract    tests/gpu/cuda_contract on the real driver and on the
#                 CUDA test double; their lines, less "info " and
#                 "driver:", must be the same (contract.diff): where they
#                 differ, the double does not behave as the driver does.
#                 A feature the GPU lacks (info vmm-supported: 0,
#                 dmabuf-supported: 0) is left out of the comparison.
#   4 kernels     tests/gpu/kernels_check on the real driver: the cuda-ipc
#                 plugin's GPU reduction kernels, every dtype x op, compared
#                 bit for bit with weft's host kernels (OUTDIR/kernels.txt);
#                 skipped where weft was built without nvcc
#   5 gpu specs   make check TESTS='tests/gpu/*.mp' WEFT_TEST_CUDA=hardware:
#                 the multi-process GPU tests on the real driver (specs that
#                 configure the double skip themselves); their logs are
#                 copied to OUTDIR/gpu-specs/
#   6 weft-info   what weft-info says of the cuda-ipc plugin on the real
#                 driver (OUTDIR/weft-info.txt), where the plugin is built
#   7 bench       weft-bench -m cuda, 2 ranks sharing device 0 over shm:
#                 allreduce, allgather and broadcast from 64 KiB to 64 MiB,
#                 GPU to GPU (WEFT_CUDA_COLL=ipc) and staged through host
#                 memory (=stage), in one run each (OUTDIR/bench-ipc.txt,
#                 bench-stage.txt); PASS where no result was wrong
#
# Everything goes to OUTDIR; OUTDIR/summary.txt has a PASS, FAIL or SKIP
# line per step (and per GPU spec), with the reason, and the GPU's name.
# It is printed at the end. Each step runs under timeout(1) within what
# is left of the budget (WEFT_GPU_BUDGET seconds, default 285).
#
# Exit status: 0 every step passed; 1 a step failed; 77 none failed but
# some were skipped, which is what a machine without a GPU or driver
# gives (the double's contract run and the build still count there).
# Environment: CUDA_HOME (default /usr/local/cuda), WEFT_GPU_BUDGET, and
# WEFT_GPU_BUILDDIR (default OUTDIR/build) to keep the build out of
# OUTDIR where only the results are to be kept.
set -u

me=run.sh
[ "$#" -eq 1 ] || { echo "usage: sh tests/gpu/run.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd) || exit 2
src=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
cuda_home=${CUDA_HOME:-/usr/local/cuda}
jobs=$(nproc 2>/dev/null || echo 16)
start=$(date +%s)
budget=${WEFT_GPU_BUDGET:-285}
summary=$out/summary.txt
: >"$summary"
failed=0 skipped=0

# Nothing from the caller's environment picks a driver or configures the
# double: each step says which driver it wants.
unset WEFT_CUDA_DRIVER WEFT_CUDA_ALLOW_TEST_DRIVER WEFT_FAKECUDA_FAULTS \
    WEFT_FAKECUDA_DELAY_US WEFT_FAKECUDA_DEVICES WEFT_TRANSPORTS WEFT_PLUGIN_PATH

note() {
    echo "$me: $*"
}

# result PASS|FAIL|SKIP STEP WHY: one line of the summary.
result() {
    case $1 in
    FAIL) failed=$((failed + 1)) ;;
    SKIP) skipped=$((skipped + 1)) ;;
    esac
    printf '%s %s: %s\n' "$1" "$2" "$3" | tee -a "$summary"
}

# limit MAX: seconds a step may take, MAX or what is left of the budget.
limit() {
    left=$((start + budget - $(date +%s)))
    if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# run_for MAX LOG CMD...: CMD under timeout, its output in LOG; its exit
# status, 124 when it ran out of time (or no time was left).
run_for() {
    t=$(limit "$1")
    log=$2
    shift 2
    if [ "$t" -lt 5 ]; then
        echo "$me: no time left for: $*" >"$log"
        return 124
    fi
    timeout -k 10 "$t" "$@" >"$log" 2>&1
}

# run_split MAX OUT ERR CMD...: run_for with stdout and stderr apart.
run_split() {
    t=$(limit "$1")
    o=$2 e=$3
    shift 3
    if [ "$t" -lt 5 ]; then
        : >"$o"
        echo "$me: no time left for: $*" >"$e"
        return 124
    fi
    timeout -k 10 "$t" "$@" >"$o" 2>"$e"
}

# why_status STATUS LOG: a failed command's status, for the summary.
why_status() {
    case $1 in
    124 | 137) echo "timed out (see ${2##*/})" ;;
    *) echo "exit status $1 (see ${2##*/})" ;;
    esac
}

# ------------------------------------------------------------- 1 system
gpu_name=
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "source: $src"
    (cd "$src" && git log -1 --format='commit: %H %s' 2>/dev/null)
    uname -a
} >"$out/system.txt"
if command -v nvidia-smi >/dev/null 2>&1; then
    {
        echo "--- nvidia-smi -L"
        timeout 30 nvidia-smi -L 2>&1
        echo "--- nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv"
        timeout 30 nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1
    } >>"$out/system.txt"
    gpu_name=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
    result PASS system "recorded in system.txt"
else
    echo "--- no nvidia-smi" >>"$out/system.txt"
    result SKIP system "no nvidia-smi on this machine (uname recorded in system.txt)"
fi
echo "gpu: ${gpu_name:-none found}" >>"$summary"

# -------------------------------------------------------------- 2 build
build=
build_step() {
    if [ -f "$src/config.status" ]; then
        # configure refuses a VPATH build of a source tree configured in place
        build=$src
        note "the source tree is configured in place: building there"
        if ! grep -q '^#define WEFT_HAVE_CUDA 1' "$src/config.h" 2>/dev/null; then
            result FAIL build "$src is configured without CUDA: run make distclean there, or configure it --with-cuda=$cuda_home"
            return 1
        fi
        where="in the source tree (configured there)"
    else
        if [ ! -x "$src/configure" ]; then
            if ! command -v autoreconf >/dev/null 2>&1; then
                result FAIL build "no configure in $src and no autoreconf to make it: run autogen.sh where autotools are, and bring configure along"
                return 1
            fi
            note "autogen.sh"
            run_for 120 "$out/autogen.log" sh "$src/autogen.sh" || {
                result FAIL build "autogen.sh: $(why_status $? "$out/autogen.log")"
                return 1
            }
        fi
        build=${WEFT_GPU_BUILDDIR:-$out/build}
        if ! mkdir -p "$build" || ! build=$(cd "$build" && pwd); then
            result FAIL build "cannot make the build folder $build"
            return 1
        fi
        note "configure --with-cuda=$cuda_home in $build"
        (cd "$build" && run_for 120 "$out/configure.log" "$src/configure" --with-cuda="$cuda_home") || {
            result FAIL build "configure: $(why_status $? "$out/configure.log")"
            return 1
        }
        where="in $build"
    fi
    note "make -j$jobs"
    run_for 180 "$out/make.log" make -C "$build" -j"$jobs" || {
        result FAIL build "make: $(why_status $? "$out/make.log")"
        return 1
    }
    # TESTS= empties the list: check builds check_PROGRAMS and runs nothing
    note "make -j$jobs check TESTS= (the test programs)"
    run_for 120 "$out/make-check-build.log" make -C "$build" -j"$jobs" check TESTS= || {
        result FAIL build "make check TESTS=: $(why_status $? "$out/make-check-build.log")"
        return 1
    }
    result PASS build "weft and its test programs built $where"
}
build_step
built=$?

# ----------------------------------------------------------- 3 contract
contract=${build:+$build/tests/gpu/cuda_contract}
double=${build:+$build/tests/fakecuda/.libs/libfakecuda.so}
no_real=

# The lines compared: no "info " lines, no "driver:" line, and none of
# the sections listed in $drop (vmm, dmabuf) that the GPU lacks.
compared() {
    grep -v -e '^info ' -e '^driver: ' "$1" |
        if [ -n "$drop" ]; then grep -v -E "^($drop)-"; else cat; fi
}

contract_step() {
    if [ "$built" -ne 0 ] || [ ! -x "$contract" ]; then
        result SKIP contract "cuda_contract is not built (see the build step)"
        no_real="weft is not built"
        return
    fi
    note "cuda_contract on the test double"
    run_split 150 "$out/contract-double.txt" "$out/contract-double.err" "$contract" "$double"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        result PASS contract-double "the double gives the documented result of every check"
    else
        result FAIL contract-double "$(why_status "$rc" "$out/contract-double.err")"
    fi

    note "cuda_contract on libcuda.so.1"
    run_split 150 "$out/contract-nvidia.txt" "$out/contract-nvidia.err" "$contract" libcuda.so.1
    rc=$?
    init=$(sed -n 's/^init: //p' "$out/contract-nvidia.txt")
    if [ "$rc" -eq 3 ]; then
        no_real="no CUDA driver ($(sed -n 's/^contract: cannot load the CUDA driver [^:]*: //p' \
            "$out/contract-nvidia.err" | head -n 1))"
    elif [ "$(head -n 1 "$out/contract-nvidia.txt")" = "driver: test-double" ]; then
        no_real="libcuda.so.1 is the CUDA test double here, not a GPU driver"
    else
        case $init in
        CUDA_ERROR_NO_DEVICE | CUDA_ERROR_STUB_LIBRARY | CUDA_ERROR_NOT_FOUND)
            no_real="no GPU (cuInit: $init)" ;;
        esac
    fi
    if [ -n "$no_real" ]; then
        result SKIP contract-nvidia "$no_real"
        result SKIP contract-diff "nothing to compare the double with: $no_real"
        return
    fi
    case $rc in
    0) result PASS contract-nvidia "the driver gives the documented result of every check" ;;
    1) result FAIL contract-nvidia "results the reference does not give (see contract-nvidia.err)" ;;
    *) result FAIL contract-nvidia "$(why_status "$rc" "$out/contract-nvidia.err")" ;;
    esac
    drop='' dropped=''
    for s in vmm dmabuf; do
        if grep -q "^info $s-supported: 0" "$out/contract-nvidia.txt"; then
            if [ -n "$drop" ]; then drop="$drop|$s"; else drop=$s; fi
            dropped="$dropped $s"
        fi
    done
    compared "$out/contract-double.txt" >"$out/contract-double.compared"
    compared "$out/contract-nvidia.txt" >"$out/contract-nvidia.compared"
    # the informational lines side by side, for whoever reads the logs
    diff -u "$out/contract-double.txt" "$out/contract-nvidia.txt" >"$out/contract-all.diff"
    if diff -u "$out/contract-double.compared" "$out/contract-nvidia.compared" >"$out/contract.diff"
    then
        result PASS contract-diff "the double and the driver print the same $(wc -l <"$out/contract-nvidia.compared") lines${dropped:+ (left out, the GPU lacks them:$dropped)}"
    else
        result FAIL contract-diff "the double and the driver differ: see contract.diff (- double, + driver)${dropped:+ (left out:$dropped)}"
    fi
}
drop=''
contract_step

# ------------------------------------------------------------ 4 kernels
kernels_step() {
    checker=${build:+$build/tests/gpu/kernels_check}
    if [ "$built" -ne 0 ]; then
        result SKIP kernels "weft is not built"
    elif [ ! -x "$checker" ]; then
        result SKIP kernels "kernels_check is not built (no cuda-ipc plugin)"
    elif [ -n "$no_real" ]; then
        result SKIP kernels "$no_real"
    else
        note "kernels_check on libcuda.so.1"
        run_for 60 "$out/kernels.txt" "$checker"
        rc=$?
        case $rc in
        0) result PASS kernels "$(grep -m 1 '^device: ' "$out/kernels.txt" | sed 's/^device: //'): $(grep -m 1 '^PASS: ' "$out/kernels.txt" | sed 's/^PASS: //')" ;;
        77) result SKIP kernels "$(grep -m 1 '^SKIP: ' "$out/kernels.txt" | sed 's/^SKIP: //')" ;;
        *) result FAIL kernels "$(why_status "$rc" "$out/kernels.txt"): $(grep -m 1 -e '^FAIL: ' -e '^kcheck: ' "$out/kernels.txt")" ;;
        esac
    fi
}
kernels_step

# ---------------------------------------------------------- 5 GPU specs
specs_step() {
    if [ "$built" -ne 0 ]; then
        result SKIP gpu-specs "weft is not built"
        return
    fi
    if [ -n "$no_real" ]; then
        result SKIP gpu-specs "$no_real"
        return
    fi
    specs=
    for f in "$src"/tests/gpu/*.mp; do
        specs="$specs tests/gpu/${f##*/}"
    done
    note "make check TESTS='$specs ' WEFT_TEST_CUDA=hardware"
    for t in $specs; do
        rm -f "$build/${t%.mp}.log" "$build/${t%.mp}.trs"
    done
    run_for 240 "$out/gpu-specs.log" env WEFT_TEST_CUDA=hardware \
        make -C "$build" -j"$jobs" check TESTS="$specs" WEFT_TEST_CUDA=hardware
    rc=$?
    mkdir -p "$out/gpu-specs"
    pass=0 fail=0 skip=0
    for t in $specs; do
        name=${t##*/}
        log=$build/${t%.mp}.log
        trs=$build/${t%.mp}.trs
        [ -f "$log" ] && cp "$log" "$out/gpu-specs/"
        res=$(sed -n 's/^:test-result: //p' "$trs" 2>/dev/null | head -n 1)
        case $res in
        PASS) pass=$((pass + 1)); result PASS "gpu-spec $name" "passed on the real driver" ;;
        SKIP)
            skip=$((skip + 1))
            result SKIP "gpu-spec $name" "$(grep -m 1 '^SKIP: ' "$log" 2>/dev/null | sed 's/^SKIP: //')" ;;
        '') fail=$((fail + 1)); result FAIL "gpu-spec $name" "no result (make: $(why_status "$rc" "$out/gpu-specs.log"))" ;;
        *) fail=$((fail + 1)); result FAIL "gpu-spec $name" "$res (see gpu-specs/${name%.mp}.log)" ;;
        esac
    done
    if [ "$fail" -gt 0 ]; then
        result FAIL gpu-specs "$fail failed, $pass passed, $skip skipped"
    elif [ "$pass" -eq 0 ]; then
        result SKIP gpu-specs "every spec skipped ($skip)"
    else
        result PASS gpu-specs "$pass passed, $skip skipped"
    fi
}
specs_step

# ---------------------------------------------------------- 6 weft-info
info_step() {
    plugin=${build:+$build/plugins/cuda-ipc/.libs/weft-cuda-ipc.so}
    if [ "$built" -ne 0 ]; then
        result SKIP weft-info "weft is not built"
    elif [ ! -e "$plugin" ]; then
        result SKIP weft-info "the cuda-ipc plugin is not built ($plugin missing)"
    elif [ -n "$no_real" ]; then
        result SKIP weft-info "$no_real"
    else
        note "weft-info with cuda-ipc on the real driver"
        run_for 60 "$out/weft-info.txt" env \
            WEFT_PLUGIN_PATH="$build/plugins/cuda-ipc/.libs:$build/plugins/sockets/.libs" \
            WEFT_TRANSPORTS=sockets,cuda-ipc "$build/tools/weft-info"
        rc=$?
        # its table has a row "  NAME  STATE  PATH" per plugin
        state=$(sed -n 's/^  cuda-ipc  *\([a-z][a-z ]*[a-z]\)  *\/.*/\1/p' "$out/weft-info.txt" | head -n 1)
        case $state in
        loaded | usable) result PASS weft-info "cuda-ipc $state on the real driver (weft-info.txt)" ;;
        '') result FAIL weft-info "no cuda-ipc row: $(why_status "$rc" "$out/weft-info.txt")" ;;
        *) result FAIL weft-info "cuda-ipc $state (see weft-info.txt)" ;;
        esac
    fi
}
info_step

# -------------------------------------------------------------- 7 bench
bench_step() {
    if [ "$built" -ne 0 ]; then
        result SKIP bench "weft is not built"
        return
    elif [ -n "$no_real" ]; then
        result SKIP bench "$no_real"
        return
    fi
    for mode in ipc stage; do
        note "weft-bench -m cuda, WEFT_CUDA_COLL=$mode"
        run_for 60 "$out/bench-$mode.txt" env WEFT_CUDA_COLL=$mode \
            WEFT_PLUGIN_PATH="$build/plugins/shm/.libs:$build/plugins/cuda-ipc/.libs:$build/plugins/sockets/.libs" \
            WEFT_TRANSPORTS=shm,cuda-ipc "$build/tools/weftrun" -n 2 "$build/tools/weft-bench" \
            -m cuda -o allreduce,allgather,broadcast -b 64K -e 64M -f 4 -n 10 -w 3
        rc=$?
        # a measurement row ends with its in-place #wrong; column 9 is the other's
        wrong=$(awk '/^ +[0-9]/ { w += $9 + $NF } END { print w + 0 }' "$out/bench-$mode.txt")
        rows=$(grep -c '^ *[0-9]' "$out/bench-$mode.txt")
        if [ "$rc" -ne 0 ] || [ "$rows" -eq 0 ]; then
            result FAIL "bench $mode" "$(why_status "$rc" "$out/bench-$mode.txt")"
        elif [ "$wrong" -ne 0 ]; then
            result FAIL "bench $mode" "$wrong wrong elements (bench-$mode.txt)"
        else
            result PASS "bench $mode" "$rows sizes, none wrong (bench-$mode.txt)"
        fi
    done
}
bench_step

# -------------------------------------------------------------- the end
echo "elapsed: $(($(date +%s) - start)) s" >>"$summary"
echo
echo "=== $summary"
cat "$summary"
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
exit 0
