"""ALBERT checkpoint -> SentenceTransformer folder (Transformer + Pooling [+ Dense] [+ Normalize]).

The folder is written by sentence-transformers itself and checked by reloading it the way a user
will (``SentenceTransformer(path)``, offline), so by construction
plain sentence-transformers and kalbert's :func:`~kalbert.sentence.encode` give the same vectors.
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from kalbert.artifact import MODULES_FILE, Kind, folder_languages, is_sentence_model, read_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, refuse_existing_output
from kalbert.sentence.card import add_metric, add_stage, new_meta, write_meta_and_card
from kalbert.sentence.evaluate import evaluate_sts, selection_refs
from kalbert.sentence.folder import module_names
from kalbert.stage import artifact_folder
from kalbert.verbs import command_for
from kalbert.vocab.files import SPIECE
from kalbert.weights import check_weight_files, store_float16

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
Pooling = Literal["mean", "cls"]
TOKENIZER_FILES = ("tokenizer_config.json",)
PROBE = ["배우들의 연기도 좋았다.", "一架飞机正在起飞。", "A plane is taking off."]


@dataclass
class ExportConfig:
    """How to wrap an ALBERT checkpoint as a sentence model."""

    model: str
    """ALBERT checkpoint folder (config.json + weights), e.g. the output of ``kalbert pretrain``."""
    out: str
    """Output folder: a SentenceTransformer folder with kalbert.json and a model card."""
    tokenizer: str | None = None
    """Vocab folder to take the tokenizer from when the checkpoint has none (else the checkpoint's own)."""
    pooling: Pooling = "mean"
    """Token pooling: mean over real tokens (recommended for ALBERT) or the [CLS] vector."""
    max_seq_length: int = 128
    """Tokens per sentence; longer sentences are truncated."""
    dense_dim: int | None = None
    """Add a linear layer to this size after pooling (e.g. to match a teacher); None: no layer."""
    normalize: bool = False
    """Add a Normalize module so embeddings are unit length (dot product == cosine)."""
    eval: list[str] = field(default_factory=list)
    """STS splits to measure and record on the card, e.g. ["korsts:dev"]."""
    batch_size: int = 64
    """Sentences per batch when measuring."""
    languages: list[str] | None = None
    """Languages the model serves (card, teacher checks); default: from the checkpoint's or vocab's kalbert.json."""


def check_checkpoint(path: str | Path, tokenizer: str | Path | None = None) -> tuple[Path, Path]:
    """The checkpoint folder and the folder its tokenizer comes from, or a one-line error saying what is missing."""
    path = Path(path).expanduser()
    if not (path / "config.json").is_file():
        what = "does not exist" if not path.exists() else "has no config.json"
        raise KalbertError(f"checkpoint {path} {what}",
                           "pass a folder written by `kalbert pretrain` or save_pretrained")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise KalbertError(f"{path / 'config.json'} is not valid JSON: {exc}") from None
    if config.get("model_type") != "albert":
        raise KalbertError(f"{path} holds a '{config.get('model_type')}' model, not ALBERT",
                           "kalbert sbert export wraps ALBERT checkpoints; load other models with SentenceTransformer")
    check_weight_files(path)
    source = Path(tokenizer).expanduser() if tokenizer else path
    has_tokenizer = (source / "tokenizer_config.json").is_file() and (
        (source / "tokenizer.json").is_file() or (source / SPIECE).is_file())
    if not has_tokenizer:
        raise KalbertError(
            f"{source} has no tokenizer (tokenizer_config.json with tokenizer.json or {SPIECE})",
            "pass --tokenizer VOCAB_DIR (the `kalbert vocab build` folder the model was trained with)",
        )
    return path, source


def _check_vocab_size(model: SentenceTransformer, checkpoint: Path) -> None:
    tokenizer = model.tokenizer
    embeddings = model[0].auto_model.get_input_embeddings().num_embeddings
    if len(tokenizer) > embeddings:
        raise KalbertError(f"the tokenizer has {len(tokenizer)} pieces but {checkpoint} has {embeddings} embeddings",
                           "pass the vocab folder the checkpoint was trained with (--tokenizer)")


def build_sentence_model(model: str | Path, pooling: Pooling = "mean", max_seq_length: int = 128,
                         dense_dim: int | None = None, normalize: bool = False, tokenizer: str | Path | None = None,
                         device: str | None = None) -> SentenceTransformer:
    """An in-memory SentenceTransformer around an ALBERT checkpoint (nothing is written)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling as PoolingModule

    checkpoint, tokenizer_dir = check_checkpoint(model, tokenizer)
    transformer = Transformer(str(checkpoint), max_seq_length=max_seq_length,
                              tokenizer_name_or_path=str(tokenizer_dir) if tokenizer_dir != checkpoint else None,
                              processor_kwargs={"local_files_only": True},
                              model_kwargs={"local_files_only": True}, config_kwargs={"local_files_only": True})
    width = transformer.get_embedding_dimension()
    modules = [transformer, PoolingModule(width, pooling)]
    if dense_dim:
        modules.append(Dense(width, dense_dim, activation_function=None))
    if normalize:
        modules.append(Normalize())
    sentence_model = SentenceTransformer(modules=modules, device=device)
    _check_vocab_size(sentence_model, checkpoint)
    set_max_seq_length(sentence_model, max_seq_length)
    return sentence_model


def set_max_seq_length(model: SentenceTransformer, length: int) -> int:
    """Set the token limit, capped at the checkpoint's position embeddings (longer input cannot be encoded)."""
    positions = getattr(model[0].auto_model.config, "max_position_embeddings", length)
    if length > positions:
        log.warning("max_seq_length %d exceeds the model's %d positions; using %d", length, positions, positions)
    model.max_seq_length = min(length, positions)
    return model.max_seq_length


def set_prompts(model: SentenceTransformer, query: str | None = None, passage: str | None = None) -> None:
    """Store the query and document prompts in the model, so that a plain ``SentenceTransformer(path)`` load
    gives ``encode_query`` / ``encode_document`` the text the model was trained with; None keeps a prompt as is."""
    for name, prompt in (("query", query), ("document", passage)):
        if prompt is not None:
            model.prompts[name] = prompt


def save_sentence_model(model: SentenceTransformer, folder: Path, meta: dict, spiece_from: Path | None,
                        parents: Iterable[str | Path] = (), command: str | None = None) -> None:
    """Write the model, its spiece.model, kalbert.json (naming ``parents``) and card into ``folder``, then prove
    it reloads equal."""
    model.save(str(folder), create_model_card=False)
    if spiece_from is not None and (spiece_from / SPIECE).is_file():
        shutil.copyfile(spiece_from / SPIECE, folder / SPIECE)
    write_meta_and_card(folder, meta, module_names(model), model.get_embedding_dimension(),
                        model.max_seq_length, parents, command)
    check_roundtrip(model, folder)


def check_roundtrip(model: SentenceTransformer, folder: Path, atol: float = 1e-4) -> None:
    """Reload ``folder`` with plain SentenceTransformer and compare embeddings of a few probe sentences."""
    from sentence_transformers import SentenceTransformer

    reloaded = SentenceTransformer(str(folder), device=str(model.device), local_files_only=True)
    ours = model.encode(PROBE, convert_to_numpy=True)
    theirs = reloaded.encode(PROBE, convert_to_numpy=True)
    gap = float(np.abs(ours - theirs).max())
    if gap > atol:
        raise RuntimeError(f"saved sentence model differs from the in-memory one by {gap:g} (> {atol})")


def export_sentence_model(config: ExportConfig, overwrite: bool = False) -> Path:
    """Export ``config.model`` as a SentenceTransformer folder at ``config.out``; return the folder."""
    selection_refs(config.eval)  # fail before any work
    refuse_existing_output(config.out, overwrite)
    started = time.perf_counter()
    checkpoint, tokenizer_dir = check_checkpoint(config.model, config.tokenizer)
    model = build_sentence_model(checkpoint, config.pooling, config.max_seq_length, config.dense_dim,
                                 config.normalize, tokenizer_dir)
    languages = config.languages or folder_languages(checkpoint) or folder_languages(tokenizer_dir)
    meta = new_meta(languages, str(checkpoint))
    meta["pretraining"] = read_meta(checkpoint) or None
    for ref in config.eval:
        add_metric(meta, "export", ref, "spearman_cosine", evaluate_sts(model, ref, config.batch_size))
    add_stage(meta, "export", asdict(config), seconds=round(time.perf_counter() - started, 1))
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        save_sentence_model(model, tmp, meta, tokenizer_dir, [checkpoint],
                            command_for(config))
    return Path(config.out)


def export_half_weights(model: str | Path, out: str | Path, max_seq_length: int | None = None,
                        overwrite: bool = False) -> Path:
    """Copy a sentence-model folder with its weights stored as float16 (``kalbert.weights``); the copy must give
    the original's embeddings (cosine >= 0.9999 on probe sentences). ``max_seq_length`` sets the copy's token
    limit, so a model trained on shorter passages can ship reading longer ones (None keeps the original's)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import pairwise_cos_sim

    source = Path(model).expanduser()
    if not is_sentence_model(source):
        raise KalbertError(f"{source} is not a sentence model (no {MODULES_FILE})",
                           "--weights float16 takes a folder made by `kalbert sbert export|train|distill`")
    refuse_existing_output(out, overwrite)
    check_weight_files(source)
    original = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    with artifact_folder(out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        store_float16(tmp)
        if max_seq_length is not None:
            write_token_limit(tmp, set_max_seq_length(original, max_seq_length))
        reference = original.encode(PROBE, convert_to_numpy=True)
        copy = SentenceTransformer(str(tmp), device="cpu", local_files_only=True)
        if copy.max_seq_length != original.max_seq_length:
            raise RuntimeError(f"{tmp} reads {copy.max_seq_length} tokens, expected {original.max_seq_length}")
        if next(copy.parameters()).dtype != torch.float32:
            raise RuntimeError(f"{tmp} loads as {next(copy.parameters()).dtype}, expected float32")
        ours = copy.encode(PROBE, convert_to_numpy=True)
        cosine = float(pairwise_cos_sim(ours, reference).min())
        if cosine < 0.9999:
            raise KalbertError(f"float16 weights change the embeddings of {source} (cosine {cosine:.6f})",
                               "keep the float32 folder")
        meta = read_meta(tmp)
        meta["weights_storage"] = {"dtype": "float16", "computed_in": "float32", "min_cosine_vs_float32": cosine}
        config = {"model": str(source), "out": str(out)}
        command = ["kalbert", "sbert", "export", "--model", str(source), "--out", str(out), "--weights", "float16"]
        if max_seq_length is not None:
            config["max_seq_length"] = copy.max_seq_length
            command += ["--max-seq-length", str(copy.max_seq_length)]
        add_stage(meta, "half-weights", config)
        write_meta_and_card(tmp, meta, module_names(copy), copy.get_embedding_dimension(), copy.max_seq_length,
                            [source], shlex.join(command))
    return Path(out)


def write_token_limit(folder: Path, max_seq_length: int) -> None:
    """Store ``max_seq_length`` where a saved model keeps its token limit: the tokenizer's ``model_max_length`` in
    tokenizer_config.json (what sentence-transformers reads) and, where the fast tokenizer stores a truncation,
    its ``max_length`` in tokenizer.json (what a plain tokenizer call applies)."""
    path = folder / "tokenizer_config.json"
    if not path.is_file():
        raise KalbertError(f"{folder} has no tokenizer_config.json to hold the token limit",
                           "export the model with `kalbert sbert export|train|distill` first")
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings["model_max_length"] = max_seq_length
    atomic_write_json(path, settings)
    fast = folder / "tokenizer.json"
    tokenizer = json.loads(fast.read_text(encoding="utf-8")) if fast.is_file() else {}
    if tokenizer.get("truncation"):
        tokenizer["truncation"]["max_length"] = max_seq_length
        atomic_write_json(fast, tokenizer)
