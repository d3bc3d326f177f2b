"""References -> typed rows: the one way a verb gets its training rows (:func:`training_rows`).

Each reference becomes rows of its kind (:mod:`kalbert.rows.pairs`, :mod:`kalbert.rows.question_passages`); a
teacher mines the question -> passage rows' hard negatives among all of the split's rows, the rows are capped,
and a score teacher labels the rows kept. The teachers and pair files are checked before: none may come from a
split the run evaluates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kalbert.errors import KalbertError
from kalbert.lineage import refuse_trained_on
from kalbert.rows.config import RowsConfig
from kalbert.rows.negatives import MinedNegatives, NegativeMiner
from kalbert.rows.pairs import graded_pairs, nli_rows, paraphrase_rows, translation_pairs
from kalbert.rows.question_passages import question_passage_rows
from kalbert.rows.references import FILE, TrainingRef, repeat_counts
from kalbert.rows.sets import GradedPairs, RankedRows, RowSet
from kalbert.rows.teacher_scores import TeacherScores


@dataclass
class TrainingRows:
    """A verb's training rows, one set per reference, and what the miner changed."""

    sets: list[RowSet]
    mined: list[MinedNegatives] | None = None
    """one report per mined set; None when no miner ran"""

    def record(self) -> dict:
        """What the model's record says of the rows beyond its config."""
        return {} if self.mined is None else {"mined_negatives": [report.record() for report in self.mined]}


def check_rows(refs: list[TrainingRef], config: RowsConfig, evaluated: list[str], role: str) -> None:
    """What the rows settings can get wrong, each in one line, before a model or teacher loads: a ``--repeat`` that
    names no training set, or a teacher or a pair file's grader trained on a split ``evaluated`` (as ``role``, e.g.
    "--eval") scores: rows they pick or grade would carry it into training."""
    repeat_counts(config.repeat, refs)
    teachers = [t for t in (config.negative_miner, config.score_teacher) if t]
    for source in [*teachers, *(ref.name for ref in refs if ref.split == FILE)]:
        refuse_trained_on(source, evaluated, role)


def _rows(ref: TrainingRef, config: RowsConfig, limit: int | None, languages: Sequence[str]) -> RowSet:
    """The rows of one reference as its kind makes them, before mining, caps and scores."""
    if ref.kind == "sts" or (ref.kind == "pairs" and config.pair_loss == "graded"):
        return graded_pairs(ref)
    if ref.kind == "pairs":
        return paraphrase_rows(ref)
    if ref.kind == "nli":
        return nli_rows(ref)
    if ref.kind == "parallel":
        return translation_pairs(ref.name, list(languages))
    return question_passage_rows(ref, min(config.corpus_rows, limit) if limit else config.corpus_rows)


def training_rows(refs: list[TrainingRef], config: RowsConfig, limit: int | None = None,
                  languages: Sequence[str] = (), batch_size: int = 32) -> TrainingRows:
    """The rows of each of ``refs``: graded pairs, or ranked rows with their prompt roles, the question -> passage
    rows' negatives mined by ``config.negative_miner`` and their vectors from ``config.score_teacher`` when named.
    ``limit`` keeps the first rows of each set (of a ranked set, that many with a hard negative and that many
    without); ``languages`` are the model's, which parallel sets pair; teachers encode ``batch_size`` texts at a
    time. Sets that ``config.repeat`` names hold their rows that many times."""
    repeats = repeat_counts(config.repeat, refs)
    miner = (NegativeMiner(config.negative_miner, config.negative_margin, batch_size)
             if config.negative_miner else None)
    scores = TeacherScores(config.score_teacher, config.score_temperature, batch_size) if config.score_teacher else None
    sets: list[RowSet] = []
    for ref in refs:
        rows = _rows(ref, config, limit, languages)
        if isinstance(rows, GradedPairs):
            rows = GradedPairs(ref, rows.left[:limit], rows.right[:limit], rows.scores[:limit]) if limit else rows
        else:
            question_passages = ref.kind == "qa"
            if question_passages and miner is not None:
                mined = miner(list(zip(rows.anchors, rows.positives, rows.negatives, strict=True)), ref.lang or "")
                rows = RankedRows(ref, rows.anchors, rows.positives, [n for _, _, n in mined], rows.roles)
            rows = rows.capped(limit)
            if question_passages and scores is not None:
                rows.teacher = scores.row_vectors(rows, ref.lang or "")
        if not len(rows):
            raise KalbertError(f"{rows.label} has no rows to train on")
        sets.append(rows.repeated(repeats[ref]) if ref in repeats else rows)
    return TrainingRows(sets, None if miner is None else miner.reports)
