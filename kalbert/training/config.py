"""The settings of the shared fine-tuning loop, apart from the loop itself (which imports torch), so that a
verb's --help and input checks come first.

Every fine-tuning config nests one as ``loop`` with its own defaults; its settings are flags and config keys
of their own (``--lr``, ``lr: 1e-4``; :mod:`kalbert.config`), named alike in every verb.
"""

from __future__ import annotations

from dataclasses import dataclass

from kalbert.config import DEFAULT_SEED
from kalbert.precision import Precision


@dataclass
class LoopConfig:
    """Optimisation, evaluation and checkpoint schedule of :func:`kalbert.training.train_loop`."""

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
    """Seed for shuffling, initialisation and corpus sampling (the seed of `kalbert teacher encode`, whose cached
    vectors a corpus sample of the same seed reuses)."""
    max_grad_norm: float = 1.0
    """Clip the gradient norm to this before every optimiser step."""
    precision: Precision = "auto"
    """auto: bf16 autocast where the hardware has native bf16 (AMX, AVX512-BF16, Ampere+ GPUs), else fp32;
    fp32 or bf16 to force one. Sentence and static models are evaluated in fp32, as they are used."""
    checkpoint_steps: int = 200
    """Save a resumable checkpoint in OUT.partial/ every this many steps and after every evaluation; rerunning
    the same command after a crash resumes from it."""
