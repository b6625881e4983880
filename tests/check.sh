# SPDX-License-Identifier: BSD-3-Clause
# check.sh: sourced by test scripts that report one line per assertion
# and fail at the end (tests/init/tune.sh, tests/coll/bench-tune.sh).
# The script sets tmp (its scratch folder, whose file out holds the output
# under test) and fail=0 before the first check, and exits with $fail.

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
