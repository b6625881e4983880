#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hardware.sh: the ib-verbs suites of `make check` on a machine with real
# RDMA NICs. Run from the top of a configured and built tree:
#
#   tests/ibv/hardware.sh [SPEC.mp ...]     (default: tests/ibv/*.mp)
#
# The specs run as in make check but with WEFT_TEST_IBVERBS=hardware, so
# the ranks open the system's libibverbs.so.1 instead of the software
# device; specs that configure the software device (ports, link layer,
# library variants) are skipped. All ranks run on this machine, so the
# NIC carries them through its own loopback. WEFT_IB_HCA and the other
# WEFT_IB_* variables pass through to choose ports. It skips (exit 77)
# with the reason where the plugin is not built or no port is active.
top=$(pwd -P)
run=$top/tests/mp/run.sh
plugin=$top/plugins/ib-verbs/.libs/weft-ib-verbs.so
info=$top/tools/weft-info

[ -x "$run" ] && [ -x "$info" ] ||
    { echo "hardware.sh: run it from the top of a built tree (make first)" >&2; exit 99; }
[ -e "$plugin" ] || { echo "SKIP: the ib-verbs transport is not built"; exit 77; }

# weft-info, with ib-verbs alone, tells whether the system's libibverbs
# finds an active port, and if not, why.
unset WEFT_IBVERBS_LIB
matrix=$(WEFT_PLUGIN_PATH=$top/plugins/ib-verbs/.libs WEFT_TRANSPORTS=ib-verbs "$info" 2>&1)
line=$(printf '%s\n' "$matrix" | grep -A1 '^  ib-verbs ')
case $line in
"  ib-verbs"*" loaded "*) ;;
*)
    echo "SKIP: ib-verbs cannot start on this machine:"
    printf '%s\n' "$line" | sed 's/^ */  /'
    exit 77
    ;;
esac
printf '%s\n' "$matrix" | sed -n '/^  ib-verbs /,/^  [a-z]/p'

[ "$#" -gt 0 ] || set -- "$top"/tests/ibv/*.mp
WEFT_TEST_IBVERBS=hardware
export WEFT_TEST_IBVERBS
passed=0 failed=0 skipped=0
for spec in "$@"; do
    "$run" "$spec"
    case $? in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)); echo "FAIL: $spec" ;;
    esac
done
echo "ib-verbs on hardware: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
