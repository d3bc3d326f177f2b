"""--shard I/N: shares are fixed by the work alone, cover it exactly once, and bad specs are one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kalbert.errors import KalbertError
from kalbert.shards import in_share, parse_shard


def test_parse_and_share():
    assert parse_shard(None) is None and parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(KalbertError, match="not I/N"):
            parse_shard(bad)
    shards = [parse_shard(f"{i}/3") for i in range(3)]
    assert all(sum(in_share(n, s) for s in shards) == 1 for n in range(20)) and in_share(7, None)


def test_teacher_encode_shards_split_the_sample(monkeypatch, tmp_path):
    from kalbert.teachers import corpus

    sentences = [f"문장 {i}" for i in range(40)]
    monkeypatch.setattr(corpus, "cached_sample", lambda *a, **k: SimpleNamespace(
        all=lambda: sentences, sentences={"ko": sentences}))
    filled = []
    cache = SimpleNamespace(folder=tmp_path / "fp", fill=filled.append)
    for i in range(3):
        assert corpus.corpus_sentences(["kowiki"], 40, 13, cache, parse_shard(f"{i}/3")) == {"ko": sentences}
    assert sorted(s for share in filled for s in share) == sorted(sentences) and all(filled)
