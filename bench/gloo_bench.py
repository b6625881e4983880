#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""gloo_bench.py: the Gloo side of bench/compare.sh.

Times, with torch.distributed's gloo backend, the collectives weft-bench
and mpi_bench time, the same way (warm-up, a barrier, a timed loop, the
slowest rank's mean), so that the figures compare. Start one process per
rank with the torchrun environment (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), e.g. under weftrun:

    GLOO_BENCH_FILE=/tmp/fresh-name weftrun -n 4 python3 gloo_bench.py OP BYTES ITERS \
        [WARMUP [WARMUP_MS]]

prints "OP BYTES TIME_US" on rank 0. OP is allreduce, broadcast,
allgather, reduce_scatter, alltoall, pingpong (ranks 0 and 1, half the
round trip) or bw (a window of BW_WINDOW isends from rank 0 to rank 1,
closed by an empty message back: the time of one message, as
weft-bench's bw); BYTES is nccl-tests' size (the whole gathered or
scattered buffer for allgather, reduce_scatter and alltoall); float32,
sum.
The processes meet through torch's file store at GLOO_BENCH_FILE (a
name that does not exist yet). (torch's env:// works under weftrun too:
weftrun leaves MASTER_PORT free for it and gives weft's own store
WEFT_MASTER_PORT.)
Gloo has no reduce_scatter: torch's gloo backend raises for it, so that
figure is measured as Gloo users get it, an allreduce of the whole
buffer keeping the own block (what torch users fall back to).
"""
import os
import sys
import time

# Before torch is imported: one intra-op thread per rank, as the other
# benchmarks run (several ranks share this machine's cores).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

# weft-bench's BENCH_BW_WINDOW.
BW_WINDOW = 64


def main():
    if len(sys.argv) not in (4, 5, 6):
        sys.stderr.write("usage: gloo_bench.py OP BYTES ITERS [WARMUP [WARMUP_MS]]\n")
        return 2
    op, nbytes, iters = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3])
    warmup = int(sys.argv[4]) if len(sys.argv) >= 5 else 5
    warmup_ms = float(sys.argv[5]) if len(sys.argv) == 6 else 0.0
    dist.init_process_group("gloo", init_method="file://" + os.environ["GLOO_BENCH_FILE"],
                            rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
    rank, n = dist.get_rank(), dist.get_world_size()
    count = nbytes // 4
    if op in ("allgather", "reduce_scatter", "alltoall"):
        count //= n  # per-rank block
    sb = torch.zeros(count * n + 1, dtype=torch.float32)
    rb = torch.zeros(count * n + 1, dtype=torch.float32)
    blocks = list(rb[: count * n].split(count)) if count else [rb[:0]] * n
    none = torch.zeros(0, dtype=torch.float32)

    def once():
        if op == "allreduce":
            dist.all_reduce(sb[:count])
        elif op == "broadcast":
            dist.broadcast(sb[:count], 0)
        elif op == "allgather":
            dist.all_gather(blocks, sb[:count])
        elif op == "reduce_scatter":
            whole = sb[: count * n]
            dist.all_reduce(whole)
        elif op == "alltoall":
            dist.all_to_all_single(rb[: count * n], sb[: count * n])
        elif op == "pingpong":
            if rank == 0:
                dist.send(sb[:count], 1)
                dist.recv(rb[:count], 1)
            elif rank == 1:
                dist.recv(rb[:count], 0)
                dist.send(rb[:count], 0)
        elif op == "bw":
            if rank == 0:
                works = [dist.isend(sb[:count], 1) for _ in range(BW_WINDOW)]
            elif rank == 1:
                works = [dist.irecv(rb[:count], 0) for _ in range(BW_WINDOW)]
            else:
                works = []
            for w in works:
                w.wait()
            if rank == 0:
                dist.recv(none, 1)
            elif rank == 1:
                dist.send(none, 0)
        else:
            raise SystemExit("gloo_bench: unknown operation %s" % op)

    for _ in range(warmup):
        once()
    # Blocks of warm-up until WARMUP_MS passed, as weft-bench's
    # --warmup-ms: the ranks agree after each block.
    start, more = time.perf_counter(), warmup_ms > 0
    while more:
        for _ in range(8):
            once()
        flag = torch.tensor([1.0 if (time.perf_counter() - start) * 1e3 < warmup_ms else 0.0],
                            dtype=torch.float64)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        more = flag.item() > 0
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        once()
    per = 2 if op == "pingpong" else BW_WINDOW if op == "bw" else 1
    t = torch.tensor([(time.perf_counter() - t0) / iters * 1e6 / per], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        print("%s %d %.3f" % (op, nbytes, t.item()))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
