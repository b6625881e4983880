#!/bin/sh
# Four simulated hosts (network namespaces), two ranks each.
nhosts=4
. "${srcdir:-.}/tests/netns/hosts.sh"
