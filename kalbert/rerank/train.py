"""`kalbert rerank train`: fine-tune a cross-encoder reranker from a kalbert ALBERT, pick the checkpoint on val
articles and dev carves, save a folder that loads without kalbert.

The start folder's transformer gets a one-output sequence-classification head (a sentence-transformers
CrossEncoder, whose losses train it: LambdaLoss, MultipleNegativesRankingLoss, BinaryCrossEntropyLoss or
ListNetLoss) and reads ``[CLS] question [SEP] passage [SEP]``. Rows are each train question with its positive and
hard negatives (:mod:`kalbert.rerank.rows`); a batch holds rows of one training set, so Korean and Chinese never
meet in a list. With a teacher reranker the lists' targets are its scores instead of the gold labels
(distillation, e.g. into the same ALBERT run through fewer layers).
The house loop (:func:`kalbert.training.train_loop`) runs it: bf16 where native, checkpoints in ``OUT.partial/``
that a rerun resumes, the best evaluated kept. Each evaluation reranks the first stage's top ``depth`` of the
eval splits' questions (:mod:`kalbert.rerank.evaluate`) as the folder is used: long passages in windows, in the
training precision (what ``load_reranker`` picks on the same CPU); their mean nDCG@10 picks.

The folder is the CrossEncoder as sentence-transformers saves it (config.json, weights, tokenizer files, its
modules), scoring raw logits (activation Identity), with the start folder's spiece.model (transformers 5 no longer
writes it) and tokenizer normalizer (a normalized start reads Traditional Chinese), its token limit stored where
CrossEncoder and a plain tokenizer read it, kalbert.json (with the windows kalbert reads long passages in) and a
card of the measured figures. It is reloaded both
ways before it appears: ``CrossEncoder(out)`` must give the in-memory scores, and
``AutoModelForSequenceClassification`` with ``AutoTokenizer`` the same.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kalbert import __version__
from kalbert.artifact import Kind, folder_languages
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, atomic_write_text, refuse_existing_output
from kalbert.rerank.card import render_card
from kalbert.rerank.config import BM25, RerankTrainConfig
from kalbert.rerank.evaluate import MAIN_SCORE, EvalSet, eval_ref, evaluate_sets, load_eval_set
from kalbert.rerank.model import Reranker, load_reranker, matching_window_texts
from kalbert.rerank.rows import RerankRow, TrainSet, build_train_set, train_ref
from kalbert.stage import artifact_folder, write_record
from kalbert.verbs import command_for
from kalbert.vocab.files import SPIECE

if TYPE_CHECKING:
    import torch
    from sentence_transformers import CrossEncoder

log = logging.getLogger(__name__)
PROBES = [
    ("세종대왕은 언제 훈민정음을 반포했나?", "세종대왕은 1446년에 훈민정음을 반포하였다."),
    ("长江最后注入哪里？", "长江是亚洲第一长河，全长约6300公里，流经中国多个省份，最后注入东海。"),
    ("臺灣的首都是哪裡？", "臺北市是中華民國的首都，位於臺灣北部。"),
]
"""pairs scored by the in-memory model and by both reloads of the saved folder (Korean, Chinese, Traditional)"""


def _say(message: str) -> None:
    from tqdm.auto import tqdm

    log.info("%s", message)
    tqdm.write(message)


def _validate(config: RerankTrainConfig, overwrite: bool) -> Path:
    """Every setting checked before data or models load; returns the start folder."""
    from kalbert.tasks.encoders import encoder_folder
    from kalbert.teachers.backends import check_teacher

    if not config.train or not config.eval:
        raise KalbertError("a reranker needs training sets and evaluation splits", "give --train and --eval")
    evals = [":".join(eval_ref(ref)) for ref in config.eval]
    trains = [":".join(train_ref(ref)) for ref in config.train]
    for refs, flag in ((trains, "--train"), (evals, "--eval")):
        twice = sorted({ref for ref in refs if refs.count(ref) > 1})
        if twice:
            raise KalbertError(f"{flag} names {', '.join(twice)} twice")
    if config.window_stride < 0:
        raise KalbertError(f"window stride {config.window_stride} is negative",
                           "give the passage tokens consecutive windows share, e.g. 64 (0: windows side by side)")
    if config.windows_per_passage is not None and config.windows_per_passage < 1:
        raise KalbertError(f"{config.windows_per_passage} windows per passage reads nothing",
                           "give 1 or more (1: the window sharing most query tokens), or none for every window")
    if config.first_stage_weight < 0:
        raise KalbertError(f"first-stage weight {config.first_stage_weight} is negative",
                           "give 0 (the reranker's scores alone) or more, e.g. 0.6")
    if not 0 < config.negative_margin <= 1:
        raise KalbertError(f"negative margin {config.negative_margin} is not in (0, 1]",
                           "0.99 passes over what the miner scores within 1% of the question's own passage")
    if not 0 <= config.article_negatives <= config.negatives:
        raise KalbertError(f"{config.article_negatives} article negatives is not between 0 and the {config.negatives} "
                           "negatives per question", f"give 0 to {config.negatives}, e.g. 2")
    if config.teacher and config.loss != "listnet":
        raise KalbertError(f"a teacher's scores are learned with loss listnet, not {config.loss}",
                           "add --loss listnet, or leave --teacher out to learn the gold labels")
    for teacher in (config.negative_miner, None if config.first_stage == BM25 else config.first_stage):
        if teacher:
            check_teacher(teacher)
    start = encoder_folder(config.model, "reranker training")
    positions = json.loads((start / "config.json").read_text(encoding="utf-8")).get("max_position_embeddings", 512)
    if config.max_seq_length > positions:
        raise KalbertError(f"max length {config.max_seq_length} exceeds the model's {positions} positions",
                           f"use --max-seq-length {positions} or less")
    refuse_existing_output(config.out, overwrite)
    return start


def build_cross_encoder(start: Path, max_seq_length: int, layers: int | None = None) -> CrossEncoder:
    """``start``'s transformer (run through ``layers`` layers where given) with a one-output classification head
    (a reranker start keeps its own), scoring raw logits."""
    import torch
    from sentence_transformers import CrossEncoder
    from sentence_transformers.base.modules import Transformer

    offline = {"local_files_only": True}
    settings = {"num_labels": 1} if layers is None else {"num_labels": 1, "num_hidden_layers": layers}
    transformer = Transformer(str(start), transformer_task="sequence-classification", max_seq_length=max_seq_length,
                              config_kwargs={**offline, **settings}, model_kwargs=offline,
                              processor_kwargs=offline)
    return CrossEncoder(modules=[transformer], activation_fn=torch.nn.Identity(), device="cpu")


def make_loss(config: RerankTrainConfig, model: CrossEncoder) -> torch.nn.Module:
    import torch
    from sentence_transformers.cross_encoder import losses

    if config.loss == "lambda":
        return losses.LambdaLoss(model)
    if config.loss == "mnrl":  # a softmax over raw logits: the positive against its negatives (BGE-reranker's loss)
        return losses.MultipleNegativesRankingLoss(model, num_negatives=config.in_batch_negatives, scale=1.0,
                                                   activation_fn=torch.nn.Identity())
    if config.loss == "listnet":
        return losses.ListNetLoss(model)
    return losses.BinaryCrossEntropyLoss(model)


def read_windows(row: RerankRow, tokenizer: Any, config: RerankTrainConfig) -> RerankRow:
    """``row`` with each long passage cut to the window that scoring reads of it beside the row's other passages."""
    positive, *negatives = matching_window_texts(tokenizer, row.query, [row.positive, *row.negatives],
                                                 config.max_seq_length, config.window_stride)
    return RerankRow(row.query, positive, tuple(negatives))


def loss_inputs(loss: str, rows: list[RerankRow], device: Any, teacher: Reranker | None = None) -> tuple[list, Any]:
    """A batch of rows in the columns and labels ``loss`` reads: per list, the teacher's scores of its pairs (cut
    as the model reads them) where there is a teacher, else 1 for the positive and 0 for the negatives."""
    import torch

    queries = [row.query for row in rows]
    if loss in ("lambda", "listnet"):
        lists = [[row.positive, *row.negatives] for row in rows]
        if teacher is not None:
            scores = [teacher.score_pairs([(row.query, text) for text in texts])
                      for row, texts in zip(rows, lists, strict=True)]
            return [queries, lists], [torch.from_numpy(score).to(device) for score in scores]
        labels = [torch.tensor([1.0] + [0.0] * len(row.negatives), device=device) for row in rows]
        return [queries, lists], labels
    if loss == "mnrl":
        columns = [[row.negatives[j] for row in rows] for j in range(len(rows[0].negatives))]
        return [queries, [row.positive for row in rows], *columns], torch.zeros(len(rows), device=device)
    pairs = [(row.query, text) for row in rows for text in (row.positive, *row.negatives)]
    labels = [1.0 if j == 0 else 0.0 for row in rows for j in range(1 + len(row.negatives))]
    return [[q for q, _ in pairs], [p for _, p in pairs]], torch.tensor(labels, device=device)


def set_batches(sizes: list[int], batch_size: int, rng) -> list[tuple[int, list[int]]]:
    """One epoch: (training set, row indices) batches, shuffled within and across sets."""
    plan = []
    for s, size in enumerate(sizes):
        order = list(range(size))
        rng.shuffle(order)
        plan += [(s, order[i: i + batch_size]) for i in range(0, size, batch_size)]
    rng.shuffle(plan)
    return plan


def store_token_limit(folder: Path, max_seq_length: int) -> None:
    """The token limit where every loader reads it: tokenizer_config.json (CrossEncoder, AutoTokenizer) and the
    truncation of tokenizer.json (a plain ``tokenizers`` load), the longer side cut first; the start folder's own
    (a QA model's 384-token, question-kept windows) would otherwise linger there. A plain load reads as far as
    the positions reach (kalbert reads long passages in the recorded windows instead)."""
    config_path, fast_path = folder / "tokenizer_config.json", folder / "tokenizer.json"
    settings = json.loads(config_path.read_text(encoding="utf-8"))
    settings.update(model_max_length=max_seq_length, max_length=max_seq_length, stride=0,
                    truncation_strategy="longest_first")
    atomic_write_json(config_path, settings)
    tokenizer = json.loads(fast_path.read_text(encoding="utf-8"))
    tokenizer["truncation"] = {"direction": "Right", "max_length": max_seq_length, "strategy": "LongestFirst",
                               "stride": 0}
    atomic_write_json(fast_path, tokenizer)


def check_reloads(model: CrossEncoder, folder: Path, atol: float = 1e-4) -> None:
    """``folder`` scores :data:`PROBES` as the in-memory model does, through CrossEncoder and plain transformers."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    ours = model.predict(PROBES, convert_to_numpy=True)
    reloaded = CrossEncoder(str(folder), device="cpu", local_files_only=True).predict(PROBES, convert_to_numpy=True)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    plain = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True).eval()
    inputs = tokenizer([q for q, _ in PROBES], [p for _, p in PROBES], padding=True, truncation=True,
                       return_tensors="pt")
    with torch.inference_mode():
        transformers_scores = plain(**inputs).logits[:, 0].numpy()
    for way, scores in (("CrossEncoder", reloaded), ("transformers", transformers_scores)):
        gap = float(np.abs(np.asarray(scores) - ours).max())
        if gap > atol:
            raise RuntimeError(f"{folder} loaded with {way} scores the probes {gap:g} away from the trained model")


def _evaluation_record(sets: list[EvalSet], best: dict[str, float], config: RerankTrainConfig,
                       precision: str, windows: dict[str, int | None]) -> dict[str, Any]:
    rows = []
    for evaluation in sets:
        first = evaluation.first_stage_scores()
        rows.append({"data": evaluation.ref, "questions": len(evaluation.queries),
                     "questions_split": evaluation.questions, "corpus": len(evaluation.corpus),
                     "first_stage": {MAIN_SCORE: round(first[MAIN_SCORE], 4),
                                     "mrr_at_10": round(first["mrr_at_10"], 4)},
                     "reranked": {MAIN_SCORE: best[f"{evaluation.ref}_{MAIN_SCORE}"],
                                  "mrr_at_10": best[f"{evaluation.ref}_mrr_at_10"],
                                  "ms_per_query": best[f"{evaluation.ref}_ms_per_query"]}})
    return {"first_stage": config.first_stage, "depth": config.depth, "max_rows": config.max_eval_rows,
            "precision": precision, "windows": windows,
            "first_stage_weight": config.first_stage_weight,
            "gold_injected": False, "sets": rows}


def train_reranker(config: RerankTrainConfig, overwrite: bool = False) -> dict[str, Any]:
    """Mine rows, fine-tune, pick on the eval splits, save; returns the record also written to ``out/kalbert.json``."""
    import torch

    from kalbert.training import RunFolder, train_loop

    start = _validate(config, overwrite)
    run = RunFolder.open(config.out, asdict(config))
    started = time.perf_counter()
    languages = folder_languages(start)
    seed = config.loop.seed
    sets: list[TrainSet] = [build_train_set(ref, config.negatives, config.negative_miner, config.negative_depth,
                                            config.negative_margin, config.max_rows, seed, _say,
                                            config.article_negatives)
                            for ref in config.train]
    _say(f"ranking the evaluation questions with {config.first_stage}")
    evals = [load_eval_set(ref, config.first_stage, config.depth, config.max_eval_rows, seed) for ref in config.eval]
    torch.manual_seed(seed)
    model = build_cross_encoder(start, config.max_seq_length, config.layers)
    loss = make_loss(config, model)
    teacher = load_reranker(config.teacher) if config.teacher else None
    if teacher is not None:
        teacher.max_length = config.max_seq_length  # the teacher reads each pair cut as the model reads it
    scorer = Reranker(Path(config.out).name, model.model, model.tokenizer, config.max_seq_length,
                      stride=config.window_stride, first_stage_weight=config.first_stage_weight,
                      windows_per_passage=config.windows_per_passage)

    def step(batch: tuple[int, list[int]]) -> torch.Tensor:
        rows = [sets[batch[0]].rows[i] for i in batch[1]]
        if config.train_on_windows:
            rows = [read_windows(row, model.tokenizer, config) for row in rows]
        inputs, labels = loss_inputs(config.loss, rows, model.device, teacher)
        return loss(inputs, labels)

    result = train_loop(model, lambda rng: set_batches([len(s.rows) for s in sets], config.loop.batch_size, rng),
                        step, lambda: evaluate_sets(scorer, evals, config.depth), config.loop, run)
    best = result.best
    model.to("cpu")
    summary = {
        "kind": Kind.RERANKER,
        "kalbert_version": __version__,
        "command": command_for(config),
        "config": asdict(config),
        "start": str(start),
        "architecture": type(model.model).__name__,
        "model_type": model.model.config.model_type,
        "parameters": sum(p.numel() for p in model.parameters()),
        "max_seq_length": config.max_seq_length,
        "windows": scorer.windows,
        "token_limit": model.model.config.max_position_embeddings,
        "first_stage_weight": config.first_stage_weight,
        "hybrid_score_weight": config.hybrid_score_weight,
        "scores": "raw logits (activation Identity): higher = more relevant",
        "train_sets": [s.record() for s in sets],
        "train_rows": sum(len(s.rows) for s in sets),
        "evaluation": _evaluation_record(evals, best.metrics, config, result.precision_record()["precision"],
                                         scorer.windows),
        "metrics": [{"data": e.ref, "metric": MAIN_SCORE, "value": best.metrics[f"{e.ref}_{MAIN_SCORE}"] / 100}
                    for e in evals],
        "selected_step": best.step,
        "history": [{"step": e.step, "epoch": e.epoch, "score": round(e.score, 4),
                     "train_loss": None if e.train_loss is None else round(e.train_loss, 6), **e.metrics}
                    for e in result.history],
        **result.precision_record(),
        "steps": result.steps,
        "wall_seconds": round(result.earlier_seconds + time.perf_counter() - started, 1),  # across restarts
    }
    with artifact_folder(config.out, Kind.RERANKER, overwrite=overwrite) as folder:
        model.save(str(folder), create_model_card=False)
        if (start / SPIECE).is_file():  # transformers 5's save_pretrained does not write it
            shutil.copy2(start / SPIECE, folder / SPIECE)
        store_token_limit(folder, summary["token_limit"])
        summary["size_mb"] = round(sum(p.stat().st_size for p in folder.glob("*.safetensors")) / 1e6, 1)
        summary = write_record(folder, summary, Kind.RERANKER, [start], languages)
        atomic_write_text(folder / "README.md", render_card(summary))
        check_reloads(model, folder)
    run.remove()
    return summary
