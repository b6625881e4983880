#!/bin/sh
# Two simulated hosts (network namespaces), two ranks each.
nhosts=2
. "${srcdir:-.}/tests/netns/hosts.sh"
