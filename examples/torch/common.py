# SPDX-License-Identifier: BSD-3-Clause
"""What the tutorial programs share: the backend to use (BACKEND, "weft"
unless set: run them with BACKEND=gloo to compare) and the start."""
import os

import torch.distributed as dist


def init():
    backend = os.environ.get("BACKEND", "weft")
    if backend == "weft":
        import torch_weft  # noqa: F401  (registers the backend "weft")
    dist.init_process_group(backend)
    return dist.get_rank(), dist.get_world_size()


def say(rank, *words):
    print("rank %d:" % rank, *words, flush=True)
