"""One process or many: the process group that ``torchrun`` / ``accelerate launch`` describe in the environment.

Both launchers export ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``MASTER_ADDR``/``MASTER_PORT``;
with ``WORLD_SIZE`` > 1 the trainer joins the group (NCCL on GPUs, gloo on CPUs) and wraps the model
in DDP. Without them it is one process and every collective is a no-op.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistEnv:
    """This process's place in the job and the device it trains on."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """Sum ``tensor`` over all processes, in place (no-op for one process)."""
        if self.distributed:
            dist.all_reduce(tensor)
        return tensor

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()


def setup_distributed() -> DistEnv:
    """Join the process group the launcher set up in the environment, if any."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world_size > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return DistEnv(rank, world_size, local_rank, device)


def teardown_distributed(env: DistEnv) -> None:
    if env.distributed and dist.is_initialized():
        dist.destroy_process_group()
