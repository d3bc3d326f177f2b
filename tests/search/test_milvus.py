"""The Milvus engine through embedded Milvus Lite (a file URI): the same verbs, hits read from Milvus."""

from __future__ import annotations

import json

import pytest

from kalbert.artifact import read_meta
from kalbert.cli.main import main
from kalbert.search import SearchBuildConfig, build_index, open_index

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

TEXTS = ["한 남자가 기타를 치고 있다.", "여자가 양파를 썰고 있다.", "고양이가 소파 위에서 자고 있다.",
         "本法自公布之日起施行。"]
DOCS = [{"id": f"d{i}", "text": text, "n": i} for i, text in enumerate(TEXTS)]


def test_milvus_lite_build_and_query_match_exact(static_model, tmp_path, capsys):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    uri = str(tmp_path / "milvus" / "kalbert.db")
    milvus = build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(tmp_path / "m"), model=str(static_model),
                                           engine="milvus", uri=uri))
    exact = build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(tmp_path / "e"), model=str(static_model)))
    assert read_meta(milvus)["engine_params"]["collection"] == "kalbert_m"
    queries = ["남자가 기타를 친다", "고양이가 잔다"]
    found = open_index(milvus).query(queries, k=3)
    expected = open_index(exact).query(queries, k=3)
    assert [[h.document for h in hits] for hits in found.hits] == [[h.document for h in hits] for hits in expected.hits]
    top = found.hits[1][0]
    assert top.document == "d2" and top.metadata == {"n": 2} and top.passage == DOCS[2]["text"] and top.end == 18
    assert abs(top.score - expected.hits[1][0].score) < 1e-3
    assert main(["search", "build", "--corpus", str(corpus), "--out", str(tmp_path / "m2"), "--model",
                 str(static_model), "--engine", "milvus", "--uri", uri, "--overwrite"]) == 0
    capsys.readouterr()
    assert main(["search", "build", "--corpus", str(corpus), "--out", str(tmp_path / "x" / "m"), "--model",
                 str(static_model), "--engine", "milvus", "--uri", uri]) == 2
    assert "already holds a collection kalbert_m" in capsys.readouterr().err


def test_milvus_documents_are_added_and_deleted_in_the_collection(static_model, tmp_path):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    folder = build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(tmp_path / "m"), model=str(static_model),
                                           engine="milvus", uri=str(tmp_path / "milvus.db"), lexical="bm25"))
    index = open_index(folder)
    dog = {"id": "dog", "text": "강아지가 공원에서 빨간 공을 쫓아 달린다.", "n": 9}
    assert index.add([dog]) == [{"id": "dog", "status": "added", "passages": 1}]
    assert index.add([{**dog, "n": 10}])[0]["status"] == "replaced"
    top = open_index(folder).query("강아지가 공을 쫓는다", k=2, mode="dense").hits[0]
    assert top[0].document == "dog" and top[0].metadata == {"n": 10} and top[1].document != "dog"  # once
    assert [h.document for h in index.query("동물", k=5, mode="dense", filter={"n": {"in": [2, 10]}}).hits[0]] in (
        ["dog", "d2"], ["d2", "dog"])
    index.delete(["d2", "dog"])
    for mode in ("dense", "bm25", "hybrid"):
        found = [h.document for h in index.query("고양이가 소파 위에서 자고 있다 강아지", k=5, mode=mode).hits[0]]
        assert "d2" not in found and "dog" not in found, (mode, found)
    assert index.document("d1")["passages"][0]["passage"] == TEXTS[1] and index.document("d2") is None
