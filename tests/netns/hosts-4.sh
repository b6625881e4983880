#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Four simulated hosts (network namespaces), two ranks each.
nhosts=4
. "${srcdir:-.}/tests/netns/hosts.sh"
