# SPDX-License-Identifier: BSD-3-Clause
"""init_job.py METHOD RANK SIZE [lose]: one rank of a job started by hand
through a torch init method (tcp://, file://, or env:// from the
environment when METHOD is "env"). It all_reduces, over the world and a
sub-group, and prints "rank R: ok". With "lose", the last rank dies after
the first all_reduce, and the others must see their next all_reduce fail
with weft's "peer lost" well within WEFT_TIMEOUT, not hang."""
import os
import sys
import time

import torch
import torch.distributed as dist

import torch_weft  # noqa: F401

method, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lose = len(sys.argv) > 4 and sys.argv[4] == "lose"
if method == "env":
    dist.init_process_group("weft")
else:
    dist.init_process_group("weft", init_method=method, rank=rank, world_size=size)
assert (dist.get_rank(), dist.get_world_size()) == (rank, size)
t = torch.tensor([rank + 1])
dist.all_reduce(t)
assert t.item() == size * (size + 1) // 2, t
if lose:
    if rank == size - 1:
        os._exit(3)  # no goodbye: the others must notice
    start = time.monotonic()
    try:
        dist.all_reduce(t)
    except RuntimeError as e:
        took = time.monotonic() - start
        assert "peer lost" in str(e) or "timed out" in str(e), e
        print("rank %d: lost the last rank after %.2f s: %s" % (rank, took, e), flush=True)
        os._exit(0)  # the group cannot be torn down in order any more
    print("rank %d: all_reduce succeeded without the last rank" % rank, flush=True)
    os._exit(1)
g = dist.new_group(list(range(1, size)))
if rank >= 1:
    t = torch.tensor([rank])
    dist.all_reduce(t, group=g)
    assert t.item() == size * (size - 1) // 2, t
dist.barrier()
print("rank %d: ok" % rank, flush=True)
dist.destroy_process_group()
