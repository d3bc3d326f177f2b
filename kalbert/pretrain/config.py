"""The settings of the verbs that make a pretrained ALBERT (`kalbert pretrain`, `kalbert transplant`) and their
checks, apart from the code that runs them (which imports torch), so that --help comes before any of it.

The CLI builds its flags from these dataclasses, and a resumed pretraining run compares its config with the
recorded one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args

from kalbert.config import DEFAULT_SEED
from kalbert.errors import KalbertError
from kalbert.precision import Precision, precision_of
from kalbert.pretrain.masking import MaskingConfig
from kalbert.pretrain.presets import ModelConfig

if TYPE_CHECKING:
    from kalbert.pretrain.distributed import DistEnv

Objective = Literal["mlm+sop", "mlm", "mlm+rss"]


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
    objective: Objective = "mlm+sop"
    """"mlm+sop" (ALBERT), "mlm" (e.g. further-pretraining on text without document structure) or "mlm+rss" (MLM +
    Splinter's recurring span selection instead of SOP: repeated spans become [MASK] questions whose answer, the
    kept occurrence, the model points at; a QA-ready start)"""
    sop_pooling: Literal["cls", "mean"] = "cls"
    """what the SOP head reads: "cls" (ALBERT: the [CLS] state through the pooler) or "mean" (the mean of the
    instance's states through the same pooler; for transplants, whose [CLS] is an attention sink)"""
    sop_weight: float = 1.0
    """weight of the SOP loss against the MLM loss (ALBERT: 1)"""
    rss_weight: float = 1.0
    """weight of the span-selection loss against the MLM loss (with --objective mlm+rss)"""
    rss_max_questions: int = 30
    """question slots per instance at most (with --objective mlm+rss; Splinter: 30)"""
    rss_max_span: int = 10
    """longest recurring span asked about, in pieces (with --objective mlm+rss; made of whole --mask-unit units)"""
    distill_teacher: str | None = None
    """optional teacher (multilingual-e5-small, a SentenceTransformer folder, ...) as wide as the model: adds the
    cosine distance between each instance's mean last state and the teacher's embedding of its text, so that a
    transplant keeps what its teacher knew (vectors are cached under ~/.cache/kalbert/teacher-embeddings)"""
    distill_weight: float = 1.0
    """weight of the distillation term against the MLM loss (with --distill-teacher)"""
    init_from: str | None = None
    """HF ALBERT folder to continue from; a vocabulary extended with `kalbert vocab extend` grows it"""
    vocab: str | None = None
    """optional: refuse to start unless the data were built with this vocabulary"""
    max_steps: int = 10_000
    """optimiser steps (the schedule decays to zero at the last)"""
    batch_size: int = 128
    """global batch in instances per optimiser step (over all processes and accumulation steps)"""
    grad_accum: int = 1
    """micro-batches per optimiser step and process"""
    optimizer: Literal["lamb", "adamw"] = "lamb"
    """"lamb" (ALBERT) or "adamw\""""
    lr: float = 1e-3
    """peak learning rate"""
    weight_decay: float = 0.01
    """decoupled weight decay (not on biases and LayerNorms)"""
    warmup_ratio: float = 0.025
    """share of the steps spent warming up linearly (ALBERT: 3,125 of 125,000)"""
    decay_power: float = 1.0
    """polynomial decay to zero after warmup (1: linear)"""
    max_grad_norm: float = 1.0
    """gradient clipping by global norm (0: off)"""
    precision: Precision = "auto"
    """"auto" (bf16 autocast where the hardware has native bf16: AMX, AVX512-BF16, ARM BF16 CPUs and Ampere+
    GPUs, else fp32; a resumed run keeps its own where this machine runs it natively), "fp32" or "bf16" (bf16
    without native support is emulated and slower: a warning quotes how much). The run records what it chose."""
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
    loader_workers: int = 0
    """processes that build the coming steps' batches (masking, span finding, packing) while a step trains; for
    GPUs, where that CPU work bounds the step rate (0: each batch is built in the training process when due)"""
    tensorboard: bool = True
    """also write TensorBoard events under tb/"""
    resume: bool = False
    """continue from the newest intact checkpoint in out (start fresh if there is none)"""
    pack: bool = True
    """pack several short instances into each row (kept apart by the attention mask) instead of padding:
    the same losses with fewer wasted positions"""
    attention: Literal["auto", "sdpa", "eager"] = "auto"
    """HF attention implementation: "sdpa" (PyTorch's fused kernel), "eager" (plain matmul + softmax, whose
    backward beats the CPU SDPA backward at ALBERT's head sizes) or "auto" (eager for bf16 on CPUs, else sdpa)"""
    compile: bool = False
    """run the training forward (and its backward) under torch.compile: fused kernels for the price of compiling
    in the first steps; the same losses to rounding"""

    @staticmethod
    def upgrade_values(values: dict) -> dict:
        """A recorded config from before --precision (``bf16: true|false|null``) in today's settings."""
        if "bf16" not in values:
            return values
        values = dict(values)
        values.setdefault("precision", precision_of(values.pop("bf16")) or "auto")
        return values


# config fields that a resumed run may change: they do not change the numbers it computes (beyond rounding)
# precision too: bf16 autocast changes the numbers only by rounding, and a run moved to a CPU without native
# bf16 goes on in fp32 ("bf16" is how runs recorded it before --precision)
FREE_ON_RESUME = {"out", "resume", "eval_every", "save_every", "keep_checkpoints", "log_every", "tensorboard",
                  "threads", "loader_workers", "attention", "compile", "precision", "bf16"}


def recorded_precision(config: dict) -> str | None:
    """The precision a recorded run config trained in: "bf16", "fp32", or None (not recorded, or "auto" from
    a config that was never resolved); reads runs recorded before --precision (``"bf16": true|false``) too."""
    value = config.get("precision")
    if value in ("bf16", "fp32"):
        return value
    return precision_of(config.get("bf16"))


def run_bf16(config: dict) -> bool:
    """Whether a recorded run trained under bf16 autocast (benchmarks that reread a run's cache must agree)."""
    return recorded_precision(config) == "bf16"


def validate(config: PretrainConfig, env: DistEnv) -> None:
    """Refuse settings that cannot run before any folder is touched."""
    if config.objective not in get_args(Objective):
        raise KalbertError(f"unknown objective {config.objective!r}", f"use one of {', '.join(get_args(Objective))}")
    if config.max_steps < 1 or config.batch_size < 1 or config.grad_accum < 1:
        raise KalbertError("--max-steps, --batch-size and --grad-accum must be positive")
    if config.batch_size % (env.world_size * config.grad_accum):
        raise KalbertError(f"--batch-size {config.batch_size} does not split into {env.world_size} processes x "
                           f"{config.grad_accum} accumulation steps", "make it a multiple of their product")
    if config.sop_weight < 0:
        raise KalbertError(f"--sop-weight {config.sop_weight} is negative", "use a weight >= 0 (ALBERT: 1)")
    if config.rss_weight < 0:
        raise KalbertError(f"--rss-weight {config.rss_weight} is negative", "use a weight >= 0 (Splinter: 1)")
    if config.rss_max_questions < 1 or config.rss_max_span < 1:
        raise KalbertError("--rss-max-questions and --rss-max-span must be at least 1")
    if config.distill_weight < 0:
        raise KalbertError(f"--distill-weight {config.distill_weight} is negative", "use a weight >= 0")
    if config.loader_workers < 0:
        raise KalbertError(f"--loader-workers {config.loader_workers} is negative",
                           "use 0 (batches built in the training process) or a number of worker processes")
    for name in ("eval_every", "save_every", "log_every", "keep_checkpoints"):
        if getattr(config, name) < 1:
            raise KalbertError(f"--{name.replace('_', '-')} must be at least 1")
    config.masking.validate()


@dataclass
class TransplantConfig:
    """A teacher encoder, a kalbert vocabulary and the ALBERT shape to build; recorded in kalbert.json."""

    teacher: str
    """SentenceTransformer folder (the transformer at its root or in the first module's folder, as
    `kalbert teacher export` writes it) or a plain HF BertModel / XLM-R folder with its tokenizer."""
    vocab: str
    """kalbert vocab folder (`kalbert vocab build`): spiece.model with <pad> <unk> [CLS] [SEP] [MASK] at
    ids 0-4 and the HF tokenizer files. When the teacher's tokenizer has exactly these pieces (its own
    vocabulary), the piece mapping is the identity."""
    out: str
    """Output model folder (AlbertForPreTraining weights, tokenizer, kalbert.json, README card)."""
    layers: int = 6
    """L: teacher layers kept (at most the teacher's)."""
    embedding_size: int = 128
    """E: width of the factorised embeddings, 2 <= E <= H; E = H reproduces the teacher's embeddings exactly."""
    layer_choice: Literal["every-other", "first", "last"] = "every-other"
    """Which teacher layers: "every-other" (evenly spaced, ending with the last: chosen j = (j+1)*N//L - 1,
    so 12 -> 6 keeps 1,3,5,7,9,11, 0-based), "first" (0..L-1) or "last" (N-L..N-1)."""
    share_groups: int | None = None
    """N shared ALBERT layer groups (must divide L): each group is the mean of its L/N consecutive chosen
    layers, as ALBERT applies group int(i / (L/N)) at layer i. None: one group per layer (no sharing)."""
    seed: int = DEFAULT_SEED
    """Seed of the new MLM and SOP heads' initialisation."""
