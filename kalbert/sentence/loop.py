"""Sentence-transformers training on kalbert's fine-tuning loop (:func:`kalbert.training.train_loop`), with the
collapse guard.

sentence-transformers' own trainer needs the ``datasets`` library, which kalbert does not depend on;
its losses and evaluators are plain modules, so a step tokenises a batch with ``model.preprocess`` and
calls the loss. Several tasks (say graded STS pairs with CoSENT and NLI pairs with in-batch negatives)
are interleaved batch by batch. The losses used here compute from the model's embeddings and hold no
parameters of their own, so training and checkpointing the model covers everything that learns.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from kalbert.errors import KalbertError
from kalbert.sentence.collapse import ADVICE, CollapseReport, check_collapse
from kalbert.sentence.config import OnCollapse
from kalbert.training import FitResult, LoopConfig, RunFolder, train_loop

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


@dataclass
class TrainTask:
    """One training data set with its loss: text columns (equal length) and per-row labels."""

    name: str
    columns: list[list[str]]
    labels: np.ndarray
    loss: torch.nn.Module
    group_by_length: bool = False
    """Batch rows of similar length together (less padding; for large single-sentence tasks)."""
    prompt_names: tuple[str | None, ...] = ()
    """The model prompt each column is encoded with (e.g. ``("query", "document")`` for question -> passage
    rows), so training sees what ``encode_query`` / ``encode_document`` will; empty: the default prompt."""
    distinct_candidates: bool = False
    """For in-batch-negative losses: no text appears twice among a batch's candidates (every column after the
    first), so no row's own paragraph or partner is scored as another row's negative (a KorQuAD paragraph has
    about six questions; mined negatives are often other rows' positives)."""

    def __len__(self) -> int:
        return len(self.columns[0])


def _batches(tasks: list[TrainTask], batch_size: int, rng: random.Random) -> list[tuple[int, list[int]]]:
    """One epoch: (task index, row indices) batches, shuffled within and across tasks."""
    plan = []
    for t, task in enumerate(tasks):
        order = list(range(len(task)))
        rng.shuffle(order)
        if task.group_by_length:  # sort within windows of 64 batches: random batches, little padding
            window = 64 * batch_size
            texts = task.columns[0]
            order = [i for w in range(0, len(order), window)
                     for i in sorted(order[w:w + window], key=lambda row: len(texts[row]))]
        chunks = (_distinct_batches(order, task.columns[1:], batch_size) if task.distinct_candidates
                  else [order[i:i + batch_size] for i in range(0, len(order), batch_size)])
        plan += [(t, chunk) for chunk in chunks]
    rng.shuffle(plan)
    return plan


def _distinct_batches(order: list[int], candidates: list[list[str]], batch_size: int) -> list[list[int]]:
    """``order`` cut into batches in which no candidate text repeats. A row that would repeat one waits, first in
    line, for the next batch, so batches keep ``order`` where nothing collides (then they are plain chunks) and
    the last ones may be smaller."""
    pending, batches = deque(order), []
    while pending:
        batch: list[int] = []
        seen: set[str] = set()
        waiting: list[int] = []
        while pending and len(batch) < batch_size:
            row = pending.popleft()
            texts = {column[row] for column in candidates}
            if seen.isdisjoint(texts):
                batch.append(row)
                seen |= texts
            else:
                waiting.append(row)
        pending.extendleft(reversed(waiting))
        batches.append(batch)
    return batches


def _to_device(features: dict, device: torch.device) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}


def fit(model: SentenceTransformer, tasks: list[TrainTask], evaluate: Callable[[], tuple[float, dict[str, float]]],
        probe: list[str], loop: LoopConfig, run: RunFolder | None = None, on_collapse: OnCollapse = "stop"
        ) -> FitResult:
    """Train ``model`` on ``tasks``; evaluate on schedule; leave the best evaluated weights in ``model``.

    ``evaluate`` returns (score to maximise, all metrics). ``probe`` sentences feed the collapse guard, which
    stops training or only warns (``on_collapse``). ``run`` makes the training resumable (see
    :class:`kalbert.training.RunFolder`).
    """
    tasks = [t for t in tasks if len(t)]
    if not tasks:
        raise KalbertError("no training rows", "check the --train data sets")
    # encode() prepends the model's default prompt (e5's "query: "); training must see the same text
    default = model.prompts.get(model.default_prompt_name) if model.default_prompt_name else None

    def prompt(task: TrainTask, column: int) -> str | None:
        return model.prompts.get(task.prompt_names[column]) if task.prompt_names else default

    def step(batch: tuple[int, list[int]]) -> torch.Tensor:
        t, rows = batch
        task = tasks[t]
        features = [_to_device(model.preprocess([col[i] for i in rows], prompt=prompt(task, c)), model.device)
                    for c, col in enumerate(task.columns)]
        return task.loss(features, torch.as_tensor(task.labels[rows], dtype=torch.float32, device=model.device))

    def guard() -> CollapseReport:
        return check_collapse(model.encode(probe, convert_to_numpy=True, batch_size=loop.batch_size))

    return train_loop(model, lambda rng: _batches(tasks, loop.batch_size, rng), step, evaluate, loop, run=run,
                      guard=guard, advice=ADVICE, stop_on_collapse=on_collapse == "stop", evaluate_first=True,
                      eval_autocast=False)
