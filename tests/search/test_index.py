"""Build and query: passages with document ids, offsets and metadata; engines; resume and shards; the
one-line refusals (wrong model kind, another query model, existing --out, bad data-set names)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalbert.artifact import read_meta
from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.search import EngineSettings, SearchBuildConfig, build_index, open_index, work_folder
from kalbert.search import build as build_module
from kalbert.search.engines import FaissSearcher, build_faiss

DOCS = [
    {"id": "guitar", "text": "한 남자가 기타를 치고 있다. 그는 무대 위에 서 있다.", "genre": "music"},
    {"id": "onion", "text": "여자가 양파를 썰고 있다.", "genre": "cooking"},
    {"id": "cat", "text": "고양이가 소파 위에서 자고 있다.", "genre": "pets"},
    {"id": "market", "text": " ".join(f"주식 시장이 {day}일에 크게 하락했다." for day in range(1, 31)),
     "genre": "news"},
    {"id": "copy", "text": "여자가 양파를 썰고 있다.", "genre": "cooking"},
    {"id": "law", "text": "本法自公布之日起施行。", "genre": "law"},
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index(corpus, static_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("index") / "idx"
    return build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(out), model=str(static_model),
                                         passage_tokens=40, stride=8, lexical="bm25"))


def test_hits_carry_document_passage_offsets_and_metadata(index):
    record = read_meta(index)
    assert record["kind"] == "search-index" and record["engine"] == "exact" and record["duplicates"] >= 1
    opened = open_index(index)
    assert record["passages"] == len(opened) > len(DOCS)  # the long document is split, the copy dropped
    result = opened.query(["남자가 기타를 친다", "여자가 양파를 썬다"], k=3, mode="dense")
    top = result.hits[0][0]
    assert top.document == "guitar" and top.metadata == {"genre": "music"} and top.rank == 1
    assert top.passage == DOCS[0]["text"][top.start:top.end]
    assert result.hits[1][0].document == "onion"  # the duplicate document is indexed once, under the first id
    assert all(-1.0 <= hit.score <= 1.0 for hits in result.hits for hit in hits)
    exact = opened.query(DOCS[2]["text"], k=1, mode="dense").hits[0][0]
    assert exact.document == "cat" and 0.999 <= exact.score <= 1.0  # clipped, never 1.004
    market = [opened.hit(0, 0.0, row) for row in range(len(opened)) if opened.hit(0, 0.0, row).document == "market"]
    assert len(market) > 1 and all(h.passage == DOCS[3]["text"][h.start:h.end] for h in market)


def test_bm25_and_hybrid(index):
    opened = open_index(index)
    lexical = opened.query("시장이 하락했다", k=2, mode="bm25")
    assert lexical.hits[0][0].document == "market" and lexical.mode == "bm25"
    hybrid = opened.query(["고양이 소파", "公布 施行"], k=2)
    assert hybrid.mode == "hybrid" and hybrid.hits[0][0].document == "cat" and hybrid.hits[1][0].document == "law"


def test_hybrid_weight_runs_from_bm25_order_to_cosine_order(index):
    opened = open_index(index)
    query = "시장이 하락했다"
    rows = {mode: [hit.row for hit in opened.query(query, k=3, mode=mode).hits[0]] for mode in ("dense", "bm25")}
    assert rows["dense"] != rows["bm25"]  # the two sides disagree, so the weight matters
    assert [hit.row for hit in opened.query(query, k=3, dense_weight=1.0).hits[0]] == rows["dense"]
    bm25_first = opened.query(query, k=3, dense_weight=0.0).hits[0]
    assert bm25_first[0].row == rows["bm25"][0] and -1.0 <= bm25_first[0].score <= 1.0  # hits carry the cosine
    with pytest.raises(KalbertError, match="dense-weight"):
        opened.query(query, dense_weight=1.5)


def test_cli_build_and_query(corpus, static_model, tmp_path, capsys):
    out = tmp_path / "cli-index"
    assert main(["search", "build", "--corpus", str(corpus), "--out", str(out), "--model", str(static_model),
                 "--engine", "hnsw"]) == 0
    assert "hnsw" in capsys.readouterr().out
    assert main(["search", "query", "--index", str(out), "고양이가 잔다", "-k", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["engine"] == "hnsw" and printed["hits"][0][0]["document"] == "cat"
    assert main(["search", "query", "--index", str(out), "x", "--mode", "bm25"]) == 2
    assert "no BM25 index" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["hnsw", "ivfpq"])
def test_approximate_engines_find_what_exact_finds(engine, tmp_path):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4000, 32)).astype(np.float32)
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float16)
    queries = vectors[:50].astype(np.float32) + rng.normal(scale=0.05, size=(50, 32)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = np.argsort(-(queries @ vectors.astype(np.float32).T), axis=1)[:, :10]
    params = build_faiss(engine, vectors, tmp_path / "e.faiss", EngineSettings())
    scores, rows = FaissSearcher(engine, tmp_path / "e.faiss", params, vectors).search(queries, 10)
    recall = np.mean([len(set(r) & set(t)) / 10 for r, t in zip(rows, truth, strict=True)])
    assert recall >= 0.9 and (np.diff(scores, axis=1) <= 1e-6).all()


def test_a_killed_build_resumes_and_shards_merge(corpus, static_model, tmp_path, monkeypatch):
    out = tmp_path / "resumed"
    config = SearchBuildConfig(corpus=[str(corpus)], out=str(out), model=str(static_model), passage_tokens=40,
                               stride=8, chunk_size=2)
    real = build_module.build_faiss

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "build_faiss", killed)
    with pytest.raises(KeyboardInterrupt):
        build_index(config)
    assert not out.exists() and len(list((work_folder(out) / "shards").glob("*.npy"))) > 1
    monkeypatch.setattr(build_module, "build_faiss", real)
    build_index(config)
    assert read_meta(out)["encoded_here"] == 0 and not work_folder(out).exists()

    sharded = tmp_path / "sharded"
    parts = [SearchBuildConfig(corpus=[str(corpus)], out=str(sharded), model=str(static_model), passage_tokens=40,
                               stride=8, chunk_size=2, shard=f"{i}/2") for i in range(2)]
    encoded = [build_index(part) for part in parts]
    assert encoded[0] == work_folder(sharded) and not sharded.exists()
    merged = build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(sharded), model=str(static_model),
                                           passage_tokens=40, stride=8, chunk_size=2))
    assert read_meta(merged)["encoded_here"] == 0
    a, b = open_index(out), open_index(merged)
    np.testing.assert_array_equal(a.embeddings, b.embeddings)


def test_another_plan_in_the_work_folder_is_refused(corpus, static_model, tmp_path):
    out = tmp_path / "plan"
    build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(out), model=str(static_model), shard="0/2"))
    with pytest.raises(KalbertError, match="other settings .*stride"):
        build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(out), model=str(static_model), stride=4))


def test_refusals_come_before_the_model_loads(corpus, static_model, qa_model, tmp_path, monkeypatch, capsys):
    def no_load(*args, **kwargs):
        raise AssertionError("the model loaded before the input was checked")

    monkeypatch.setattr(build_module, "load_sentence_model", no_load)
    existing = tmp_path / "exists"
    existing.mkdir()
    cases = [
        (["--corpus", str(corpus), "--out", str(existing)], "already exists"),
        (["--corpus", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o")], "file not found"),
        (["--corpus", "korsts2:test", "--out", str(tmp_path / "o")], "did you mean 'korsts'"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--model", str(qa_model)],
         "--model takes a sentence model or static model folder"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--engine", "milvus"], "needs --uri"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--engine", "milvus", "--uri",
          "http://127.0.0.1:9"], "does not answer"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--engine", "milvus", "--uri", "milvus"],
         "ending in .db"),
        (["--corpus", str(corpus), "--out", str(tmp_path / "o"), "--shard", "2/2"], "not I/N"),
    ]
    for flags, message in cases:
        assert main(["search", "build", "--model", str(static_model), *flags]) == 2, flags
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_another_query_model_is_one_line(index, sbert_model, capsys):
    assert main(["search", "query", "--index", str(index), "--model", str(sbert_model), "기타"]) == 2
    err = capsys.readouterr().err
    assert "another model" in err and err.count("\n") == 1 and "Traceback" not in err


def test_another_query_prompt_is_refused(index, static_model, monkeypatch):
    from kalbert.search import index as index_module

    opened = open_index(index)
    real = index_module.check_query_side

    def with_prompt(record, model):
        model.prompts = {**model.prompts, "query": "query: "}
        real(record, model)

    monkeypatch.setattr(index_module, "check_query_side", with_prompt)
    with pytest.raises(KalbertError, match="query prompt 'query: '"):
        opened.query("기타")
