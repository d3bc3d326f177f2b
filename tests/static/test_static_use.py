"""A static-model folder works wherever a sentence model does (`kalbert search`, `kalbert bench run`), and its card
says what its record says."""

from __future__ import annotations

import json

from kalbert.bench.encoders import SentenceModelEncoder
from kalbert.search import SearchBuildConfig, build_index, search_index
from kalbert.static.card import render_card

SENTENCES = ["배우들의 연기가 좋았다", "영화가 너무 지루했다", "음악이 아름다웠다"]


def test_search_indexes_and_queries_with_a_static_model(static_init, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    index = build_index(SearchBuildConfig(corpus=str(corpus), out=str(tmp_path / "index"), model=str(static_init)))
    result = search_index(index, ["배우들의 연기가 좋았다 " * 300], k=2)  # long: a static model reads it whole
    assert result.hits[0][0].sentence == SENTENCES[0] and result.notes == []


def test_bench_encoder_takes_a_static_model(static_init):
    encoder = SentenceModelEncoder(static_init, progress=False)
    assert encoder.encode(SENTENCES, "ko").shape == (3, 16)
    settings = json.dumps(encoder.settings(), allow_nan=False)  # results files stay strict JSON
    assert '"max_seq_length": null' in settings


def test_card_keeps_the_normalizer_after_training(static_init):
    meta = json.loads((static_init / "kalbert.json").read_text(encoding="utf-8"))
    assert "normalizer version" not in render_card(meta)
    meta["normalizer"] = {"version": 2, "characters_mapped": 3081, "opencc_version": "1.4.2"}
    assert "normalizer version 2: Traditional Chinese read as Simplified (3,081 characters" in render_card(meta)
