"""Fine-tune an ALBERT or BERT for extractive QA on KorQuAD 1.0, CMRC 2018 or DRCD, pick the epoch on val,
report on test.

Only KorQuAD's dev file, CMRC's dev and trial files and DRCD's dev and test files are public here, so
the splits are fixed parts by article (``kalbert.data.QA_CARVES``): train to learn, val to pick the
epoch, test (refused by training) for the reported EM/F1, computed as the official scripts do
(:mod:`kalbert.tasks.qa.metrics`). ``--train`` pools the train parts of several sets (CMRC with DRCD,
or Korean with Chinese for one bilingual model); the task still picks the epoch and is reported. Which
articles each part holds is recorded (:func:`kalbert.tasks.qa.data.article_split`), and DRCD is read in
Simplified by a zh model (:mod:`kalbert.tasks.qa.data`). The kit's ALBERTs and their BERT teacher
(``--model multilingual-e5-small``) train on the same splits, so the teacher's score is their reference point.
The output folder is a plain transformers QA model that ``AutoModelForQuestionAnswering`` loads
(recent transformers 5 releases removed the ``question-answering`` pipeline); kalbert.json and
README.md say how it was made.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kalbert import __version__
from kalbert.artifact import Kind, folder_languages
from kalbert.data import QAExample, assert_trainable, get_spec
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, refuse_existing_output
from kalbert.stage import artifact_folder, write_record
from kalbert.tasks.configs import QA_TASKS, QASplits, QATrainConfig
from kalbert.tasks.encoders import encoder_folder, encoder_inputs
from kalbert.tasks.qa.data import article_split, load_examples, read_label
from kalbert.tasks.qa.features import label_window, make_windows
from kalbert.tasks.qa.metrics import METRICS, qa_scores
from kalbert.tasks.qa.model import QAModel, QASettings, answer_all, load_tokenizer, read_config, tensors
from kalbert.training import RunFolder, shuffled_batches, train_loop
from kalbert.verbs import command_for
from kalbert.weights import weights_sha256

log = logging.getLogger(__name__)


def _check_task(task: str) -> QASplits:
    if task not in QA_TASKS:
        raise KalbertError(f"unknown QA task '{task}'", f"known tasks: {', '.join(QA_TASKS)}")
    return QA_TASKS[task]


def _rows(task: str, split: str, limit: int | None, languages: list[str]) -> tuple[list[QAExample], int]:
    examples = load_examples(task, split, languages)
    return (examples[:limit] if limit else examples), len(examples)


def score_examples(model, tokenizer, task: str, examples: Sequence[QAExample], settings: QASettings,
                   bf16: bool = False) -> tuple[dict[str, float], dict[str, str]]:
    """EM/F1 x100 with the task's official metric, and the prediction for each question id."""
    answers = answer_all(model, tokenizer, [e.question for e in examples], [e.context for e in examples], settings,
                         bf16=bf16)
    predictions = {e.id: a.text for e, a in zip(examples, answers, strict=True)}
    scores = qa_scores(task, predictions, {e.id: e.answers for e in examples})
    return {k: round(v, 4) for k, v in scores.items()}, predictions


def _training_windows(tokenizer, examples: Sequence[QAExample], config: QATrainConfig):
    """Labelled windows of the questions whose answer is found in the context (the first such answer)."""
    located = [(e, next((s, s + len(a)) for a, s in zip(e.answers, e.answer_starts, strict=True) if s >= 0))
               for e in examples if max(e.answer_starts) >= 0]
    windows = make_windows(tokenizer, [e.question for e, _ in located], [e.context for e, _ in located],
                           config.max_seq_length, config.doc_stride, config.max_query_length)
    for window in windows:
        label_window(window, *located[window.example][1])
    return windows, len(examples) - len(located)


def _validate(config: QATrainConfig, overwrite: bool) -> tuple[QASplits, Path]:
    splits = _check_task(config.task)
    for name in config.train:
        assert_trainable(name, _check_task(name).train)
    if config.loop.epochs <= 0 or config.loop.batch_size < 1:
        raise KalbertError("epochs must be above 0 and batch size at least 1")
    if config.doc_stride < 1 or config.max_seq_length < 32:
        raise KalbertError("doc stride must be at least 1 and max length at least 32")
    assert_trainable(config.task, splits.train)
    model_path = encoder_folder(config.model, "extractive-QA fine-tuning")
    positions = read_config(model_path).get("max_position_embeddings", 512)
    if config.max_seq_length > positions:
        raise KalbertError(f"max length {config.max_seq_length} exceeds the model's {positions} positions",
                           f"use --max-seq-length {positions} or less")
    refuse_existing_output(config.out, overwrite)
    return splits, model_path


def train_qa(config: QATrainConfig, overwrite: bool = False) -> dict[str, Any]:
    """Fine-tune, select, evaluate and save; returns the summary also written to ``out/kalbert.json``."""
    import torch
    from transformers import AutoModelForQuestionAnswering

    splits, model_path = _validate(config, overwrite)
    run = RunFolder.open(config.out, asdict(config))
    started = time.perf_counter()
    languages = folder_languages(model_path)
    train_sets = config.train or [config.task]
    loaded = [_rows(name, QA_TASKS[name].train, config.max_rows, languages) for name in train_sets]
    train, n_train_split = [example for rows, _ in loaded for example in rows], sum(n for _, n in loaded)
    select, _ = _rows(config.task, splits.select, config.max_eval_rows, languages)
    report, n_report_split = _rows(config.task, splits.report, config.max_eval_rows, languages)
    settings = config.settings()

    torch.manual_seed(config.loop.seed)
    tokenizer = load_tokenizer(model_path)
    model = AutoModelForQuestionAnswering.from_pretrained(str(model_path), local_files_only=True)
    windows, unlocated = _training_windows(tokenizer, train, config)
    if not windows:
        raise KalbertError(f"no training question of {', '.join(train_sets)} has its answer in its context")

    def step(rows: list[int]) -> torch.Tensor:
        chunk = [windows[i] for i in rows]
        batch = encoder_inputs(model, tensors(chunk, tokenizer.pad_token_id))
        return model(**{k: v.to(model.device) for k, v in batch.items()},
                     start_positions=torch.tensor([w.start for w in chunk], device=model.device),
                     end_positions=torch.tensor([w.end for w in chunk], device=model.device)).loss

    def evaluate() -> tuple[float, dict[str, float]]:  # under the loop's autocast
        scores, _ = score_examples(model, tokenizer, config.task, select, settings)
        return scores["f1"], {f"{splits.select}_{k}": v for k, v in scores.items()}

    result = train_loop(model, lambda rng: shuffled_batches(len(windows), config.loop.batch_size, rng), step,
                        evaluate, config.loop, run)
    scores, _ = score_examples(model, tokenizer, config.task, report, settings, bf16=result.bf16)
    summary = {
        "kind": Kind.QA_MODEL,
        "kalbert_version": __version__,
        "task": config.task,
        "architecture": type(model).__name__,
        "model_type": model.config.model_type,
        "command": command_for(config),
        "config": asdict(config),
        "settings": asdict(settings),
        "splits": asdict(splits),
        "selected_epoch": result.best.epoch,
        "history": [{"epoch": e.epoch, "train_loss": round(e.train_loss, 6), **e.metrics} for e in result.history],
        **result.precision_record(),
        "report": {"split": splits.report, **scores, "metric": METRICS[config.task][2], "n": len(report),
                   "n_split": n_report_split, "subset": len(report) < n_report_split,
                   "read_as": read_label(config.task, languages)},
        "train_sets": [read_label(name, languages) for name in train_sets],
        "article_splits": {name: article_split(name) for name in dict.fromkeys([config.task, *train_sets])},
        "train_questions": len(train) - unlocated,
        "train_questions_split": n_train_split,
        "train_unlocated_answers": unlocated,
        "train_windows": len(windows),
        "wall_seconds": round(result.earlier_seconds + time.perf_counter() - started, 2),  # across restarts
    }
    with artifact_folder(config.out, Kind.QA_MODEL, overwrite=overwrite) as folder:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        if (model_path / "spiece.model").is_file():  # transformers 5's save_pretrained does not write it
            shutil.copy2(model_path / "spiece.model", folder / "spiece.model")
        summary = write_record(folder, summary, Kind.QA_MODEL, [model_path], folder_languages(model_path))
        atomic_write_text(folder / "README.md", render_card(summary))
    run.remove()
    return summary


def evaluate_qa(model_dir: str | Path, task: str, split: str = "test", max_rows: int | None = None
                ) -> dict[str, Any]:
    """EM/F1 x100 of a QA folder on a split, with every prediction (``{id: answer}``, the scripts' input)."""
    _check_task(task)
    qa = QAModel(model_dir)
    languages = folder_languages(model_dir)
    examples, n_split = _rows(task, split, max_rows, languages)
    started = time.perf_counter()
    scores, predictions = score_examples(qa.model, qa.tokenizer, task, examples, qa.settings, qa.bf16)
    return {"model": str(model_dir), "weights_sha256": weights_sha256(model_dir), "task": task, "split": split,
            "read_as": read_label(task, languages),
            **scores, "metric": METRICS[task][2],
            "n": len(examples), "n_split": n_split, "subset": len(examples) < n_split,
            "wall_seconds": round(time.perf_counter() - started, 2), "predictions": predictions}


def _storage_note(summary: dict[str, Any]) -> str:
    storage = summary.get("weights_storage")
    if not storage:
        return ""
    return (f"\nWeights stored as {storage['dtype']} and computed in {storage['computed_in']} "
            f"(`{storage['command']}`; the {storage['probe_answers_unchanged']} probe questions get the same "
            f"answers).\n")


def render_card(summary: dict[str, Any]) -> str:
    """The README card of a QA folder, from its kalbert.json alone."""
    config, report, splits = summary["config"], summary["report"], summary["splits"]
    task = summary["task"]
    trained = config.get("train") or [task]
    sources = "\n".join(f"- {name}: {get_spec(name).description} ({get_spec(name).url}, {get_spec(name).licence})"
                        for name in trained)
    others = [name for name in trained if name != task]
    also = (f" The other sets it was trained on ({', '.join(others)}) are scored by "
            "`kalbert qa evaluate --task NAME --split test`." if others else "")
    subset = f" (first {report['n']} of {report['n_split']} questions)" if report["subset"] else ""
    em, f1 = f"{splits['select']}_exact_match", f"{splits['select']}_f1"
    rows = "\n".join(f"| {h['epoch']} | {h['train_loss']:.4f} | {h[em]:.2f} | {h[f1]:.2f} |"
                     for h in summary["history"])
    return f"""---
language: [{', '.join(summary.get('languages') or [get_spec(task).lang])}]
library_name: transformers
pipeline_tag: question-answering
tags: [{summary['model_type']}, extractive-qa, kalbert]
---

# Extractive QA: {summary['model_type'].upper()} fine-tuned on {', '.join(trained)}

`{summary['architecture']}` fine-tuned from `{config['model']}` by kalbert {summary['kalbert_version']}.

```bash
{summary['command']}
```

## Data

{sources}

Fixed parts by article: trained on the `{splits['train']}` parts of {', '.join(summary['train_sets'])} \
({summary['train_questions']} questions with a located answer, {summary['train_windows']} windows of \
{config['max_seq_length']} tokens, stride {config['doc_stride']}), epoch picked on `{task}:{splits['select']}` by F1, \
reported on `{task}:{splits['report']}` (read as {report['read_as']}), never trained on.
{_storage_note(summary)}
## Results

EM / F1 x100 when training ended, {report['metric']}.{also}

| split | EM | F1 |
|---|---|---|
| {task}:{report['split']}{subset} | {report['exact_match']:.2f} | {report['f1']:.2f} |

| epoch | train loss | {splits['select']} EM | {splits['select']} F1 |
|---|---|---|---|
{rows}

Epoch {summary['selected_epoch']} kept; {summary['wall_seconds']:.0f} s in all.

## Use

```bash
kalbert qa predict --model PATH --question "..." --context "..."
```

windows long contexts, pairs the n-best starts and ends, and returns an exact substring of the
context with its probability (P(start) x P(end)). The folder is a plain transformers model
(recent transformers 5 releases have no "question-answering" pipeline):

```python
from transformers import AutoModelForQuestionAnswering, AutoTokenizer
tokenizer, model = AutoTokenizer.from_pretrained("PATH"), AutoModelForQuestionAnswering.from_pretrained("PATH")
inputs = tokenizer(question, context, truncation="only_second", max_length={config['max_seq_length']},
                   return_offsets_mapping=True, return_tensors="pt")
offsets = inputs.pop("offset_mapping")[0].tolist()
out = model(**inputs)
start, end = int(out.start_logits.argmax()), int(out.end_logits.argmax())
answer = context[offsets[start][0]:offsets[end][1]]
```
"""
