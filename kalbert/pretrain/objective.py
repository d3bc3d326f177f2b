"""The MLM + SOP objective, with the MLM head applied only where a prediction is asked for.

``AlbertForPreTraining.forward`` projects every position onto the whole vocabulary; on a tiny model
that head is about half of the training time. Here the encoder runs as usual, the hidden states of
the (about 15%) masked positions are gathered, and only those go through ``model.predictions``.
The parameters are the stock ones, so the model stays a plain ``AlbertForPreTraining``. Batches
may also come packed (several instances per row, kept apart by a block-diagonal attention mask).

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


class PretrainingObjective(nn.Module):
    """Wraps an ``AlbertForPreTraining``; ``forward`` gives the summed MLM and SOP terms of a batch."""

    def __init__(self, model: nn.Module, objective: str) -> None:
        super().__init__()
        if objective not in OBJECTIVES:
            raise KalbertError(f"unknown objective {objective!r}", f"use one of {', '.join(OBJECTIVES)}")
        self.model = model
        self.sop = objective == "mlm+sop"

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, labels: torch.Tensor,
                sop_labels: torch.Tensor, attention_mask: torch.Tensor | None = None,
                segment_ids: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                instance_starts: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Padded rows (``attention_mask``) or packed ones (``segment_ids``, see ``kalbert.pretrain.batches``)."""
        if segment_ids is not None:  # a token sees only the tokens of its own instance
            attention_mask = (segment_ids[:, None, :, None] == segment_ids[:, None, None, :])
        encoded = self.model.albert(input_ids=input_ids, token_type_ids=token_type_ids, position_ids=position_ids,
                                    attention_mask=attention_mask, return_dict=True)
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
        if self.sop:
            pooled = encoded.pooler_output
            if instance_starts is not None:
                albert = self.model.albert
                pooled = albert.pooler_activation(albert.pooler(flat_hidden[instance_starts]))
            # the classifier without the head's dropout, as ALBERT pretrains it (and so that the loss does not
            # depend on each process's RNG); classifier_dropout_prob stays in the config for fine-tuning
            sop_logits = self.model.sop_classifier.classifier(pooled).float()
            out["sop_loss_sum"] = F.cross_entropy(sop_logits, sop_labels, reduction="sum")
            out["sop_correct"] = (sop_logits.argmax(-1) == sop_labels).sum()
        return out
