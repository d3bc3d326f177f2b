"""Dynamic masking, checked statistically on synthetic instances with known units."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from kalbert.errors import KalbertError
from kalbert.pretrain.instances import Instance
from kalbert.pretrain.masking import IGNORE, MASK_ID, MaskingConfig, collate, mask_instance
from kalbert.pretrain.tokens import MORPHEME_START, WORD_START

VOCAB = 1000


def _instance(rng: np.random.Generator, length: int = 120, unit_len: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] A [SEP] B [SEP] with ordinary ids; morphemes of ``unit_len`` tokens, words of two morphemes."""
    ids = rng.integers(5, VOCAB, length)
    flags = np.zeros(length, dtype=np.uint8)
    flags[::unit_len] |= MORPHEME_START
    flags[:: 2 * unit_len] |= WORD_START
    sep = length // 2
    ids[[0, sep, length - 1]] = [2, 3, 3]
    flags[[0, sep, length - 1]] = 3
    return ids, flags


def test_rate_replacement_split_and_specials():
    config = MaskingConfig(mask_unit="token", max_predictions=1000)
    rng = np.random.default_rng(0)
    chosen = masked = randomised = kept = ordinary = 0
    for _ in range(400):
        ids, flags = _instance(rng)
        out, labels = mask_instance(ids, flags, config, VOCAB, rng)
        picked = labels != IGNORE
        assert (labels[picked] == ids[picked]).all() and (out[~picked] == ids[~picked]).all()
        assert not picked[ids < 5].any()  # [CLS]/[SEP] never chosen
        ordinary += int((ids >= 5).sum())
        chosen += int(picked.sum())
        masked += int((out[picked] == MASK_ID).sum())
        kept += int((out[picked] == ids[picked]).sum())
        randomised += int(((out[picked] != MASK_ID) & (out[picked] != ids[picked])).sum())
        assert (out[picked & (out != MASK_ID)] >= 5).all()
    assert chosen / ordinary == pytest.approx(0.15, abs=0.005)
    assert masked / chosen == pytest.approx(0.8, abs=0.02)
    assert randomised / chosen == pytest.approx(0.1, abs=0.015)  # a random id can equal the original
    assert kept / chosen == pytest.approx(0.1, abs=0.015)


def test_span_lengths_follow_inverse_n():
    config = MaskingConfig(mask_unit="token", max_predictions=1000, mask_prob=0.05, mask_token_prob=1.0,
                           random_token_prob=0.0)
    rng = np.random.default_rng(1)
    lengths: Counter = Counter()
    for _ in range(600):
        ids, flags = _instance(rng, length=400)
        _, labels = mask_instance(ids, flags, config, VOCAB, rng)
        picked = np.flatnonzero(labels != IGNORE)
        # sparse masking: spans rarely touch, so runs of consecutive positions are spans
        runs = np.split(picked, np.flatnonzero(np.diff(picked) > 1) + 1)
        lengths.update(len(run) for run in runs if len(run))
    total = sum(lengths[n] for n in (1, 2, 3))
    expected = np.array([1, 1 / 2, 1 / 3]) / (1 + 1 / 2 + 1 / 3)
    observed = np.array([lengths[n] for n in (1, 2, 3)]) / total
    assert np.allclose(observed, expected, atol=0.04), observed
    assert sum(v for k, v in lengths.items() if k > 3) / total < 0.05  # only adjacent spans merge


@pytest.mark.parametrize(("unit", "bit", "size"), [("morpheme", MORPHEME_START, 3), ("word", WORD_START, 6)])
def test_whole_units_are_masked_together(unit, bit, size):
    config = MaskingConfig(mask_unit=unit, max_predictions=30)
    rng = np.random.default_rng(2)
    for _ in range(200):
        ids, flags = _instance(rng, length=122, unit_len=3)
        _, labels = mask_instance(ids, flags, config, VOCAB, rng)
        picked = labels != IGNORE
        assert picked.sum() <= 30
        starts = np.flatnonzero((flags & bit > 0) & (ids >= 5))
        for start in starts:
            end = min(start + size, np.flatnonzero(ids[start:] < 5)[0] + start)
            assert picked[start:end].all() or not picked[start:end].any()


def test_max_predictions_padding_and_determinism():
    config = MaskingConfig(max_predictions=5)
    rng = np.random.default_rng(3)
    examples = [Instance(*_instance(rng, length=n), length_a=n // 2 - 1, label=n % 2) for n in (40, 64, 20)]
    batch = collate(examples, [7, 8, 9], (42, 0, 0), config, VOCAB)
    again = collate(examples, [7, 8, 9], (42, 0, 0), config, VOCAB)
    other_epoch = collate(examples, [7, 8, 9], (42, 0, 1), config, VOCAB)
    assert batch["input_ids"].shape == (3, 64)
    assert ((batch["labels"] != IGNORE).sum(1) <= 5).all()
    assert (batch["labels"][2, 20:] == IGNORE).all() and (batch["input_ids"][2, 20:] == 0).all()
    assert batch["attention_mask"].sum(1).tolist() == [40, 64, 20]
    assert batch["token_type_ids"][0, :21].sum() == 0 and batch["token_type_ids"][0, 21:40].eq(1).all()
    assert batch["sop_labels"].tolist() == [0, 0, 0]
    assert all((batch[k] == again[k]).all() for k in batch)
    assert not (batch["labels"] == other_epoch["labels"]).all()


def test_bad_masking_config():
    with pytest.raises(KalbertError, match="unit"):
        MaskingConfig(mask_unit="sentence").validate()
