"""`kalbert sbert train`: train a sentence model on graded pairs, NLI and paraphrase pairs and question -> passage rows.

The rows come from :mod:`kalbert.rows` (one set per ``--train`` entry, with mined negatives and teacher scores as
``rows`` says); this module gives each its loss. Graded pairs (STS sets, graded-pair files, paraphrase sets with
``pair_loss="graded"``) train with CoSENT (default), AnglE or cosine-MSE; ranked rows (NLI triplets, paraphrases,
question -> passage rows) with in-batch negatives (MultipleNegativesRankingLoss, or its cached variant,
``mini_batch_size`` rows encoded at a time, when a batch outgrows memory), question -> passage rows encoded with the
model's query and document prompts and, with a score teacher, distilling its scores (:class:`ScoreDistillLoss`).
Every epoch (or ``eval_steps``) the model is scored on the named dev splits (STS Spearman, or nDCG@10 on a QA set's
val articles or a question -> answer set's dev carve), checked for collapse, and the best-scoring weights are what is
saved.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kalbert.artifact import Kind, folder_languages, is_sentence_model, read_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, refuse_existing_output
from kalbert.lineage import refuse_trained_on
from kalbert.rows.build import check_rows, training_rows
from kalbert.rows.references import ROW_KINDS, resolve_refs
from kalbert.rows.sets import GradedPairs, RankedRows, RowSet
from kalbert.sentence.card import add_metric, add_stage, new_meta
from kalbert.sentence.collapse import ADVICE
from kalbert.sentence.config import SentenceTrainConfig, STSLoss
from kalbert.sentence.encoder import load_sentence_model
from kalbert.sentence.evaluate import dev_evaluator, dev_metric, dev_refs, evaluate_sts, parse_sts_ref
from kalbert.sentence.export import save_sentence_model, set_max_seq_length, set_prompts
from kalbert.sentence.loop import TrainTask, fit
from kalbert.sentence.score_distill import ScoreDistillLoss
from kalbert.stage import artifact_folder
from kalbert.training import FitResult, RunFolder
from kalbert.verbs import command_for

log = logging.getLogger(__name__)
PROBE_SENTENCES = 256
METRIC_NAMES = {"spearman_cosine": "Spearman", "ndcg_at_10": "nDCG@10"}
"""how the summary names the score of each kind of dev split"""


@dataclass
class SentenceTrainResult:
    """Where the model went and how it scored."""

    out: Path
    dev: float
    """the best checkpoint's dev score: the mean over ``dev_refs`` when there are several"""
    test: dict[str, float]
    fit: FitResult
    dev_refs: list[str]


def _sentences(evaluator) -> list[str]:
    """The texts an evaluator encodes, for the collapse probe."""
    if hasattr(evaluator, "sentences1"):
        return evaluator.sentences1 + evaluator.sentences2
    return list(evaluator.queries) + list(evaluator.corpus)


def graded_task(model, rows: GradedPairs, loss_name: STSLoss) -> TrainTask:
    """Graded pairs, scores in [0, 1], trained with the graded-pair loss."""
    from sentence_transformers.sentence_transformer.losses import AnglELoss, CoSENTLoss, CosineSimilarityLoss

    label = rows.label + ("/graded" if rows.ref.kind == "pairs" else "")
    loss = {"cosent": CoSENTLoss, "angle": AnglELoss, "cosine": CosineSimilarityLoss}[loss_name](model)
    return TrainTask(label, [rows.left, rows.right], rows.scores, loss)


def ranking_tasks(model, rows: RankedRows, mini_batch_size: int | None = None,
                  score_temperature: float = 0.01) -> list[TrainTask]:
    """Ranked rows as in-batch-negative tasks, one per column layout: (anchor, positive) rows and (anchor, positive,
    hard negative) rows, each column encoded with its prompt role; labelled with the score teacher's vectors and
    trained with :class:`ScoreDistillLoss` when the rows carry them, else ``mini_batch_size`` rows at a time when
    given (GradCache)."""
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    loss = (CachedMultipleNegativesRankingLoss(model, mini_batch_size=mini_batch_size) if mini_batch_size
            else MultipleNegativesRankingLoss(model))
    tasks = []
    for width in (2, 3):
        kept = [i for i, negative in enumerate(rows.negatives) if (negative is not None) == (width == 3)]
        if not kept:
            continue
        columns = [[column[i] for i in kept] for column in (rows.anchors, rows.positives, rows.negatives)[:width]]
        name, prompts = f"{rows.label}/{width}", rows.roles[:width]
        if rows.teacher is not None:
            labels = np.concatenate([vectors[kept] for vectors in rows.teacher[:width]], axis=1)
            tasks.append(TrainTask(name, columns, labels, ScoreDistillLoss(model, score_temperature),
                                   prompt_names=prompts, distinct_candidates=True))
        else:
            tasks.append(TrainTask(name, columns, np.zeros(len(kept), dtype=np.float32), loss, prompt_names=prompts,
                                   distinct_candidates=True))
    return tasks


def build_tasks(model, sets: list[RowSet], config: SentenceTrainConfig) -> list[TrainTask]:
    """Each row set with its loss."""
    tasks: list[TrainTask] = []
    for rows in sets:
        if isinstance(rows, GradedPairs):
            tasks.append(graded_task(model, rows, config.loss))
        else:
            tasks += ranking_tasks(model, rows, config.mini_batch_size, config.rows.score_temperature)
    return tasks


def train_sentence_model(config: SentenceTrainConfig, overwrite: bool = False) -> SentenceTrainResult:
    """Train, keep the best dev checkpoint, score it on ``config.test``, save it to ``config.out``."""
    from sentence_transformers.sentence_transformer.evaluation import SequentialEvaluator

    eval_refs = dev_refs(config.eval)
    refs = resolve_refs(config.train, ROW_KINDS, "--train", eval_refs)
    if not refs:
        raise KalbertError("no training data", "pass --train, e.g. --train korsts")
    test_refs = [":".join(parse_sts_ref(ref)) for ref in config.test]
    refuse_trained_on(config.model, eval_refs + test_refs, "--eval/--test")
    check_rows(refs, config.rows, eval_refs + test_refs, "--eval/--test")
    if config.rows.score_teacher and config.mini_batch_size:
        raise KalbertError("--score-teacher and --mini-batch-size cannot be combined",
                           "drop --mini-batch-size: score distillation encodes the whole batch at once")
    refuse_existing_output(config.out, overwrite)
    run = RunFolder.open(config.out, asdict(config))
    model = load_sentence_model(config.model, pooling=config.pooling)
    set_max_seq_length(model, config.max_seq_length)
    set_prompts(model, query=config.query_prompt, passage=config.passage_prompt)
    if config.freeze_word_embeddings:
        model[0].auto_model.get_input_embeddings().weight.requires_grad_(False)
    rows = training_rows(refs, config.rows, config.max_rows, batch_size=config.loop.batch_size)
    tasks = build_tasks(model, rows.sets, config)
    evaluators = [dev_evaluator(ref, config.loop.batch_size) for ref in eval_refs]
    dev = SequentialEvaluator(evaluators, main_score_function=np.mean)  # several dev splits: their mean picks

    evaluated = False

    def evaluate() -> tuple[float, dict[str, float]]:
        nonlocal evaluated
        evaluated = True
        metrics = {k: float(v) for k, v in dev(model).items()}
        return metrics.pop(dev.primary_metric), metrics

    probe = list(dict.fromkeys(s for e in evaluators for s in _sentences(e)))[:PROBE_SENTENCES]
    log.info("training on %s", ", ".join(f"{t.name} ({len(t)} rows)" for t in tasks))
    result = fit(model, tasks, evaluate, probe, config.loop, run, config.on_collapse)
    if result.best is None:
        raise KalbertError(f"training collapsed before any healthy evaluation "
                           f"({result.history[-1].collapse.describe()})", f"nothing was written; try: {ADVICE}")
    if not evaluated:  # resumed at its last checkpoint: one pass names each split's metric (its scores are unused)
        evaluate()
    test = {ref: evaluate_sts(model, ref, config.loop.batch_size) for ref in test_refs}

    source = Path(config.model)
    meta = (read_meta(source) if is_sentence_model(source) else {}) or new_meta(folder_languages(source), str(source))
    if not meta.get("languages"):
        meta["languages"] = sorted({lang for ref in refs if ref.lang  # "ko-zh": cross-lingual
                                    for lang in ref.lang.split("-")})
    add_stage(meta, "sts", asdict(config), steps=result.steps, seconds=round(result.seconds, 1),
              best_step=result.best.step, stopped_for_collapse=result.stopped_for_collapse, **result.precision_record(),
              **rows.record())
    for ref, evaluator in zip(eval_refs, evaluators, strict=True):
        add_metric(meta, "sts", ref, dev_metric(ref), result.best.metrics[evaluator.primary_metric])
    for ref, score in test.items():
        add_metric(meta, "sts", ref, "spearman_cosine", score)
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        save_sentence_model(model, tmp, meta, source if (source / "spiece.model").is_file() else None, [source],
                            command_for(config))
        atomic_write_json(tmp / "training_log.json", {"stage": "sts", "history": result.records()})
    run.remove()
    return SentenceTrainResult(Path(config.out), result.best.score, test, result, eval_refs)


def summary(result: SentenceTrainResult) -> str:
    """One line per score, for the CLI and the lead's main job: the dev score names each metric it averages."""
    named = [f"{ref} {METRIC_NAMES[dev_metric(ref)]}" for ref in result.dev_refs]
    dev = f"dev mean of {', '.join(named)}" if len(named) > 1 else named[0]
    lines = [f"sentence model: {result.out} (best step {result.fit.best.step} of {result.fit.steps})",
             f"  {dev}: {result.dev:.4f}"]
    lines += [f"  {ref} Spearman: {score:.4f}" for ref, score in result.test.items()]
    return "\n".join(lines)
