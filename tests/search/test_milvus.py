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
