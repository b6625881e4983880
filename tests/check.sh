# SPDX-License-Identifier: BSD-3-Clause
# check.sh: the common start of the tuner's test scripts
# (tests/init/tune.sh, tests/coll/bench-tune.sh, tests/coll/adapt.sh),
# which report one line per assertion and fail at the end (exit "$fail").
# Sourcing it clears what would change the tuner's behaviour, makes the
# scratch folder tmp (removed on exit; the output under test goes to
# $tmp/out) and sets fail=0.

unset WEFT_TUNE WEFT_TUNE_FILE WEFT_TUNE_ADAPT WEFT_ALGO WEFT_DEBUG WEFT_DEBUG_SUBSYS \
    WEFT_DEBUG_FILE \
    MP_FAKE_NODES MP_FAKE_NODE_SIZE
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

# check NAME CONDITION...: reports NAME, failing the test unless CONDITION.
check() {
    name=$1
    shift
    if "$@"; then
        echo "ok: $name"
    else
        echo "FAIL: $name"
        sed 's/^/    /' "$tmp/out"
        fail=1
    fi
}
