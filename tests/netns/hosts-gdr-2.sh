#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Two simulated hosts (network namespaces), two ranks each, on CUDA device
# buffers of the CUDA test double: shm (CUDA IPC) inside a host, ib-verbs
# with GPUDirect RDMA on the software RDMA device between, collectives of
# a host's communicators GPU to GPU.
nhosts=2
between=ib-verbs
gpu=1
. "${srcdir:-.}/tests/netns/hosts.sh"
