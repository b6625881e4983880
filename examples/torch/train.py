# SPDX-License-Identifier: BSD-3-Clause
"""The tutorial's distributed synchronous SGD: each rank trains on its
part of the data and averages gradients with all_reduce; then the same
model under DistributedDataParallel. The data are made up, with a fixed
seed, so every backend sees the same numbers.

    torchrun --nproc_per_node 2 train.py"""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common import init, say

rank, size = init()
torch.manual_seed(1234)
inputs = torch.randn(256, 10)
labels = (inputs.sum(dim=1) > 0).long()
part = slice(rank * 256 // size, (rank + 1) * 256 // size)  # this rank's share
my_inputs, my_labels = inputs[part], labels[part]


def model():
    torch.manual_seed(4321)  # the same start on every rank
    return nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))


def average_gradients(net):
    for p in net.parameters():
        dist.all_reduce(p.grad.data, op=dist.ReduceOp.SUM)
        p.grad.data /= size


net = model()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
for epoch in range(5):
    epoch_loss = 0.0
    for batch in range(0, len(my_inputs), 16):
        opt.zero_grad()
        loss = F.cross_entropy(net(my_inputs[batch:batch + 16]), my_labels[batch:batch + 16])
        epoch_loss += loss.item()
        loss.backward()
        average_gradients(net)
        opt.step()
    say(rank, "epoch", epoch, "loss %.6f" % epoch_loss)

ddp = DDP(model())
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for step in range(10):
    opt.zero_grad()
    loss = F.cross_entropy(ddp(my_inputs[:32]), my_labels[:32])
    loss.backward()
    opt.step()
weights = sum(p.detach().sum().item() for p in ddp.parameters())
say(rank, "DDP loss %.6f weights %.6f" % (loss.item(), weights))
dist.destroy_process_group()
