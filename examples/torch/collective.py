# SPDX-License-Identifier: BSD-3-Clause
"""Collectives, as in the tutorial: an all_reduce within a group of ranks 0
and 1, then the tutorial's ring all-reduce written with isend and recv,
then the collectives it lists, on every rank.

    torchrun --nproc_per_node 4 collective.py"""
import torch
import torch.distributed as dist

from common import init, say

rank, size = init()
group = dist.new_group([0, 1])
tensor = torch.ones(1)
if rank in (0, 1):
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM, group=group)
say(rank, "group all_reduce:", tensor[0].item())


def ring_allreduce(send, recv):
    """The tutorial's ring: each rank passes what it last received on."""
    rank, size = dist.get_rank(), dist.get_world_size()
    send_buff, recv_buff, accum = send.clone(), torch.zeros_like(send), send.clone()
    left, right = (rank - 1) % size, (rank + 1) % size
    for i in range(size - 1):
        buff_in, buff_out = (send_buff, recv_buff) if i % 2 == 0 else (recv_buff, send_buff)
        req = dist.isend(buff_in, right)
        dist.recv(buff_out, left)
        accum += buff_out
        req.wait()
    recv[:] = accum


out = torch.zeros(3)
ring_allreduce(torch.arange(3.) + rank, out)
say(rank, "ring all_reduce:", out.tolist())

t = torch.arange(4) * (rank + 1)
dist.broadcast(t, src=size - 1)
say(rank, "broadcast:", t.tolist())
t = torch.arange(4) * (rank + 1)
dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
say(rank, "reduce MAX at 0:", t.tolist() if rank == 0 else "-")
t = torch.tensor([rank + 1.0])
dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
say(rank, "all_reduce PRODUCT:", t.item())
gathered = [torch.zeros(2, dtype=torch.int64) for _ in range(size)]
dist.all_gather(gathered, torch.tensor([rank, rank * rank]))
say(rank, "all_gather:", [g.tolist() for g in gathered])
gl = [torch.zeros(2) for _ in range(size)] if rank == 0 else None
dist.gather(torch.tensor([rank, -rank], dtype=torch.float32), gl, dst=0)
say(rank, "gather at 0:", [g.tolist() for g in gl] if rank == 0 else "-")
out = torch.zeros(2)
dist.scatter(out, [torch.tensor([r, 10.0 * r]) for r in range(size)] if rank == 0 else None, src=0)
say(rank, "scatter:", out.tolist())
out = torch.zeros(size, dtype=torch.int64)
dist.all_to_all_single(out, torch.arange(size) + 10 * rank)
say(rank, "all_to_all_single:", out.tolist())
objs = [None] * size
dist.all_gather_object(objs, {"rank": rank})
say(rank, "all_gather_object:", objs)
dist.barrier()
say(rank, "barrier passed")
dist.destroy_process_group()
