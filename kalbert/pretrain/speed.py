"""The fastest correct settings for the hardware at hand, chosen when the config leaves them open.

bf16 autocast runs the matmuls at several times the fp32 rate on CPUs with native bf16 (AVX512-BF16,
AMX) and on recent GPUs, and trains to the same held-out loss; elsewhere it is emulated and slower,
so ``bf16=None`` turns it on exactly where the hardware has it. A resumed run keeps the precision it
started with. With bf16 on a CPU, HF's eager attention (matmul + softmax) beats PyTorch's SDPA kernel,
whose CPU backward is slow at ALBERT's head sizes (benchmarks/results/pretrain_throughput.md: 1.30x on
the tiny preset, 1.19x on small), so ``attention="auto"`` picks eager there and SDPA elsewhere.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import torch

_CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@cache
def _cpu_flags() -> frozenset[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:  # not Linux: assume no native bf16
        return frozenset()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return frozenset(line.partition(":")[2].split())


def native_bf16(device: torch.device) -> str | None:
    """What gives ``device`` native bf16 matmuls (for the log), or None if it has none."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device) if torch.cuda.is_bf16_supported() else None
    found = [flag.upper().replace("_", "-") for flag in _CPU_BF16_FLAGS if flag in _cpu_flags()]
    return " and ".join(found) or None


def choose_bf16(requested: bool | None, recorded: bool | None, device: torch.device) -> tuple[bool, str]:
    """bf16 on or off, and why: as requested, else as the resumed run had it, else where the hardware has it."""
    if requested is not None:
        return requested, "as requested"
    if recorded is not None:
        return recorded, "as the run being resumed"
    support = native_bf16(device)
    return (True, f"native bf16 here: {support}") if support else (False, "no native bf16 on this device")


def choose_attention(requested: str, bf16: bool, device: torch.device) -> tuple[str, str]:
    """The HF attention implementation and why: as requested, else eager for bf16 on a CPU, else SDPA."""
    if requested != "auto":
        return requested, "as requested"
    if device.type == "cpu" and bf16:
        return "eager", "faster than SDPA for bf16 on CPUs"
    return "sdpa", "PyTorch's fused kernel"
