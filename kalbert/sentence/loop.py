"""A small training loop for sentence-transformers losses, with evaluation, best-checkpoint keeping
and the collapse guard.

sentence-transformers' own trainer needs the ``datasets`` library, which kalbert does not depend on;
its losses and evaluators are plain modules, so this loop feeds them directly: tokenise a batch with
``model.preprocess``, call the loss, step AdamW with linear warmup/decay. Several tasks (say graded
STS pairs with CoSENT and NLI pairs with in-batch negatives) are interleaved batch by batch.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
from tqdm.auto import tqdm

from kalbert.config import DEFAULT_SEED
from kalbert.errors import KalbertError
from kalbert.sentence.collapse import ADVICE, CollapseReport, check_collapse
from kalbert.training import BestCheckpoint, adamw, linear_warmup

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)


@dataclass
class LoopConfig:
    """Optimisation and evaluation schedule shared by `sbert sts` and `sbert distill`."""

    epochs: float = 4.0
    """Passes over the training data (fractions allowed)."""
    batch_size: int = 32
    """Rows per batch (also the number of in-batch negatives for NLI-style pairs)."""
    lr: float = 5e-5
    """Peak AdamW learning rate."""
    warmup_ratio: float = 0.1
    """Fraction of steps with linear warmup; linear decay to 0 after it."""
    weight_decay: float = 0.01
    """AdamW weight decay (not applied to biases and LayerNorm weights)."""
    eval_steps: int = 0
    """Evaluate every this many steps; 0: at the end of every epoch."""
    max_steps: int | None = None
    """Stop after this many steps (a cap for quick runs and tests)."""
    seed: int = DEFAULT_SEED
    """Seed for shuffling and initialisation."""
    on_collapse: Literal["stop", "warn"] = "stop"
    """What to do when evaluation finds collapsed embeddings: stop training, or warn and go on."""


@dataclass
class TrainTask:
    """One training data set with its loss: text columns (equal length) and per-row labels."""

    name: str
    columns: list[list[str]]
    labels: np.ndarray
    loss: torch.nn.Module
    group_by_length: bool = False
    """Batch rows of similar length together (less padding; for large single-sentence tasks)."""

    def __len__(self) -> int:
        return len(self.columns[0])


@dataclass
class Evaluation:
    step: int
    score: float
    metrics: dict[str, float]
    collapse: CollapseReport


@dataclass
class FitResult:
    """What happened: every evaluation, the best one (whose weights the model now holds), whether it stopped."""

    history: list[Evaluation] = field(default_factory=list)
    best: Evaluation | None = None
    steps: int = 0
    stopped_for_collapse: bool = False
    seconds: float = 0.0

    def records(self) -> list[dict]:
        """The evaluations as plain dicts, for ``training_log.json``."""
        return [{"step": e.step, "score": e.score, "metrics": e.metrics, "collapse": asdict(e.collapse)}
                for e in self.history]


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
        plan += [(t, order[i:i + batch_size]) for i in range(0, len(order), batch_size)]
    rng.shuffle(plan)
    return plan


def _to_device(features: dict, device: torch.device) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}


def fit(model: SentenceTransformer, tasks: list[TrainTask], evaluate: Callable[[], tuple[float, dict[str, float]]],
        probe: list[str], config: LoopConfig) -> FitResult:
    """Train ``model`` on ``tasks``; evaluate on schedule; leave the best evaluated weights in ``model``.

    ``evaluate`` returns (score to maximise, all metrics). ``probe`` sentences feed the collapse guard.
    """
    tasks = [t for t in tasks if len(t)]
    if not tasks:
        raise KalbertError("no training rows", "check the --train data sets")
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    per_epoch = sum(math.ceil(len(t) / config.batch_size) for t in tasks)
    total = max(1, math.ceil(config.epochs * per_epoch))
    total = min(total, config.max_steps) if config.max_steps else total
    eval_every = config.eval_steps or per_epoch
    # the losses' own parameters (a projection, a temperature) train with the model
    parameters = {id(p): p for m in [model, *(t.loss for t in tasks)] for p in m.parameters()}.values()
    optimizer = adamw(parameters, config.lr, config.weight_decay)
    scheduler = linear_warmup(optimizer, config.warmup_ratio, total)
    result = FitResult()
    best = BestCheckpoint()
    started = time.perf_counter()

    def run_evaluation(step: int) -> bool:
        """Evaluate, keep the best healthy weights; False when training must stop for collapse."""
        model.eval()
        with torch.no_grad():
            score, metrics = evaluate()
            report = check_collapse(model.encode(probe, convert_to_numpy=True, batch_size=config.batch_size))
        evaluation = Evaluation(step, score, metrics, report)
        result.history.append(evaluation)
        log.info("step %d: score %.4f; %s", step, score, report.describe())
        tqdm.write(f"step {step}: score {score:.4f}; {report.describe()}")
        if report.collapsed:
            log.warning("%s at step %d; %s", report.describe(), step, ADVICE)
            tqdm.write(f"WARNING: {report.describe()} at step {step}. Try: {ADVICE}")
        elif step > 0 and best.offer(score, step, model):
            result.best = evaluation
        model.train()
        return not (report.collapsed and config.on_collapse == "stop")

    run_evaluation(0)
    model.train()
    step = 0
    progress = tqdm(total=total, desc="training", unit="step")
    while step < total and not result.stopped_for_collapse:
        for t, rows in _batches(tasks, config.batch_size, rng):
            task = tasks[t]
            features = [_to_device(model.preprocess([col[i] for i in rows]), model.device) for col in task.columns]
            labels = torch.as_tensor(task.labels[rows], dtype=torch.float32, device=model.device)
            loss = task.loss(features, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            progress.update(1)
            progress.set_postfix(loss=f"{loss.item():.4f}", task=task.name)
            if (step % eval_every == 0 or step == total) and not run_evaluation(step):
                result.stopped_for_collapse = True
            if step >= total or result.stopped_for_collapse:
                break
    progress.close()
    best.restore(model)
    model.eval()
    result.steps, result.seconds = step, time.perf_counter() - started
    return result
