"""Search with a sentence model (a transformer, token-limited): build an index from a sentence file, find a
paraphrase, note truncated queries, and refuse empty corpora and corrupted index files with one clear line.
tests/search covers documents, engines and Milvus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.search import Index, SearchBuildConfig, build_index, search_index

CORPUS = [
    "한 남자가 기타를 치고 있다.",
    "여자가 양파를 썰고 있다.",
    "고양이가 소파 위에서 자고 있다.",
    "비행기가 이륙하고 있다.",
    "아이들이 공원에서 축구를 하고 있다.",
    "주식 시장이 오늘 크게 하락했다.",
    "남자가 피아노를 연주하고 있다.",
    "개가 해변을 달리고 있다.",
]


@pytest.fixture(scope="module")
def index(tiny_sbert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(CORPUS[:4]) + "\n\n" + "\n".join(CORPUS[4:]) + "\n", encoding="utf-8")
    return build_index(SearchBuildConfig(model=str(tiny_sbert), corpus=str(corpus), out=str(folder / "index"),
                                         chunk_size=3, batch_size=2))


def test_index_files_and_paraphrase_found(index):
    opened = Index(index)
    assert len(opened) == len(CORPUS) and opened.embeddings.dtype == np.float16
    assert [opened.hit(0, 0.0, i).passage for i in range(len(CORPUS))] == CORPUS
    result = opened.query(["그 남자가 기타를 치고 있다.", "비행기가 이륙한다."], k=3)  # a random model: near-copies
    assert result.hits[0][0].sentence == CORPUS[0]
    assert CORPUS[3] in [hit.sentence for hit in result.hits[1]]
    assert result.notes == [] and [h.rank for h in result.hits[0]] == [1, 2, 3]


def test_long_query_is_truncated_with_a_note(index, capsys):
    long_query = " ".join(CORPUS * 6)
    result = search_index(index, [long_query, CORPUS[1]], k=2)
    assert len(result.notes) == 1 and "query 1" in result.notes[0] and "truncated" in result.notes[0]
    assert main(["search", "query", "--index", str(index), long_query, "-k", "1", "--json"]) == 0
    captured = capsys.readouterr()
    assert "truncated" in captured.err and json.loads(captured.out)["hits"][0][0]["rank"] == 1


def test_cli_query_prints_ranked_hits(index, capsys):
    assert main(["search", "query", "--index", str(index), CORPUS[5], "-k", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == CORPUS[5] and out[1].split(None, 4)[2:] == ["corpus.txt:7", "[0:18]", CORPUS[5]]


def test_empty_corpus_is_refused(tiny_sbert, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(KalbertError, match="corpus file .*empty.txt holds no documents"):
        build_index(SearchBuildConfig(model=str(tiny_sbert), corpus=str(empty), out=str(tmp_path / "i")))
    assert not (tmp_path / "i").exists() and not (tmp_path / "i.work").exists()


def _copy(index, tmp_path):
    import shutil

    return shutil.copytree(index, tmp_path / "copy")


@pytest.mark.parametrize("damage", ["truncate-embeddings", "garbage-meta", "short-passages", "missing-meta"])
def test_corrupted_index_is_a_clear_error(index, tmp_path, damage, capsys):
    copy = _copy(index, tmp_path)
    if damage == "truncate-embeddings":
        data = (copy / "embeddings.npy").read_bytes()
        (copy / "embeddings.npy").write_bytes(data[: len(data) // 2])
    elif damage == "garbage-meta":
        (copy / "kalbert.json").write_bytes(b"\x00{not json")
    elif damage == "short-passages":
        (copy / "passages.txt").write_text("x\n", encoding="utf-8")
    else:
        (copy / "kalbert.json").unlink()
    with pytest.raises(KalbertError, match="corrupted|not a search index"):
        Index(copy)
    assert main(["search", "query", "--index", str(copy), "hello"]) == 2
    assert "kalbert: error:" in capsys.readouterr().err
