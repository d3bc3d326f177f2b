"""Named sums over a step's (or an evaluation's) instances, and the metrics made from them.

Metrics are ratios of sums over the whole global batch (loss over masked tokens, accuracy over
instances), so each process only adds up its share; the sums travel in one tensor so that DDP
all-reduces them in one call, and each slot has a name so no code indexes them by position.
"""

from __future__ import annotations

import math

import torch

from kalbert.pretrain.distributed import DistEnv

SLOTS = ("mlm_loss", "mlm_correct", "masked", "sop_loss", "sop_correct", "distill_loss", "rss_loss", "rss_correct",
         "questions", "tokens", "positions")
"""summed MLM loss, correct MLM predictions, masked tokens, summed SOP loss, correct SOP predictions, summed
distillation loss (cosine distance to the teacher), summed span-selection loss, question slots with start and
end right, question slots, real tokens and the positions the model computed (tokens plus padding)"""
_INDEX = {name: i for i, name in enumerate(SLOTS)}


class StepSums:
    """One float64 slot per name in ``SLOTS``; add them up, all-reduce them, turn them into metrics."""

    def __init__(self, device: torch.device, values: torch.Tensor | None = None) -> None:
        self.values = torch.zeros(len(SLOTS), dtype=torch.float64, device=device) if values is None else values

    @classmethod
    def of_forward(cls, out: dict[str, torch.Tensor], tokens: int, positions: int) -> StepSums:
        """The sums of one forward pass (``PretrainingObjective``'s output) over ``tokens`` real tokens."""
        device = out["masked"].device
        found = {"mlm_loss": out["mlm_loss_sum"], "mlm_correct": out["mlm_correct"], "masked": out["masked"],
                 "sop_loss": out.get("sop_loss_sum"), "sop_correct": out.get("sop_correct"),
                 "distill_loss": out.get("distill_loss_sum"), "rss_loss": out.get("rss_loss_sum"),
                 "rss_correct": out.get("rss_correct"), "questions": out.get("questions"),
                 "tokens": torch.tensor(tokens, device=device), "positions": torch.tensor(positions, device=device)}
        zero = torch.zeros((), dtype=torch.float64, device=device)
        return cls(device, torch.stack([zero if found[name] is None else found[name].detach().double()
                                        for name in SLOTS]))

    def __getitem__(self, name: str) -> float:
        return float(self.values[_INDEX[name]])

    def __iadd__(self, other: StepSums) -> StepSums:
        self.values += other.values
        return self

    def all_reduce(self, env: DistEnv, stop_requested: bool = False) -> tuple[StepSums, bool]:
        """The sums over every process, and whether any of them asked to stop (in the same all-reduce)."""
        flag = torch.tensor([float(stop_requested)], dtype=torch.float64, device=self.values.device)
        reduced = env.all_reduce(torch.cat([self.values, flag]))
        return StepSums(self.values.device, reduced[:-1]), bool(reduced[-1] > 0)

    def is_finite(self) -> bool:
        return all(math.isfinite(self[name]) for name in ("mlm_loss", "sop_loss", "distill_loss", "rss_loss"))

    def padding_share(self) -> float:
        return 1.0 - self["tokens"] / max(self["positions"], 1.0)

    def metrics(self, instances: int, sop: bool, distill: bool = False, rss: bool = False) -> dict:
        """Loss and accuracy: MLM ones per masked token, SOP ones per instance (None without SOP); the
        distillation loss per instance (None without a teacher), kept out of ``loss`` so that runs with and
        without it compare; with ``rss`` the span-selection loss and accuracy per question slot (part of
        ``loss``, as SOP's are) and the slots per instance."""
        masked = max(self["masked"], 1.0)
        mlm_loss = self["mlm_loss"] / masked
        record = {"loss": mlm_loss, "mlm_loss": mlm_loss, "mlm_accuracy": self["mlm_correct"] / masked,
                  "sop_loss": None, "sop_accuracy": None}
        if sop:
            record["sop_loss"] = self["sop_loss"] / instances
            record["sop_accuracy"] = self["sop_correct"] / instances
            record["loss"] = mlm_loss + record["sop_loss"]
        if distill:
            record["distill_loss"] = self["distill_loss"] / instances
        if rss:
            questions = max(self["questions"], 1.0)
            record["rss_loss"] = self["rss_loss"] / questions
            record["rss_accuracy"] = self["rss_correct"] / questions
            record["rss_questions"] = self["questions"] / instances
            record["loss"] += record["rss_loss"]
        return record
