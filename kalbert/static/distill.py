"""`kalbert static distill`: a static model from a teacher's view of every vocabulary piece (model2vec-style).

Each ordinary piece of a kalbert vocabulary is embedded as text (its "▁" word-start mark dropped)
through the teacher's own tokenizer and model, with no prompt, as model2vec embeds its vocabulary;
special pieces and the bare "▁" get zero vectors. PCA reduces the vectors to ``dim`` (its mean and
axes are kept: ``kalbert static train`` projects teacher sentence vectors with them), and each piece's
row is scaled by its frequency weight (:mod:`kalbert.static.weighting`). Unlike model2vec's own
distillation the tokenizer stays kalbert's, so Korean morphemes and Chinese words stay whole pieces.

A teacher whose tokenizer reads a piece as unknown would give all such pieces one vector; they get zero
vectors instead (``kalbert static train`` learns them from corpus sentences), and more than
``max_unknown`` of them is an error that names some of them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kalbert import __version__
from kalbert.artifact import Kind, folder_languages
from kalbert.errors import KalbertError
from kalbert.io import refuse_existing_output, sha256_file
from kalbert.sentence.card import add_metric, add_stage
from kalbert.sentence.evaluate import dev_metric
from kalbert.stage import artifact_folder
from kalbert.static.evaluate import DevScores, eval_refs
from kalbert.static.model import StaticVectors, save_static_model, to_sentence_transformer, vocab_files
from kalbert.static.weighting import Weighting, ordinary_pieces, piece_weights
from kalbert.teachers.backends import NAMED_TEACHERS, Teacher, describe, load_teacher
from kalbert.teachers.encoders import unique_rows
from kalbert.verbs import command_for
from kalbert.vocab.files import SPIECE, load_model_proto

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
WORD_START = "\u2581"


@dataclass
class StaticDistillConfig:
    """Static piece vectors distilled from a teacher on a kalbert vocabulary."""

    vocab: str
    """Vocabulary folder (kalbert vocab build) whose pieces get vectors, e.g. vocab/ko-zh-48k."""
    out: str
    """Output static-model folder."""
    teacher: str = "multilingual-e5-small"
    """Teacher: multilingual-e5-small, all-MiniLM-L6-v2, or a SentenceTransformer folder/hub id."""
    dim: int = 256
    """Dimensions kept by PCA (at most the teacher's width)."""
    weighting: Weighting = "sif"
    """Piece weights a/(a+p): sif takes p from the vocabulary's unigram scores, zipf from the piece's rank; none."""
    sif_a: float = 1e-4
    """The a of a/(a+p): smaller discounts frequent pieces more."""
    batch_size: int = 256
    """Pieces per teacher batch."""
    max_unknown: float = 0.1
    """Share of pieces the teacher's tokenizer may read as unknown (they get zero vectors, which `kalbert static
    train` fills in from corpus sentences); more is an error. multilingual-e5-small cannot read about 6% of
    vocab/ko-zh-48k, mostly rare Hangul syllables and Chinese characters."""
    eval: list[str] | None = None
    """STS dev splits scored and recorded (default: korsts:dev for Korean, stsb-zh:dev for Chinese)."""


def piece_texts(spiece: Path) -> list[str]:
    """Each piece as the text a teacher reads: "▁" dropped, "" for special pieces and the bare "▁"."""
    proto = load_model_proto(spiece)
    ordinary = ordinary_pieces(proto)
    return [piece.piece.replace(WORD_START, " ").strip() if ordinary[i] else "" for i, piece in enumerate(proto.pieces)]


def teacher_model(teacher: Teacher) -> SentenceTransformer:
    """The teacher's SentenceTransformer: piece embedding needs its tokenizer and model, not only ``encode``."""
    from sentence_transformers import SentenceTransformer

    model = getattr(teacher, "model", None)
    if not isinstance(model, SentenceTransformer):
        raise KalbertError(f"the {teacher.name} teacher is not a SentenceTransformer model, so its pieces "
                           "cannot be embedded", "use multilingual-e5-small or a SentenceTransformer folder")
    return model


def unknown_pieces(model: SentenceTransformer, texts: list[str]) -> list[int]:
    """Indices of non-empty texts the teacher's tokenizer reads as nothing but unknown and blank tokens
    (a bare word-start mark such as SentencePiece's "▁" carries no content)."""
    tokenizer = model.tokenizer
    unk = getattr(tokenizer, "unk_token_id", None)
    blank: dict[int, bool] = {}

    def empty(token: int) -> bool:
        if token not in blank:
            blank[token] = token == unk or not tokenizer.decode([token]).strip()
        return blank[token]

    wanted = [i for i, text in enumerate(texts) if text]
    ids = tokenizer([texts[i] for i in wanted], add_special_tokens=False)["input_ids"]
    return [i for i, row in zip(wanted, ids, strict=True) if all(empty(token) for token in row)]


def check_unknown(teacher: Teacher, texts: list[str], unknown: list[int], max_share: float) -> None:
    """A one-line error when the teacher cannot read more than ``max_share`` of the pieces."""
    total = sum(bool(text) for text in texts)
    if len(unknown) > max_share * total:
        examples = ", ".join(repr(texts[i]) for i in unknown[:8])
        raise KalbertError(
            f"the {teacher.name} teacher's tokenizer reads {len(unknown)} of {total} vocabulary pieces as unknown "
            f"(e.g. {examples})",
            f"use a teacher whose vocabulary covers the languages, e.g. {NAMED_TEACHERS[0]}, or raise --max-unknown "
            f"above {len(unknown) / total:.3f} to give those pieces zero vectors")
    if unknown:
        log.warning("%d pieces the teacher cannot read get zero vectors", len(unknown))


def pca(vectors: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and the ``dim`` principal axes [dim, width] of ``vectors``, signs fixed (largest entry positive)
    so that reruns give identical files."""
    mean = vectors.mean(axis=0)
    _, _, axes = np.linalg.svd(vectors - mean, full_matrices=False)
    axes = axes[:dim]
    signs = np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)])
    return mean.astype(np.float32), (axes * signs[:, None]).astype(np.float32)


def embed_pieces(model: SentenceTransformer, texts: list[str], keep: np.ndarray, batch_size: int) -> np.ndarray:
    """Teacher vectors [keep.sum(), width] of the kept texts, each distinct text encoded once, no prompt."""
    kept = [text for text, flag in zip(texts, keep, strict=True) if flag]
    return unique_rows(lambda unique: model.encode(unique, batch_size=batch_size, prompt="", convert_to_numpy=True,
                                                   show_progress_bar=True), kept)


def new_meta(languages: list[str], vocab: Path, vocab_path: str, static: StaticVectors, teacher: Teacher,
             config: StaticDistillConfig) -> dict[str, Any]:
    return {"kalbert_version": __version__, "kind": Kind.STATIC_MODEL, "languages": languages,
            "dimension": static.dim, "vocab": {"path": vocab_path, "size": len(static.weights),
                                                "spiece_sha256": sha256_file(vocab / SPIECE)},
            "teacher": describe(teacher), "weighting": {"scheme": config.weighting, "sif_a": config.sif_a},
            "stages": [], "metrics": []}


def distill_static(config: StaticDistillConfig, overwrite: bool = False) -> Path:
    """Embed every piece of ``config.vocab`` with the teacher, reduce, weight, and write the static model."""
    started = time.perf_counter()
    refuse_existing_output(config.out, overwrite)
    vocab = vocab_files(config.vocab)
    languages = folder_languages(vocab)
    refs = eval_refs(config.eval, languages)
    texts = piece_texts(vocab)
    teacher = load_teacher(config.teacher)
    model = teacher_model(teacher)
    if config.dim > teacher.dimension:
        raise KalbertError(f"--dim {config.dim} is wider than the {teacher.name} teacher's {teacher.dimension}-d "
                           "vectors", f"pass --dim {teacher.dimension} or less")
    unknown = unknown_pieces(model, texts)
    check_unknown(teacher, texts, unknown, config.max_unknown)
    keep = np.array([bool(text) for text in texts])
    keep[unknown] = False
    if keep.sum() <= config.dim:
        raise KalbertError(f"only {keep.sum()} pieces to reduce to {config.dim} dimensions", "lower --dim")
    log.info("embedding %d pieces of %s with %s", keep.sum(), vocab, teacher.name)
    embedded = embed_pieces(model, texts, keep, config.batch_size).astype(np.float64)
    mean, axes = pca(embedded, config.dim)
    vectors = np.zeros((len(texts), config.dim), dtype=np.float32)
    vectors[keep] = (embedded - mean) @ axes.T
    static = StaticVectors(vectors, piece_weights(vocab, config.weighting, config.sif_a), mean, axes, vocab)

    meta = new_meta(languages, vocab, config.vocab, static, teacher, config)
    scores = DevScores(refs)(to_sentence_transformer(static)) if refs else {}
    add_stage(meta, "distill", asdict(config), pieces_embedded=int(keep.sum()), pieces_unknown=len(unknown),
              seconds=round(time.perf_counter() - started, 1))
    for ref, score in scores.items():
        add_metric(meta, "distill", ref, dev_metric(ref), score)
    with artifact_folder(config.out, Kind.STATIC_MODEL, overwrite=overwrite) as tmp:
        save_static_model(static, tmp, meta, [vocab, config.teacher], command_for(config))
    return Path(config.out)
