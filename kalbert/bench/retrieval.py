"""Passage retrieval on the extractive QA sets (each test question must find its paragraph among every
paragraph of the data set's public files) and question -> answer retrieval on the answer sets (each test question
must find its own answers among its set's pool, :func:`kalbert.data.answer_pool`).

The queries are the questions of the kit's test articles (``korquad:test``, ``cmrc2018:test``,
``drcd:test``, the fixed article carve of :mod:`kalbert.data.registry`); the corpus is every paragraph of
every file the data set registers, each distinct paragraph once (KorQuAD: its dev file; CMRC 2018: dev and
trial; DRCD: dev and test), so a test question competes with the paragraphs of train and val articles too.
A QA question's one relevant item is its own paragraph; an answer-set question's are all its answers (community
questions often have several). Scores follow MTEB (:func:`ranking_metrics`).

Dense models rank by cosine with their query and document prompts (:mod:`kalbert.teachers.encoders`) and are
also fused with BM25 twice: by reciprocal rank fusion, and by the convex combination of both systems' per-query
min-max normalised scores (:mod:`kalbert.ranking`), each weight picked on the val articles' questions. DRCD is
in Traditional script: BM25 and TF-IDF read it converted to Simplified (OpenCC t2s), as the kit's QA verbs
give it to a Chinese model; a dense model reads it as published, as ``SentenceTransformer(path)`` gets a
user's text: reading Traditional characters is the model's own job (its vocabulary's normalizer, `kalbert
vocab normalize`). Every record names what was read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.bench.metrics import ranking_metrics
from kalbert.bench.tasks import BenchTask
from kalbert.data import answer_pool, data_path, get_spec, load_qa
from kalbert.data.formats import json_value
from kalbert.data.script import read_as, reads_simplified, to_simplified
from kalbert.errors import KalbertError
from kalbert.ranking import convex_fusion, convex_scores, reciprocal_rank_fusion, top_k
from kalbert.rerank.candidates import rerank
from kalbert.search.reranking import Reranker, fusion_record
from kalbert.teachers.encoders import RoleEncoder, dense_vectors
from kalbert.text.lexical import BM25Index
from kalbert.weights import weights_sha256

log = logging.getLogger(__name__)

DEPTH = 1000
"""items each system ranks per query (the whole corpus when smaller): what fusion draws from"""
TOP = 100
"""items scored per query: the deepest cut-off, recall@100"""
RRF_K = 60
FUSION_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
"""the model's weight in the fusion (BM25 gets 1 minus it), tried on the val questions"""
FUSED = "cosine + BM25 (RRF)"
"""the setting of records fused by reciprocal rank"""
FUSED_CONVEX = "cosine + BM25 (convex)"
"""the setting of records fused by the convex combination of normalised scores"""
LEXICAL_LANGUAGES = ["ko", "zh"]
"""what BM25 and TF-IDF read like: kalbert's Korean and Simplified Chinese (jieba's dictionary)"""
MAIN_SCORE = "ndcg_at_10"


@dataclass(frozen=True)
class RetrievalData:
    """A retrieval task's corpus and its questions by split, each question's paragraph as a corpus index."""

    corpus: list[str]
    """every distinct paragraph of the data set's files, in file order"""
    files: list[str]
    """the registry paths the corpus was read from"""
    queries: dict[str, list[str]]
    """split -> its questions (the reported split and the one picking the fusion weight)"""
    gold: dict[str, np.ndarray | list[list[int]]]
    """split -> the corpus index of each question's paragraph, or the indices of each question's answers"""

    def simplified(self) -> RetrievalData:
        """Every text converted to Simplified script (OpenCC t2s); the indices stay."""
        queries = {split: [to_simplified(q) for q in questions] for split, questions in self.queries.items()}
        return RetrievalData([to_simplified(text) for text in self.corpus], self.files, queries, self.gold)


def squad_paragraphs(path: Path) -> list[str]:
    """Every paragraph (``context``) of a SQuAD-format file, in file order."""
    data = json_value(path)
    try:
        return [paragraph["context"] for article in data["data"] for paragraph in article["paragraphs"]]
    except (KeyError, TypeError) as exc:
        raise KalbertError(f"{path} is not SQuAD-format JSON ({exc})",
                           "re-download it from the data set's URL") from None


def load_retrieval(task: BenchTask) -> RetrievalData:
    """The corpus of every file ``task.dataset`` registers and the questions of its reported and selecting splits;
    for a question -> answer set, its answer pool and the questions of both splits."""
    spec = get_spec(task.dataset)
    if spec.kind == "answers":
        pools = {split: answer_pool(task.dataset, split) for split in (task.select_split, task.split)}
        corpus = pools[task.split].answers
        return RetrievalData(corpus, list(dict.fromkeys(f for files in spec.splits.values() for f in files)),
                             {split: pool.questions for split, pool in pools.items()},
                             {split: pool.relevant for split, pool in pools.items()})
    files: dict[str, Path] = {}
    for split, rels in spec.splits.items():
        for rel, path in zip(rels, data_path(task.dataset, split), strict=True):
            files.setdefault(rel, path)
    corpus = list(dict.fromkeys(text for path in files.values() for text in squad_paragraphs(path)))
    place = {text: i for i, text in enumerate(corpus)}
    queries, gold = {}, {}
    for split in (task.select_split, task.split):
        examples = load_qa(task.dataset, split)
        queries[split] = [e.question for e in examples]
        gold[split] = np.array([place[e.context] for e in examples], dtype=np.int64)
    return RetrievalData(corpus, list(files), queries, gold)


def dense_ranking(queries: np.ndarray, passages: np.ndarray, depth: int) -> np.ndarray:
    """The ``depth`` passages of highest cosine per query (unit vectors), a block of queries at a time."""
    blocks = [top_k(queries[i: i + 256] @ passages.T, depth)[0] for i in range(0, len(queries), 256)]
    return np.concatenate(blocks) if blocks else np.zeros((0, min(depth, len(passages))), dtype=np.int64)


def rrf(model: np.ndarray, bm25: np.ndarray) -> Callable[[float], np.ndarray]:
    """Model weight -> the reciprocal rank fusion of these rankings."""
    return lambda weight: reciprocal_rank_fusion([model, bm25], [weight, 1.0 - weight], k=RRF_K, top=TOP)


def convex(model: np.ndarray, bm25: np.ndarray) -> Callable[[float], np.ndarray]:
    """Model weight -> the convex combination of these full score matrices (cosines, BM25 scores)."""
    return lambda weight: convex_fusion([model, bm25], [weight, 1.0 - weight], top=TOP)


def pick_fusion_weight(fuse: Callable[[float], np.ndarray], gold: np.ndarray) -> tuple[float, dict[str, float]]:
    """The model weight of :data:`FUSION_WEIGHTS` whose fusion (``fuse(weight)``: a ranking of these val
    questions) scores the best nDCG@10, ties to the weight nearest 0.5 (then the lower), and every weight's
    nDCG@10."""
    scores = {weight: ranking_metrics(fuse(weight), gold)[MAIN_SCORE] for weight in FUSION_WEIGHTS}
    best = max(FUSION_WEIGHTS, key=lambda w: (scores[w], -abs(w - 0.5), -w))
    return best, {f"{w:.1f}": round(score, 4) for w, score in scores.items()}


def _record(task: BenchTask, data: RetrievalData, setting: str, ranked: np.ndarray, wall: float,
            extra: dict[str, Any]) -> list[dict[str, Any]]:
    common = {"task": task.name, "dataset": task.dataset, "split": task.split, "lang": task.lang, "group": task.group,
              "label": task.label, "setting": setting, "n": len(data.queries[task.split]),
              "n_corpus": len(data.corpus), "corpus": data.files, "main_score": MAIN_SCORE,
              "wall_seconds": round(wall, 2), **extra}
    scores = ranking_metrics(ranked, data.gold[task.split])
    return [{**common, "metric": metric, "value": round(scores[metric], 4)} for metric in task.metrics]


@dataclass(frozen=True)
class Rerank:
    """A reranker and how deep it reorders each first stage's candidates."""

    scorer: Reranker
    depth: int = 20
    weights_sha256: dict[str, str] | None = None
    """the reranker folder's weights (:func:`kalbert.weights.weights_sha256`), which each reranked record names"""
    precision: str = "fp32"
    """what the reranker computes in (bf16 where the CPU has it natively: scores differ a little by CPU)"""
    windows: dict[str, int | None] | None = None
    """how a kalbert reranker reads a long passage (:attr:`kalbert.rerank.model.Reranker.windows`): the same
    weights read another way score otherwise, so each reranked record names it"""


def rerank_setting(first_stage: str, depth: int) -> str:
    """The record setting of a reranked first stage: "BM25 + rerank@20", "cosine + BM25 (convex) + rerank@20"."""
    return f"{first_stage} + rerank@{depth}"


def reranked_records(task: BenchTask, data: RetrievalData, first_stage: str, ranking: np.ndarray, reranking: Rerank,
                     extra: dict[str, Any] | None = None,
                     hybrid_scores: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Records of ``task``'s reported split with ``ranking`` (its first stage's, named ``first_stage``; a hybrid's
    comes with its ``hybrid_scores``, aligned with it) reranked at ``depth``
    (:func:`kalbert.rerank.candidates.rerank`: the top ``depth`` reordered, the rest kept, nothing added;
    published reranker figures such as KURE's put the gold passage into the candidates, these do not), with the
    reranking latency beside the scores. The reranker reads the texts as ``data`` holds them (DRCD as published)."""
    started = time.perf_counter()
    reranker, depth = reranking.scorer, reranking.depth
    hits_before = getattr(reranker, "hits", 0)
    result = rerank(ranking, data.corpus, data.queries[task.split], reranker, depth,
                    progress=f"{task.name}: {rerank_setting(first_stage, depth)}", hybrid_scores=hybrid_scores)
    how = {"reranker": reranker.name, "first_stage": first_stage, "depth": depth, "gold_injected": False,
           **fusion_record(reranker, hybrid_scores is not None),
           "precision": reranking.precision, "weights_sha256": reranking.weights_sha256,
           **({"windows": reranking.windows} if reranking.windows else {})}
    if getattr(reranker, "hits", 0) == hits_before:
        how["latency_ms_per_query"] = result.latency_ms()
    else:  # some pairs were scored for an earlier first stage: its timings would flatter
        how["pair_scores_shared"] = True
    return _record(task, data, rerank_setting(first_stage, depth), result.ranking, time.perf_counter() - started,
                   {**(extra or {}), "rerank": how})


QA_SPAN = "qa-span:"
"""prefix of ``--rerank-model`` naming an extractive-QA folder scored zero-shot (:class:`QASpanScorer`)"""


def load_rerank(model: str | None, depth: int) -> Rerank | None:
    """``--rerank-model`` / ``--rerank-depth`` as a :class:`Rerank` (None without a model): a reranker folder, or
    ``qa-span:FOLDER`` for an extractive-QA model's best answer-span score as relevance."""
    from kalbert.rerank.candidates import SharedScores, check_depth
    from kalbert.rerank.model import QASpanScorer, load_reranker

    if model is None:
        return None
    check_depth(depth, TOP, "candidates a first stage keeps")
    folder = model.removeprefix(QA_SPAN)
    scorer = QASpanScorer(folder) if model.startswith(QA_SPAN) else load_reranker(folder)
    precision = "bf16" if getattr(scorer, "bf16", False) else "fp32"
    return Rerank(SharedScores(scorer), depth, weights_sha256(folder), precision, getattr(scorer, "windows", None))


def evaluate_retrieval(encoder: Any, task: BenchTask, data: RetrievalData, cache_dir: str | None = None,
                       progress: bool = True, rerank: Rerank | None = None) -> list[dict[str, Any]]:
    """Records of ``encoder`` on a retrieval task: a lexical baseline's own ranking, or a dense model's cosine
    ranking and its fusion with BM25; with ``rerank``, each of those rankings reranked too (a dense model's run
    reranks BM25's own ranking as well: the three first stages of one reranker, from one set of pair scores)."""
    start = time.perf_counter()
    test, val = task.split, task.select_split
    depth = min(DEPTH, len(data.corpus))
    lexical = data.simplified() if reads_simplified(task.dataset, LEXICAL_LANGUAGES) else data
    lexical_read = read_as(task.dataset, lexical is not data)
    if hasattr(encoder, "search_index"):  # TF-IDF, BM25
        ranked = encoder.search_index(lexical.corpus).search(lexical.queries[test], TOP)[0]
        records = _record(task, data, encoder.retrieval_setting, ranked, time.perf_counter() - start,
                          {"read_as": lexical_read})
        if rerank:
            records += reranked_records(task, data, encoder.retrieval_setting, ranked, rerank,
                                       {"read_as": lexical_read})
        return records

    passage, query = RoleEncoder(encoder, "passage", task.lang), RoleEncoder(encoder, "query", task.lang)
    passages = dense_vectors(passage, data.corpus, cache_dir, progress)
    queries = {split: dense_vectors(query, data.queries[split], cache_dir, progress) for split in (val, test)}
    model = {split: dense_ranking(vectors, passages, depth) for split, vectors in queries.items()}
    dense_info = {"read_as": read_as(task.dataset, False),
                  "prompts": {"query": query.prompt, "passage": passage.prompt},
                  "max_seq_length": passage.max_seq_length,
                  "passages_over_max_seq_length": passage.over_limit(data.corpus)}
    dense_wall = time.perf_counter() - start

    bm25_index = BM25Index.build(lexical.corpus)
    bm25_scores = {split: bm25_index.score_rows(lexical.queries[split]) for split in (val, test)}
    bm25 = {split: top_k(bm25_scores[split], depth)[0] for split in (val, test)}
    fusions = {  # setting -> (how, split -> model weight -> fused ranking)
        FUSED: ({"method": "reciprocal rank fusion", "k": RRF_K, "depth": depth},
                {split: rrf(model[split], bm25[split]) for split in (val, test)}),
        FUSED_CONVEX: ({"method": "convex combination of per-query min-max normalised scores"},
                       {split: convex(queries[split] @ passages.T, bm25_scores[split]) for split in (val, test)}),
    }
    hybrid_scores = None
    records = _record(task, data, "cosine", model[test], dense_wall, dense_info)
    first_stages = {"cosine": (model[test], dense_info)}
    for setting, (how, fuse) in fusions.items():
        weight, tried = pick_fusion_weight(fuse[val], data.gold[val])
        fusion = {**how, "model_weight": weight, "bm25_weight": round(1.0 - weight, 1),
                  "picked_on": f"{task.dataset}:{val}", f"val_{MAIN_SCORE}": tried, "bm25_read_as": lexical_read}
        log.info("%s: %s weight %.1f for %s (picked on %s:%s)", task.name, how["method"], weight, encoder.name,
                 task.dataset, val)
        fused = fuse[test](weight)
        records += _record(task, data, setting, fused, time.perf_counter() - start, {**dense_info, "fusion": fusion})
        if setting == FUSED_CONVEX:
            first_stages[setting] = (fused, {**dense_info, "fusion": fusion})
            matrix = convex_scores([queries[test] @ passages.T, bm25_scores[test]], [weight, 1.0 - weight])
            hybrid_scores = np.take_along_axis(matrix, fused, axis=1)
    if rerank:  # the hybrid first (its latency is timed; the others reuse many of its pair scores), then BM25's
        first_stages["BM25"] = (bm25[test][:, :TOP], {"read_as": lexical_read})
        for setting in (FUSED_CONVEX, "BM25", "cosine"):
            ranking, extra = first_stages[setting]
            records += reranked_records(task, data, setting, ranking, rerank, extra,
                                        hybrid_scores if setting == FUSED_CONVEX else None)
    return records
