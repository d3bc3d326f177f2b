"""Loading QA models (ALBERT or BERT) and answering questions with them (used by training, evaluation and predict)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kalbert.artifact import read_meta
from kalbert.errors import KalbertError
from kalbert.precision import Precision, autocast, resolve_precision
from kalbert.tasks.encoders import encoder_inputs
from kalbert.tasks.qa.features import Answer, Window, choose_answer, make_windows, nbest_answers
from kalbert.training.device import default_device


@dataclass(frozen=True)
class QASettings:
    """How questions become windows and windows become answers; training writes them to kalbert.json."""

    max_seq_length: int = 384
    """tokens per window: [CLS] question [SEP] context part [SEP]"""
    doc_stride: int = 128
    """tokens shared by consecutive windows of a long context"""
    max_query_length: int = 64
    """longer questions are cut"""
    max_answer_length: int = 30
    """longest answer considered, in tokens"""
    n_best: int = 20
    """start and end candidates paired per window"""
    batch_size: int = 32
    """windows per forward pass"""

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> QASettings:
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


def read_config(path: Path) -> dict[str, Any]:
    config = path / "config.json"
    if not config.is_file():
        raise KalbertError(f"{path} is not a model folder (no config.json)",
                           "pass a model folder, e.g. one written by `kalbert qa train`")
    return json.loads(config.read_text(encoding="utf-8"))


def load_tokenizer(path: Path):
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise KalbertError(f"no usable tokenizer in {path}: {str(exc).splitlines()[0]}",
                           "copy the vocabulary's tokenizer files into the model folder") from None
    if not tokenizer.is_fast:
        raise KalbertError(f"the tokenizer in {path} gives no character offsets (not a fast tokenizer)",
                           "the folder needs tokenizer.json, as kalbert vocabularies have")
    return tokenizer


def window_logits(model, windows: Sequence[Window], pad_id: int, batch_size: int, bf16: bool = False
                  ) -> tuple[list[list[float]], list[list[float]]]:
    """Start and end logits of each window, cut to its length; ``bf16``: under bf16 autocast."""
    import torch

    starts: list[list[float]] = []
    ends: list[list[float]] = []
    model.eval()
    at = next(model.parameters()).device
    with torch.no_grad(), autocast(at, bf16):
        for first in range(0, len(windows), batch_size):
            batch = tensors(windows[first : first + batch_size], pad_id)
            out = model(**{k: v.to(at) for k, v in encoder_inputs(model, batch).items()})
            for i, window in enumerate(windows[first : first + batch_size]):
                starts.append(out.start_logits[i, : len(window.input_ids)].float().tolist())
                ends.append(out.end_logits[i, : len(window.input_ids)].float().tolist())
    return starts, ends


def tensors(windows: Sequence[Window], pad_id: int) -> dict[str, Any]:
    """Padded input tensors for a batch of windows."""
    import torch

    width = max(len(w.input_ids) for w in windows)
    pad = [width - len(w.input_ids) for w in windows]
    return {
        "input_ids": torch.tensor([w.input_ids + [pad_id] * p for w, p in zip(windows, pad, strict=True)]),
        "token_type_ids": torch.tensor([w.token_type_ids + [0] * p for w, p in zip(windows, pad, strict=True)]),
        "attention_mask": torch.tensor([[1] * len(w.input_ids) + [0] * p for w, p in zip(windows, pad, strict=True)]),
    }


def answer_all(model, tokenizer, questions: Sequence[str], contexts: Sequence[str], settings: QASettings,
               threshold: float = 0.0, bf16: bool = False) -> list[Answer]:
    """One answer per (question, context), each span an exact substring of its context."""
    windows = make_windows(tokenizer, questions, contexts, settings.max_seq_length, settings.doc_stride,
                           settings.max_query_length)
    starts, ends = window_logits(model, windows, tokenizer.pad_token_id, settings.batch_size, bf16)
    per_example: list[list[int]] = [[] for _ in questions]
    for w, window in enumerate(windows):
        per_example[window.example].append(w)
    answers = []
    for example, context in enumerate(contexts):
        ids = per_example[example]
        candidates = nbest_answers(context, [windows[w] for w in ids], [starts[w] for w in ids],
                                   [ends[w] for w in ids], settings.n_best, settings.max_answer_length)
        answers.append(choose_answer(candidates, threshold))
    return answers


class QAModel:
    """A fine-tuned extractive-QA folder (``kalbert qa train``, or any ALBERT or BERT ...ForQuestionAnswering)."""

    def __init__(self, path: str | Path, precision: Precision = "auto") -> None:
        from transformers import AutoModelForQuestionAnswering

        self.path = Path(path).expanduser()
        architectures = read_config(self.path).get("architectures") or []
        if not any(a.endswith("ForQuestionAnswering") for a in architectures):
            raise KalbertError(f"{self.path} is not a question-answering model ({', '.join(architectures) or 'no'}"
                               " architecture)", "fine-tune it first: kalbert qa train --model ... --out ...")
        self.settings = QASettings.from_dict(read_meta(self.path).get("settings", {}))
        self.tokenizer = load_tokenizer(self.path)
        self.model = AutoModelForQuestionAnswering.from_pretrained(str(self.path), local_files_only=True)
        self.model.to(default_device())
        self.bf16, _ = resolve_precision(precision, default_device())  # auto: bf16 where it is native, else fp32

    def answer(self, questions: Sequence[str], contexts: Sequence[str], threshold: float = 0.0) -> list[Answer]:
        """Answers in order; ``threshold`` (0..1) marks less probable best spans as unanswered."""
        for i, (question, context) in enumerate(zip(questions, contexts, strict=True)):
            where = f" (item {i + 1})" if len(questions) > 1 else ""
            if not question.strip():
                raise KalbertError(f"empty question{where}", "give a question to answer")
            if not context.strip():
                raise KalbertError(f"empty context{where}", "give the passage that holds the answer")
        if not 0.0 <= threshold <= 1.0:
            raise KalbertError(f"threshold {threshold} is not a probability", "use a value from 0 to 1")
        return answer_all(self.model, self.tokenizer, questions, contexts, self.settings, threshold, self.bf16)


def predict_qa(model_dir: str | Path, question: str, context: str, threshold: float = 0.0) -> Answer:
    """Answer one question from a context with a fine-tuned QA folder."""
    return QAModel(model_dir).answer([question], [context], threshold)[0]
