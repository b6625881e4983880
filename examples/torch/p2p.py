# SPDX-License-Identifier: BSD-3-Clause
"""Point-to-point, as in PyTorch's "Writing Distributed Applications"
tutorial: rank 0 sends a tensor to rank 1, blocking and then not.

    torchrun --nproc_per_node 2 p2p.py"""
import torch
import torch.distributed as dist

from common import init, say

rank, size = init()
tensor = torch.zeros(1)
if rank == 0:
    tensor += 1
    dist.send(tensor=tensor, dst=1)
elif rank == 1:
    dist.recv(tensor=tensor, src=0)
say(rank, "blocking: has data", tensor[0].item())

tensor = torch.zeros(1)
req = None
if rank == 0:
    tensor += 2
    req = dist.isend(tensor=tensor, dst=1)
elif rank == 1:
    req = dist.irecv(tensor=tensor, src=0)
if req is not None:
    req.wait()
say(rank, "non-blocking: has data", tensor[0].item())
dist.destroy_process_group()
