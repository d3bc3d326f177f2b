"""Score one encoder on benchmark tasks: every distinct sentence of a task is encoded once, then
pairs (or premise/choice) are compared by cosine; retrieval tasks rank passages (:mod:`kalbert.bench.retrieval`).

All data is loaded before any encoding, so a missing data set fails in seconds, not after an hour.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from kalbert.bench.encoders import Encoder
from kalbert.bench.finished import FinishedTasks
from kalbert.bench.metrics import best_threshold_accuracy, choice_accuracy, paired_cosine, pearson, spearman
from kalbert.bench.results import ResultsFile, library_versions
from kalbert.bench.retrieval import Rerank, RetrievalData, evaluate_retrieval, load_retrieval
from kalbert.bench.tasks import BITEXT, MC, PAIRS, RETRIEVAL, STS, BenchTask
from kalbert.data import load_mc, load_pairs, load_parallel, load_sts
from kalbert.hardware import hardware_block
from kalbert.precision import Precision
from kalbert.sentence import Backend
from kalbert.sentence.collapse import cosines_collapsed

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class BenchRunConfig:
    """One `kalbert bench run`: a model (or baseline), the tasks, the results file."""

    model: str
    """a sentence-model folder, or a baseline: 'tfidf', 'bm25' (retrieval only), 'minilm' (all-MiniLM-L6-v2), or a
    teacher: 'multilingual-e5-small', 'use-multilingual'"""
    tasks: str = "all"
    """comma-separated task names or groups (all, sts, pairs, mc, bitext, retrieval, ko, zh)"""
    out: str
    """results JSON file to write"""
    name: str | None = None
    """model name in reports (default: the folder name)"""
    batch_size: int = 32
    """sentences per encoding batch"""
    backend: Backend = "torch"
    """run a sentence model in PyTorch or from its ONNX files (kalbert sbert export --backend onnx)"""
    precision: Precision = "fp32"
    """fp32 (default: the same scores on every CPU), bf16 (autocast; faster where the CPU has native bf16) or
    auto (bf16 exactly where native); PyTorch models only, recorded in the results' settings"""
    cache_dir: str | None = None
    """where retrieval tasks cache query and passage vectors (default ~/.cache/kalbert/bench-embeddings), so a
    rerun encodes nothing again"""
    rerank_model: str | None = None
    """retrieval tasks: a reranker folder (kalbert rerank train) that also reorders each first stage's top
    ``rerank_depth`` (BM25, cosine, cosine + BM25 convex), recorded as "<first stage> + rerank@K"; or 'qa-span:FOLDER'
    for the zero-shot baseline, an extractive-QA model's best answer-span score"""
    rerank_depth: int = 20
    """candidates of each first stage the reranker reorders"""


@dataclass(frozen=True)
class TaskData:
    """A task's examples reduced to index pairs into its distinct sentences."""

    sentences: list[str]
    """each distinct sentence once, in first-seen order"""
    left: np.ndarray
    """index of the first sentence of each pair (the premise, for multiple choice)"""
    right: np.ndarray
    """index of the second sentence (a choice, for multiple choice)"""
    gold: np.ndarray
    """per pair: 0-5 score (sts), 0/1 label (pairs); per example: the right choice (mc)"""
    n_choices: int = 0
    """choices per example (mc only): pairs are grouped n_choices at a time"""


def _index(pairs: list[tuple[str, str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    ids: dict[str, int] = {}
    left = np.array([ids.setdefault(a, len(ids)) for a, _ in pairs], dtype=np.int64)
    right = np.array([ids.setdefault(b, len(ids)) for _, b in pairs], dtype=np.int64)
    return list(ids), left, right


def _translation_pairs(task: BenchTask) -> TaskData:
    """Rows whose source and target sentences are each unique, so every query has one right answer."""
    source, target = task.lang.split("-")
    parallel = load_parallel(task.dataset)
    columns = [parallel.languages.index(source), parallel.languages.index(target)]
    rows = [(row[columns[0]], row[columns[1]]) for row in parallel.rows]
    counts = [Counter(row[c] for row in rows) for c in (0, 1)]
    rows = [(a, b) for a, b in rows if counts[0][a] == 1 and counts[1][b] == 1 and a != b]
    n = len(rows)
    sentences = [a for a, _ in rows] + [b for _, b in rows]
    return TaskData(sentences, np.arange(n), np.arange(n, 2 * n), np.arange(n))


def retrieval_accuracy(source: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    """Top-1 accuracy x100 of finding row i of ``target`` for row i of ``source`` by cosine among all of
    ``target``, and the same the other way round."""
    from sentence_transformers.util import cos_sim

    similarity = cos_sim(source, target).numpy()
    gold = np.arange(len(source))
    return (100.0 * float(np.mean(similarity.argmax(axis=1) == gold)),
            100.0 * float(np.mean(similarity.argmax(axis=0) == gold)))


def load_task(task: BenchTask) -> TaskData | RetrievalData:
    """Read the task's split through the data registry (its errors name the missing files)."""
    if task.kind == RETRIEVAL:
        return load_retrieval(task)
    if task.kind == STS:
        rows = load_sts(task.dataset, task.split)
        sentences, left, right = _index([(r.sentence1, r.sentence2) for r in rows])
        return TaskData(sentences, left, right, np.array([r.score for r in rows]))
    if task.kind == PAIRS:
        rows = load_pairs(task.dataset, task.split)
        sentences, left, right = _index([(r.sentence1, r.sentence2) for r in rows])
        return TaskData(sentences, left, right, np.array([r.label for r in rows]))
    if task.kind == BITEXT:
        return _translation_pairs(task)
    examples = load_mc(task.dataset, task.split)
    n_choices = len(examples[0].choices)
    if any(len(e.choices) != n_choices for e in examples):
        raise ValueError(f"{task.name}: examples differ in their number of choices")
    sentences, left, right = _index([(e.context, c) for e in examples for c in e.choices])
    return TaskData(sentences, left, right, np.array([e.label for e in examples]), n_choices)


def score_task(task: BenchTask, data: TaskData, similarity: np.ndarray) -> dict[str, tuple[float | None, dict]]:
    """metric -> (value x100, extra fields) for one task, from the cosine of each pair."""
    if cosines_collapsed(similarity):
        log.warning(
            "%s: every similarity is about %.4f; the model has collapsed (constant embeddings)",
            task.name,
            float(similarity.mean()),
        )
    if task.kind == STS:
        return {
            "spearman": (spearman(similarity, data.gold), {}),
            "pearson": (pearson(similarity, data.gold), {}),
        }
    if task.kind == PAIRS:
        accuracy, threshold = best_threshold_accuracy(similarity, data.gold)
        return {
            "spearman": (spearman(similarity, data.gold), {}),
            "accuracy": (
                accuracy,
                {
                    "threshold": round(threshold, 6),
                    "criterion": "best threshold",
                    # what always answering the more frequent label scores: the floor for the accuracy
                    "majority_accuracy": round(100.0 * max(data.gold.mean(), 1 - data.gold.mean()), 4),
                },
            ),
        }
    by_example = similarity.reshape(-1, data.n_choices)
    return {"accuracy": (choice_accuracy(by_example, data.gold), {"criterion": "argmax cosine(premise, choice)"})}


def evaluate(encoder: Encoder, task: BenchTask, data: TaskData | RetrievalData,
             cache_dir: str | None = None, rerank: Rerank | None = None) -> list[dict[str, Any]]:
    """One result record per metric of ``task`` (per metric and setting for retrieval, reranked settings too when
    ``rerank`` is given)."""
    if isinstance(data, RetrievalData):
        return evaluate_retrieval(encoder, task, data, cache_dir, rerank=rerank)
    start = time.perf_counter()
    vectors = encoder.encode(data.sentences, task.lang)
    if task.kind == BITEXT:
        forward, backward = retrieval_accuracy(vectors[data.left], vectors[data.right])
        source, target = task.lang.split("-")
        scores = {"accuracy": ((forward + backward) / 2, {"criterion": "top-1 translation, mean of both directions",
                                                          f"{source}_to_{target}": round(forward, 4),
                                                          f"{target}_to_{source}": round(backward, 4)})}
    else:
        scores = score_task(task, data, paired_cosine(vectors[data.left], vectors[data.right]))
    wall = time.perf_counter() - start
    n = len(data.gold)
    setting = {MC: "zero-shot cosine", BITEXT: "cosine, nearest of all"}.get(task.kind, "cosine")
    return [
        {
            "task": task.name,
            "dataset": task.dataset,
            "split": task.split,
            "lang": task.lang,
            "group": task.group,
            "label": task.label,
            "setting": setting,
            "metric": metric,
            "value": None if value is None else round(value, 4),
            "n": n,
            "n_sentences": len(data.sentences),
            "wall_seconds": round(wall, 2),
            **extra,
        }
        for metric, (value, extra) in scores.items()
    ]


def run_bench(encoder: Encoder, tasks: list[BenchTask], command: str, started: float | None = None,
              cache_dir: str | None = None, rerank: Rerank | None = None,
              finished: FinishedTasks | None = None) -> ResultsFile:
    """Evaluate ``encoder`` on ``tasks``.

    ``started`` (a ``time.perf_counter()`` value) lets the recorded wall time include model loading;
    ``cache_dir`` holds retrieval's vectors (:func:`kalbert.teachers.encoders.role_cache_dir` when None);
    ``finished`` holds the tasks an earlier attempt at this run finished, which are not run again, and keeps
    each task this one finishes.
    """
    started = time.perf_counter() if started is None else started
    if not getattr(encoder, "cross_lingual", True):
        for task in (t for t in tasks if t.cross_lingual):
            log.info("%s: skipped, %s cannot compare sentences across languages", task.name, encoder.name)
        tasks = [task for task in tasks if not task.cross_lingual]
    kinds = getattr(encoder, "kinds", None)
    if kinds is not None:
        for task in (t for t in tasks if t.kind not in kinds):
            log.info("%s: skipped, %s runs only %s tasks", task.name, encoder.name, "/".join(kinds))
        tasks = [task for task in tasks if task.kind in kinds]
    data = {task.name: load_task(task) for task in tasks}
    records: list[dict[str, Any]] = []
    progress = tqdm(tasks, desc=f"bench {encoder.name}", unit="task")
    for task in progress:
        progress.set_postfix_str(task.name)
        if finished is not None and task.name in finished.records:
            records += finished.records[task.name]
            continue
        task_records = evaluate(encoder, task, data[task.name], cache_dir, rerank)
        records += task_records
        if finished is not None:
            finished.add(task.name, task_records, time.perf_counter() - started)
    return ResultsFile(
        model=encoder.name,
        model_kind=encoder.kind,
        command=command,
        results=records,
        model_path=encoder.path,
        settings=encoder.settings(),
        wall_seconds=(finished.seconds if finished is not None else 0.0) + time.perf_counter() - started,
        versions=library_versions(),
        hardware=hardware_block(),
    )
