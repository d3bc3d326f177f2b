"""The MLM + SOP (or span selection) objective, with the MLM head applied only where a prediction is asked for.

``AlbertForPreTraining.forward`` projects every position onto the whole vocabulary; on a tiny model
that head is about half of the training time. Here the encoder runs as usual, the hidden states of
the (about 15%) masked positions are gathered, and only those go through ``model.predictions``.
The parameters are the stock ones, so the model stays a plain ``AlbertForPreTraining``. Batches
may also come packed (several instances per row, kept apart by a block-diagonal attention mask).

The SOP head reads the [CLS] state, as ALBERT's does, or (``sop_pooling="mean"``) the mean of the
instance's states through the same pooler: a model transplanted from a mean-pooling encoder keeps its
[CLS] as an attention sink whose state hardly depends on the input, and SOP read there stays at chance.

With ``objective="mlm+rss"`` a span-selection head (``SpanSelectionHead``, see ``kalbert.pretrain.rss`` for
the questions) points, from each question slot, at the start and end of the answer; its loss is the mean of
the start and end cross-entropies over the slot's own instance, and a slot counts as right when both are.
The head lives here, not in the HF model: checkpoints carry it in their trainer state, the export leaves it out.

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

OBJECTIVES = ("mlm+sop", "mlm", "mlm+rss")
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
        self.rss = objective == "mlm+rss"
        if self.rss:
            self.rss_head = SpanSelectionHead(model.config.hidden_size, model.config.initializer_range)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor, labels: torch.Tensor,
                sop_labels: torch.Tensor, attention_mask: torch.Tensor | None = None,
                segment_ids: torch.Tensor | None = None, position_ids: torch.Tensor | None = None,
                instance_starts: torch.Tensor | None = None,
                teacher_vectors: torch.Tensor | None = None, rss_starts: torch.Tensor | None = None,
                rss_ends: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Padded rows (``attention_mask``) or packed ones (``segment_ids``, see ``kalbert.pretrain.batches``);
        the span-selection terms where the batch has questions (``rss_starts``) and the objective asks for them."""
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
        if self.rss and rss_starts is not None:
            occupied = attention_mask if segment_ids is None else segment_ids
            out.update(self._span_selection(hidden, occupied, rss_starts, rss_ends))
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

    def _span_selection(self, hidden: torch.Tensor, occupied: torch.Tensor, rss_starts: torch.Tensor,
                        rss_ends: torch.Tensor) -> dict[str, torch.Tensor]:
        """Summed span-selection loss, slots with start and end right, and the slot count; each slot chooses
        among the positions of its own instance (``occupied``: its segment id, or 1 in a padded row)."""
        rows, columns = torch.nonzero(rss_starts != IGNORE, as_tuple=True)
        count = torch.tensor(len(rows), device=hidden.device)
        if not len(rows):
            zero = torch.zeros((), device=hidden.device)
            return {"rss_loss_sum": zero, "rss_correct": zero, "questions": count}
        starts, ends = rss_starts[rows, columns], rss_ends[rows, columns]
        own = occupied[rows] == occupied[rows, columns].unsqueeze(1)
        logits = self.rss_head(hidden, rows, columns).float()
        logits = logits.masked_fill(~own.unsqueeze(1), torch.finfo(torch.float32).min)
        loss = (F.cross_entropy(logits[:, 0], starts, reduction="sum")
                + F.cross_entropy(logits[:, 1], ends, reduction="sum")) / 2
        correct = (logits[:, 0].argmax(-1) == starts) & (logits[:, 1].argmax(-1) == ends)
        return {"rss_loss_sum": loss, "rss_correct": correct.sum(), "questions": count}


class SpanSelectionHead(nn.Module):
    """Splinter's question-aware span selection: from a slot's state q, position i scores ``h_i . S q`` as the
    start and ``h_i . E q`` as the end (scaled by 1/sqrt(hidden), as attention scores are).

    Like ``AlbertForQuestionAnswering``'s ``qa_outputs`` it scores every position of the row from the last
    states, but with a query per question: a QA fine-tuning that appends [MASK] to the question (Splinter's
    recipe) could read its answer with this head as is.
    """

    def __init__(self, hidden_size: int, initializer_range: float) -> None:
        super().__init__()
        self.start = nn.Linear(hidden_size, hidden_size, bias=False)
        self.end = nn.Linear(hidden_size, hidden_size, bias=False)
        for layer in (self.start, self.end):
            nn.init.normal_(layer.weight, std=initializer_range)  # as HF initialises ALBERT's own layers
        self.scale = hidden_size ** -0.5

    def forward(self, hidden: torch.Tensor, rows: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
        """Logits (slots x 2 x width): start and end over the row of each slot at (``rows``, ``columns``).

        The slots of a row share one batched product with the row's states, so no slot copies its row.
        """
        slots = hidden[rows, columns]
        queries = torch.stack([self.start(slots), self.end(slots)], 1) * self.scale
        per_row = torch.bincount(rows, minlength=hidden.shape[0])
        rank = torch.arange(len(rows), device=rows.device) - (torch.cumsum(per_row, 0) - per_row)[rows]
        grid = torch.zeros(hidden.shape[0], int(per_row.max()), 2, hidden.shape[-1], dtype=queries.dtype,
                           device=queries.device)
        grid[rows, rank] = queries
        scores = torch.bmm(grid.flatten(1, 2), hidden.to(grid.dtype).transpose(1, 2))
        return scores.view(hidden.shape[0], -1, 2, hidden.shape[1])[rows, rank]


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
