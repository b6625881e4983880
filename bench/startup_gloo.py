#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""startup_gloo.py: the Gloo side of bench/startup.sh.

Imports torch, joins the job with init_process_group("gloo") through a
file store (GLOO_BENCH_FILE, a name that does not exist yet), runs one
all_reduce of one float, and prints, on rank 0, the wall-clock time at
which it returned there (microseconds since the epoch) and the sum.
"""
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("gloo", init_method="file://" + os.environ["GLOO_BENCH_FILE"],
                        rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
t = torch.ones(1)
dist.all_reduce(t)
done = time.time_ns() // 1000
if dist.get_rank() == 0:
    print("%d %g" % (done, t.item()))
dist.destroy_process_group()
