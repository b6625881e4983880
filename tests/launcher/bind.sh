#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# --bind-to: the CPUs each rank may run on (Cpus_allowed_list, read by the
# rank itself) follow the policy; none and unbound ranks keep weftrun's
# own; more ranks than cores run, sharing cores, with a warning; and
# --report-bindings says what each rank got.
#
# The exact layouts come from bind-2numa.xml, an hwloc synthetic topology
# ("pack:1 numa:2 core:1 pu:1": one package, two NUMA nodes of one core
# each) whose PUs 0 and 1 exist on any machine with two CPUs; weftrun
# reads it through WEFT_TOPO_FILE as the ranks would.
. "$(dirname "$0")/common.sh"

xml=$(cd "$(dirname "$0")" && pwd)/bind-2numa.xml

own_mask() {
    awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status
}

# in_mask CPU LIST: CPU is in the list ("0-3,8").
in_mask() {
    echo "$2" | awk -v c="$1" '{ n = split($1, r, ",");
        for (i = 1; i <= n; i++) {
            if (split(r[i], a, "-") == 1) a[2] = a[1];
            if (c >= a[1] + 0 && c <= a[2] + 0) found = 1 } }
        END { exit !found }'
}

# weftrun, pinned by taskset to the CPUs in $pin when that is set.
launch() {
    if [ -n "${pin:-}" ]; then
        taskset -c "$pin" timeout -s KILL "${LIMIT:-20}" "$WEFTRUN" "$@"
    else
        wr "$@"
    fi
}

# masks N [weftrun options]: runs N ranks, each writing its mask; prints
# the masks of ranks 0 to N-1 on one line. weftrun's stderr is in
# $tmp/err; its status must be 0.
masks() {
    n=$1
    shift
    rm -f "$tmp"/mask.*
    launch -n "$n" "$@" sh -c \
        'awk "/^Cpus_allowed_list:/ { print \$2 }" /proc/self/status > "$0/mask.$RANK"' \
        "$tmp" 2> "$tmp/err"
    status=$?
    [ "$status" -eq 0 ] || {
        cat "$tmp/err" >&2
        fail "weftrun -n $n $*: exited $status"
    }
    line=
    r=0
    while [ "$r" -lt "$n" ]; do
        [ -s "$tmp/mask.$r" ] || fail "weftrun -n $n $*: rank $r wrote no mask"
        line="$line${line:+ }$(cat "$tmp/mask.$r")"
        r=$((r + 1))
    done
    echo "$line"
}

# expect_masks WANT N [weftrun options]
expect_masks() {
    want=$1
    shift
    got=$(masks "$@") || exit 1
    [ "$got" = "$want" ] || {
        cat "$tmp/err" >&2
        fail "weftrun -n $*: masks '$got', expected '$want'"
    }
}

[ -r /proc/self/status ] && [ -n "$(own_mask)" ] || skip "no Cpus_allowed_list in /proc/self/status"
mine=$(own_mask)

# A wrong policy is a usage error naming the option.
"$WEFTRUN" --bind-to cores true > "$tmp/out" 2> "$tmp/err"
expect_status 2 $? "--bind-to cores"
expect_line "$tmp/err" "^weftrun: --bind-to 'cores' is not one of none, core, numa, socket" \
    "--bind-to cores"

# none leaves every rank with weftrun's CPUs, and says so.
expect_masks "$mine $mine $mine" 3 --bind-to none --report-bindings
expect_line "$tmp/err" "^weftrun: rank 2 not bound: cpus $mine\$" "--bind-to none --report-bindings"

# This host, whatever its shape: bound ranks get a part of weftrun's CPUs,
# exactly the part the report names, and more ranks than CPUs still run.
ncpus=$(awk '/^Cpus_allowed_list:/ { n = 0; split($2, r, ",");
    for (i in r) { if (split(r[i], a, "-") == 2) n += a[2] - a[1] + 1; else n++ } print n }' \
    /proc/self/status)
got=$(masks 2 --bind-to core --report-bindings) || exit 1
for r in 0 1; do
    m=$(echo "$got" | cut -d' ' -f$((r + 1)))
    expect_line "$tmp/err" "^weftrun: rank $r bound to core [0-9]+: cpus $m\$" "--bind-to core"
done
masks $((ncpus + 1)) --bind-to core > /dev/null || exit 1
expect_line "$tmp/err" "^weftrun: $((ncpus + 1)) ranks on [0-9]+ cores?: --bind-to core puts" \
    "--bind-to core, more ranks than CPUs"
masks $((ncpus + 1)) > /dev/null || exit 1
[ ! -s "$tmp/err" ] || {
    cat "$tmp/err" >&2
    fail "the default policy with more ranks than CPUs is not silent"
}

# The synthetic topology needs CPUs 0 and 1.
in_mask 0 "$mine" && in_mask 1 "$mine" ||
    skip "CPUs 0 and 1 are not both ours ($mine): no exact layouts"
export WEFT_TOPO_FILE="$xml"
wr -n 1 --bind-to core --report-bindings true 2> "$tmp/err"
grep -q 'cannot bind' "$tmp/err" && skip "weftrun cannot read hwloc XML (built without hwloc?)"

expect_masks "0 1" 2 --bind-to core --report-bindings
expect_line "$tmp/err" "^weftrun: rank 1 bound to core 1: cpus 1\$" "--bind-to core"
# More ranks than cores wrap around, with a warning, as mpirun's
# overload-allowed does.
expect_masks "0 1 0" 3 --bind-to core
expect_line "$tmp/err" "^weftrun: 3 ranks on 2 cores: --bind-to core puts several ranks on one core" \
    "--bind-to core -n 3"
# NUMA nodes go in blocks: neighbouring ranks share one.
expect_masks "0 0 1 1" 4 --bind-to numa --report-bindings
expect_line "$tmp/err" "^weftrun: rank 2 bound to NUMA node 1: cpus 1\$" "--bind-to numa"
expect_masks "0 1" 2 --bind-to numa
expect_masks "0-1 0-1 0-1" 3 --bind-to socket --report-bindings
expect_line "$tmp/err" "^weftrun: rank 0 bound to package 0: cpus 0-1\$" "--bind-to socket"
expect_masks "0-1 0-1" 2 --bind-to package
expect_masks "$mine $mine $mine" 3 --bind-to none

# On another node than 0, ranks are bound by their local rank. Node 1
# starts its ranks once node 0's store is up (it takes MASTER_PORT from
# there), so a node 0 runs beside it, unbound, until node 1 is done; a
# port that turns out taken is tried again with another one.
for try in 1 2 3; do
    port=$((20000 + ($$ * 7 + try * 7919) % 40000))
    WEFT_AUTH_TOKEN=t wr --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 \
        --master-port "$port" -n 2 --bind-to none sh -c '
        touch "$0/node0.up"
        i=0
        while [ ! -e "$0/node1.done" ]; do
            i=$((i + 1)); [ $i -gt 150 ] && exit 3; sleep 0.1
        done' "$tmp" 2> "$tmp/err0" &
    node0=$!
    background_pids=$node0
    wait_files 1 10 "$tmp/node0.up" && break
    wait "$node0"
    grep -q 'cannot host the rendezvous store' "$tmp/err0" ||
        fail "node 0 for --node-rank 1 did not start: $(cat "$tmp/err0")"
done
[ -e "$tmp/node0.up" ] || fail "no port for node 0 after 3 tries: $(cat "$tmp/err0")"
WEFT_AUTH_TOKEN=t wr --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$port" \
    -n 2 --bind-to core --report-bindings sh -c \
    'awk "/^Cpus_allowed_list:/ { print \$2 }" /proc/self/status > "$0/node1.$RANK"' "$tmp" \
    2> "$tmp/err"
status=$?
touch "$tmp/node1.done"
wait "$node0"
expect_status 0 "$status" "--node-rank 1 --bind-to core"
expect_line "$tmp/err" "^weftrun: rank 3 bound to core 1: cpus 1\$" "--node-rank 1 --bind-to core"
[ "$(cat "$tmp/node1.2") $(cat "$tmp/node1.3")" = "0 1" ] ||
    fail "--node-rank 1 --bind-to core: ranks 2 and 3 got '$(cat "$tmp/node1.2" "$tmp/node1.3")'"

# The default: a share of the cores each, none past one rank per core.
expect_masks "0-1" 1 --report-bindings
expect_line "$tmp/err" "^weftrun: rank 0 bound to cores 0-1: cpus 0-1\$" "default, -n 1"
expect_masks "0 1" 2
expect_masks "0-1 0-1 0-1" 3 --report-bindings
expect_line "$tmp/err" "^weftrun: rank 2 not bound: cpus 0-1\$" "default, -n 3"

# Binding stays within the CPUs weftrun was given.
if command -v taskset > /dev/null 2>&1 && command -v timeout > /dev/null 2>&1; then
    pin=1
    expect_masks "1 1" 2 --bind-to core
    expect_line "$tmp/err" "^weftrun: 2 ranks on 1 core: --bind-to core" "taskset -c 1"
    expect_masks "1 1" 2 --bind-to none
    expect_masks "1 1" 2
    expect_masks "1" 1 --bind-to numa --report-bindings
    expect_line "$tmp/err" "^weftrun: rank 0 bound to NUMA node 1: cpus 1\$" "taskset -c 1, numa"
    pin=
fi

# No topology: an explicit policy says so and the ranks run unbound.
export WEFT_TOPO_FILE="$tmp/no-such-topology.xml"
expect_masks "$mine $mine" 2 --bind-to core
expect_line "$tmp/err" "^weftrun: cannot bind: .*no-such-topology.xml.*; the ranks run unbound\$" \
    "--bind-to core without a topology"
exit 0
