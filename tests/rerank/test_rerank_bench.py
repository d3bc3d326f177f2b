"""Reranking a first stage's ranking: the top K reordered, the rest kept, nothing injected; the QA model's best span
as a zero-shot scorer."""

from __future__ import annotations

import numpy as np
import pytest

from kalbert.bench.retrieval import rerank_setting
from kalbert.errors import KalbertError
from kalbert.rerank.candidates import SharedScores, check_depth, rerank


class LengthScorer:
    """Scores a passage by its length: a reranker whose order is known."""

    name = "length"

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        return np.array([len(p) for p in passages], dtype=np.float32)


CORPUS = ["a", "bbbb", "cc", "ddd", "eeeee"]


def test_the_top_k_is_reordered_and_the_rest_kept():
    ranking = np.array([[0, 2, 1, 3, 4], [4, 3, -1, -1, -1]])
    result = rerank(ranking, CORPUS, ["q1", "q2"], LengthScorer(), depth=3)
    assert result.ranking.tolist() == [[1, 2, 0, 3, 4], [4, 3, -1, -1, -1]]
    assert result.seconds.shape == (2,) and set(result.latency_ms()) == {"p50", "p95"}


def test_ties_keep_the_first_stage_order():
    result = rerank(np.array([[3, 1, 0]]), ["x", "yy", "zz", "ww"], ["q"], LengthScorer(), depth=3)
    assert result.ranking.tolist() == [[3, 1, 0]]


@pytest.mark.parametrize(("depth", "says"), [(0, "reranks nothing"), (6, "above the 5 passages of the corpus"),
                                             (4, "above the 3 first-stage candidates")])
def test_a_depth_of_nothing_or_beyond_the_candidates_is_one_line(depth, says):
    with pytest.raises(KalbertError, match=says):
        rerank(np.array([[0, 1, 2]]), CORPUS, ["q"], LengthScorer(), depth)


class CountingScorer(LengthScorer):
    def __init__(self) -> None:
        self.pairs = 0

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        self.pairs += len(passages)
        return super().score(query, passages)


def test_shared_scores_score_each_pair_once_across_first_stages_and_say_when_they_reused_one():
    inner = CountingScorer()
    shared = SharedScores(inner)
    first = rerank(np.array([[0, 2, 1]]), CORPUS, ["q"], shared, depth=3)
    assert (inner.pairs, shared.hits) == (3, 0)
    second = rerank(np.array([[1, 3, 0]]), CORPUS, ["q"], shared, depth=3)
    assert (inner.pairs, shared.hits) == (4, 2)
    assert first.ranking.tolist() == [[1, 2, 0]] and second.ranking.tolist() == [[1, 3, 0]]


def test_check_depth_names_what_it_counts():
    with pytest.raises(KalbertError, match="depth 30 is above the 20 passages of the index"):
        check_depth(30, 20, "passages of the index")
    assert rerank_setting("BM25", 20) == "BM25 + rerank@20"


def test_the_qa_model_scores_passages_by_its_best_span(tiny_qa_albert):
    from kalbert.rerank import QASpanScorer

    scorer = QASpanScorer(tiny_qa_albert, precision="fp32")
    scores = scorer.score("서울은 어느 나라의 도시인가?", ["서울은 한국의 도시이다.", "부산에는 시장이 있다."])
    assert scores.shape == (2,) and ((scores > 0) & (scores <= 1)).all() and "best answer span" in scorer.name
    with pytest.raises(KalbertError, match="passage 2 of 2 is empty"):
        scorer.score("서울은?", ["서울", ""])


def test_reranked_records_are_retrieval_records_with_the_reranking_beside():
    from kalbert.bench.retrieval import Rerank, RetrievalData, reranked_records
    from kalbert.bench.tasks import TASKS

    task = TASKS["korquad-retrieval"]
    data = RetrievalData(CORPUS, ["korquad.json"], {task.split: ["q1", "q2"], task.select_split: []},
                         {task.split: np.array([1, 4]), task.select_split: np.array([], dtype=np.int64)})
    records = reranked_records(task, data, "BM25", np.array([[0, 2, 1, 3, 4], [4, 3, 2, 1, 0]]),
                               Rerank(LengthScorer(), 3))
    by_metric = {r["metric"]: r for r in records}
    assert {r["setting"] for r in records} == {"BM25 + rerank@3"} and by_metric["mrr_at_10"]["value"] == 100.0
    assert by_metric["ndcg_at_10"]["rerank"]["depth"] == 3 and not by_metric["ndcg_at_10"]["rerank"]["gold_injected"]
    assert "windows" not in by_metric["ndcg_at_10"]["rerank"]  # a scorer without windows reads passages whole
    reading = {"tokens": 128, "stride": 32, "per_passage": 1}
    records = reranked_records(task, data, "BM25", np.array([[0, 2, 1, 3, 4], [4, 3, 2, 1, 0]]),
                               Rerank(LengthScorer(), 3, windows=reading))
    assert all(record["rerank"]["windows"] == reading for record in records)


def test_bench_retrieval_adds_reranked_records_beside_the_first_stage():
    from kalbert.bench.baselines import load_encoder
    from kalbert.bench.retrieval import Rerank, RetrievalData, evaluate_retrieval
    from kalbert.bench.tasks import get_task

    corpus = ["서울은 한국의 수도이다", "부산은 항구 도시이다", "서울 서울 서울",
              "대구는 분지이다 그리고 덥다 아주 많이"]
    queries = {"dev": ["서울은 어디의 수도인가"], "test": ["서울은 어떤 곳인가"]}
    data = RetrievalData(corpus, ["synthetic"], queries, {"dev": [[0]], "test": [[3]]})
    task = get_task("answers-ko-retrieval")
    records = evaluate_retrieval(load_encoder("bm25"), task, data, rerank=Rerank(LengthScorer(), depth=4))
    settings = {r["setting"] for r in records}
    assert settings == {"BM25", "BM25 + rerank@4"}
    reranked = {r["metric"]: r["value"] for r in records if r["setting"] == "BM25 + rerank@4"}
    assert reranked["mrr_at_10"] == 100.0  # the longest passage, the relevant one, comes first
    rerank_info = next(r["rerank"] for r in records if r["setting"] == "BM25 + rerank@4")
    assert rerank_info["gold_injected"] is False and rerank_info["depth"] == 4
