"""The fastest correct settings for the hardware at hand, chosen when the config leaves them open.

bf16 autocast runs the matmuls at several times the fp32 rate on CPUs with native bf16 (AVX512-BF16,
AMX) and on recent GPUs, and trains to the same held-out loss; elsewhere it is emulated and slower,
so ``precision="auto"`` turns it on exactly where the hardware has it (the rule is
:func:`kalbert.precision.resolve_precision`; :mod:`kalbert.hardware` reads the CPU). With bf16 on a CPU,
HF's eager attention (matmul + softmax) beats PyTorch's SDPA kernel, whose CPU backward is slow at ALBERT's
head sizes (benchmarks/results/pretrain_throughput.md: 1.30x on the tiny preset, 1.19x on small), so
``attention="auto"`` picks eager there and SDPA elsewhere.
"""

from __future__ import annotations

import torch


def choose_attention(requested: str, bf16: bool, device: torch.device) -> tuple[str, str]:
    """The HF attention implementation and why: as requested, else eager for bf16 on a CPU, else SDPA."""
    if requested != "auto":
        return requested, "as requested"
    if device.type == "cpu" and bf16:
        return "eager", "faster than SDPA for bf16 on CPUs"
    return "sdpa", "PyTorch's fused kernel"
