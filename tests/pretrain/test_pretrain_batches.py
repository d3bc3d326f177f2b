"""Packing: short instances share rows, yet every loss, label and count is the one of the padded batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from pretrain_helpers import SEQ_LEN, tiny_run
from transformers import AlbertForPreTraining

from kalbert.pretrain import PretrainingData
from kalbert.pretrain.batches import GlobalBatches, make_batch, pack_rows
from kalbert.pretrain.masking import IGNORE, MaskingConfig
from kalbert.pretrain.objective import PretrainingObjective
from kalbert.pretrain.presets import albert_config


def test_pack_rows_places_every_instance_once_within_capacity():
    lengths = [64, 10, 30, 33, 64, 5, 20, 31, 2]
    rows = pack_rows(lengths, 64)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in row) <= 64 for row in rows)
    assert len(rows) == 5 and rows == pack_rows(lengths, 64)
    assert pack_rows([70, 3], 64) == [[0], [1]]  # a longer instance gets a row of its own


def _mixed_indices(data: PretrainingData, n: int = 12) -> np.ndarray:
    """The shortest and the longest training instances, shuffled: a batch that packs well."""
    train = data.split("train")
    order = np.argsort([len(train[i].ids) for i in range(len(train))], kind="stable")
    return np.random.default_rng(0).permutation(np.concatenate([order[: n // 2], order[-(n // 2):]]))


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize(("objective", "sop_pooling"), [("mlm+sop", "cls"), ("mlm+sop", "mean"), ("mlm", "cls")])
def test_packed_batch_matches_the_padded_one(ko_data, objective, sop_pooling, attention):
    data = PretrainingData.open(ko_data)
    indices, key, masking = _mixed_indices(data), (7, 0, 3), MaskingConfig()
    hidden = tiny_run(ko_data, "unused").model.hidden_size
    teacher = np.random.default_rng(1).standard_normal((len(data.split("train")), hidden)).astype(np.float32)
    padded, packed = (make_batch(data.split("train"), indices, key, masking, data.vocab_size, capacity, teacher)
                       for capacity in (None, SEQ_LEN))
    assert packed.tokens == padded.tokens and packed.positions < padded.positions
    assert int(packed.masked) == int(padded.masked)
    labels = {name: b.inputs["labels"][b.inputs["labels"] != IGNORE].sort().values for name, b in
              (("padded", padded), ("packed", packed))}
    assert torch.equal(labels["padded"], labels["packed"])  # the same targets: masking statistics unchanged
    assert torch.equal(packed.inputs["sop_labels"], padded.inputs["sop_labels"])

    torch.manual_seed(0)
    model = AlbertForPreTraining(albert_config(tiny_run(ko_data, "unused").model, data.vocab_size)).eval()
    model.set_attn_implementation(attention)  # eager adds the mask to the scores: packing must hand it 0 / -inf
    wrapped = PretrainingObjective(model, objective, sop_pooling)
    results = []
    for batch in (padded, packed):
        model.zero_grad()
        out = wrapped(**batch.inputs)
        (out["mlm_loss_sum"] + out.get("sop_loss_sum", 0) + out["distill_loss_sum"]).backward()
        results.append((out, [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (a, grads_a), (b, grads_b) = results
    assert a.keys() == b.keys()
    for name in a:
        assert b[name].item() == pytest.approx(a[name].item(), rel=1e-5), name
    assert all(torch.allclose(x, y, rtol=1e-4, atol=1e-6) for x, y in zip(grads_a, grads_b, strict=True))


def test_global_batches_are_fixed_per_step():
    batches = GlobalBatches(100, 8, seed=3)
    assert batches.per_epoch == 12 and batches.position(13) == (1, 0)
    first = [batches.indices(s).tolist() for s in range(1, 13)]
    assert sorted(sum(first, [])) == sorted(set(sum(first, []))) and len(sum(first, [])) == 96
    assert first == [GlobalBatches(100, 8, seed=3).indices(s).tolist() for s in range(1, 13)]
