#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Four simulated hosts (network namespaces), two ranks each, with a port of
# the software RDMA device each: shm inside a host, ib-verbs between.
nhosts=4
between=ib-verbs
. "${srcdir:-.}/tests/netns/hosts.sh"
