#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two simulated hosts (network namespaces), two ranks each.
nhosts=2
. "${srcdir:-.}/tests/netns/hosts.sh"
