"""Passage retrieval: MTEB's scores worked out by hand, exact rankings and fusion, BM25 over morphemes, the
corpus of every registered file, the fusion weight picked on val alone, and a model's prompts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kalbert.bench import load_encoder, run_bench, select_tasks
from kalbert.bench.metrics import ranking_metrics
from kalbert.bench.retrieval import (
    FUSED,
    FUSED_CONVEX,
    RetrievalData,
    convex,
    evaluate_retrieval,
    load_retrieval,
    pick_fusion_weight,
    rrf,
)
from kalbert.bench.tasks import get_task
from kalbert.ranking import convex_fusion, min_max_rows, reciprocal_rank_fusion, top_k
from kalbert.teachers.encoders import RoleEncoder
from kalbert.text.lexical import BM25Index, lexical_tokens


def test_ranking_metrics_by_hand():
    # gold at rank 1, at rank 3, at rank 12 (outside every cut-off but 100), and missing from the list
    ranked = np.array([[5] + list(range(6, 20)), [9, 8, 7] + list(range(10, 22)),
                       list(range(20, 31)) + [2, 40, 41, 42], list(range(50, 65))])
    scores = ranking_metrics(ranked, np.array([5, 7, 2, 3]))
    assert scores["ndcg_at_10"] == pytest.approx(100 * (1 + 1 / math.log2(4)) / 4)
    assert scores["mrr_at_10"] == pytest.approx(100 * (1 + 1 / 3) / 4)
    assert scores["recall_at_1"] == pytest.approx(25.0)
    assert scores["recall_at_10"] == pytest.approx(50.0)
    assert scores["recall_at_100"] == pytest.approx(75.0)


def test_top_k_breaks_ties_by_the_lower_index():
    scores = np.array([[0.5, 0.9, 0.5, 0.5, 0.1], [0.0, 0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    indices, values = top_k(scores, 3)
    assert indices.tolist() == [[1, 0, 2], [0, 1, 2]] and indices.dtype == np.int64
    assert np.allclose(values, [[0.9, 0.5, 0.5], [0.0, 0.0, 0.0]])
    assert top_k(scores, 9)[0].shape == (2, 5)


def test_reciprocal_rank_fusion_by_hand():
    a = np.array([[3, 1, 2]])
    b = np.array([[1, 4, -1]])  # -1 pads a short list
    # equal weights, k=60: item 1 gets 1/62 + 1/61, item 3 1/61, item 4 1/62, item 2 1/63
    assert reciprocal_rank_fusion([a, b], top=5).tolist() == [[1, 3, 4, 2, -1]]
    # a alone counts: b's items come after a's, ties (zero score) by the lower index
    assert reciprocal_rank_fusion([a, b], [1.0, 0.0], top=4).tolist() == [[3, 1, 2, 4]]
    # k=0, weight 2 on b: item 1 scores 1/2 + 2/1, item 3 1/1 ties item 4's 2/2 (the lower index first), item 2 1/3
    assert reciprocal_rank_fusion([a, b], [1.0, 2.0], k=0, top=4).tolist() == [[1, 3, 4, 2]]
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([a, b], [1.0])


def test_convex_fusion_by_hand():
    assert min_max_rows(np.array([[1.0, 3.0, 2.0], [5.0, 5.0, 5.0]])).tolist() == [[0.0, 1.0, 0.5], [0.0, 0.0, 0.0]]
    cosine = np.array([[0.9, 0.8, 0.1]])  # normalised: 1, 0.875, 0
    bm25 = np.array([[0.0, 10.0, 2.0]])  # normalised: 0, 1, 0.2
    # 0.5 each: item 1 0.9375, item 0 0.5, item 2 0.1. How far apart the scores are counts, not only their order:
    # at 0.8 on the cosine item 1 still leads (0.7 + 0.2 against 0.8), at 0.9 item 0 does (0.9 against 0.8875)
    assert convex_fusion([cosine, bm25], [0.5, 0.5], top=3).tolist() == [[1, 0, 2]]
    assert convex_fusion([cosine, bm25], [0.8, 0.2], top=2).tolist() == [[1, 0]]
    assert convex_fusion([cosine, bm25], [0.9, 0.1], top=2).tolist() == [[0, 1]]
    assert convex_fusion([cosine, bm25], [1.0, 0.0], top=3).tolist() == [[0, 1, 2]]
    assert convex_fusion([cosine, np.zeros((1, 3))], [0.0, 1.0], top=3).tolist() == [[0, 1, 2]]  # ties: lower first
    with pytest.raises(ValueError, match="weights"):
        convex_fusion([cosine, bm25], [1.0])
    with pytest.raises(ValueError, match="shape"):
        convex_fusion([cosine, bm25[:, :2]], [0.5, 0.5])


def test_lexical_tokens_are_morphemes_and_words_lowercased_without_punctuation():
    assert lexical_tokens("서울의 COVID-19 확진자는?") == ["서울", "의", "covid", "19", "확진", "자", "는"]
    assert lexical_tokens("北京是中国的首都。") == ["北京", "是", "中国", "的", "首都"]


def test_bm25_index_searches_saves_and_loads(tmp_path):
    texts = ["서울은 한국의 수도이다.", "北京是中国的首都。", "도쿄는 일본의 수도이다."]
    index = BM25Index.build(texts)
    indices, scores = index.search(["한국의 수도", "北京在哪里", "qwerty"], 5)
    assert indices.shape == (3, 3) and indices.dtype == np.int64 and scores.dtype == np.float32
    assert indices[0, 0] == 0 and indices[1, 0] == 1
    assert indices[2].tolist() == [0, 1, 2] and not scores[2].any()  # nothing shared: all 0, by index
    index.save(tmp_path / "bm25")
    again = BM25Index.load(tmp_path / "bm25").search(["한국의 수도", "北京在哪里", "qwerty"], 5)
    assert np.array_equal(again[0], indices) and np.allclose(again[1], scores)


def test_corpus_is_every_paragraph_of_every_registered_file(qa_root):
    titles = qa_root.titles
    data = load_retrieval(get_task("korquad-retrieval"))
    assert data.files == ["bench/ko/korquad/KorQuAD_v1.0_dev.json"]
    assert data.corpus[:3] == [qa_root.context(titles["order"][0]), qa_root.extra, qa_root.context(titles["test"][0])]
    assert len(data.corpus) == 11  # every train, val and test paragraph, and the one no question asks about
    assert len(data.queries["test"]) == len(titles["test"]) + 1 and qa_root.no_match in data.queries["test"]
    assert len(data.queries["val"]) == len(titles["val"])
    for split in ("val", "test"):
        for question, gold in zip(data.queries[split], data.gold[split], strict=True):
            if question != qa_root.no_match:
                assert data.corpus[gold].split()[2] == question.split()[0]  # w<i> asks about w<i>'s paragraph
    cmrc = load_retrieval(get_task("cmrc2018-retrieval"))  # dev + trial, the trial paragraph a repeat of dev's
    assert cmrc.files == ["bench/zh/cmrc2018/cmrc2018_dev.json", "bench/zh/cmrc2018/cmrc2018_trial.json"]
    assert cmrc.corpus == data.corpus


def test_bm25_scores_on_the_tiny_corpus_by_hand(qa_root, tmp_path):
    results = run_bench(load_encoder("bm25"), select_tasks("korquad-retrieval,korsts"), command="test")
    values = {r["metric"]: r["value"] for r in results.results}
    assert {r["task"] for r in results.results} == {"korquad-retrieval"}  # BM25 runs retrieval tasks only
    # every w<i> question finds its paragraph first; the no-match question's paragraph is 3rd (ties by index)
    n = len(qa_root.titles["test"]) + 1
    assert values["ndcg_at_10"] == pytest.approx(100 * (n - 1 + 0.5) / n, abs=1e-4)
    assert values["mrr_at_10"] == pytest.approx(100 * (n - 1 + 1 / 3) / n, abs=1e-4)
    assert values["recall_at_1"] == pytest.approx(100 * (n - 1) / n, abs=1e-4)
    assert values["recall_at_10"] == values["recall_at_100"] == 100.0
    record = results.results[0]
    assert (record["setting"], record["n"], record["n_corpus"], record["main_score"]) == ("BM25", n, 11, "ndcg_at_10")
    assert results.settings["k1"] == 1.5 and results.settings["python-mecab-ko"]


def test_drcd_is_read_in_simplified_by_lexical_baselines_and_as_published_by_models(qa_root, prompted_static):
    task = get_task("drcd-retrieval")
    data = load_retrieval(task)
    assert "說明" in data.corpus[0] and "说明" in data.simplified().corpus[0]
    (bm25,) = {r["read_as"] for r in evaluate_retrieval(load_encoder("bm25"), task, data)}
    assert bm25 == "drcd (Traditional -> Simplified, opencc t2s)"
    records = evaluate_retrieval(load_encoder(str(prompted_static)), task, data)
    assert {r["read_as"] for r in records} == {"drcd"}
    assert {r["fusion"]["bm25_read_as"] for r in records if r["setting"] != "cosine"} == {bm25}


def test_prompts_are_used_when_the_model_has_them(qa_root, prompted_static, tmp_path):
    encoder = load_encoder(str(prompted_static))
    query, passage = RoleEncoder(encoder, "query", "ko"), RoleEncoder(encoder, "passage", "ko")
    assert (query.prompt, passage.prompt) == ("qq ", "dd ")
    model = encoder.sentence_transformer
    plain = model.encode(["w3"], prompt="", normalize_embeddings=True)
    assert np.allclose(query.encode(["w3"]), model.encode(["qq w3"], prompt="", normalize_embeddings=True))
    assert np.allclose(passage.encode(["w3"]), model.encode(["dd w3"], prompt="", normalize_embeddings=True))
    assert not np.allclose(query.encode(["w3"]), plain)
    records = evaluate_retrieval(encoder, get_task("korquad-retrieval"), load_retrieval(get_task("korquad-retrieval")),
                                 cache_dir=str(tmp_path / "cache"))
    assert {json.dumps(r["prompts"]) for r in records} == {json.dumps({"query": "qq ", "passage": "dd "})}
    assert {r["setting"] for r in records} == {"cosine", FUSED, FUSED_CONVEX}
    assert {r["max_seq_length"] for r in records} == {None}  # a static model reads every token


class _LengthScorer:
    """Scores a passage by its length, and counts the pairs it read."""

    name, first_stage_weight, hybrid_score_weight = "length", 0.6, 1.0

    def __init__(self) -> None:
        self.pairs = 0

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        self.pairs += len(passages)
        return np.array([len(p) for p in passages], dtype=np.float32)


def test_a_dense_models_reranked_run_reranks_its_three_first_stages_from_one_set_of_pair_scores(
        qa_root, prompted_static, tmp_path):
    from kalbert.bench.retrieval import Rerank
    from kalbert.rerank.candidates import SharedScores

    task = get_task("korquad-retrieval")
    scorer = _LengthScorer()
    records = evaluate_retrieval(load_encoder(str(prompted_static)), task, load_retrieval(task),
                                 cache_dir=str(tmp_path / "cache"), rerank=Rerank(SharedScores(scorer), depth=3))
    reranked = {r["setting"]: r["rerank"] for r in records if "rerank" in r}
    assert set(reranked) == {f"{stage} + rerank@3" for stage in (FUSED_CONVEX, "BM25", "cosine")}
    assert "latency_ms_per_query" in reranked[f"{FUSED_CONVEX} + rerank@3"]  # reranked first: its timing is clean
    n = next(r["n"] for r in records)
    assert scorer.pairs < 3 * 3 * n  # a pair two first stages share is scored once
    assert all(how["first_stage"] in setting and how["precision"] == "fp32" for setting, how in reranked.items())
    assert {setting: how["fusion"] for setting, how in reranked.items()} == {  # the hybrid's by its scores
        f"{FUSED_CONVEX} + rerank@3": "score", "BM25 + rerank@3": "rank", "cosine + rerank@3": "rank"}


def test_a_teacher_baseline_uses_its_prompts_too(prompted_static):
    from kalbert.teachers.encoders import load_teacher_encoder

    encoder = load_teacher_encoder(str(prompted_static))
    query, passage = RoleEncoder(encoder, "query", "ko"), RoleEncoder(encoder, "passage", "ko")
    assert (query.prompt, passage.prompt) == ("qq ", "dd ")
    assert query.fingerprint != passage.fingerprint  # each role caches its own vectors


def test_vectors_are_cached_so_a_rerun_encodes_nothing(qa_root, prompted_static, tmp_path, monkeypatch):
    task = get_task("korquad-retrieval")
    data = load_retrieval(task)
    calls: list[int] = []
    original = RoleEncoder.encode
    monkeypatch.setattr(RoleEncoder, "encode", lambda self, texts: calls.append(len(texts)) or original(self, texts))
    first = evaluate_retrieval(load_encoder(str(prompted_static)), task, data, cache_dir=str(tmp_path / "c"))
    encoded = sum(calls)
    assert encoded == len(data.corpus) + len(data.queries["val"]) + len(set(data.queries["test"]))
    second = evaluate_retrieval(load_encoder(str(prompted_static)), task, data, cache_dir=str(tmp_path / "c"))
    assert sum(calls) == encoded
    assert [r["value"] for r in first] == [r["value"] for r in second]


def test_fusion_weight_follows_the_val_questions():
    gold = np.array([2, 2])  # the highest index: a tie goes against it
    right, wrong = np.array([[2, 0, 1], [2, 1, 0]]), np.array([[0, 1, 2], [1, 0, 2]])
    # the model right, BM25 wrong: at weight 0.6 item 0 still wins (0.6/62 + 0.4/61 > 0.6/61 + 0.4/63), at 0.7
    # the gold item does; every weight from 0.7 up scores 100 and the one nearest 0.5 is kept
    weight, tried = pick_fusion_weight(rrf(right, wrong), gold)
    assert weight == 0.7 and tried["0.6"] < tried["0.7"] == tried["1.0"] == 100.0
    assert pick_fusion_weight(rrf(wrong, right), gold)[0] == 0.3
    weight, tried = pick_fusion_weight(rrf(right, right), gold)
    assert weight == 0.5 and set(tried.values()) == {100.0}  # no difference: equal weights
    # scores: the model sure of the gold item (1 against 0 and 0), BM25 mildly against it (0.8 against 1 and 1):
    # normalised, gold gets w, the others 1 - w, so it ranks first from weight 0.6 (0.5 ties, the lower index wins)
    model_scores, bm25_scores = np.array([[0.0, 0.0, 1.0]] * 2), np.array([[1.0, 1.0, 0.8]] * 2)
    weight, tried = pick_fusion_weight(convex(model_scores, bm25_scores), gold)
    assert weight == 0.6 and tried["0.5"] < tried["0.6"] == tried["1.0"] == 100.0


def test_fusion_weight_is_never_picked_on_test(qa_root, prompted_static, tmp_path):
    task = get_task("korquad-retrieval")
    data = load_retrieval(task)

    def fusion(gold: dict[str, np.ndarray]) -> dict:
        changed = RetrievalData(data.corpus, data.files, data.queries, gold)
        records = evaluate_retrieval(load_encoder(str(prompted_static)), task, changed, cache_dir=str(tmp_path))
        return {r["setting"]: r["fusion"] for r in records if r["setting"] != "cosine"}

    base = fusion(data.gold)
    assert set(base) == {FUSED, FUSED_CONVEX}
    assert {how["picked_on"] for how in base.values()} == {"korquad:val"}
    shifted_test = fusion({**data.gold, "test": (data.gold["test"] + 1) % len(data.corpus)})
    assert shifted_test == base  # the test answers move nothing, in either fusion
    shifted_val = fusion({**data.gold, "val": (data.gold["val"] + 1) % len(data.corpus)})
    assert all(shifted_val[setting]["val_ndcg_at_10"] != base[setting]["val_ndcg_at_10"] for setting in base)
