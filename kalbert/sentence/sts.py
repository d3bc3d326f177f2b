"""`kalbert sbert sts`: train a sentence model on graded STS pairs, NLI-style pairs and question -> passage pairs.

Graded pairs (KorSTS, STS-B zh, CNSD) train with CoSENT (default), AnglE or cosine-MSE on score/5.
NLI sets (KorNLI xnli dev, OCNLI) and paraphrase sets (AFQMC, ATEC) add (anchor, positive[, hard
negative]) rows trained with in-batch negatives (MultipleNegativesRankingLoss, or its cached variant,
``mini_batch_size`` rows encoded at a time, when a batch outgrows memory); with ``pair_loss="graded"``
a paraphrase set's pairs, non-paraphrases included, train like graded pairs scored 1 or 0 instead. A
graded-pair TSV file (``kalbert sbert mine`` writes them) trains like a graded set if no evaluation
sentence is in it. QA sets (KorQuAD, CMRC 2018, DRCD train articles) add (question, paragraph, the next
paragraph of its article, or the paragraph a teacher picks with ``negative_miner``: :mod:`kalbert.sentence.negatives`)
rows with in-batch negatives, encoded with the model's query and document prompts; KoBEST BoolQ's questions train
the same way, each with its passage (yes and no questions alike: both are about it).
Every epoch (or ``eval_steps``) the model is scored on the named dev splits (STS Spearman, or nDCG@10 on a QA
set's val articles), checked for collapse, and the best-scoring weights are what is saved.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kalbert.artifact import Kind, folder_languages, read_meta
from kalbert.data import (
    get_spec,
    load_graded,
    load_nli_triplets,
    load_pairs,
    training_split,
    trains_as,
)
from kalbert.data.heldout import is_pairs_file, load_clean_sts_file
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, refuse_existing_output
from kalbert.lineage import refuse_trained_on
from kalbert.sentence.card import add_metric, add_stage, new_meta
from kalbert.sentence.collapse import ADVICE
from kalbert.sentence.config import CorpusRows, PairLoss, STSConfig, STSLoss
from kalbert.sentence.corpus_questions import question_passages
from kalbert.sentence.encoder import load_sentence_model
from kalbert.sentence.evaluate import dev_evaluator, dev_metric, dev_refs, evaluate_sts, parse_sts_ref
from kalbert.sentence.export import save_sentence_model, set_max_seq_length, set_prompts
from kalbert.sentence.folder import is_sentence_model
from kalbert.sentence.loop import TrainTask, fit
from kalbert.sentence.negatives import NegativeMiner
from kalbert.sentence.score_distill import ScoreDistillLoss, TeacherScores
from kalbert.stage import artifact_folder
from kalbert.training import FitResult, RunFolder
from kalbert.verbs import command_for

log = logging.getLogger(__name__)
TRAINABLE_KINDS = ("sts", "nli", "pairs", "qa", "corpus")
PROBE_SENTENCES = 256
FILE = "file"
"""the split of a --train entry that is a graded-pair file, not a registered data set"""


@dataclass
class STSResult:
    """Where the model went and how it scored."""

    out: Path
    dev: float
    test: dict[str, float]
    fit: FitResult
    dev_splits: int = 1


def _train_refs(refs: list[str], eval_refs: list[str]) -> list[tuple[str, str]]:
    resolved = [(ref, FILE) if is_pairs_file(ref) else training_split(ref, TRAINABLE_KINDS, "--train", eval_refs)
                for ref in refs]
    if not resolved:
        raise KalbertError("no training data", "pass --train, e.g. --train korsts")
    return resolved


def _sentences(evaluator) -> list[str]:
    """The texts an evaluator encodes, for the collapse probe."""
    if hasattr(evaluator, "sentences1"):
        return evaluator.sentences1 + evaluator.sentences2
    return list(evaluator.queries) + list(evaluator.corpus)


def _cap(rows: list, limit: int | None) -> list:
    return rows[:limit] if limit else rows


def _graded_task(model, name: str, split: str, loss_name: STSLoss, limit: int | None) -> TrainTask:
    """A graded-pair file, STS set or (``pair_loss="graded"``) paraphrase-pair set, scores in [0, 1], trained
    with the graded-pair loss."""
    from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss, CosineSimilarityLoss

    if split == FILE:
        label, rows = name, [(p.sentence1, p.sentence2, p.score / 5.0) for p in load_clean_sts_file(name)]
    else:
        label = f"{name}:{split}" + ("/graded" if get_spec(name).kind == "pairs" else "")
        rows = load_graded(name, split)
    rows = _cap(rows, limit)
    loss = {"cosent": CoSENTLoss, "angle": AnglELoss, "cosine": CosineSimilarityLoss}[loss_name](model)
    return TrainTask(label, [[a for a, _, _ in rows], [b for _, b, _ in rows]],
                     np.array([score for _, _, score in rows], dtype=np.float32), loss)


def _ranking_tasks(model, name: str, split: str, kind: str, limit: int | None,
                   miner: NegativeMiner | None = None, mini_batch_size: int | None = None,
                   scores: TeacherScores | None = None,
                   corpus_rows: CorpusRows = "inverse-cloze") -> list[TrainTask]:
    """NLI: (premise, entailed, contradicted) triplets, else (premise, entailed); pairs: positives only; QA:
    (question, its paragraph, a neighbouring paragraph or the ``miner``'s negative), encoded with the query and
    document prompts, and labelled with the ``scores`` teacher's vectors when given (:class:`ScoreDistillLoss`);
    ``mini_batch_size`` rows at a time when given (GradCache)."""
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    prompts: tuple[str | None, ...] = ()
    if kind == "pairs":
        groups = {2: [(p.sentence1, p.sentence2) for p in load_pairs(name, split) if p.label == 1]}
    else:
        triplets = (question_passages(name, split, limit, corpus_rows) if kind == "qa"
                    else load_nli_triplets(name, split))
        if kind == "qa" and miner is not None:
            triplets = miner(triplets, get_spec(name).lang)
        groups = {2: [(a, p) for a, p, n in triplets if n is None], 3: [t for t in triplets if t[2] is not None]}
        prompts = ("query", "document", "document") if kind == "qa" else ()
    loss = (CachedMultipleNegativesRankingLoss(model, mini_batch_size=mini_batch_size) if mini_batch_size
            else MultipleNegativesRankingLoss(model))
    tasks = []
    for width, rows in groups.items():
        rows = _cap(rows, limit)
        if rows:
            columns = [[row[c] for row in rows] for c in range(width)]
            if kind == "qa" and scores is not None:
                tasks.append(TrainTask(f"{name}:{split}/{width}", columns, scores.labels(columns, get_spec(name).lang),
                                       ScoreDistillLoss(model, scores.temperature), prompt_names=prompts[:width],
                                       distinct_candidates=True))
                continue
            tasks.append(TrainTask(f"{name}:{split}/{width}", columns, np.zeros(len(rows), dtype=np.float32), loss,
                                   prompt_names=prompts[:width], distinct_candidates=True))
    return tasks


def build_tasks(model, refs: list[tuple[str, str]], loss: STSLoss, limit: int | None,
                pair_loss: PairLoss = "mnrl", miner: NegativeMiner | None = None,
                mini_batch_size: int | None = None, scores: TeacherScores | None = None,
                corpus_rows: CorpusRows = "inverse-cloze") -> list[TrainTask]:
    tasks: list[TrainTask] = []
    for name, split in refs:
        kind = "sts" if split == FILE else trains_as(name)
        if kind == "sts" or (kind == "pairs" and pair_loss == "graded"):
            tasks.append(_graded_task(model, name, split, loss, limit))
        else:
            tasks += _ranking_tasks(model, name, split, kind, limit, miner, mini_batch_size, scores, corpus_rows)
    return tasks


def train_sts(config: STSConfig, overwrite: bool = False) -> STSResult:
    """Train, keep the best dev checkpoint, score it on ``config.test``, save it to ``config.out``."""
    from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

    eval_refs = dev_refs(config.eval)
    refs = _train_refs(config.train, eval_refs)
    test_refs = [":".join(parse_sts_ref(ref)) for ref in config.test]
    # a mined pairs file carries the lineage of the teacher that graded it; a negative miner picks training rows
    teachers = [t for t in (config.negative_miner, config.score_teacher) if t]
    for source in [config.model, *teachers, *(name for name, split in refs if split == FILE)]:
        refuse_trained_on(source, eval_refs + test_refs, "--eval/--test")
    if config.score_teacher and config.mini_batch_size:
        raise KalbertError("--score-teacher and --mini-batch-size cannot be combined",
                           "drop --mini-batch-size: score distillation encodes the whole batch at once")
    refuse_existing_output(config.out, overwrite)
    run = RunFolder.open(config.out, asdict(config))
    model = load_sentence_model(config.model, pooling=config.pooling)
    set_max_seq_length(model, config.max_seq_length)
    set_prompts(model, query=config.query_prompt, passage=config.passage_prompt)
    if config.freeze_word_embeddings:
        model[0].auto_model.get_input_embeddings().weight.requires_grad_(False)
    miner = (NegativeMiner(config.negative_miner, config.negative_margin, config.loop.batch_size)
             if config.negative_miner else None)
    scores = (TeacherScores(config.score_teacher, config.score_temperature, config.loop.batch_size)
              if config.score_teacher else None)
    tasks = build_tasks(model, refs, config.loss, config.max_rows, config.pair_loss, miner, config.mini_batch_size,
                        scores, config.corpus_rows)
    evaluators = [dev_evaluator(ref, config.loop.batch_size) for ref in eval_refs]
    dev = SequentialEvaluator(evaluators, main_score_function=np.mean)  # several dev splits: their mean picks

    def evaluate() -> tuple[float, dict[str, float]]:
        metrics = {k: float(v) for k, v in dev(model).items()}
        return metrics.pop(dev.primary_metric), metrics

    probe = list(dict.fromkeys(s for e in evaluators for s in _sentences(e)))[:PROBE_SENTENCES]
    log.info("training on %s", ", ".join(f"{t.name} ({len(t)} rows)" for t in tasks))
    result = fit(model, tasks, evaluate, probe, config.loop, run, config.on_collapse)
    if result.best is None:
        raise KalbertError(f"training collapsed before any healthy evaluation "
                           f"({result.history[-1].collapse.describe()})", f"nothing was written; try: {ADVICE}")
    test = {ref: evaluate_sts(model, ref, config.loop.batch_size) for ref in test_refs}

    source = Path(config.model)
    meta = (read_meta(source) if is_sentence_model(source) else {}) or new_meta(folder_languages(source), str(source))
    if not meta.get("languages"):
        meta["languages"] = sorted({lang for name, split in refs if split != FILE  # "ko-zh": cross-lingual
                                    for lang in get_spec(name).lang.split("-")})
    add_stage(meta, "sts", asdict(config), steps=result.steps, seconds=round(result.seconds, 1),
              best_step=result.best.step, stopped_for_collapse=result.stopped_for_collapse, **result.precision_record(),
              **({"mined_negatives": [r.record() for r in miner.reports]} if miner else {}))
    for ref, evaluator in zip(eval_refs, evaluators, strict=True):
        add_metric(meta, "sts", ref, dev_metric(ref), result.best.metrics[evaluator.primary_metric])
    for ref, score in test.items():
        add_metric(meta, "sts", ref, "spearman_cosine", score)
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        save_sentence_model(model, tmp, meta, source if (source / "spiece.model").is_file() else None, [source],
                            command_for(config))
        atomic_write_json(tmp / "training_log.json", {"stage": "sts", "history": result.records()})
    run.remove()
    return STSResult(Path(config.out), result.best.score, test, result, len(eval_refs))


def summary(result: STSResult) -> str:
    """One line per score, for the CLI and the lead's main job."""
    lines = [f"sentence model: {result.out} (best step {result.fit.best.step} of {result.fit.steps})",
             f"  dev Spearman{' (mean of the dev splits)' if result.dev_splits > 1 else ''}: {result.dev:.4f}"]
    lines += [f"  {ref} Spearman: {score:.4f}" for ref, score in result.test.items()]
    return "\n".join(lines)
