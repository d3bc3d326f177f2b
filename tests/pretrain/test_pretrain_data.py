"""`kalbert data build`: SOP shards, unit flags, determinism, held-out split, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pretrain_helpers import SEQ_LEN

from kalbert.errors import KalbertError
from kalbert.pretrain import DataBuildConfig, PretrainingData, build_pretraining_data
from kalbert.pretrain.tokens import MORPHEME_START, WORD_START, encode_sentences
from kalbert.text import make_segmenter
from kalbert.vocab import load_processor


def test_data_folder_has_both_splits_stats_and_card(ko_data):
    meta = json.loads((ko_data / "kalbert.json").read_text(encoding="utf-8"))
    train, held = meta["stats"]["train"], meta["stats"]["heldout"]
    assert meta["splits"]["train"]["instances"] == train["instances"] > 500
    assert held["instances"] > 10 and held["documents"] < train["documents"] / 5
    assert train["single_sentence_documents"] > 100  # the reviews
    assert 0 < train["random_b_instances"] < train["instances"]
    assert meta["ids_dtype"] == "uint16" and meta["language"] == "ko"
    assert "single sentence" in (ko_data / "README.md").read_text(encoding="utf-8").replace("_", " ")
    data = PretrainingData.open(ko_data)
    instances = data.split("train")
    labels = []
    for i in range(0, len(instances), 7):
        example = instances[i]
        assert len(example.ids) <= SEQ_LEN and example.ids[0] == 2 and example.ids[-1] == 3
        assert example.ids[example.length_a + 1] == 3  # [SEP] after A
        assert (example.ids[1:-1] != 2).all() and (np.delete(example.ids, [0, example.length_a + 1, -1]) > 3).any()
        labels.append(example.label)
    assert 0.4 < np.mean(labels) < 0.75  # half swapped, plus random-B instances (label 1)


def test_build_is_deterministic_across_process_counts(tmp_path, ko_corpus, ko_vocab):
    outputs = []
    for processes in (1, 2):
        config = DataBuildConfig(vocab=str(ko_vocab), inputs=[str(ko_corpus)], out=str(tmp_path / f"p{processes}"),
                                 max_seq_length=48, max_documents=120, processes=processes, documents_per_task=20)
        outputs.append(build_pretraining_data(config))
    for name in sorted(p.name for p in outputs[0].glob("*.npy")):
        assert np.array_equal(np.load(outputs[0] / name), np.load(outputs[1] / name)), name


def test_flags_mark_words_and_morphemes(ko_vocab):
    processor = load_processor(ko_vocab)
    [(ids, flags)] = encode_sentences(["배우들의 연기도 좋았다"], processor, make_segmenter("ko"))
    pieces = [processor.id_to_piece(int(i)) for i in ids]
    for piece, flag in zip(pieces, flags, strict=True):
        assert bool(flag & WORD_START) == piece.startswith("▁")
        assert flag & MORPHEME_START or not piece.startswith("▁")
    morpheme_starts = "".join(p if f & MORPHEME_START else "" for p, f in zip(pieces, flags, strict=True))
    assert "들" in morpheme_starts or "의" in morpheme_starts  # particles open morphemes inside the word


def test_bad_inputs_are_one_line_errors(tmp_path, ko_vocab, ko_data):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(KalbertError, match="empty"):
        build_pretraining_data(DataBuildConfig(vocab=str(ko_vocab), inputs=[str(empty)], out=str(tmp_path / "o")))
    with pytest.raises(KalbertError, match="already exists"):
        build_pretraining_data(DataBuildConfig(vocab=str(ko_vocab), inputs=[str(empty)], out=str(ko_data)))
    with pytest.raises(KalbertError, match="not a pretraining data folder"):
        PretrainingData.open(tmp_path)
    other = tmp_path / "other-vocab"
    other.mkdir()
    (other / "spiece.model").write_bytes((ko_vocab / "spiece.model").read_bytes() + b"x")
    with pytest.raises(KalbertError, match="does not match"):
        PretrainingData.open(ko_data).check_vocab(other)


def test_split_mode_turns_one_sentence_chunks_into_order_questions():
    import random
    from collections import Counter

    from kalbert.pretrain.instances import CLS_ID, SEP_ID, document_instances

    def sentence(n: int, start: int) -> tuple[np.ndarray, np.ndarray]:
        flags = np.array([WORD_START if i % 2 == 0 else MORPHEME_START for i in range(n)], dtype=np.uint8)
        return np.arange(start, start + n, dtype=np.int32), flags

    documents = [[sentence(6, 100 + 10 * d)] for d in range(40)] + [[sentence(1, 999)]]
    stats: Counter = Counter()
    rng = random.Random(0)
    instances = [inst for i in range(len(documents))
                 for inst in document_instances(documents, i, 32, 0.0, rng, stats, single_sentence="split")]
    assert stats["random_b_instances"] == 0 and stats["unsplittable_sentences"] == 1
    assert stats["split_sentence_instances"] == len(instances) == 40
    for inst in instances:  # both halves come from the same sentence, cut at a word start
        a, b = inst.ids[1:1 + inst.length_a], inst.ids[2 + inst.length_a:-1]
        assert inst.ids[0] == CLS_ID and inst.ids[1 + inst.length_a] == SEP_ID
        first, second = (b, a) if inst.label else (a, b)
        assert np.array_equal(np.concatenate([first, second]), np.arange(first[0], first[0] + 6))
        assert (first[0] - 100) % 10 == 0 and (second[0] - first[0]) % 2 == 0
    assert 10 < sum(inst.label for inst in instances) < 30
