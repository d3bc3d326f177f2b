"""`kalbert sbert widen`: give a transplanted sentence ALBERT back the embedding directions its transplant dropped.

``kalbert transplant`` keeps the teacher's top E-1 principal directions of the token embeddings: for
multilingual-e5-small on ``vocab/ko-zh-48k`` E = 80 keeps 56% of their variance (60% along the word rows' own
top directions, which widening continues), E = 200 85%. A token's
embedding costs a lookup whatever E is, so a wider E costs parameters, not speed. Transplanting again at the
wider E would throw away everything the model has learnt since; widening keeps it:

- the old E columns stay as they are; each word row gets k = E' - E new columns holding the teacher's
  embedding of that piece along its next k principal directions, standardised and set to the row's own mean
  and spread, so that LayerNorm over E' columns normalises the old ones as it did over E (position and type
  rows get their own mean, no spread: the statistics are those of the average position, and at ``alpha`` 0
  the model's vectors stay within about 1e-3 of cosine of what they were);
- the E -> H mapping gets k new columns: ``alpha`` times the teacher's LayerNorm along those directions, at
  the scale of the kept part. At 0 the model computes what it did; at 1 the teacher's embedding is back in
  full, which the model's layers, trained without it, have to get used to (dev picks ``alpha``).

Training after (``kalbert sbert train``) then decides what the new columns are worth.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kalbert.artifact import Kind, is_sentence_model, read_meta
from kalbert.errors import KalbertError
from kalbert.lineage import refuse_trained_on
from kalbert.sentence.card import add_metric, add_stage, write_meta_and_card
from kalbert.sentence.evaluate import dev_metric, dev_refs, evaluate_dev
from kalbert.sentence.folder import drop_derived_files, module_names
from kalbert.stage import artifact_folder
from kalbert.verbs import command_for
from kalbert.vocab.files import SPIECE

if TYPE_CHECKING:  # torch is imported where the work is, so that `kalbert sbert widen --help` need not wait for it
    import torch

WEIGHTS = "model.safetensors"
PREFIX = "embeddings."
MAPPING = "encoder.embedding_hidden_mapping_in.weight"


@dataclass
class WidenConfig:
    """Which sentence ALBERT to widen, with which teacher, to what width."""

    model: str
    """A sentence-model folder holding an ALBERT with factorised embeddings, e.g. a `kalbert sbert train` output
    whose lineage starts with `kalbert transplant`."""
    out: str
    """Output folder: the same sentence model with wider embeddings, kalbert.json and a card."""
    embedding_size: int = 200
    """E': the new width of the embeddings (more than the model's E, at most the teacher's H)."""
    alpha: float = 0.5
    """How much of the teacher's embedding along the new directions the model reads at the start, 0 to 1:
    0 computes what the model did (the new columns are learnt by the training after); 1 the teacher's in full."""
    teacher: str = "multilingual-e5-small"
    """The teacher the model was transplanted from (a folder, or multilingual-e5-small)."""
    eval: list[str] = field(default_factory=list)
    """Dev splits to measure and record on the card, e.g. korsts:dev korquad:val."""
    batch_size: int = 64
    """Sentences per batch when measuring."""


@dataclass
class Widened:
    """The widened embedding tensors and what the card reports."""

    state: dict[str, torch.Tensor]
    variance_kept: dict[str, float]
    """Share of the teacher's centred word-embedding second moment along the old E-1 directions ("before")
    and along the E'-1 directions of the widened model ("after")."""


def principal_directions(centred: torch.Tensor) -> torch.Tensor:
    """``H x (H-1)`` principal directions of the row-centred (float64) ``centred`` within the mean-zero subspace
    (the one LayerNorm keeps), leading first."""
    import torch

    from kalbert.transplant import helmert

    basis = helmert(centred.shape[1]).T
    _, vectors = torch.linalg.eigh(basis.T @ (centred.T @ centred / centred.shape[0]) @ basis)
    return basis @ vectors.flip(1)


def widen_state(state: dict[str, torch.Tensor], teacher_rows: torch.Tensor, teacher_gamma: torch.Tensor,
                embedding_size: int, alpha: float) -> Widened:
    """Widen an AlbertModel state's embeddings to ``embedding_size`` columns (see the module docstring).

    ``teacher_rows`` is the teacher's H-wide embedding of each piece of the model's vocabulary (``V x H``),
    ``teacher_gamma`` its embedding LayerNorm weight.
    """
    import torch

    state = {name: tensor.float() for name, tensor in state.items()}
    word, positions, types = (state[f"{PREFIX}{name}.weight"]
                              for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"))
    old, added = word.shape[1], embedding_size - word.shape[1]
    hidden = teacher_rows.shape[1]
    centred = teacher_rows.double() - teacher_rows.double().mean(dim=1, keepdim=True)
    directions = principal_directions(centred)
    kept, new = directions[:, :old - 1], directions[:, old - 1:old - 1 + added]
    second = (centred ** 2).sum()
    along = (centred @ new).float()
    standard = (along - along.mean(1, keepdim=True)) / along.std(1, unbiased=False, keepdim=True).clamp_min(1e-8)
    # the row's LayerNorm statistics over the old columns, at the average position and type 0
    mean_position = positions.mean(0)
    seen = word + mean_position + types[0]
    spread = seen.std(1, unbiased=False, keepdim=True)
    new_word = seen.mean(1, keepdim=True) - mean_position.mean() - types[0].mean() + spread * standard
    scale = (along.std(1, unbiased=False) * math.sqrt(hidden)
             / (centred @ kept).norm(dim=1).float().clamp_min(1e-8)).median()
    mapping = alpha * float(scale) * (teacher_gamma.double()[:, None] * new).float()
    widened = dict(state)
    widened[f"{PREFIX}word_embeddings.weight"] = torch.cat([word, new_word], 1)
    widened[f"{PREFIX}position_embeddings.weight"] = torch.cat(
        [positions, positions.mean(1, keepdim=True).expand(-1, added)], 1)
    widened[f"{PREFIX}token_type_embeddings.weight"] = torch.cat(
        [types, types.mean(1, keepdim=True).expand(-1, added)], 1)
    widened[f"{PREFIX}LayerNorm.weight"] = torch.cat([state[f"{PREFIX}LayerNorm.weight"], torch.ones(added)])
    widened[f"{PREFIX}LayerNorm.bias"] = torch.cat([state[f"{PREFIX}LayerNorm.bias"], torch.zeros(added)])
    widened[MAPPING] = torch.cat([state[MAPPING], mapping], 1)
    variance = {"before": float(((centred @ kept) ** 2).sum() / second),
                "after": float(((centred @ directions[:, :embedding_size - 1]) ** 2).sum() / second)}
    return Widened({name: tensor.contiguous() for name, tensor in widened.items()}, variance)


def teacher_rows_for(folder: Path, teacher: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The teacher's embedding of each piece of ``folder``'s vocabulary, as ``kalbert transplant`` maps them,
    and the teacher's embedding LayerNorm weight."""
    import torch

    from kalbert.transplant import load_teacher_transformer, map_pieces, mean_rows, teacher_transformer_folder
    from kalbert.vocab.files import load_processor

    model, tokenizer, _ = load_teacher_transformer(teacher_transformer_folder(teacher))
    embeddings = model.embeddings
    with torch.no_grad():
        rows = mean_rows(embeddings.word_embeddings.weight, map_pieces(load_processor(folder / SPIECE), tokenizer).ids)
    return rows, embeddings.LayerNorm.weight.detach()


def _check_model(folder: Path, embedding_size: int) -> dict:
    """The model's config.json, refused unless it is an ALBERT narrower than ``embedding_size``."""
    if not is_sentence_model(folder) or not (folder / "config.json").is_file() or not (folder / WEIGHTS).is_file():
        raise KalbertError(f"{folder} is not a sentence ALBERT with its transformer at the root",
                           "widen a folder made by `kalbert sbert export|train|distill`")
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "albert":
        raise KalbertError(f"{folder} holds a '{config.get('model_type')}' model, not ALBERT",
                           "only ALBERT's factorised embeddings can be widened")
    if not config["embedding_size"] < embedding_size <= config["hidden_size"]:
        raise KalbertError(f"--embedding-size {embedding_size} must be above the model's {config['embedding_size']} "
                           f"and at most its hidden size {config['hidden_size']}")
    return config


def widen_model(config: WidenConfig, overwrite: bool = False) -> Path:
    """Write ``config.model`` with ``config.embedding_size``-wide embeddings to ``config.out``; return the folder."""
    from safetensors.torch import load_file, save_file
    from sentence_transformers import SentenceTransformer

    from kalbert.transplant import teacher_root

    eval_refs = dev_refs(config.eval)  # before any work: dev splits only
    if not 0.0 <= config.alpha <= 1.0:
        raise KalbertError(f"--alpha {config.alpha} is outside 0..1")
    started = time.perf_counter()
    source = Path(config.model).expanduser()
    model_config = _check_model(source, config.embedding_size)
    refuse_trained_on(source, eval_refs, "--eval")
    rows, gamma = teacher_rows_for(source, config.teacher)
    if rows.shape[0] != model_config["vocab_size"] or gamma.shape[0] != model_config["hidden_size"]:
        raise KalbertError(f"the teacher {config.teacher} does not fit {source}: {rows.shape[0]} pieces of width "
                           f"{gamma.shape[0]} against the model's {model_config['vocab_size']} of width "
                           f"{model_config['hidden_size']}", "pass the teacher the model was transplanted from")
    widened = widen_state(load_file(source / WEIGHTS), rows, gamma, config.embedding_size, config.alpha)
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        drop_derived_files(tmp)
        save_file(widened.state, tmp / WEIGHTS)
        model_config.update(embedding_size=config.embedding_size, dtype="float32")
        (tmp / "config.json").write_text(json.dumps(model_config, indent=2) + "\n", encoding="utf-8")
        model = SentenceTransformer(str(tmp), device="cpu", local_files_only=True)
        meta = read_meta(tmp)
        meta.pop("weights_storage", None)  # the widened weights are stored in float32
        for ref in eval_refs:
            add_metric(meta, "widen", ref, dev_metric(ref), evaluate_dev(model, ref, config.batch_size))
        add_stage(meta, "widen", asdict(config), variance_kept=widened.variance_kept,
                  parameters=sum(t.numel() for t in widened.state.values()),
                  seconds=round(time.perf_counter() - started, 1))
        write_meta_and_card(tmp, meta, module_names(model), model.get_embedding_dimension(), model.max_seq_length,
                            [source, teacher_root(config.teacher)],
                            command_for(config))
    return Path(config.out)
