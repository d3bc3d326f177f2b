"""`kalbert sbert distill`: teacher -> student distillation on parallel sentences and monolingual corpora.

Two sources of rows, mixable in one run:

- **parallel** (Reimers & Gurevych, 2020): for rows (source, translation...), student(source) and
  student(translation) both learn from teacher(source);
- **corpus**: monolingual Korean/Chinese sentences (split, NFC, deduplicated, language-balanced; see
  :mod:`kalbert.teachers.corpus`) that the student learns to embed as a multilingual teacher does; with
  ``max_passages``, whole paragraphs too, a task of their own: the teacher reads them as passages (e5:
  "passage: ", vectors cached apart from its default-prompt ones) and the student with its "document" prompt,
  as ``encode_document`` will read them at search time.

Three losses:

- ``similarity`` (default): the student's in-batch cosine-similarity matrix regresses (MSE) onto the
  teacher's. STS and search only read cosines; it needs no projection (see
  ``benchmarks/results/sentence_distill_losses.md``).
- ``mse``: each student vector regresses onto the teacher's vector (a Dense projection when widths differ).
- ``infonce``: contrastive distillation, student(i) must pick teacher(i) among the batch's teacher vectors.

Teacher vectors come from the sharded, resumable :class:`~kalbert.teachers.cache.EmbeddingCache`.
Held-out rows give the evaluators: agreement of the student's pairwise cosines with the teacher's,
MSE to the teacher's vectors (``mse``/``infonce``) and translation retrieval (parallel rows).
"""

from __future__ import annotations

import logging
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from sentence_transformers.util import cos_sim

from kalbert.artifact import Kind, folder_languages, is_sentence_model, read_meta
from kalbert.config import config_values
from kalbert.data import DATASETS, ParallelSet, assert_trainable, get_spec, load_parallel
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, open_text
from kalbert.lineage import refuse_trained_on
from kalbert.sentence.card import add_metric, add_stage, new_meta
from kalbert.sentence.collapse import ADVICE
from kalbert.sentence.config import DistillConfig
from kalbert.sentence.encoder import load_sentence_model
from kalbert.sentence.evaluate import dev_evaluator, dev_metric, dev_refs
from kalbert.sentence.export import save_sentence_model, set_max_seq_length
from kalbert.sentence.loop import TrainTask, fit
from kalbert.stage import artifact_folder
from kalbert.teachers.backends import Teacher, describe, load_teacher, with_prompt
from kalbert.teachers.cache import EmbeddingCache, open_cache
from kalbert.teachers.corpus import corpus_sentences
from kalbert.training import FitResult, RunFolder
from kalbert.verbs import command_for, verb_for

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
SCRIPTS = {"ko": re.compile(r"[\uac00-\ud7a3\u3131-\u318e]"), "zh": re.compile(r"[\u4e00-\u9fff]"),
           "en": re.compile(r"[A-Za-z]"), "ja": re.compile(r"[\u3040-\u30ff]")}
LETTER = re.compile(r"[^\W\d_]")
DOCUMENT_PROMPT = "document"
"""the student's prompt for passages: the one ``encode_document`` reads first, which sentence-transformers gives
every model ("" where a folder stores none: then passages are read without a prompt)"""


class SimilarityDistillLoss(torch.nn.Module):
    """MSE between the student's in-batch cosine-similarity matrix and the teacher's (widths may differ)."""

    def __init__(self, model: SentenceTransformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: list[dict], labels: torch.Tensor) -> torch.Tensor:
        student = self.model(features[0])["sentence_embedding"]
        return F.mse_loss(cos_sim(student, student), cos_sim(labels, labels))


class ContrastiveDistillLoss(torch.nn.Module):
    """InfoNCE between student and teacher vectors: row i must be closest to teacher vector i of the batch.

    Rows that share a teacher vector (a source and its translation) are not each other's negatives.
    """

    def __init__(self, model: SentenceTransformer, temperature: float = 0.05) -> None:
        super().__init__()
        self.model, self.temperature = model, temperature

    def forward(self, features: list[dict], labels: torch.Tensor) -> torch.Tensor:
        logits = cos_sim(self.model(features[0])["sentence_embedding"], labels) / self.temperature
        same_target = (cos_sim(labels, labels) > 0.9999) & ~torch.eye(len(labels), dtype=torch.bool,
                                                                      device=labels.device)
        logits = logits.masked_fill(same_target, float("-inf"))
        return F.cross_entropy(logits, torch.arange(len(labels), device=labels.device))


@dataclass
class DistillResult:
    out: Path
    metrics: dict[str, float]
    fit: FitResult


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
    """The cosine of every pair of rows (upper triangle, row-major)."""
    return cos_sim(vectors, vectors).numpy()[np.triu_indices(len(vectors), k=1)]


class TeacherAgreement:
    """How close the student is to the teacher on held-out rows: Spearman of its pairwise cosines with the
    teacher's (always) and the negative MSE x100 to the teacher's vectors (when the widths match)."""

    def __init__(self, name: str, texts: list[str], teacher_vectors: np.ndarray, batch_size: int,
                 with_mse: bool, prompt_name: str | None = None) -> None:
        self.texts, self.teacher_vectors, self.batch_size, self.with_mse = texts, teacher_vectors, batch_size, with_mse
        self.prompt_name = prompt_name
        """the student's prompt for these texts, as training reads them (None: its default prompt)"""
        self.teacher_cosines = _upper_cosines(teacher_vectors)
        self.name = name
        self.primary_metric = f"{name}_similarity_spearman"

    def __call__(self, model: SentenceTransformer) -> dict[str, float]:
        from scipy.stats import spearmanr

        vectors = model.encode(self.texts, prompt_name=self.prompt_name, batch_size=self.batch_size,
                               convert_to_numpy=True)
        metrics = {self.primary_metric: float(spearmanr(_upper_cosines(vectors), self.teacher_cosines).statistic)}
        if self.with_mse and vectors.shape[1] == self.teacher_vectors.shape[1]:
            metrics[f"{self.name}_negative_mse"] = -100 * float(((vectors - self.teacher_vectors) ** 2).mean())
        return metrics


@dataclass
class Rows:
    """Training texts with the sentence whose teacher vector each one learns, and the held-out evaluators."""

    texts: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    evaluators: list = field(default_factory=list)
    probe: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    passages: list[str] = field(default_factory=list)
    """corpus paragraphs, each its own target in the passage teacher's cache"""


def _parallel_rows(config: DistillConfig, teacher: Teacher, cache: EmbeddingCache, student_langs: list[str],
                   rows: Rows, with_mse: bool) -> str:
    """Add the parallel training rows and evaluators; return the teacher's source column."""
    from sentence_transformers.sentence_transformer.evaluation import TranslationEvaluator

    sets = {source: read_parallel(source) for source in config.parallel}
    for name, data in sets.items():
        if not data.rows:
            raise KalbertError(f"parallel data {name} has no rows")
        check_columns(name, data)
    source, targets = choose_languages(teacher.languages, student_langs, sets, config.source_lang,
                                       config.target_langs)
    parallel = _rows(sets, source, targets, config.max_rows)
    random.Random(config.loop.seed).shuffle(parallel)
    dev, train = parallel[: config.dev_rows], parallel[config.dev_rows:]
    if not train:
        raise KalbertError(f"only {len(parallel)} parallel rows, all held out for evaluation", "lower --dev-rows")
    cache.fill([src for src, _ in parallel])
    for src, translations in train:
        for text in ([src] if config.learn_source else []) + list(translations.values()):
            rows.texts.append(text)
            rows.targets.append(src)
    batch = config.loop.batch_size
    for lang in targets:
        pairs = [(src, tr[lang]) for src, tr in dev if lang in tr]
        if pairs:
            sources, translations = [p[0] for p in pairs], [p[1] for p in pairs]
            rows.evaluators.append(TeacherAgreement(f"{source}-{lang}", translations, cache.vectors(sources), batch,
                                                    with_mse))
            rows.evaluators.append(TranslationEvaluator(sources, translations, batch_size=batch,
                                                        name=f"{source}-{lang}", write_csv=False))
    rows.probe += [src for src, _ in dev[:128]] + [t for _, tr in dev[:128] for t in tr.values()]
    rows.languages += [lang for lang in targets if lang not in rows.languages]
    rows.counts["parallel_train_rows"], rows.counts["parallel_dev_rows"] = len(train), len(dev)
    return source


def _corpus_rows(config: DistillConfig, teacher: Teacher, cache: EmbeddingCache, student_langs: list[str],
                 rows: Rows, with_mse: bool) -> None:
    """Add monolingual corpus sentences (each its own target) and a held-out agreement evaluator per language."""
    by_lang = corpus_sentences(config.corpus, config.max_sentences, config.loop.seed, cache)
    if "multilingual" not in teacher.languages and set(by_lang) - set(teacher.languages):
        raise KalbertError(f"the {teacher.name} teacher reads {'/'.join(teacher.languages)}, the corpora are "
                           f"{'+'.join(sorted(by_lang))}", "use a multilingual teacher, e.g. multilingual-e5-small")
    if student_langs and set(by_lang) - set(student_langs):
        raise KalbertError(f"the student is a {'+'.join(student_langs)} model, the corpora are "
                           f"{'+'.join(sorted(by_lang))}", "give corpora in the student's languages")
    for lang, sentences in sorted(by_lang.items()):
        dev, train = sentences[: config.dev_rows], sentences[config.dev_rows:]
        rows.texts += train
        rows.targets += train
        rows.evaluators.append(TeacherAgreement(f"corpus-{lang}", dev, cache.vectors(dev), config.loop.batch_size,
                                                with_mse))
        rows.probe += dev[:128]
        rows.counts[f"corpus_{lang}_train_rows"], rows.counts[f"corpus_{lang}_dev_rows"] = len(train), len(dev)
        if lang not in rows.languages:
            rows.languages.append(lang)


def _passage_rows(config: DistillConfig, cache: EmbeddingCache, rows: Rows, with_mse: bool) -> None:
    """Add corpus paragraphs (each its own target, in the passage teacher's ``cache``) and a held-out agreement
    evaluator per language that reads them with the student's document prompt, as training does."""
    by_lang = corpus_sentences(config.corpus, config.max_passages, config.loop.seed, cache, unit="paragraph")
    for lang, passages in sorted(by_lang.items()):
        dev, train = passages[: config.dev_rows], passages[config.dev_rows:]
        rows.passages += train
        rows.evaluators.append(TeacherAgreement(f"passages-{lang}", dev, cache.vectors(dev), config.loop.batch_size,
                                                with_mse, prompt_name=DOCUMENT_PROMPT))
        rows.counts[f"corpus_{lang}_passage_train_rows"] = len(train)
        rows.counts[f"corpus_{lang}_passage_dev_rows"] = len(dev)


def distill_student(config: DistillConfig, overwrite: bool = False) -> DistillResult:
    """Distil ``config.teacher`` into ``config.student`` on parallel and/or corpus rows; save the best student."""
    from sentence_transformers.sentence_transformer.losses import MSELoss
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize

    verb_for(config).check(config_values(config), overwrite)  # before the run folder or any teacher vector
    # how the teacher runs does not change its vectors (cosine >= 0.999): a run may resume with another backend
    run = RunFolder.open(config.out, {k: v for k, v in asdict(config).items() if k != "teacher_backend"})
    if not config.parallel and not config.corpus:
        raise KalbertError("no training sentences", "pass --corpus (e.g. kowiki zh-clue) and/or --parallel "
                           "(e.g. parallel-stsb-train tatoeba-en-ko)")
    if config.max_passages and not config.corpus:
        raise KalbertError("--max-passages samples corpus paragraphs, but no --corpus is given",
                           "pass --corpus (e.g. kowiki zh-clue zh-laws)")
    eval_refs = dev_refs(config.eval)
    for folder in (config.teacher, config.student):
        refuse_trained_on(folder, eval_refs, "--eval")
    for source in config.parallel:
        read_parallel(source)  # refuse bad parallel data before loading any model
    student_path = Path(config.student)
    student = load_sentence_model(student_path, pooling=config.pooling)
    set_max_seq_length(student, config.max_seq_length)
    teacher = load_teacher(config.teacher)
    student_langs = folder_languages(student_path)
    cache = open_cache(teacher, config.cache_dir, config.teacher_backend)
    with_mse = config.loss != "similarity"
    rows = Rows()
    source = _parallel_rows(config, teacher, cache, student_langs, rows, with_mse) if config.parallel else None
    if config.corpus:
        _corpus_rows(config, teacher, cache, student_langs, rows, with_mse)
    passage_cache = None
    if config.max_passages:
        passage_teacher = with_prompt(teacher, "passage")
        # a prompted passage view runs its reference alone (kalbert.teachers.backends.RoleTeacher)
        backend = config.teacher_backend if config.teacher_backend in ("auto", *passage_teacher.backends) else None
        passage_cache = open_cache(passage_teacher, config.cache_dir, backend)
        _passage_rows(config, passage_cache, rows, with_mse)

    width = student.get_embedding_dimension()
    if with_mse and width != teacher.dimension:
        torch.manual_seed(config.loop.seed)
        student.append(Dense(width, teacher.dimension, activation_function=None).to(student.device))
    if config.loss == "mse" and not isinstance(student[-1], Normalize):  # unit-length teacher vectors
        student.append(Normalize())
    losses = {"mse": MSELoss, "infonce": ContrastiveDistillLoss, "similarity": SimilarityDistillLoss}
    loss = losses[config.loss](student)
    tasks = [TrainTask("distill", [rows.texts], cache.vectors(rows.targets), loss, group_by_length=True)]
    if passage_cache is not None:
        tasks.append(TrainTask("distill-passages", [rows.passages], passage_cache.vectors(rows.passages), loss,
                               group_by_length=True, prompt_names=(DOCUMENT_PROMPT,)))
    dev = [dev_evaluator(ref, config.loop.batch_size) for ref in eval_refs]
    selector = "similarity_spearman" if config.loss == "similarity" else "negative_mse"

    def evaluate() -> tuple[float, dict[str, float]]:
        metrics: dict[str, float] = {}
        for evaluator in rows.evaluators + dev:
            metrics.update({k: float(v) for k, v in evaluator(student).items()})
        if dev:
            return float(np.mean([metrics[e.primary_metric] for e in dev])), metrics
        return float(np.mean([v for k, v in metrics.items() if k.endswith(selector)])), metrics

    log.info("distilling %s -> %s on %d rows (%s)", teacher.name, student_path, sum(map(len, tasks)), rows.counts)
    result = fit(student, tasks, evaluate, rows.probe, config.loop, run, config.on_collapse)
    if result.best is None:
        raise KalbertError(f"distillation collapsed before any healthy evaluation "
                           f"({result.history[-1].collapse.describe()})", f"nothing was written; try: {ADVICE}")

    meta = (read_meta(student_path) if is_sentence_model(student_path) else {}) or new_meta([], str(student_path))
    meta["languages"] = student_langs or rows.languages
    meta["teacher"] = {**describe(teacher), "source_lang": source}
    passages = {} if passage_cache is None else {"passage_teacher": describe(passage_cache.teacher),
                                                 "passage_teacher_encoding": passage_cache.fills}
    add_stage(meta, "distill", asdict(config), steps=result.steps, seconds=round(result.seconds, 1),
              best_step=result.best.step, stopped_for_collapse=result.stopped_for_collapse,
              **result.precision_record(), **rows.counts, teacher_encoding=cache.fills, **passages)
    splits = {e.primary_metric: ref for ref, e in zip(eval_refs, dev, strict=True)}
    kept = {k: v for k, v in result.best.metrics.items()
            if k in splits or k.endswith(("negative_mse", "similarity_spearman", "mean_accuracy"))}
    for key, value in kept.items():
        if key in splits:
            add_metric(meta, "distill", splits[key], dev_metric(splits[key]), value)
        else:
            add_metric(meta, "distill", "held-out distillation rows", key, value)
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        spiece = student_path if (student_path / "spiece.model").is_file() else None
        save_sentence_model(student, tmp, meta, spiece, [student_path, config.teacher],
                            command_for(config))
        atomic_write_json(tmp / "training_log.json", {"stage": "distill", "history": result.records()})
    run.remove()
    return DistillResult(Path(config.out), kept, result)
