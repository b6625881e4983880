#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""torch_backends.py: times torch.distributed collectives on one backend,
the way users call them, for bench/torch-compare.sh.

    BACKEND=weft torchrun --nproc_per_node 4 torch_backends.py [SIZES...]

For all_reduce, all_gather (list form), all_to_all_single and broadcast,
at each size in bytes (default 1 KiB, 64 KiB, 1 MiB, 16 MiB; nccl-tests'
meaning: the whole gathered or exchanged buffer), it runs a warm-up, a
barrier, then a timed loop, and rank 0 prints "OP BYTES TIME_US": the
slowest rank's mean time per call. float32, sum.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

SIZES = [1 << 10, 64 << 10, 1 << 20, 16 << 20]
OPS = ["all_reduce", "all_gather", "all_to_all", "broadcast"]


def iterations(nbytes):
    # About the same time at each size on one node: small sizes need many
    # calls to rise above the clock's and Python's noise.
    return max(5, min(500, (32 << 20) // max(nbytes, 1) // 16))


def main():
    backend = os.environ.get("BACKEND", "weft")
    if backend == "weft":
        import torch_weft  # noqa: F401
    dist.init_process_group(backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    sizes = [int(s, 0) for s in sys.argv[1:]] or SIZES
    for op in OPS:
        for nbytes in sizes:
            count = nbytes // 4
            block = count // n
            sb = torch.ones(count)
            rb = torch.zeros(count)
            blocks = list(rb[: block * n].split(block))

            def once():
                if op == "all_reduce":
                    dist.all_reduce(sb)
                elif op == "all_gather":
                    dist.all_gather(blocks, sb[:block])
                elif op == "all_to_all":
                    dist.all_to_all_single(rb[: block * n], sb[: block * n])
                else:
                    dist.broadcast(sb, 0)

            iters = iterations(nbytes)
            for _ in range(max(2, iters // 10)):
                once()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                once()
            mean_us = torch.tensor([(time.perf_counter() - start) / iters * 1e6],
                                   dtype=torch.float64)
            dist.all_reduce(mean_us, op=dist.ReduceOp.MAX)
            if rank == 0:
                print("%s %d %.1f" % (op, nbytes, mean_us.item()), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
