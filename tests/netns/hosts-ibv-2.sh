#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two simulated hosts (network namespaces), two ranks each, with a port of
# the software RDMA device each: shm inside a host, ib-verbs between.
nhosts=2
between=ib-verbs
. "${srcdir:-.}/tests/netns/hosts.sh"
