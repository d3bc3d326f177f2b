"""Multiple choice with an ALBERT or BERT ...ForMultipleChoice: fine-tune on a task's training split, pick
the best epoch on dev, report accuracy on the labelled evaluation split, and answer new questions. The kit's
ALBERTs and their BERT teacher (``--model multilingual-e5-small``) train on the same splits, so the teacher's
accuracy is their reference point.

Each choice is paired with the context as ``[CLS] first [SEP] second [SEP]`` (XLM-R's ``<s> first </s></s>
second </s>``) and the model scores all choices of an example together (a softmax over them). A cloze (CHID)
is read as one segment, the choice written into the blank: the model judges the idiom where it stands, as
its masked-language pretraining read text. How an example's fields become the segments
(:func:`format_choices`) depends only on the fields, so ``predict`` formats a new question exactly as
training formatted the data set.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from kalbert import __version__
from kalbert.artifact import Kind, folder_languages
from kalbert.data import BLANK, MCExample, assert_trainable, load_mc, load_mc_file
from kalbert.data.passages import passage_index
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, refuse_existing_output, sha256_file
from kalbert.stage import artifact_folder, write_record
from kalbert.tasks.configs import MC_TASKS, MCTrainConfig
from kalbert.tasks.encoders import check_encoder, encoder_folder, encoder_inputs
from kalbert.training import RunFolder, shuffled_batches, train_loop
from kalbert.verbs import command_for

log = logging.getLogger(__name__)


# COPA-style questions become a connective in front of each choice.
_CONNECTIVES = {"원인": "왜냐하면", "결과": "그래서", "cause": "因为", "effect": "所以"}
_BLANK_WINDOW = 60  # characters of cloze context kept on each side of the blank: well inside 128 tokens


def format_choices(example: MCExample) -> list[tuple[str, str]]:
    """The (first, second) segment pair for each choice of ``example``; a cloze's second segment is empty."""
    context = example.context
    if BLANK in context:
        at = context.index(BLANK)
        window = context[max(0, at - _BLANK_WINDOW) : at + len(BLANK) + _BLANK_WINDOW]
        return [(window.replace(BLANK, choice), "") for choice in example.choices]
    if example.question in _CONNECTIVES:
        return [(context, f"{_CONNECTIVES[example.question]} {choice}") for choice in example.choices]
    if example.question:
        return [(context, f"{example.question} {choice}") for choice in example.choices]
    return [(context, choice) for choice in example.choices]


def load_mc_model(path: Path):
    """The tokenizer and ...ForMultipleChoice model of a folder."""
    from transformers import AutoModelForMultipleChoice, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise KalbertError(
            f"no usable tokenizer in {path}: {str(exc).splitlines()[0]}",
            "copy the vocabulary's tokenizer files into the model folder",
        ) from None
    model = AutoModelForMultipleChoice.from_pretrained(str(path), local_files_only=True)
    return tokenizer, model


def _choice_logits(model, tokenizer, examples: Sequence[MCExample], max_length: int):
    """[batch, choices] float logits; examples with fewer choices (C3 has 2 to 4) are padded with empty
    choices whose logits are -inf, so they are never picked and take no probability."""
    import torch

    width = max(len(example.choices) for example in examples)
    pairs, valid = [], []
    for example in examples:
        own = format_choices(example)
        pairs += own + [(own[0][0], "")] * (width - len(own))
        valid.append([True] * len(own) + [False] * (width - len(own)))
    seconds = [b for _, b in pairs]
    encoded = tokenizer([a for a, _ in pairs], seconds if any(seconds) else None, truncation="longest_first",
                        max_length=max_length, padding=True, return_tensors="pt")
    inputs = {key: value.view(len(examples), width, -1).to(model.device)
              for key, value in encoder_inputs(model, dict(encoded)).items()}
    logits = model(**inputs).logits.float()
    return logits.masked_fill(~torch.tensor(valid, device=logits.device), float("-inf"))


def mc_accuracy(model, tokenizer, examples: list[MCExample], batch_size: int, max_seq_length: int, desc: str
                ) -> float:
    """Accuracy x100, in the precision the caller's autocast sets."""
    import torch

    model.eval()
    correct = 0
    with torch.no_grad():
        for start in tqdm(range(0, len(examples), batch_size), desc=desc, leave=False, unit="batch"):
            chunk = examples[start : start + batch_size]
            logits = _choice_logits(model, tokenizer, chunk, max_seq_length)
            correct += sum(int(p) == e.label for p, e in zip(logits.argmax(-1), chunk, strict=True))
    return 100.0 * correct / len(examples)


def _check_extra(path: str, examples: list[MCExample]) -> dict[str, Any]:
    """The record of an --extra-train file; refused when an example holds a passage that results are scored on
    (as corpora are filtered: :mod:`kalbert.data.passages`)."""
    index = passage_index()
    for example in examples:
        owner = index.owner([example.context.replace(BLANK, example.choices[example.label])])
        if owner is not None:
            raise KalbertError(f"{path} holds a passage of {owner} ({example.id}), which results are scored on",
                               "train on corpus text only: `kalbert mc cloze` drops documents holding one")
    return {"file": str(path), "examples": len(examples), "sha256": sha256_file(path)}


def task_examples(task: str, split: str, limit: int | None) -> list[MCExample]:
    """A split of a multiple-choice task, its first ``limit`` examples when given."""
    examples = load_mc(task, split)
    return examples[:limit] if limit else examples


def train_mc(config: MCTrainConfig, overwrite: bool = False) -> dict[str, Any]:
    """Fine-tune, select, evaluate and save; returns the summary also written to ``out/kalbert.json``."""
    import torch

    if config.task not in MC_TASKS:
        raise KalbertError(
            f"unknown multiple-choice task '{config.task}'", f"known tasks: {', '.join(MC_TASKS)}"
        )
    if config.loop.epochs <= 0 or config.loop.batch_size < 1:
        raise KalbertError("epochs must be above 0 and batch_size at least 1")
    splits = MC_TASKS[config.task]
    assert_trainable(config.task, splits.train)
    model_path = encoder_folder(config.model, "multiple-choice fine-tuning")
    refuse_existing_output(config.out, overwrite)
    extra = load_mc_file(config.task, config.extra_train) if config.extra_train else []
    extra_meta = _check_extra(config.extra_train, extra) if config.extra_train else None
    run = RunFolder.open(config.out, asdict(config))
    started = time.perf_counter()
    train = task_examples(config.task, splits.train, config.max_rows) + (extra[: config.max_rows] if config.max_rows
                                                                     else extra)
    select = task_examples(config.task, splits.select, config.max_eval_rows) if splits.select else []
    report_all = load_mc(config.task, splits.report)
    report = report_all[: config.max_eval_rows] if config.max_eval_rows else report_all

    torch.manual_seed(config.loop.seed)
    tokenizer, model = load_mc_model(model_path)

    def step(rows: list[int]) -> torch.Tensor:
        chunk = [train[i] for i in rows]
        labels = torch.tensor([e.label for e in chunk], device=model.device)
        return torch.nn.functional.cross_entropy(_choice_logits(model, tokenizer, chunk, config.max_seq_length), labels)

    def evaluate() -> tuple[float, dict[str, float]]:
        accuracy = round(mc_accuracy(model, tokenizer, select, config.loop.batch_size, config.max_seq_length,
                                     "select"), 4)
        return accuracy, {"select_accuracy": accuracy}

    # without a selection split every epoch is only logged and the last one is kept
    result = train_loop(model, lambda rng: shuffled_batches(len(train), config.loop.batch_size, rng), step,
                        evaluate if select else None, config.loop, run)
    with result.autocast():
        accuracy = mc_accuracy(model, tokenizer, report, config.loop.batch_size, config.max_seq_length, "report")
    summary = {
        "stage": "mc",
        "kind": Kind.MC_MODEL,
        "kalbert_version": __version__,
        "task": config.task,
        "architecture": type(model).__name__,
        "model_type": model.config.model_type,
        "config": asdict(config),
        "splits": asdict(splits),
        "selected_epoch": result.best.epoch,
        "history": [{"epoch": e.epoch, "train_loss": round(e.train_loss, 6), **e.metrics} for e in result.history],
        **result.precision_record(),
        "report": {
            "split": splits.report,
            "accuracy": round(accuracy, 4),
            "n": len(report),
            "n_split": len(report_all),
            "subset": len(report) < len(report_all),
        },
        "train_examples": len(train),
        **({"extra_train": extra_meta} if extra_meta else {}),
        "wall_seconds": round(result.earlier_seconds + time.perf_counter() - started, 2),  # across restarts
    }
    with artifact_folder(config.out, Kind.MC_MODEL, overwrite=overwrite) as folder:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        if (model_path / "spiece.model").is_file():  # transformers 5's save_pretrained does not write it
            shutil.copy2(model_path / "spiece.model", folder / "spiece.model")
        summary = write_record(folder, summary, Kind.MC_MODEL, [model_path], folder_languages(model_path),
                               command_for(config))
        atomic_write_text(folder / "README.md", render_card(summary))
    run.remove()
    return summary


def render_card(summary: dict[str, Any]) -> str:
    """The README card of a multiple-choice folder, from its kalbert.json alone."""
    report = summary["report"]
    subset = f" (first {report['n']} of {report['n_split']} examples)" if report["subset"] else ""
    languages = "".join(f"- {lang}\n" for lang in summary["languages"])
    extra = summary.get("extra_train")
    trained = (f"{summary['train_examples']} training examples, {extra['examples']} of them from `{extra['file']}`.\n\n"
               if extra else "")
    return f"""---
language:
{languages}library_name: transformers
tags: [{summary['model_type']}, multiple-choice, kalbert]
---

# Multiple choice: {summary['model_type'].upper()} fine-tuned on {summary['task']}

Accuracy {report['accuracy']:.4f} on {summary['task']}:{report['split']}{subset}; the model of epoch
{summary['selected_epoch']} was kept. `{summary['architecture']}` made from `{summary['config']['model']}` with kalbert
{summary['kalbert_version']}:

```
{summary['command']}
```

{trained}Everything else (config, per-epoch history, machine) is in `kalbert.json`.
"""


def predict_mc(
    model_dir: str | Path, context: str, choices: Sequence[str], question: str = "", max_seq_length: int = 128
) -> list[float]:
    """Probability of each choice given the context (and a COPA question: 원인/결과, cause/effect)."""
    import torch

    path = check_encoder(model_dir, "multiple-choice prediction")
    if len(choices) < 2:
        raise KalbertError("give at least two choices")
    tokenizer, model = load_mc_model(path)
    model.eval()
    example = MCExample(context, question, tuple(choices), 0, "input")
    with torch.no_grad():
        logits = _choice_logits(model, tokenizer, [example], max_seq_length)[0]
    return torch.softmax(logits, dim=-1).tolist()
