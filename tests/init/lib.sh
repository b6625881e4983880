# SPDX-License-Identifier: BSD-3-Clause
# init-lib.sh: sourced by the start-up tests tests/init/*.sh, which
# start mp_init processes by hand, without weftrun, the way torchrun,
# Slurm or a user's script would. Exit codes: 0 pass, 1 fail, 77 skip,
# 99 a broken build.

fail() {
    echo "FAIL: $*" >&2
    show_outputs >&2
    exit 1
}

skip() {
    echo "SKIP: $*"
    exit 77
}

hard_error() {
    echo "ERROR: $*" >&2
    exit 99
}

# make check runs the tests from the top of the build tree.
: "${abs_top_builddir:=$(pwd)}"
MP_INIT=$abs_top_builddir/tests/init/mp_init
[ -x "$MP_INIT" ] || hard_error "$MP_INIT is missing (make check builds it)"
[ -e "$abs_top_builddir/plugins/sockets/.libs/weft-sockets.so" ] ||
    skip "the sockets transport is not built"
WEFT_PLUGIN_PATH=$abs_top_builddir/plugins/sockets/.libs
export WEFT_PLUGIN_PATH

# Nothing of an enclosing job (make check under weftrun, torchrun, srun or
# mpirun) may leak into the ranks: each test sets what it means to.
for v in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do
    case $v in
    WEFT_DEBUG | WEFT_DEBUG_SUBSYS | WEFT_DEBUG_FILE | WEFT_PLUGIN_PATH) ;;
    WEFT_* | SLURM_* | OMPI_* | PMIX_* | PMI_*) unset "$v" ;;
    RANK | WORLD_SIZE | LOCAL_RANK | LOCAL_WORLD_SIZE | GROUP_RANK | GROUP_WORLD_SIZE) unset "$v" ;;
    ROLE_RANK | ROLE_WORLD_SIZE | MASTER_ADDR | MASTER_PORT | TORCHELASTIC_*) unset "$v" ;;
    esac
done

# Every rank is killed after RANK_LIMIT seconds, so that a hang fails the
# test instead of stalling make check.
RANK_LIMIT=${RANK_LIMIT:-40}
if command -v timeout >/dev/null 2>&1; then
    limit_cmd="timeout -s KILL $RANK_LIMIT"
else
    limit_cmd=
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-init.XXXXXX") || hard_error "mktemp -d failed"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP
names=

# start NAME [VAR=VALUE ...] [-- MP_INIT_ARGUMENT ...]: starts mp_init in
# the background with those variables; its output goes to $tmp/NAME.out,
# its exit status to $tmp/NAME.status.
start() {
    name=$1
    shift
    names="$names $name"
    (
        while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
            # shellcheck disable=SC2163 # $1 is NAME=VALUE
            export "$1"
            shift
        done
        [ "$#" -gt 0 ] && shift
        # shellcheck disable=SC2086 # limit_cmd is a command and its options
        $limit_cmd "$MP_INIT" "$@" >"$tmp/$name.out" 2>&1
        echo "$?" >"$tmp/$name.status"
    ) &
}

# finish: waits for every process started since the last finish.
finish() {
    wait
}

# forget: the next round of processes starts from a clean slate.
forget() {
    for n in $names; do
        rm -f "$tmp/$n.out" "$tmp/$n.status"
    done
    names=
}

show_outputs() {
    for n in $names; do
        echo "--- $n (exit status $(cat "$tmp/$n.status" 2>/dev/null || echo '?')):"
        cat "$tmp/$n.out" 2>/dev/null
    done
}

status_of() {
    cat "$tmp/$1.status" 2>/dev/null || echo none
}

# The error= text mp_init printed.
error_of() {
    sed -n 's/^mp_init: result=[A-Z_]* elapsed=[0-9.]* error=//p' "$tmp/$1.out" | head -n 1
}

# Seconds weft_init took, rounded down.
elapsed_of() {
    sed -n 's/^mp_init: result=[A-Z_]* elapsed=\([0-9]*\).*/\1/p' "$tmp/$1.out" | head -n 1
}

# expect_ok NAME RANK SIZE: joined as RANK of SIZE and passed its checks.
expect_ok() {
    st=$(status_of "$1")
    [ "$st" = 0 ] || fail "$1: mp_init exited with status $st"
    grep -q "^mp_init: rank=$2 size=$3 " "$tmp/$1.out" ||
        fail "$1: expected rank $2 of $3"
    grep -q "^mp_init: rank $2 of $3 ok" "$tmp/$1.out" || fail "$1: did not finish its checks"
}

# expect_result NAME RESULT REGEX: weft_init returned RESULT (mp_init ran
# with --expect RESULT, so status 0 says so) and weft_last_error()
# matches the extended regular expression REGEX, ignoring case.
expect_result() {
    st=$(status_of "$1")
    [ "$st" = 0 ] || fail "$1: mp_init exited with status $st (expected weft_init to return $2)"
    grep -q "^mp_init: result=$2 " "$tmp/$1.out" || fail "$1: weft_init did not return $2"
    err=$(error_of "$1")
    printf '%s\n' "$err" | grep -Eiq -- "$3" ||
        fail "$1: weft_last_error() \"$err\" does not match /$3/"
}

# port_in_use PORT: some TCP socket of this machine (any state, IPv4 or
# IPv6) has PORT as its local port.
port_in_use() {
    hex=$(printf '%04X' "$1")
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        awk -v p=":$hex\$" '$2 ~ p { found = 1 } END { exit !found }' "$f" && return 0
    done
    return 1
}

# A port in 20000-59999 that nothing uses at the moment.
random_port() {
    while :; do
        n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
        p=$((20000 + n % 40000))
        port_in_use "$p" || break
    done
    echo "$p"
}

# with_free_port FUNCTION: runs FUNCTION with $port set to a free port, and
# again with another one (up to 3 times) when a rank could not listen on
# it because something else took it in between.
with_free_port() {
    for _ in 1 2 3; do
        port=$(random_port)
        forget
        "$1"
        if ! grep -qi "address already in use" "$tmp"/*.out 2>/dev/null; then
            return 0
        fi
        echo "port $port was taken meanwhile; trying another"
    done
    fail "no free port after 3 attempts"
}
