"""Documents added, replaced and deleted in an open index: searched at once, durable in the change log (a torn
last line is skipped, a damaged one refused), folded into a new generation by compaction; and the query options
around them (filters, min_score, one hit per document, BM25 without zero scores, reranking, refine)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalbert.artifact import read_meta
from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.ranking import rerank_fusion
from kalbert.search import SearchBuildConfig, build_index, open_index
from kalbert.search.changes import ChangeLog

DOCS = [
    {"id": "guitar", "text": "한 남자가 기타를 치고 있다. 그는 무대 위에 서 있다.", "genre": "music", "year": 2020},
    {"id": "onion", "text": "여자가 양파를 썰고 있다.", "genre": "cooking", "year": 2021},
    {"id": "cat", "text": "고양이가 소파 위에서 자고 있다.", "genre": "pets", "year": 2020},
    {"id": "market", "text": " ".join(f"주식 시장이 {day}일에 크게 하락했다." for day in range(1, 31)),
     "genre": "news", "year": 2022},
    {"id": "law", "text": "本法自公布之日起施行。", "genre": "law", "year": 2019},
]
DOG = {"id": "dog", "text": "강아지가 공원에서 빨간 공을 쫓아 달린다.", "genre": "pets", "year": 2023}


class OverlapReranker:
    """A test double of the reranker interface (kalbert.rerank): a passage scores the share of its characters
    that the query holds, a real function of the two texts."""

    name = "overlap"

    def __init__(self) -> None:
        self.calls = 0

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        self.calls += 1
        return np.array([len(set(query) & set(p)) / len(set(p)) for p in passages], dtype=np.float32)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs") / "docs.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(corpus, static_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("built") / "idx"
    return build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(out), model=str(static_model),
                                         passage_tokens=40, stride=8, lexical="bm25"))


@pytest.fixture
def index_folder(built, tmp_path):
    """A fresh copy of the built index for each test that writes."""
    import shutil

    return shutil.copytree(built, tmp_path / "idx")


def documents_found(index, query, **options):
    return [hit.document for hit in index.query(query, k=10, **options).hits[0]]


def test_added_documents_are_searched_at_once_and_survive_reopening(index_folder):
    index = open_index(index_folder)
    assert index.add([DOG]) == [{"id": "dog", "status": "added", "passages": 1}]
    for mode in ("dense", "bm25", "hybrid"):
        top = index.query("강아지가 공을 쫓는다", k=1, mode=mode).hits[0][0]
        assert top.document == "dog" and top.metadata == {"genre": "pets", "year": 2023}, mode
        assert top.passage == DOG["text"][top.start:top.end]
    reopened = open_index(index_folder)
    assert reopened.documents == len(DOCS) + 1 and reopened.query("강아지", k=1).hits[0][0].document == "dog"
    assert reopened.document("dog")["passages"][0]["passage"] == DOG["text"]
    assert reopened.document("cat")["metadata"] == {"genre": "pets", "year": 2020}
    assert reopened.document("nope") is None


def test_replace_and_delete_never_come_back(index_folder):
    index = open_index(index_folder)
    replaced = index.add([{"id": "cat", "text": "피아노를 치는 여자가 노래한다.", "genre": "music"}])
    assert replaced[0]["status"] == "replaced"
    for mode in ("dense", "bm25", "hybrid"):  # the old text is gone
        assert all("고양이" not in hit.passage for hit in index.query("고양이 소파", k=10, mode=mode).hits[0])
    assert index.query("피아노 노래", k=1).hits[0][0].document == "cat"
    index.delete(["cat", "market"])
    for opened in (index, open_index(index_folder)):
        for mode in ("dense", "bm25", "hybrid"):
            found = documents_found(opened, "피아노 노래 시장 하락", mode=mode)
            assert "cat" not in found and "market" not in found, (mode, found)
        assert opened.documents == len(DOCS) - 2 and opened.document("market") is None
    with pytest.raises(KalbertError, match="no document 'market'.*nothing was deleted"):
        index.delete(["onion", "market"])
    assert index.document("onion") is not None  # the refused delete applied nothing


def test_another_process_writes_are_seen_and_bad_documents_write_nothing(index_folder):
    reader, writer = open_index(index_folder), open_index(index_folder)
    reader.query("기타", k=1)
    writer.add([DOG])
    assert reader.query("강아지", k=1, mode="bm25").hits[0][0].document == "dog"
    size = ChangeLog(index_folder / "changes.log").size()
    for bad, message in [([], "no documents"), ([{"id": "x"}], "no 'text' string"), ([{"text": "a"}], "no 'id'"),
                         ([{"id": "x", "text": " "}], "text is empty"),
                         ([DOG, DOG], "given twice"), ([{"id": "ok", "text": "좋다"}, {"id": "b", "text": ""}],
                                                        "document 2 \\(b\\): the text is empty")]:
        with pytest.raises(KalbertError, match=message):
            writer.add(bad)
    assert ChangeLog(index_folder / "changes.log").size() == size and writer.document("ok") is None


def test_a_torn_last_line_is_skipped_and_a_damaged_one_refused(index_folder):
    index = open_index(index_folder)
    index.add([DOG])
    log = index_folder / "changes.log"
    whole = log.read_bytes()
    log.write_bytes(whole + b"0badc0de {\"op\": \"add\", \"documents\": [")  # killed mid-write: never acknowledged
    reopened = open_index(index_folder)
    assert reopened.document("dog") is not None
    reopened.delete(["guitar"])  # the next writer cuts the torn line off
    assert open_index(index_folder).document("guitar") is None and open_index(index_folder).document("dog")
    log.write_bytes(b"00000000 {}\n" + log.read_bytes())
    with pytest.raises(KalbertError, match="change log .* is damaged"):
        open_index(index_folder)


def test_compaction_folds_changes_into_a_new_generation(index_folder):
    index = open_index(index_folder)
    assert not index.compact()["compacted"] and "base" not in read_meta(index_folder)  # nothing to fold
    index.add([DOG])
    index.delete(["onion"])
    before = {q: documents_found(index, q, mode="dense") for q in ("강아지가 공을 쫓는다", "양파", "주식 시장")}
    stats = index.compact()
    assert stats["generation"] == 1 and stats["added_documents"] == 1 and stats["deleted_passages"] == 1
    record = read_meta(index_folder)
    assert record["base"] == "gen-000001" and record["passages"] == len(index) and index.changes == 0
    for opened in (index, open_index(index_folder)):
        assert {q: documents_found(opened, q, mode="dense") for q in before} == before
        assert opened.query("강아지 공", k=1, mode="bm25").hits[0][0].document == "dog"
    index.add([{"id": "late", "text": "늦게 온 문서"}])
    index.compact()
    names = {path.name for path in index_folder.iterdir()}
    assert "gen-000002" in names and "gen-000001" in names and "passages.txt" not in names  # one old generation kept
    assert open_index(index_folder).document("late") is not None


def test_filters_thresholds_and_one_hit_per_document(index_folder):
    index = open_index(index_folder)
    index.add([DOG])
    assert set(documents_found(index, "동물", filter={"genre": "pets"})) == {"cat", "dog"}
    assert set(documents_found(index, "동물", mode="dense", filter={"year": {"in": [2019, 2023]}})) == {"law", "dog"}
    assert documents_found(index, "동물", filter={"genre": "pets", "year": 2020}) == ["cat"]
    with pytest.raises(KalbertError, match="unknown field 'genr'.*fields the documents have: genre, year"):
        index.query("x", filter={"genr": "pets"})
    with pytest.raises(KalbertError, match='must be \\{"in": \\[values\\]\\}'):
        index.query("x", filter={"genre": {"eq": "pets"}})
    passages = index.query("주식 시장 하락", k=10, mode="bm25").hits[0]
    assert len([h for h in passages if h.document == "market"]) > 1
    one = index.query("주식 시장 하락", k=3, mode="dense", one_per_document=True).hits[0]
    assert len(one) == 3 and len({h.document for h in one}) == 3
    scores = [h.score for h in index.query("주식 시장 하락", k=10, mode="dense").hits[0]]
    kept = index.query("주식 시장 하락", k=10, mode="dense", min_score=scores[2]).hits[0]
    assert len(kept) >= 3 and all(h.score >= scores[2] for h in kept)


def test_bm25_never_pads_and_short_results_say_why(built):
    index = open_index(built)
    result = index.query("고양이 소파", k=10, mode="bm25")
    assert all(hit.score > 0 for hit in result.hits[0]) and len(result.hits[0]) < 10
    assert "share a term" in result.notes[0]
    many = index.query("고양이", k=500, mode="dense")
    assert len(many.hits[0]) == len(index) and f"the index holds {len(index)} passages" in many.notes[0]
    hybrid = index.query("고양이 소파", k=3).hits[0]
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)
    assert all(set(h.scores) == {"hybrid", "cosine", "bm25"} and h.score == h.scores["hybrid"] for h in hybrid)


def test_reranking_reorders_the_retrieved_passages(built):
    index = open_index(built)
    reranker = OverlapReranker()
    result = index.query("양파를 썰고", k=3, mode="dense", rerank=reranker, rerank_depth=5)
    hits = result.hits[0]
    assert result.reranker == "overlap" and reranker.calls == 1
    assert hits[0].document == "onion" and list(hits[0].scores)[0] == "rerank" and "cosine" in hits[0].scores
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    with pytest.raises(KalbertError, match="reranker folder .* not found"):
        index.query("x", rerank="no/such/reranker")

    reranker.first_stage_weight = 0.6  # a reranker that keeps some of the first stage's order
    fused = index.query("양파를 썰고", k=3, mode="dense", rerank=reranker, rerank_depth=5).hits[0]
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
    assert all(list(h.scores)[:2] == ["rerank", "cross_encoder"] for h in fused)

    reranker.hybrid_score_weight = 1.0  # a hybrid's candidates fused with their hybrid scores, not their ranks
    hybrid = index.query("양파를 썰고", k=4, mode="hybrid", rerank=reranker, rerank_depth=4).hits[0]
    raw, first = (np.array([h.scores[name] for h in hybrid]) for name in ("cross_encoder", "hybrid"))
    assert np.allclose([h.score for h in hybrid], rerank_fusion(raw, 1.0, first), atol=1e-6)
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)


def test_cli_add_delete_query_file_and_compact(index_folder, tmp_path, capsys, monkeypatch):
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps(DOG, ensure_ascii=False) + "\n", encoding="utf-8")
    assert main(["search", "add", "--index", str(index_folder), str(new)]) == 0
    assert "1 documents added, 0 replaced" in capsys.readouterr().out
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "강아지가 공을 쫓는다", "id": "q1"}\n\n고양이 소파\n', encoding="utf-8")
    assert main(["search", "query", "--index", str(index_folder), "--queries", str(queries), "--jsonl", "-k", "2",
                 "--filter", "genre=pets", "--rerank-model", "none"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.get("id") for line in lines] == ["q1", None] and lines[0]["hits"][0]["document"] == "dog"
    assert {hit["metadata"]["genre"] for line in lines for hit in line["hits"]} == {"pets"}
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("주식 시장\n"))
    assert main(["search", "query", "--index", str(index_folder), "--queries", "-", "--jsonl", "--one-per-document",
                 "--mode", "bm25", "--filter", "year=2022"]) == 0
    captured = capsys.readouterr()
    assert [h["document"] for h in json.loads(captured.out)["hits"]] == ["market"]
    assert "1 hits of the 10" in captured.err
    assert main(["search", "delete", "--index", str(index_folder), "dog"]) == 0
    assert main(["search", "delete", "--index", str(index_folder), "dog"]) == 2
    assert "no document 'dog'" in capsys.readouterr().err
    assert main(["search", "compact", "--index", str(index_folder)]) == 0
    assert "generation 1" in capsys.readouterr().out
    for flags, message in [([], "no query given"), (["x", "--queries", str(queries)], "not both"),
                           (["x", "--filter", "genre"], "not FIELD=VALUE"), (["x", "--refine", "3"], "IVF-PQ"),
                           (["x", "--filter", "colour=red"], "unknown field 'colour'"),
                           (["x", "--rerank-model", str(tmp_path)], "not a folder kalbert recognises")]:
        assert main(["search", "query", "--index", str(index_folder), *flags]) == 2, flags
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_rerank_is_refine_now_with_a_deprecation_line(corpus, static_model, tmp_path, capsys):
    out = tmp_path / "hnsw"
    assert main(["search", "build", "--corpus", str(corpus), "--out", str(out), "--model", str(static_model),
                 "--engine", "hnsw", "--rerank", "4"]) == 0
    err = capsys.readouterr().err
    assert err.count("--rerank is deprecated, use --refine") == 1
    assert read_meta(out)["config"]["engine_settings"]["refine"] == 4
    with pytest.warns(DeprecationWarning, match="use refine"):
        from kalbert.search import EngineSettings

        assert EngineSettings(rerank=3).refine == 3
