# SPDX-License-Identifier: BSD-3-Clause
# The reduction kernels' throughput, old scalar against new (run by hand):
#   bench/reduce_bench [-i] [-t SECONDS] [-d DTYPE] [-o OP] [SIZE[k|m] ...]
noinst_PROGRAMS += bench/reduce_bench
bench_reduce_bench_SOURCES = bench/reduce_bench.c
bench_reduce_bench_LDADD = core/libweft_core.la
