"""`kalbert pretrain`: MLM + SOP pretraining from scratch or from an HF ALBERT folder, on one process or many.

A run folder holds ``kalbert.json`` (the config, checked again on ``--resume``), ``metrics.jsonl``,
TensorBoard events under ``tb/``, ``checkpoints/`` and finally the exported model under ``model/``.

Global batch ``s`` is a fixed set of instances (seeded epoch permutations, the last partial batch
dropped), each rank takes its contiguous share of it, and masks depend only on (seed, epoch,
instance). The data position is thus a function of the step, and the MLM loss, normalised by
the masked-token count of the whole global batch, does not depend on how many processes or
accumulation steps share it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AlbertForPreTraining

from kalbert import __version__
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, sha256_file
from kalbert.pretrain.card import invocation
from kalbert.pretrain.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint
from kalbert.pretrain.curves import METRICS, truncate_metrics
from kalbert.pretrain.data import PretrainingData, vocab_language
from kalbert.pretrain.distributed import DistEnv, setup_distributed, teardown_distributed
from kalbert.pretrain.export import export_model
from kalbert.pretrain.masking import IGNORE, MaskingConfig, collate
from kalbert.pretrain.objective import OBJECTIVES, PretrainingObjective
from kalbert.pretrain.optim import make_optimizer, warmup_polynomial
from kalbert.pretrain.presets import ModelConfig, albert_config, describe
from kalbert.pretrain.shards import InstanceSet
from kalbert.vocab import grow_embeddings
from kalbert.vocab.files import SPIECE

log = logging.getLogger(__name__)

RUN_KIND = "pretraining-run"
MODEL_SUBDIR = "model"
_TRAIN_STREAM, _EVAL_STREAM = 0, 1


@dataclass
class PretrainConfig:
    """One pretraining run; recorded in the run's kalbert.json and the exported model's."""

    data: str
    """data folder made by `kalbert data build`"""
    out: str
    """run folder (checkpoints, metrics, the exported model under model/)"""
    model: ModelConfig = field(default_factory=ModelConfig)
    """preset and shape overrides (ignored with init_from)"""
    masking: MaskingConfig = field(default_factory=MaskingConfig)
    """how MLM targets are chosen"""
    objective: str = "mlm+sop"
    """"mlm+sop" (ALBERT) or "mlm" (e.g. further-pretraining on text without document structure)"""
    init_from: str | None = None
    """HF ALBERT folder to continue from; a vocabulary extended with `kalbert vocab extend` grows it"""
    vocab: str | None = None
    """optional: refuse to start unless the data were built with this vocabulary"""
    steps: int = 10_000
    """optimiser steps"""
    batch_size: int = 128
    """global batch in instances per optimiser step (over all processes and accumulation steps)"""
    grad_accum: int = 1
    """micro-batches per optimiser step and process"""
    optimizer: str = "lamb"
    """"lamb" (ALBERT) or "adamw\""""
    lr: float = 1e-3
    """peak learning rate"""
    weight_decay: float = 0.01
    """decoupled weight decay (not on biases and LayerNorms)"""
    warmup_fraction: float = 0.025
    """share of the steps spent warming up linearly (ALBERT: 3,125 of 125,000)"""
    decay_power: float = 1.0
    """polynomial decay to zero after warmup (1: linear)"""
    max_grad_norm: float = 1.0
    """gradient clipping by global norm (0: off)"""
    bf16: bool = False
    """bf16 autocast for the forward pass (CPUs with AVX512-BF16/AMX, Ampere+ GPUs)"""
    eval_every: int = 500
    """held-out evaluation every N steps (and at the start and the end)"""
    eval_instances: int = 2000
    """held-out instances per evaluation (the same instances and masks every time)"""
    save_every: int = 1000
    """checkpoint every N steps (and at the end)"""
    keep_checkpoints: int = 3
    """checkpoints kept (older ones are deleted)"""
    log_every: int = 10
    """training metrics averaged and written every N steps"""
    seed: int = 42
    """seed of initialisation, batch order and masks"""
    threads: int = 0
    """torch CPU threads per process (0: torch's default)"""
    tensorboard: bool = True
    """also write TensorBoard events under tb/"""
    resume: bool = False
    """continue from the newest intact checkpoint in out (start fresh if there is none)"""


# config fields that a resumed run may change: they do not change the numbers it computes
_FREE_ON_RESUME = {"out", "resume", "eval_every", "save_every", "keep_checkpoints", "log_every", "tensorboard",
                   "threads"}


def _validate(config: PretrainConfig, env: DistEnv) -> None:
    if config.objective not in OBJECTIVES:
        raise KalbertError(f"unknown objective {config.objective!r}", f"use one of {', '.join(OBJECTIVES)}")
    if config.steps < 1 or config.batch_size < 1 or config.grad_accum < 1:
        raise KalbertError("--steps, --batch-size and --grad-accum must be positive")
    if config.batch_size % (env.world_size * config.grad_accum):
        raise KalbertError(f"--batch-size {config.batch_size} does not split into {env.world_size} processes x "
                           f"{config.grad_accum} accumulation steps", "make it a multiple of their product")
    for name in ("eval_every", "save_every", "log_every", "keep_checkpoints"):
        if getattr(config, name) < 1:
            raise KalbertError(f"--{name.replace('_', '-')} must be at least 1")
    config.masking.validate()


class GlobalBatches:
    """The instances of global batch ``step`` (1-based): seeded epoch permutations, no partial batch."""

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        self.per_epoch = n // batch_size
        if self.per_epoch == 0:
            raise KalbertError(f"the data hold {n} training instances, fewer than one batch of {batch_size}",
                               "lower --batch-size or build more data")
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self._epoch, self._order = -1, np.empty(0, dtype=np.int64)

    def position(self, step: int) -> tuple[int, int]:
        """(epoch, batch within the epoch) of ``step``."""
        return divmod(step - 1, self.per_epoch)

    def indices(self, step: int) -> np.ndarray:
        epoch, batch = self.position(step)
        if epoch != self._epoch:
            self._epoch = epoch
            self._order = np.random.default_rng((self.seed, epoch)).permutation(self.n)
        return self._order[batch * self.batch_size:(batch + 1) * self.batch_size]


# --------------------------------------------------------------------------------------- the run
class _StopFlag:
    """Set by SIGINT/SIGTERM: the run stops after the current step, saves and exits cleanly."""

    def __init__(self) -> None:
        self.set = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.set:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _comparable(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _FREE_ON_RESUME}


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return out


def _initial_model(config: PretrainConfig, data: PretrainingData) -> AlbertForPreTraining:
    """A fresh model from the preset, or ``init_from`` (grown if the data's vocabulary extends its own)."""
    if not config.init_from:
        return AlbertForPreTraining(albert_config(config.model, data.vocab_size))
    source = Path(config.init_from)
    if not (source / "config.json").exists():
        raise KalbertError(f"--init-from {source} is not an HF model folder (no config.json)")
    try:
        model = AlbertForPreTraining.from_pretrained(str(source))
    except (OSError, ValueError) as exc:
        raise KalbertError(f"cannot load --init-from {source}: {str(exc).splitlines()[0]}") from None
    have, want = model.config.vocab_size, data.vocab_size
    source_vocab = source / SPIECE
    if have == want:
        if source_vocab.exists() and sha256_file(source_vocab) != data.vocab_sha256:
            raise KalbertError(f"the vocabulary of {source} differs from the one the data were built with",
                               "build the data with the model's vocabulary (or one extended from it)")
    elif have < want and source_vocab.exists():
        added = grow_embeddings(model, source, data.vocab_dir)
        log.info("grew the embeddings of %s by %d rows for the extended vocabulary", source, added)
    else:
        raise KalbertError(f"vocab/model mismatch: {source} has {have} embedding rows, the data's vocabulary "
                           f"{want} pieces", "build the data with the model's vocabulary or an extension of it")
    return model


class Trainer:
    """Everything one pretraining process holds; ``train()`` runs it to the end, ``train_step()`` one step."""

    def __init__(self, config: PretrainConfig, env: DistEnv, overwrite: bool) -> None:
        _validate(config, env)
        self.config, self.env = config, env
        self.out = Path(config.out)
        self.data = PretrainingData.open(config.data)
        if config.vocab:
            self.data.check_vocab(config.vocab)
        self.train_set = self.data.split("train")
        self.heldout: InstanceSet | None = self.data.split("heldout")
        if not len(self.heldout):
            log.warning("%s has no held-out instances: no evaluation", config.data)
            self.heldout = None
        self.batches = GlobalBatches(len(self.train_set), config.batch_size, config.seed)
        self.micro_batch = config.batch_size // (env.world_size * config.grad_accum)
        if config.threads:
            torch.set_num_threads(config.threads)
        checkpoint = self._prepare_folder(overwrite)
        random.seed(config.seed)
        np.random.seed(config.seed)
        torch.manual_seed(config.seed)
        if checkpoint is None:
            model = _initial_model(config, self.data)
        else:
            model = AlbertForPreTraining.from_pretrained(str(checkpoint))
        if model.config.vocab_size != self.data.vocab_size:
            raise KalbertError(f"vocab/model mismatch: the model has {model.config.vocab_size} embedding rows, "
                               f"the data's vocabulary {self.data.vocab_size} pieces")
        self.model = model.to(env.device)
        self.objective = PretrainingObjective(self.model, config.objective)
        self.wrapped: torch.nn.Module = self.objective
        if env.distributed:
            self.wrapped = torch.nn.parallel.DistributedDataParallel(
                self.objective, device_ids=[env.device.index] if env.device.type == "cuda" else None,
                find_unused_parameters=not self.objective.sop)
        self.optimizer = make_optimizer(self.model, config.optimizer, config.lr, config.weight_decay)
        warmup = int(config.warmup_fraction * config.steps)
        self.scheduler = warmup_polynomial(self.optimizer, warmup, config.steps, config.decay_power)
        self.step, self.tokens_seen = 0, 0
        self.last_checkpoint: Path | None = None
        if checkpoint is not None:
            self._restore(checkpoint)
        self.description = describe(self.model.config)
        if env.is_main:
            log.info("model: %s; %d instances, %d steps of %d", self.description, len(self.train_set),
                     config.steps, config.batch_size)
        self.writer = None
        if env.is_main and config.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.out / "tb"))

    # -------------------------------------------------------------------------------- folder/resume
    def _prepare_folder(self, overwrite: bool) -> Path | None:
        """Check the run folder; return the checkpoint to resume from, if any.

        Every process checks before any process writes (the first barrier), so all see the same state.
        """
        meta_path = self.out / "kalbert.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else None
        if self.out.exists() and any(self.out.iterdir()) and (meta is None or meta.get("kind") != RUN_KIND):
            raise KalbertError(f"{self.out} exists and is not a pretraining run folder", "choose another --out")
        if meta is not None and not overwrite:
            if not self.config.resume:
                raise KalbertError(f"{self.out} already holds a run", "pass --resume to continue it or --overwrite")
            changed = _differences(_comparable(meta["config"]), _comparable(asdict(self.config)))
            if changed:
                raise KalbertError(f"--resume with a different config: {'; '.join(changed)}",
                                   "resume with the original settings or start a new --out")
        self.env.barrier()
        if self.env.is_main:
            if meta is not None and overwrite:
                shutil.rmtree(self.out)
                meta = None
            if meta is None:  # a new run; a resumed one keeps its original command and config
                meta = {"kalbert_version": __version__, "kind": RUN_KIND, "command": invocation(),
                        "config": asdict(self.config), "data_vocab_sha256": self.data.vocab_sha256,
                        "world_size": self.env.world_size, "resumed_with": []}
            else:
                meta.setdefault("resumed_with", []).append(invocation() or "Python API")
            atomic_write_json(meta_path, meta)
        self.env.barrier()
        self.run_meta = json.loads(meta_path.read_text(encoding="utf-8"))
        checkpoint = latest_checkpoint(self.out) if self.config.resume else None
        if checkpoint is None and self.config.resume:
            log.warning("no intact checkpoint in %s: starting from scratch", self.out)
            if self.env.is_main:
                truncate_metrics(self.out / METRICS, -1)  # forget what a run that saved nothing logged
        return checkpoint

    def _restore(self, checkpoint: Path) -> None:
        state = load_trainer_state(checkpoint)
        if state["data_vocab_sha256"] != self.data.vocab_sha256:
            raise KalbertError(f"checkpoint {checkpoint} was trained on data with another vocabulary")
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        self.step, self.tokens_seen = state["step"], state["tokens_seen"]
        self.last_checkpoint = checkpoint
        if self.env.is_main:
            truncate_metrics(self.out / METRICS, self.step)
        log.info("resumed from %s (step %d)", checkpoint, self.step)

    def _save(self) -> None:
        epoch, batch = self.batches.position(self.step + 1)
        state = {
            "step": self.step, "tokens_seen": self.tokens_seen,
            "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
            "rng": _rng_state(), "data_position": {"epoch": epoch, "next_batch_in_epoch": batch},
            "data_vocab_sha256": self.data.vocab_sha256, "config": asdict(self.config),
        }
        if self.env.is_main:
            self.last_checkpoint = save_checkpoint(self.out, self.step, self.model, state,
                                                   self.config.keep_checkpoints)
        self.env.barrier()

    # ------------------------------------------------------------------------------------ batches
    def _batch(self, instances: InstanceSet, indices: np.ndarray, key: tuple[int, ...]) -> dict[str, torch.Tensor]:
        examples = [instances[int(i)] for i in indices]
        batch = collate(examples, [int(i) for i in indices], key, self.config.masking, self.data.vocab_size)
        return {k: v.to(self.env.device, non_blocking=True) for k, v in batch.items()}

    def _autocast(self):
        return torch.autocast(self.env.device.type, dtype=torch.bfloat16, enabled=self.config.bf16)

    def _loss(self, out: dict[str, torch.Tensor], masked_total: torch.Tensor) -> torch.Tensor:
        loss = out["mlm_loss_sum"] / masked_total.clamp(min=1)
        if self.objective.sop:
            loss = loss + out["sop_loss_sum"] / self.config.batch_size
        return loss

    @staticmethod
    def _sums(out: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
        zero = torch.zeros((), device=tokens.device)
        return torch.stack([out["mlm_loss_sum"].detach().float(), out["mlm_correct"].float(),
                            out["masked"].float(), out.get("sop_loss_sum", zero).detach().float(),
                            out.get("sop_correct", zero).float(), tokens.float()])

    # --------------------------------------------------------------------------------------- steps
    def train_step(self, stop_requested: Callable[[], bool]) -> tuple[torch.Tensor, float, bool]:
        """One optimiser step; returns the global sums, the gradient norm and whether any process must stop."""
        step = self.step + 1
        epoch, _ = self.batches.position(step)
        indices = self.batches.indices(step)
        share = len(indices) // self.env.world_size
        mine = indices[self.env.rank * share:(self.env.rank + 1) * share]
        micro = [self._batch(self.train_set, part, (self.config.seed, _TRAIN_STREAM, epoch))
                 for part in np.split(mine, self.config.grad_accum)]
        masked_total = self.env.all_reduce(
            sum((b["labels"] != IGNORE).sum() for b in micro).to(self.env.device, torch.float32))
        sums = torch.zeros(6, device=self.env.device)
        self.wrapped.train()
        for k, batch in enumerate(micro):
            last = k == len(micro) - 1
            sync = contextlib.nullcontext() if last or not self.env.distributed else self.wrapped.no_sync()
            with sync:
                with self._autocast():
                    out = self.wrapped(**batch)
                loss = self._loss(out, masked_total) * self.env.world_size  # DDP averages the gradients
                loss.backward()
            sums += self._sums(out, batch["attention_mask"].sum())
        flags = torch.tensor([float(stop_requested())], device=self.env.device)
        reduced = self.env.all_reduce(torch.cat([sums, flags]))
        grad_norm = torch.nn.utils.clip_grad_norm_(
            self.model.parameters(), self.config.max_grad_norm if self.config.max_grad_norm > 0 else math.inf)
        mlm_loss = float(reduced[0] / reduced[2].clamp(min=1))
        if not (math.isfinite(mlm_loss) and math.isfinite(float(reduced[3])) and torch.isfinite(grad_norm)):
            where = self.last_checkpoint or "none (no checkpoint was saved yet)"
            raise KalbertError(f"the loss became NaN/inf at step {step}; last good checkpoint: {where}",
                               "lower --lr (or drop --bf16) and restart with --init-from that checkpoint")
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step = step
        self.tokens_seen += int(reduced[5])
        return reduced[:6], float(grad_norm), bool(reduced[6] > 0)

    @torch.no_grad()
    def evaluate(self) -> dict | None:
        """MLM and SOP accuracy, loss and perplexity on the held-out instances (fixed masks)."""
        if self.heldout is None:
            return None
        n = min(self.config.eval_instances, len(self.heldout))
        parts = [np.arange(i, min(i + self.micro_batch, n)) for i in range(0, n, self.micro_batch)]
        sums = torch.zeros(6, device=self.env.device)
        self.objective.eval()
        for part in parts[self.env.rank::self.env.world_size]:
            batch = self._batch(self.heldout, part, (self.config.seed, _EVAL_STREAM, 0))
            with self._autocast():
                out = self.objective(**batch)
            sums += self._sums(out, batch["attention_mask"].sum())
        sums = self.env.all_reduce(sums)
        record = self._metrics(sums, n, "heldout")
        record["perplexity"] = math.exp(min(record["mlm_loss"], 50.0))
        record["instances"] = n
        return record

    def _metrics(self, sums: torch.Tensor, instances: int, split: str) -> dict:
        mlm_loss = float(sums[0] / sums[2].clamp(min=1))
        record = {"step": self.step, "split": split, "loss": mlm_loss, "mlm_loss": mlm_loss,
                  "mlm_accuracy": float(sums[1] / sums[2].clamp(min=1)), "sop_loss": None, "sop_accuracy": None}
        if self.objective.sop:
            record["sop_loss"] = float(sums[3]) / instances
            record["sop_accuracy"] = float(sums[4]) / instances
            record["loss"] = mlm_loss + record["sop_loss"]
        return record

    def _log(self, record: dict) -> None:
        if not self.env.is_main:
            return
        with open(self.out / METRICS, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        if self.writer is not None:
            for key, value in record.items():
                if isinstance(value, float):
                    self.writer.add_scalar(f"{record['split']}/{key}", value, record["step"])
            self.writer.flush()

    # ----------------------------------------------------------------------------------------- loop
    def train(self) -> Path:
        config = self.config
        if self.step == 0 and (record := self.evaluate()) is not None:
            self._log(record)
        progress = tqdm(total=config.steps, initial=self.step, unit="step", desc="pretraining",
                        disable=not self.env.is_main, mininterval=1)
        window, window_steps, window_start = torch.zeros(6, device=self.env.device), 0, time.perf_counter()
        stopped = False
        with _StopFlag() as stop:
            while self.step < config.steps and not stopped:
                sums, grad_norm, stopped = self.train_step(lambda: stop.set)
                window += sums
                window_steps += 1
                if self.step % config.log_every == 0 or self.step == config.steps or stopped:
                    seconds = time.perf_counter() - window_start
                    record = self._metrics(window, window_steps * config.batch_size, "train")
                    record.update(lr=self.scheduler.get_last_lr()[0], grad_norm=grad_norm,
                                  tokens_per_s=float(window[5]) / seconds, tokens_seen=self.tokens_seen)
                    self._log(record)
                    progress.set_postfix(loss=f"{record['loss']:.3f}", tok_s=f"{record['tokens_per_s']:.0f}",
                                         refresh=False)
                    window, window_steps, window_start = torch.zeros_like(window), 0, time.perf_counter()
                if (self.step % config.eval_every == 0 or self.step == config.steps) and self.heldout is not None:
                    self._log(self.evaluate())
                if self.step % config.save_every == 0 or self.step == config.steps or stopped:
                    self._save()
                progress.update(1)
        progress.close()
        if stopped:
            log.warning("stopped at step %d; checkpoint %s; continue with --resume", self.step, self.last_checkpoint)
            raise KeyboardInterrupt
        return self._export()

    def _export(self) -> Path:
        out = self.out / MODEL_SUBDIR
        if self.env.is_main:
            if self.writer is not None:
                self.writer.close()
            meta = {
                "kalbert_version": __version__, "kind": "pretrained-model", "command": self.run_meta["command"],
                "languages": vocab_language(self.data.vocab_dir).split("+"),
                "resumed_with": self.run_meta.get("resumed_with", []),
                "model": self.description, "config": asdict(self.config), "data": str(self.data.folder),
                "data_vocab_sha256": self.data.vocab_sha256, "max_seq_length": self.data.meta["max_seq_length"],
                "steps": self.step, "tokens_seen": self.tokens_seen, "world_size": self.env.world_size,
            }
            export_model(self.model, self.data.vocab_dir, out, meta, self.out / METRICS, title=self.out.name)
        self.env.barrier()
        return out


def pretrain(config: PretrainConfig, overwrite: bool = False) -> Path:
    """Run (or resume) pretraining; returns the exported HF model folder."""
    env = setup_distributed()
    try:
        return Trainer(config, env, overwrite).train()
    finally:
        teardown_distributed(env)

