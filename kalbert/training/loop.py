"""The one fine-tuning loop: `sbert train`, `sbert distill`, `teacher finetune`, `static train`, `mc train` and
`qa train` all run it, with the settings of their nested :class:`~kalbert.training.config.LoopConfig`.

A stage supplies what differs between them: the batches of an epoch, a step (batch -> loss), an
evaluation (-> score to maximise, metrics) and, for sentence models, a collapse guard. The loop owns the
rest: device, precision, AdamW with linear warmup/decay, gradient clipping, the evaluation schedule, the
best evaluated weights, the progress bar, and checkpoints in a :class:`~kalbert.training.resume.RunFolder`
that a rerun resumes from with the numbers an uninterrupted run gives (each epoch's batch order comes from
the seed and the epoch alone, and every RNG state is restored). HF's Trainer and sentence-transformers'
trainer are not used: both need the ``datasets`` library, which kalbert does not depend on.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import torch
from tqdm.auto import tqdm

from kalbert.errors import KalbertError
from kalbert.precision import autocast, resolve_precision
from kalbert.training.best import BestCheckpoint
from kalbert.training.config import LoopConfig
from kalbert.training.device import default_device
from kalbert.training.optim import adamw, linear_warmup
from kalbert.training.resume import RunFolder
from kalbert.training.rng import rng_state, set_rng_state

log = logging.getLogger(__name__)
Batch = TypeVar("Batch")
RECENT_LOSSES = 20
"""steps whose mean loss the progress bar shows"""


class HealthReport(Protocol):
    """What a guard returns (:class:`kalbert.sentence.collapse.CollapseReport`)."""

    collapsed: bool

    def describe(self) -> str: ...


@dataclass
class Evaluation:
    step: int
    epoch: int
    """epochs begun by then: an evaluation at the end of epoch k says k"""
    score: float
    metrics: dict[str, float]
    train_loss: float | None
    """mean training loss since the previous evaluation (None before the first step)"""
    collapse: HealthReport | None = None


@dataclass
class FitResult:
    """What happened: every evaluation, the best one (whose weights the model now holds), how it ran."""

    precision: str
    """"bf16" or "fp32", as training ran"""
    precision_reason: str
    device: str
    history: list[Evaluation] = field(default_factory=list)
    best: Evaluation | None = None
    steps: int = 0
    stopped_for_collapse: bool = False
    seconds: float = 0.0
    """training time, summed over the runs a resumed run took"""
    resumed_from: int | None = None
    """the step this process resumed at (None: it started afresh)"""
    earlier_seconds: float = 0.0
    """training time of the runs before this process resumed, for a stage's wall time across restarts"""

    @property
    def bf16(self) -> bool:
        return self.precision == "bf16"

    def autocast(self) -> contextlib.AbstractContextManager:
        """The training precision, for a stage's evaluations after training."""
        return autocast(self.device, self.bf16)

    def precision_record(self) -> dict[str, str]:
        """The precision and why, for the output's record."""
        return {"precision": self.precision, "precision_reason": self.precision_reason}

    def records(self) -> list[dict]:
        """The evaluations as plain dicts, for a sentence model's ``training_log.json``."""
        return [{"step": e.step, "score": e.score, "metrics": e.metrics,
                 **({"collapse": vars(e.collapse)} if e.collapse is not None else {})} for e in self.history]


def epoch_rng(seed: int, epoch: int) -> random.Random:
    """The shuffling RNG of one epoch: a resumed run rebuilds any epoch's batch order from it."""
    return random.Random(f"{seed}/{epoch}")


def shuffled_batches(n: int, batch_size: int, rng: random.Random) -> list[list[int]]:
    """Row indices 0..n-1 in ``rng``'s order, cut into batches."""
    order = list(range(n))
    rng.shuffle(order)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def _say(message: str) -> None:
    log.info("%s", message)
    tqdm.write(message)


def _check(loop: LoopConfig) -> None:
    if loop.epochs <= 0 or loop.max_grad_norm <= 0 or loop.checkpoint_steps < 1:
        raise KalbertError("epochs and max_grad_norm must be positive and checkpoint_steps at least 1")


def train_loop(model: torch.nn.Module, plan: Callable[[random.Random], Sequence[Batch]],
               step: Callable[[Batch], torch.Tensor], evaluate: Callable[[], tuple[float, dict[str, float]]] | None,
               loop: LoopConfig, run: RunFolder | None = None, guard: Callable[[], HealthReport] | None = None,
               advice: str = "", stop_on_collapse: bool = True, evaluate_first: bool = False,
               eval_autocast: bool = True) -> FitResult:
    """Train ``model``; evaluate on schedule; leave the best evaluated weights in it.

    ``plan(rng)`` gives one epoch's batches in ``rng``'s order (the same number every epoch); ``step``
    computes a batch's loss on the model's device. ``evaluate`` returns (score to maximise, metrics);
    without one every scheduled evaluation only records the training loss and the last weights are kept.
    ``evaluate_first`` also evaluates the starting weights (recorded, never kept as the best);
    ``eval_autocast`` evaluates in the training precision, False in fp32, as a saved encoder is used.
    ``guard`` checks the model after each evaluation: an unhealthy report is never kept as the best, is
    logged with ``advice``, and stops training when ``stop_on_collapse``. With ``run``, training
    checkpoints there every ``loop.checkpoint_steps`` steps and after each evaluation, and resumes from its state.
    """
    _check(loop)
    device = default_device()
    model.to(device)
    state = run.state if run else None
    use_bf16, reason = resolve_precision(loop.precision, device, state["precision"] if state else None)
    result = FitResult("bf16" if use_bf16 else "fp32", reason, str(device))
    _say(f"precision {result.precision}: {reason}; device {device}")
    torch.manual_seed(loop.seed)
    per_epoch = len(plan(epoch_rng(loop.seed, 0)))
    if not per_epoch:
        raise KalbertError("no training batches", "check the training data")
    total = max(1, math.ceil(loop.epochs * per_epoch))
    total = min(total, loop.max_steps) if loop.max_steps else total
    eval_every = loop.eval_steps or per_epoch
    optimizer = adamw(model.parameters(), loop.lr, loop.weight_decay)
    scheduler = linear_warmup(optimizer, loop.warmup_ratio, total)
    best = BestCheckpoint()
    losses: list[float] = []  # since the last evaluation
    done = 0
    if state is not None:
        if state["total"] != total:
            raise KalbertError(f"{run.path} was a {state['total']}-step run; the same settings now make {total} "
                               "steps (the training data changed)", f"delete {run.path} to start afresh")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        best.load_state_dict(state["best"])
        result.history, losses = state["history"], state["losses"]
        result.stopped_for_collapse, result.earlier_seconds = state["stopped_for_collapse"], state["seconds"]
        done = result.resumed_from = state["step"]
        set_rng_state(state["rng"])
        _say(f"resuming {run.path} at step {done} of {total}")
    started = time.perf_counter()

    def evaluation(at: int) -> bool:
        """Evaluate, keep the best healthy weights; False when training must stop for collapse."""
        model.eval()
        precision = autocast(device, use_bf16) if eval_autocast else contextlib.nullcontext()
        with torch.no_grad(), precision:
            score, metrics = evaluate() if evaluate else (float(at), {})  # no evaluation: the latest wins
            report = guard() if guard else None
        model.train()
        entry = Evaluation(at, math.ceil(at / per_epoch), score, metrics, sum(losses) / len(losses) if losses else None,
                           report)
        losses.clear()
        result.history.append(entry)
        said = [f"step {at}/{total}", f"epoch {entry.epoch}"]
        said += [f"train loss {entry.train_loss:.4f}"] if entry.train_loss is not None else []
        said += [f"score {score:.4f}"] if evaluate else []
        _say("; ".join(said + ([report.describe()] if report else [])))
        if report is not None and report.collapsed:
            log.warning("%s at step %d; %s", report.describe(), at, advice)
            tqdm.write(f"WARNING: {report.describe()} at step {at}. Try: {advice}")
            return not stop_on_collapse
        if at > 0:
            best.offer(score, at, model)
        return True

    def checkpoint() -> None:
        run.save({"step": done, "total": total, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "best": best.state_dict(), "history": result.history,
                  "losses": losses, "stopped_for_collapse": result.stopped_for_collapse, "rng": rng_state(),
                  "precision": result.precision, "seconds": result.earlier_seconds + time.perf_counter() - started})

    if evaluate_first and not result.history:
        evaluation(0)
    model.train()
    recent: deque[float] = deque(maxlen=RECENT_LOSSES)
    progress = tqdm(total=total, initial=done, desc="training", unit="step")
    while done < total and not result.stopped_for_collapse:
        epoch, offset = divmod(done, per_epoch)
        for batch in plan(epoch_rng(loop.seed, epoch))[offset:]:
            with autocast(device, use_bf16):
                loss = step(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), loop.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            done += 1
            losses.append(loss.item())
            recent.append(losses[-1])
            progress.update(1)
            progress.set_postfix(loss=f"{sum(recent) / len(recent):.4f}")
            evaluated = done % eval_every == 0 or done == total
            if evaluated and not evaluation(done):
                result.stopped_for_collapse = True
            if run and (evaluated or done % loop.checkpoint_steps == 0):
                checkpoint()
            if done >= total or result.stopped_for_collapse:
                break
    progress.close()
    if run and best.score is None:  # nothing kept (collapse): a rerun must start afresh, not resume this
        run.remove()
    best.restore(model)
    model.eval()
    result.best = next((e for e in result.history if e.step == best.at), None)
    result.steps, result.seconds = done, result.earlier_seconds + time.perf_counter() - started
    return result
