"""What every fine-tuning loop shares (sentence training, multiple choice, QA): AdamW without weight decay
on biases and LayerNorms, linear warmup then decay, and keeping the best evaluated weights."""

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


class BestCheckpoint:
    """The best-scoring weights seen so far (a CPU copy) and when they were seen; higher scores are better."""

    def __init__(self) -> None:
        self.score: float | None = None
        self.at: int | None = None
        """the step or epoch of the best score"""
        self._state: dict[str, torch.Tensor] | None = None

    def offer(self, score: float, at: int, model: torch.nn.Module) -> bool:
        """Keep ``model``'s weights when ``score`` beats the best so far; True when it did."""
        if self.score is not None and score <= self.score:
            return False
        self.score, self.at = score, at
        self._state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        return True

    def restore(self, model: torch.nn.Module) -> bool:
        """Load the best weights into ``model``; False when nothing was kept."""
        if self._state is None:
            return False
        model.load_state_dict(self._state)
        return True
