#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# faults.sh: the short part of the fault campaign that make check runs:
# 3 ranks over shm and over sockets, point-to-point and allreduce, each
# with 2 kills at random moments, a stopped rank and an abort.
# make check-faults runs the whole matrix (campaign.sh).
exec "$(dirname "$0")/campaign.sh" -t "shm sockets" -n 3 -k "p2p allreduce" -p 2 -T 3
