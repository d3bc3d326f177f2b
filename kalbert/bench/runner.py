"""Score one encoder on benchmark tasks: every distinct sentence of a task is encoded once, then
pairs (or premise/choice) are compared by cosine.

All data is loaded before any encoding, so a missing data set fails in seconds, not after an hour.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from kalbert.bench.encoders import Encoder
from kalbert.bench.metrics import best_threshold_accuracy, choice_accuracy, paired_cosine, pearson, spearman
from kalbert.bench.results import ResultsFile, library_versions
from kalbert.bench.tasks import MC, PAIRS, STS, BenchTask
from kalbert.data import load_mc, load_pairs, load_sts
from kalbert.sentence import Backend
from kalbert.sentence.collapse import cosines_collapsed

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class BenchRunConfig:
    """One `kalbert bench run`: a model (or baseline), the tasks, the results file."""

    model: str
    """a sentence-model folder, or a baseline: 'tfidf', 'minilm' (all-MiniLM-L6-v2), or a teacher:
    'multilingual-e5-small', 'use-multilingual'"""
    tasks: str = "all"
    """comma-separated task names or groups (all, sts, pairs, mc, ko, zh)"""
    out: str
    """results JSON file to write"""
    name: str | None = None
    """model name in reports (default: the folder name)"""
    batch_size: int = 32
    """sentences per encoding batch"""
    backend: Backend = "torch"
    """run a sentence model in PyTorch or from its ONNX files (kalbert sbert export --backend onnx)"""


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


def load_task(task: BenchTask) -> TaskData:
    """Read the task's split through the data registry (its errors name the missing files)."""
    if task.kind == STS:
        rows = load_sts(task.dataset, task.split)
        sentences, left, right = _index([(r.sentence1, r.sentence2) for r in rows])
        return TaskData(sentences, left, right, np.array([r.score for r in rows]))
    if task.kind == PAIRS:
        rows = load_pairs(task.dataset, task.split)
        sentences, left, right = _index([(r.sentence1, r.sentence2) for r in rows])
        return TaskData(sentences, left, right, np.array([r.label for r in rows]))
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


def evaluate(encoder: Encoder, task: BenchTask, data: TaskData) -> list[dict[str, Any]]:
    """One result record per metric of ``task``."""
    start = time.perf_counter()
    vectors = encoder.encode(data.sentences, task.lang)
    similarity = paired_cosine(vectors[data.left], vectors[data.right])
    scores = score_task(task, data, similarity)
    wall = time.perf_counter() - start
    n = len(data.gold)
    setting = "zero-shot cosine" if task.kind == MC else "cosine"
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


def run_bench(encoder: Encoder, tasks: list[BenchTask], command: str, started: float | None = None) -> ResultsFile:
    """Evaluate ``encoder`` on ``tasks``.

    ``started`` (a ``time.perf_counter()`` value) lets the recorded wall time include model loading.
    """
    started = time.perf_counter() if started is None else started
    data = {task.name: load_task(task) for task in tasks}
    records: list[dict[str, Any]] = []
    progress = tqdm(tasks, desc=f"bench {encoder.name}", unit="task")
    for task in progress:
        progress.set_postfix_str(task.name)
        records += evaluate(encoder, task, data[task.name])
    return ResultsFile(
        model=encoder.name,
        model_kind=encoder.kind,
        command=command,
        results=records,
        model_path=encoder.path,
        settings=encoder.settings(),
        wall_seconds=time.perf_counter() - started,
        versions=library_versions(),
    )
