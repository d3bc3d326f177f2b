"""The MLM + SOP objective, with the MLM head applied only where a prediction is asked for.

``AlbertForPreTraining.forward`` projects every position onto the whole vocabulary; on a tiny model
that head is about half of the training time. Here the encoder runs as usual, the hidden states of
the (about 15%) masked positions are gathered, and only those go through ``model.predictions``.
The parameters are the stock ones, so the model stays a plain ``AlbertForPreTraining``. Batches
may also come packed (several instances per row, kept apart by a block-diagonal attention mask).

The SOP head reads the [CLS] state, as ALBERT's does, or (``sop_pooling="mean"``) the mean of the
instance's states through the same pooler: a model transplanted from a mean-pooling encoder keeps its
[CLS] as an attention sink whose state hardly depends on the input, and SOP read there stays at chance.

Given ``teacher_vectors`` (one per instance, see ``kalbert.pretrain.teacher_targets``), it also returns
the summed cosine distance between each instance's mean last state and its teacher vector.

The module returns *sums* (loss, correct predictions, counts); the trainer divides by totals over
the whole global batch, so the loss is the same however the batch is split over processes and
accumulation steps.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from kalbert.errors import KalbertError
from kalbert.pretrain.masking import IGNORE

OBJECTIVES = ("mlm+sop", "mlm")
SOP_POOLINGS = ("cls", "mean")


class PretrainingObjective(nn.Module):
    """Wraps an ``AlbertForPreTraining``; ``forward`` gives the summed MLM and SOP terms of a batch."""

    def __init__(self, model: nn.Module, objective: str, sop_pooling: str = "cls") -> None:
        super().__init__()
        if objective not in OBJECTIVES:
            raise KalbertError(f"unknown objective {objective!r}", f"use one of {', '.join(OBJECTIVES)}")
        if sop_pooling not in SOP_POOLINGS:
            raise KalbertError(f"unknown SOP pooling {sop_pooling!r}", f"use one of {', '.join(SOP_POOLINGS)}")
        self.model = model
        self.sop = objective == "mlm+sop"
        self.sop_pooling = sop_pooling

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, labels: torch.Tensor,
                sop_labels: torch.Tensor, attention_mask: torch.Tensor | None = None,
                segment_ids: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                instance_starts: torch.Tensor | None = None,
                teacher_vectors: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Padded rows (``attention_mask``) or packed ones (``segment_ids``, see ``kalbert.pretrain.batches``)."""
        encoder_mask = attention_mask
        if segment_ids is not None:  # a token sees only the tokens of its own instance
            encoder_mask = _packing_mask(segment_ids, additive=self.model.config._attn_implementation == "eager")
        encoded = self.model.albert(input_ids=input_ids, token_type_ids=token_type_ids, position_ids=position_ids,
                                    attention_mask=encoder_mask, return_dict=True)
        hidden = encoded.last_hidden_state
        flat_hidden = hidden.reshape(-1, hidden.shape[-1])
        flat_labels = labels.reshape(-1)
        positions = torch.nonzero(flat_labels != IGNORE).squeeze(1)
        targets = flat_labels[positions]
        logits = self.model.predictions(flat_hidden[positions]).float()
        out = {
            "mlm_loss_sum": F.cross_entropy(logits, targets, reduction="sum"),
            "mlm_correct": (logits.argmax(-1) == targets).sum(),
            "masked": torch.tensor(len(targets), device=hidden.device),
        }
        means = None
        if teacher_vectors is not None or (self.sop and self.sop_pooling == "mean"):
            means = _instance_means(hidden, attention_mask if segment_ids is None else segment_ids, instance_starts)
        if teacher_vectors is not None:
            cosine = F.cosine_similarity(means.float(), teacher_vectors.float(), dim=-1)
            out["distill_loss_sum"] = (1.0 - cosine).sum()
        if self.sop:
            albert = self.model.albert
            if self.sop_pooling == "mean":
                state = means
            else:
                state = hidden[:, 0] if instance_starts is None else flat_hidden[instance_starts]
            pooled = albert.pooler_activation(albert.pooler(state))
            # the classifier without the head's dropout, as ALBERT pretrains it (and so that the loss does not
            # depend on each process's RNG); classifier_dropout_prob stays in the config for fine-tuning
            sop_logits = self.model.sop_classifier.classifier(pooled).float()
            out["sop_loss_sum"] = F.cross_entropy(sop_logits, sop_labels, reduction="sum")
            out["sop_correct"] = (sop_logits.argmax(-1) == sop_labels).sum()
        return out


def _packing_mask(segment_ids: torch.Tensor, additive: bool) -> torch.Tensor:
    """The block-diagonal 4-D mask of packed rows: boolean (True: may attend) for SDPA, which takes it as is,
    or additive (0 / the float32 minimum) for eager attention, which adds a 4-D mask to the scores unconverted."""
    allowed = segment_ids[:, None, :, None] == segment_ids[:, None, None, :]
    if not additive:
        return allowed
    blocked = torch.zeros(allowed.shape, dtype=torch.float32, device=allowed.device)
    return blocked.masked_fill_(~allowed, torch.finfo(torch.float32).min)


def _instance_means(hidden: torch.Tensor, occupied: torch.Tensor, instance_starts: torch.Tensor | None) -> torch.Tensor:
    """Mean last hidden state of each instance: per padded row, or per packed instance (rows hold
    instances back to back from ``instance_starts``; ``occupied`` is 0 on padding)."""
    if instance_starts is None:
        weights = occupied.to(hidden.dtype).unsqueeze(-1)
        return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)
    flat = hidden.reshape(-1, hidden.shape[-1])
    keep = torch.nonzero(occupied.reshape(-1) > 0).squeeze(1)
    order = torch.argsort(instance_starts)
    owner = order[torch.searchsorted(instance_starts[order], keep, right=True) - 1]
    sums = torch.zeros(len(instance_starts), flat.shape[-1], dtype=flat.dtype, device=flat.device)
    sums.index_add_(0, owner, flat[keep])
    counts = torch.bincount(owner, minlength=len(instance_starts)).clamp(min=1)
    return sums / counts.unsqueeze(1).to(flat.dtype)
