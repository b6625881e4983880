#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# quickstart.sh: sets up a fresh Debian 12 machine (run as root), builds weft
# in the source tree, and then either runs the demo or the whole test suite.
#
#   scripts/quickstart.sh demo    build, then weftrun -n 4 examples/hello
#   scripts/quickstart.sh check   build, then make check (every test)
#
# Set WEFT_SKIP_APT=1 to skip the package installation.
set -eu

what=${1:-demo}
case "$what" in
demo|check) ;;
*) echo "usage: $0 demo|check" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."

if [ "${WEFT_SKIP_APT:-0}" != 1 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "quickstart: installing packages needs root (or set WEFT_SKIP_APT=1)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # Build tools, the core's dependency (hwloc), the headers of the optional
    # transports (rdma-core), the PMIx client and a PMIx launcher (Open MPI's
    # mpirun) for the PMIx bootstrap test, the unit test framework and the
    # man page linter, Slurm with munge for the Slurm test, and torch with
    # its C++ headers and pybind11 for the torch.distributed backend.
    apt-get install -y -qq --no-install-recommends \
        build-essential autoconf automake libtool pkg-config \
        libhwloc-dev hwloc libibverbs-dev libpmix-dev libcmocka-dev mandoc \
        openmpi-bin slurm-wlm munge \
        python3-torch libtorch-dev pybind11-dev python3-dev \
        iproute2 procps >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
[ -x configure ] || ./autogen.sh
[ -f Makefile ] || ./configure
make -j"$jobs"

case "$what" in
demo)
    make demo
    ;;
check)
    make -j"$jobs" check
    ;;
esac
