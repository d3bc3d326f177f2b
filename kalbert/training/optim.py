"""The optimiser and learning-rate schedule of every fine-tuning stage: AdamW without weight decay on
biases and LayerNorms, linear warmup then linear decay to 0 (BERT's and ALBERT's recipe)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def decay_split(parameters: Iterable[torch.nn.Parameter]) -> tuple[list, list]:
    """(decayed, not decayed): weight matrices get weight decay, 1-D parameters (biases, LayerNorm
    weights) do not, as in BERT and ALBERT."""
    decayed, plain = [], []
    for parameter in parameters:
        (decayed if parameter.ndim >= 2 else plain).append(parameter)
    return decayed, plain


def adamw(parameters: Iterable[torch.nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW over ``parameters`` (trainable ones only) with :func:`decay_split`'s two groups."""
    import torch

    decayed, plain = decay_split(p for p in parameters if p.requires_grad)
    return torch.optim.AdamW([{"params": decayed, "weight_decay": weight_decay},
                              {"params": plain, "weight_decay": 0.0}], lr=lr)


def linear_warmup(optimizer: torch.optim.Optimizer, warmup_ratio: float, total_steps: int):
    """The learning rate rises linearly over ``warmup_ratio`` of the steps, then falls linearly to 0."""
    from transformers import get_linear_schedule_with_warmup

    return get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * total_steps), total_steps)
