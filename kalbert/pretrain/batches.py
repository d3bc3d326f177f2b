"""Which instances make up each global batch, and how they are laid out in tensors.

Global batch ``s`` is a fixed set of instances (seeded epoch permutations, the last partial batch
dropped), so the data position is a function of the step alone.

Laying the instances out one per row pads every row to the longest; on data with many short
documents a third of the computed positions can be padding. Packing instead fills each row with
several instances (first-fit decreasing) and keeps them apart: position ids restart at every
instance and a block-diagonal attention mask lets each token see only its own instance, so every
instance is computed exactly as in its own row. Masks are drawn per instance before packing, so
the MLM targets, the SOP labels and the masking statistics do not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from kalbert.errors import KalbertError
from kalbert.pretrain.masking import IGNORE, PAD_ID, MaskingConfig, collate
from kalbert.pretrain.rss import RSS_TARGETS, RecurringSpans
from kalbert.pretrain.shards import InstanceSet


class GlobalBatches:
    """The instances of global batch ``step`` (1-based): seeded epoch permutations, no partial batch."""

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        self.per_epoch = n // batch_size
        if self.per_epoch == 0:
            raise KalbertError(f"the data hold {n} training instances, fewer than one batch of {batch_size}",
                               "lower --batch-size or build more data")
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self._epoch, self._order = -1, np.empty(0, dtype=np.int64)

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, batch within the epoch) of ``step``."""
        return divmod(step - 1, self.per_epoch)

    def indices(self, step: int) -> np.ndarray:
        epoch, batch = self.position(step)
        if epoch != self._epoch:
            self._epoch = epoch
            self._order = np.random.default_rng((self.seed, epoch)).permutation(self.n)
        return self._order[batch * self.batch_size:(batch + 1) * self.batch_size]


@dataclass
class Batch:
    """The objective's keyword arguments for some instances, and what they count."""

    inputs: dict[str, torch.Tensor]
    tokens: int
    """real (non-padding) tokens"""
    positions: int
    """positions the encoder computes: rows x width"""

    @property
    def masked(self) -> torch.Tensor:
        return (self.inputs["labels"] != IGNORE).sum()

    @property
    def questions(self) -> torch.Tensor:
        """span-selection question slots (none without ``--objective mlm+rss``)"""
        if "rss_starts" not in self.inputs:
            return torch.zeros((), dtype=torch.long, device=self.inputs["labels"].device)
        return (self.inputs["rss_starts"] != IGNORE).sum()

    def to(self, device: torch.device) -> Batch:
        return Batch({k: v.to(device, non_blocking=True) for k, v in self.inputs.items()}, self.tokens,
                     self.positions)


def pack_rows(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Instances (by position in ``lengths``) per row: first-fit decreasing, rows of at most ``capacity`` tokens.

    Deterministic (ties keep their order), so every process and every resume packs a batch alike.
    """
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        row = next((r for r, free in enumerate(room) if free >= lengths[i]), None)
        if row is None:
            rows.append([])
            room.append(max(capacity, lengths[i]))
            row = len(rows) - 1
        rows[row].append(i)
        room[row] -= lengths[i]
    return rows


def pack(padded: dict[str, torch.Tensor], capacity: int) -> dict[str, torch.Tensor]:
    """``collate``'s padded batch as packed rows.

    Returns ``segment_ids`` (1, 2, ... per instance in its row, 0 for padding) in place of the
    attention mask, ``position_ids`` restarting at every instance, and ``instance_starts``: the
    flat position of each instance's [CLS], in the order of ``sop_labels``. Span-selection targets, given,
    move with their instance: they name positions in the row.
    """
    lengths = padded["attention_mask"].sum(1).tolist()
    rows = pack_rows(lengths, capacity)
    width = max(sum(lengths[i] for i in row) for row in rows)
    shape = (len(rows), width)
    input_ids = torch.full(shape, PAD_ID, dtype=torch.long)
    token_type_ids = torch.zeros(shape, dtype=torch.long)
    labels = torch.full(shape, IGNORE, dtype=torch.long)
    position_ids = torch.zeros(shape, dtype=torch.long)
    segment_ids = torch.zeros(shape, dtype=torch.long)
    instance_starts = torch.zeros(len(lengths), dtype=torch.long)
    targets = {name: torch.full(shape, IGNORE, dtype=torch.long) for name in RSS_TARGETS if name in padded}
    for r, row in enumerate(rows):
        offset = 0
        for segment, i in enumerate(row, start=1):
            length, end = lengths[i], offset + lengths[i]
            input_ids[r, offset:end] = padded["input_ids"][i, :length]
            token_type_ids[r, offset:end] = padded["token_type_ids"][i, :length]
            labels[r, offset:end] = padded["labels"][i, :length]
            position_ids[r, offset:end] = torch.arange(length)
            segment_ids[r, offset:end] = segment
            for name, target in targets.items():
                source = padded[name][i, :length]
                target[r, offset:end] = torch.where(source != IGNORE, source + offset, IGNORE)
            instance_starts[i] = r * width + offset
            offset = end
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "segment_ids": segment_ids,
            "position_ids": position_ids, "labels": labels, "sop_labels": padded["sop_labels"],
            "instance_starts": instance_starts, **targets}


def make_batch(instances: InstanceSet, indices: np.ndarray, mask_key: tuple[int, ...], masking: MaskingConfig,
               vocab_size: int, pack_capacity: int | None, teacher_vectors: np.ndarray | None = None,
               rss: RecurringSpans | None = None) -> Batch:
    """Instances ``indices``, masked from ``mask_key``, padded (``pack_capacity`` None) or packed, on the CPU
    (``Batch.to`` moves it); with the rows of ``teacher_vectors`` (one per instance of the split) that belong
    to them, and with ``rss`` their span-selection questions."""
    padded = collate([instances[int(i)] for i in indices], [int(i) for i in indices], mask_key, masking, vocab_size,
                     rss)
    tokens = int(padded["attention_mask"].sum())
    inputs = padded if pack_capacity is None else pack(padded, pack_capacity)
    if teacher_vectors is not None:  # in the order of sop_labels, as the objective's instance means are
        inputs["teacher_vectors"] = torch.from_numpy(teacher_vectors[np.asarray(indices)].astype(np.float32))
    return Batch(inputs, tokens, inputs["input_ids"].numel())
