"""Keeping the best evaluated weights, so a stage saves the checkpoint that scored best, not the last one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


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

    def state_dict(self) -> dict[str, Any]:
        """What a resumable checkpoint stores of it."""
        return {"score": self.score, "at": self.at, "weights": self._state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.score, self.at, self._state = state["score"], state["at"], state["weights"]
