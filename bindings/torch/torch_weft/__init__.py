# SPDX-License-Identifier: BSD-3-Clause
"""weft as a torch.distributed backend.

    import torch_weft
    torch.distributed.init_process_group("weft")

Importing the module registers the backend "weft"; every init method torch
knows (env://, tcp://, file://, a store) then works, and weft meets the
other ranks through torch's own store.
"""
import torch
import torch.distributed as dist

from . import _C  # after torch.distributed: _C extends its classes

ProcessGroupWeft = _C.ProcessGroupWeft
__version__ = "%d.%d.%d" % _C.weft_version()

if not hasattr(dist.Backend, "WEFT"):  # registering twice is an error in torch
    dist.Backend.register_backend("weft", _C.create)

__all__ = ["ProcessGroupWeft", "__version__"]
