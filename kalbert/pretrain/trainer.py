"""`kalbert pretrain`: MLM + SOP (or span selection) pretraining from scratch or an HF ALBERT, on one process or many.

A run folder holds ``kalbert.json`` (the config, checked again on ``--resume``), ``metrics.jsonl``,
TensorBoard events under ``tb/``, ``checkpoints/`` and finally the exported model under ``model/``.

Each rank takes its contiguous share of global batch ``s`` (``kalbert.pretrain.batches``), and masks
depend only on (seed, epoch, instance). The MLM loss, normalised by the masked-token count of the
whole global batch, thus does not depend on how many processes or accumulation steps share it; so does the
span-selection loss, normalised by the global count of question slots.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import AlbertForPreTraining

from kalbert import __version__
from kalbert.artifact import Kind, folder_language, read_meta
from kalbert.errors import KalbertError
from kalbert.hardware import hardware_block
from kalbert.io import sha256_file
from kalbert.precision import autocast, resolve_precision
from kalbert.pretrain.batches import Batch, GlobalBatches, make_batch
from kalbert.pretrain.checkpoint import load_trainer_state, save_checkpoint
from kalbert.pretrain.config import PretrainConfig, recorded_precision, validate
from kalbert.pretrain.curves import METRICS, truncate_metrics
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.distributed import DistEnv, setup_distributed, teardown_distributed
from kalbert.pretrain.export import export_model
from kalbert.pretrain.loader import StepBatches, step_batches
from kalbert.pretrain.objective import PretrainingObjective
from kalbert.pretrain.optim import make_optimizer, warmup_polynomial
from kalbert.pretrain.presets import albert_config, describe
from kalbert.pretrain.rss import RecurringSpans, trivial_pieces
from kalbert.pretrain.run_state import StopFlag, prepare_run_folder
from kalbert.pretrain.shards import InstanceSet
from kalbert.pretrain.speed import choose_attention
from kalbert.pretrain.sums import StepSums
from kalbert.pretrain.teacher_targets import teacher_bf16, teacher_targets
from kalbert.training.rng import rng_state, set_rng_state
from kalbert.verbs import command_for
from kalbert.vocab import grow_embeddings
from kalbert.vocab.files import SPIECE

log = logging.getLogger(__name__)

MODEL_SUBDIR = "model"
_TRAIN_STREAM, _EVAL_STREAM = 0, 1


def _init_folder(config: PretrainConfig) -> Path:
    source = Path(str(config.init_from))
    if not (source / "config.json").exists():
        raise KalbertError(f"--init-from {source} is not an HF model folder (no config.json)")
    return source


def _hidden_size(config: PretrainConfig, data: PretrainingData) -> int:
    """The hidden size the run's model will have, known before any folder is touched."""
    if not config.init_from:
        return albert_config(config.model, data.vocab_size).hidden_size
    return int(json.loads((_init_folder(config) / "config.json").read_text(encoding="utf-8"))["hidden_size"])


def _initial_model(config: PretrainConfig, data: PretrainingData) -> AlbertForPreTraining:
    """A fresh model from the preset, or ``init_from`` (grown if the data's vocabulary extends its own)."""
    if not config.init_from:
        return AlbertForPreTraining(albert_config(config.model, data.vocab_size))
    source = _init_folder(config)
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
        validate(config, env)
        self.env = env
        self.out = Path(config.out)
        recorded = read_meta(self.out).get("config", {}) if config.resume and not overwrite else {}
        bf16, bf16_reason = resolve_precision(config.precision, env.device, recorded_precision(recorded))
        attention, attention_reason = choose_attention(config.attention, bf16, env.device)
        self.bf16 = bf16
        self.config = config = replace(config, precision="bf16" if bf16 else "fp32", attention=attention)
        self.data = PretrainingData.open(config.data)
        if config.vocab:
            self.data.check_vocab(config.vocab)
        self.train_set = self.data.split("train")
        self.heldout: InstanceSet | None = self.data.split("heldout")
        if not len(self.heldout):
            log.warning("%s has no held-out instances: no evaluation", config.data)
            self.heldout = None
        self.rss: RecurringSpans | None = None
        if config.objective == "mlm+rss":
            self.rss = RecurringSpans(*trivial_pieces(self.data.vocab_dir, self.data.vocab_size),
                                      config.rss_max_questions, config.rss_max_span, config.masking.mask_unit)
        self.batches = GlobalBatches(len(self.train_set), config.batch_size, config.seed)
        self._loader: Iterator[StepBatches] | None = None
        self.micro_batch = config.batch_size // (env.world_size * config.grad_accum)
        self.pack_capacity: int | None = self.data.meta["max_seq_length"] if config.pack else None
        if config.threads:
            torch.set_num_threads(config.threads)
        self.teacher_vectors = self._teacher_vectors()  # a wrong teacher fails before the run folder is made
        self.run_meta, checkpoint = prepare_run_folder(self.out, asdict(config), config.resume,
                                                       self.data.vocab_sha256, env, overwrite,
                                                       command_for(config))
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
        model.set_attn_implementation(config.attention)  # the objective gives eager an additive packing mask
        self.model = model.to(env.device)
        self.objective = PretrainingObjective(self.model, config.objective, config.sop_pooling).to(env.device)
        self.wrapped: torch.nn.Module = self.objective
        if env.distributed:
            self.wrapped = torch.nn.parallel.DistributedDataParallel(
                self.objective, device_ids=[env.device.index] if env.device.type == "cuda" else None,
                find_unused_parameters=not self.objective.sop)
        if config.compile:  # training steps only: evaluation (no_grad) would compile again for little time saved
            # dynamic shapes, as packed batches differ in rows and width; checkpoints still save self.model
            self.wrapped = torch.compile(self.wrapped, dynamic=True)
        self.optimizer = make_optimizer(self.objective, config.optimizer, config.lr, config.weight_decay)
        warmup = int(config.warmup_ratio * config.max_steps)
        self.scheduler = warmup_polynomial(self.optimizer, warmup, config.max_steps, config.decay_power)
        self.step, self.tokens_seen = 0, 0
        self.last_checkpoint: Path | None = None
        if checkpoint is not None:
            self._restore(checkpoint)
        self.description = describe(self.model.config)
        if env.is_main:
            log.info("model: %s; %d instances, %d steps of %d", self.description, len(self.train_set),
                     config.max_steps, config.batch_size)
            log.info("speed settings: bf16 autocast %s (%s); %s attention (%s); %s%s", "on" if bf16 else "off",
                     bf16_reason, attention, attention_reason, "short instances packed into shared rows"
                     if config.pack else "one instance per padded row",
                     "; torch.compile (the first steps compile)" if config.compile else "")
        self.writer = None
        if env.is_main and config.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.out / "tb"))

    def _teacher_vectors(self) -> dict[str, np.ndarray]:
        """Per split, the distillation teacher's vectors of the instances the run will read (none without
        --distill-teacher); the main process fills the cache first, so that processes do not encode the same texts."""
        if not self.config.distill_teacher:
            return {}
        steps = range(1, self.config.max_steps + 1)
        wanted = {"train": np.unique(np.concatenate([self.batches.indices(step) for step in steps]))}
        if self.heldout is not None:
            wanted["heldout"] = np.arange(min(self.config.eval_instances, len(self.heldout)))
        if not self.env.is_main:
            self.env.barrier()
        vectors = teacher_targets(self.config.distill_teacher, self.data, wanted, _hidden_size(self.config, self.data),
                                  bf16=teacher_bf16(self.bf16), progress=self.env.is_main)
        if self.env.is_main:
            self.env.barrier()
        return vectors

    # ------------------------------------------------------------------------------- checkpoints
    def _restore(self, checkpoint: Path) -> None:
        state = load_trainer_state(checkpoint)
        if state["data_vocab_sha256"] != self.data.vocab_sha256:
            raise KalbertError(f"checkpoint {checkpoint} was trained on data with another vocabulary")
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        if self.objective.rss:
            self.objective.rss_head.load_state_dict(state["rss_head"])
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
            "rng": rng_state(), "data_position": {"epoch": epoch, "next_batch_in_epoch": batch},
            "data_vocab_sha256": self.data.vocab_sha256, "config": asdict(self.config),
        }
        if self.objective.rss:  # not part of the HF model, so not in its weights file
            state["rss_head"] = self.objective.rss_head.state_dict()
        if self.env.is_main:
            self.last_checkpoint = save_checkpoint(self.out, self.step, self.model, state,
                                                   self.config.keep_checkpoints)
        self.env.barrier()

    # --------------------------------------------------------------------------------------- steps
    def _batch(self, split: str, indices: np.ndarray, key: tuple[int, ...]) -> Batch:
        """Instances ``indices`` of ``split``, masked from ``key``, on the CPU."""
        instances = self.train_set if split == "train" else self.heldout
        return make_batch(instances, indices, key, self.config.masking, self.data.vocab_size, self.pack_capacity,
                          self.teacher_vectors.get(split), self.rss)

    def _micro_batches(self, step: int) -> list[Batch]:
        """This process's share of global batch ``step``, split for gradient accumulation, on the CPU."""
        epoch, _ = self.batches.position(step)
        indices = self.batches.indices(step)
        share = len(indices) // self.env.world_size
        mine = indices[self.env.rank * share:(self.env.rank + 1) * share]
        return [self._batch("train", part, (self.config.seed, _TRAIN_STREAM, epoch))
                for part in np.split(mine, self.config.grad_accum)]

    def _step_batches(self, step: int) -> list[Batch]:
        """Step ``step``'s micro-batches from the loader, which builds the coming steps ahead with
        --loader-workers; a loader that is not at ``step`` (a step taken outside ``train``) starts over there."""
        if self._loader is not None:
            got, micro = next(self._loader, (None, []))
            if got == step:
                return micro
        self._loader = step_batches(self._micro_batches, step, max(step, self.config.max_steps),
                                    self.config.loader_workers)
        return next(self._loader)[1]

    def _autocast(self):
        return autocast(self.env.device, self.bf16)

    def _loss(self, out: dict[str, torch.Tensor], masked_total: torch.Tensor, questions_total: torch.Tensor
              ) -> torch.Tensor:
        loss = out["mlm_loss_sum"] / masked_total.clamp(min=1)
        if "rss_loss_sum" in out:
            loss = loss + self.config.rss_weight * out["rss_loss_sum"] / questions_total.clamp(min=1)
        if self.objective.sop:
            loss = loss + self.config.sop_weight * out["sop_loss_sum"] / self.config.batch_size
        if "distill_loss_sum" in out:
            loss = loss + self.config.distill_weight * out["distill_loss_sum"] / self.config.batch_size
        return loss

    def train_step(self, stop_requested: Callable[[], bool]) -> tuple[StepSums, float, bool]:
        """One optimiser step; returns the global sums, the gradient norm and whether any process must stop."""
        step = self.step + 1
        micro = [batch.to(self.env.device) for batch in self._step_batches(step)]
        counts = torch.stack([sum(b.masked for b in micro), sum(b.questions for b in micro)])
        masked_total, questions_total = self.env.all_reduce(counts.to(self.env.device, torch.float32))
        sums = StepSums(self.env.device)
        self.wrapped.train()
        for k, batch in enumerate(micro):
            last = k == len(micro) - 1
            sync = contextlib.nullcontext() if last or not self.env.distributed else self.wrapped.no_sync()
            with sync:
                with self._autocast():
                    out = self.wrapped(**batch.inputs)
                # DDP averages the gradients
                loss = self._loss(out, masked_total, questions_total) * self.env.world_size
                loss.backward()
            sums += StepSums.of_forward(out, batch.tokens, batch.positions)
        sums, stop = sums.all_reduce(self.env, stop_requested())
        grad_norm = torch.nn.utils.clip_grad_norm_(
            self.objective.parameters(), self.config.max_grad_norm if self.config.max_grad_norm > 0 else math.inf)
        if not (sums.is_finite() and torch.isfinite(grad_norm)):
            where = self.last_checkpoint or "none (no checkpoint was saved yet)"
            raise KalbertError(f"the loss became NaN/inf at step {step}; last good checkpoint: {where}",
                               "lower --lr (or pass --precision fp32) and restart with --init-from that checkpoint")
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step = step
        self.tokens_seen += int(sums["tokens"])
        return sums, float(grad_norm), stop

    @torch.no_grad()
    def evaluate(self) -> dict | None:
        """MLM and SOP (or span-selection) accuracy, loss and perplexity on the held-out instances (fixed masks
        and questions)."""
        if self.heldout is None:
            return None
        n = min(self.config.eval_instances, len(self.heldout))
        parts = [np.arange(i, min(i + self.micro_batch, n)) for i in range(0, n, self.micro_batch)]
        sums = StepSums(self.env.device)
        self.objective.eval()
        for part in parts[self.env.rank::self.env.world_size]:
            batch = self._batch("heldout", part, (self.config.seed, _EVAL_STREAM, 0)).to(self.env.device)
            with self._autocast():
                out = self.objective(**batch.inputs)
            sums += StepSums.of_forward(out, batch.tokens, batch.positions)
        sums, _ = sums.all_reduce(self.env)
        record = self._record(sums, n, "heldout")
        record["perplexity"] = math.exp(min(record["mlm_loss"], 50.0))
        record["instances"] = n
        return record

    def _record(self, sums: StepSums, instances: int, split: str) -> dict:
        metrics = sums.metrics(instances, self.objective.sop, distill=bool(self.teacher_vectors),
                               rss=self.objective.rss)
        return {"step": self.step, "split": split, **metrics}

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
        progress = tqdm(total=config.max_steps, initial=self.step, unit="step", desc="pretraining",
                        disable=not self.env.is_main, mininterval=1)
        window, window_steps, window_start = StepSums(self.env.device), 0, time.perf_counter()
        stopped = False
        with StopFlag() as stop:
            while self.step < config.max_steps and not stopped:
                sums, grad_norm, stopped = self.train_step(lambda: stop.set)
                window += sums
                window_steps += 1
                if self.step % config.log_every == 0 or self.step == config.max_steps or stopped:
                    seconds = time.perf_counter() - window_start
                    record = self._record(window, window_steps * config.batch_size, "train")
                    record.update(lr=self.scheduler.get_last_lr()[0], grad_norm=grad_norm,
                                  tokens_per_s=window["tokens"] / seconds, padding_share=window.padding_share(),
                                  tokens_seen=self.tokens_seen)
                    self._log(record)
                    progress.set_postfix(loss=f"{record['loss']:.3f}", tok_s=f"{record['tokens_per_s']:.0f}",
                                         refresh=False)
                    window, window_steps, window_start = StepSums(self.env.device), 0, time.perf_counter()
                if (self.step % config.eval_every == 0 or self.step == config.max_steps) and self.heldout is not None:
                    self._log(self.evaluate())
                if self.step % config.save_every == 0 or self.step == config.max_steps or stopped:
                    self._save()
                progress.update(1)
        progress.close()
        self._loader = None  # its workers end with it
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
                "kalbert_version": __version__, "kind": Kind.PRETRAINED_MODEL, "command": self.run_meta["command"],
                "languages": folder_language(self.data.vocab_dir).split("+"),
                "resumed_with": self.run_meta.get("resumed_with", []),
                "model": self.description, "config": asdict(self.config), "data": str(self.data.folder),
                "data_vocab_sha256": self.data.vocab_sha256, "max_seq_length": self.data.meta["max_seq_length"],
                "steps": self.step, "tokens_seen": self.tokens_seen, "world_size": self.env.world_size,
                "hardware": hardware_block(),  # the machine of the last leg (tokens/s in metrics.jsonl)
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

