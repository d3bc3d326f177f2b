"""Scoring passages against a query: a reranker folder (PyTorch or its ONNX files) and the zero-shot baseline that
reads the QA model's best answer span as relevance.

Both expose the interface search and the benchmarks call: ``.name`` and ``.score(query, passages)`` -> one float
per passage, higher = more relevant. A reranker reads each pair as ``[CLS] query [SEP] passage [SEP]`` in batches of
pairs of similar length and returns its raw logits: the order is what matters, and logits never tie where a sigmoid
saturates. A passage longer than a pair holds is cut into overlapping windows and scores its best one (a kalbert
reranker records its windows in kalbert.json: their length, the one it was trained at unless export chose a shorter
one on dev, and how many windows of a passage it reads: those sharing most query tokens, which halved the tokens
read on dev without losing quality); any other CrossEncoder is cut to its token limit, the longer side first, as
sentence-transformers cuts it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from kalbert.artifact import Kind, folder_kind, kind_name, read_meta
from kalbert.errors import KalbertError
from kalbert.precision import Precision, autocast, resolve_precision

Backend = Literal["torch", "onnx", "onnx-int8"]
BACKENDS: tuple[str, ...] = get_args(Backend)
MODEL_INPUTS = ("input_ids", "token_type_ids", "attention_mask")
"""what a pair feeds the model, as the tokenizer names it"""
BATCH_SIZE = 16
"""pairs per forward pass: on 2 AMX cores 16 windows of 256 tokens ran 5-15% faster than 32 (less padding per batch,
activations that stay in cache)"""


def window_stride(tokens: int) -> int:
    """The overlap of windows of ``tokens`` tokens when a pair length is chosen after training: a quarter of it, as
    the training defaults have it (256 tokens, stride 64)."""
    return tokens // 4


def check_reranker_folder(path: str | Path) -> Path:
    """``path`` when it holds a reranker (a kalbert reranker or any sentence-transformers CrossEncoder folder),
    else a one-line error saying what it holds instead; reads no weights."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise KalbertError(f"{path}: reranker folder not found", "make one with `kalbert rerank train`")
    kind = folder_kind(folder)
    if kind != Kind.RERANKER:
        what = f"a {kind_name(kind)} folder" if kind else "not a model folder kalbert recognises"
        raise KalbertError(f"{path} is {what}, not a reranker", "make one with `kalbert rerank train`")
    return folder


def check_passages(query: str, passages: Sequence[str]) -> None:
    """One line for a blank query or passage (a reranker would score it, meaninglessly)."""
    if not isinstance(query, str) or not query.strip():
        raise KalbertError("the query is empty", "give the question or search text")
    for i, passage in enumerate(passages):
        if not isinstance(passage, str) or not passage.strip():
            raise KalbertError(f"passage {i + 1} of {len(passages)} is empty", "give every passage some text")


class Reranker:
    """A sequence-classification model with one output and its tokenizer, scoring (query, passage) pairs."""

    def __init__(self, name: str, model: Any, tokenizer: Any, max_length: int, bf16: bool = False,
                 batch_size: int = BATCH_SIZE, stride: int | None = None, first_stage_weight: float = 0.0,
                 hybrid_score_weight: float | None = None, windows_per_passage: int | None = None) -> None:
        self.name = name
        self.model = model
        """a transformers ...ForSequenceClassification or optimum's ORTModelForSequenceClassification"""
        self.tokenizer = tokenizer
        self.max_length = max_length
        """tokens per pair; longer pairs are cut, the longer side first"""
        self.bf16 = bf16
        """bf16 inference: autocast over fp32 weights (a model in training), none over weights already in bf16"""
        self.batch_size = batch_size
        self.stride = stride
        """passage tokens that consecutive windows share; None: a long passage is cut, not windowed"""
        self.first_stage_weight = first_stage_weight
        """how much of the first stage's order a reranking keeps (:func:`kalbert.ranking.rerank_fusion`)"""
        self.hybrid_score_weight = hybrid_score_weight
        """how much a hybrid first stage's scores count beside the reranker's (score fusion); None: rank fusion"""
        self.windows_per_passage = windows_per_passage
        """windows of a long passage read (:func:`matching_windows`); None: every one"""

    @property
    def windows(self) -> dict[str, int | None]:
        """How it reads a long passage, as kalbert.json records it: pair tokens, the stride of its windows (None: cut
        to one pair) and the windows read per passage (None: every one)."""
        return {"tokens": self.max_length, "stride": self.stride, "per_passage": self.windows_per_passage}

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One float32 score per passage, in the given order; higher = more relevant."""
        check_passages(query, passages)
        if self.stride is None or not passages:
            return self.score_pairs([(query, passage) for passage in passages])
        owners, windows = passage_windows(self.tokenizer, query, passages, self.max_length, self.stride)
        if self.windows_per_passage is not None and len(owners) > len(passages):
            keep = matching_windows(windows, owners, self.windows_per_passage)
            owners = owners[keep]
            windows = {key: [windows[key][i] for i in keep] for key in MODEL_INPUTS if key in windows}
        scores = np.full(len(passages), -np.inf, dtype=np.float32)
        np.maximum.at(scores, owners, self.score_encoded(windows))
        return scores

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Scores of (query, passage) pairs of any queries, each cut to ``max_length`` tokens, the longer side first."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        return self.score_encoded(self.tokenizer([query for query, _ in pairs], [passage for _, passage in pairs],
                                                 truncation="longest_first", max_length=self.max_length))

    def score_encoded(self, encoded: Mapping[str, Sequence[Sequence[int]]]) -> np.ndarray:
        """Scores of pairs the tokenizer already read (its unpadded lists), in batches of similar length."""
        import torch

        ids = encoded["input_ids"]
        keys = [key for key in MODEL_INPUTS if key in encoded]
        pad_id = self.tokenizer.pad_token_id or 0
        scores = np.zeros(len(ids), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        device = getattr(self.model, "device", "cpu")
        cast = self.bf16 and getattr(self.model, "dtype", None) != torch.bfloat16
        with torch.inference_mode(), autocast(device, cast):
            for start in range(0, len(order), self.batch_size):
                chunk = order[start: start + self.batch_size]
                width = max(len(ids[i]) for i in chunk)
                inputs = {key: np.full((len(chunk), width), pad_id if key == "input_ids" else 0, dtype=np.int64)
                          for key in keys}
                for row, i in enumerate(chunk):
                    for key in keys:
                        inputs[key][row, : len(ids[i])] = encoded[key][i]
                logits = self.model(**{key: torch.from_numpy(value).to(device) for key, value in inputs.items()}).logits
                scores[chunk] = logits[:, 0].float().cpu().numpy()
        return scores


def passage_windows(tokenizer: Any, query: str, passages: Sequence[str], max_length: int, stride: int,
                    offsets: bool = False) -> tuple[np.ndarray, Mapping[str, Sequence[Sequence[int]]]]:
    """The windows a reranker reads of each passage beside ``query``, tokenized once: (the passage index of each
    window, the windows as the tokenizer's unpadded pairs).

    A pair holds ``max_length`` tokens; the query keeps at most half of them (a longer one is cut), the passage the
    rest. A passage that fits is one window; a longer one is read in windows of its tokens that overlap by
    ``stride`` tokens (at most half a window), so an answer near a cut is read whole in one of them. With
    ``offsets`` the windows also carry each token's characters (``offset_mapping``)."""
    half = max_length // 2
    query_offsets = tokenizer(query, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if len(query_offsets) > half:
        query = query[: query_offsets[half - 1][1]]
    query_tokens = len(tokenizer(query, add_special_tokens=False)["input_ids"])
    room = max_length - query_tokens - tokenizer.num_special_tokens_to_add(pair=True)
    encoded = tokenizer([query] * len(passages), list(passages), truncation="only_second", max_length=max_length,
                        stride=min(stride, room // 2), return_overflowing_tokens=True,
                        return_offsets_mapping=offsets)
    return np.asarray(encoded["overflow_to_sample_mapping"], dtype=np.int64), encoded


def matching_windows(windows: Any, owners: np.ndarray, per_passage: int) -> np.ndarray:
    """Indices of the windows to read, in order: each passage's ``per_passage`` windows that share most of the query's
    tokens, a token counting ln(1 + windows / windows holding it) over all of the query's windows (a rare one
    points at the answer, a common one at nothing); ties keep the earlier window. ``windows`` is the tokenizer's
    output of :func:`passage_windows` (its sequence ids tell the query from the passage).

    Reading a passage's best-matching window only scored as well as reading them all on the selection splits, at
    half the tokens (its window preselection entry in benchmarks/results/rerank-ko-zh-small-selection.json)."""
    ids = windows["input_ids"]

    def side(i: int, which: int) -> set[int]:
        return {t for t, s in zip(ids[i], windows.sequence_ids(i), strict=True) if s == which}

    query = side(0, 0)
    shared = [query & side(i, 1) for i in range(len(ids))]
    holding = Counter(t for tokens in shared for t in tokens)
    weight = {t: math.log(1 + len(ids) / n) for t, n in holding.items()}
    match = np.array([sum(weight[t] for t in tokens) for tokens in shared])
    keep = []
    for passage in np.unique(owners):
        own = np.flatnonzero(owners == passage)
        keep.extend(own[np.argsort(-match[own], kind="stable")[:per_passage]])
    return np.sort(np.asarray(keep, dtype=np.int64))


def matching_window_texts(tokenizer: Any, query: str, passages: Sequence[str], max_length: int,
                          stride: int) -> list[str]:
    """Each passage as one window per passage reads it beside ``query``: a long passage's text is cut to its
    best-matching window (:func:`matching_windows`), a passage that fits stays whole. Training on these reads the
    pairs that scoring reads."""
    owners, windows = passage_windows(tokenizer, query, passages, max_length, stride, offsets=True)
    texts = list(passages)
    if len(owners) == len(passages):
        return texts
    for i in matching_windows(windows, owners, 1):
        passage = owners[i]
        if np.count_nonzero(owners == passage) > 1:
            spans = [span for span, side in zip(windows["offset_mapping"][i], windows.sequence_ids(i), strict=True)
                     if side == 1]
            texts[passage] = passages[passage][spans[0][0]: spans[-1][1]]
    return texts


def onnx_file(folder: Path, backend: Backend) -> str:
    """The ONNX file of ``folder`` that ``backend`` runs (recorded by `kalbert rerank export --onnx`)."""
    files = (read_meta(folder).get("onnx") or {}).get("files") or {}
    key = "int8" if backend == "onnx-int8" else "fp32"
    if key not in files or not (folder / files[key]).is_file():
        what = "int8 " if key == "int8" else ""
        raise KalbertError(f"{folder} has no {what}ONNX file", f"write one with `kalbert rerank export --model "
                           f"{folder} --out OUT --onnx{' --int8' if key == 'int8' else ''}`")
    return files[key]


def load_reranker(path: str | Path, backend: Backend = "torch", precision: Precision = "auto",
                  batch_size: int = BATCH_SIZE) -> Reranker:
    """A reranker folder, ready to score; ``precision`` applies to PyTorch (auto: bf16 where it is native).

    In bf16 the weights themselves are cast once: autocast would cast every layer's activations to and fro and run
    GELU in fp32, about a tenth of a reranking's time on 2 AMX cores."""
    from sentence_transformers import CrossEncoder

    folder = check_reranker_folder(path)
    if backend not in BACKENDS:
        raise KalbertError(f"unknown reranker backend {backend!r}", f"use one of {', '.join(BACKENDS)}")
    if backend == "torch":
        bf16, _ = resolve_precision(precision, "cpu")
        encoder = CrossEncoder(str(folder), device="cpu", local_files_only=True)
    else:
        if precision == "bf16":
            raise KalbertError("bf16 runs the PyTorch weights, not an ONNX file", "use --precision auto or fp32")
        bf16 = False
        encoder = CrossEncoder(str(folder), device="cpu", backend="onnx", local_files_only=True,
                               model_kwargs={"file_name": onnx_file(folder, backend)})
    if encoder.num_labels != 1:
        raise KalbertError(f"{folder} scores {encoder.num_labels} classes, not one relevance score",
                           "a reranker has num_labels 1")
    model = encoder.model.eval() if backend == "torch" else encoder.model
    if bf16:
        import torch

        model = model.to(torch.bfloat16)
    meta = read_meta(folder)
    windows = meta.get("windows") or {}
    return Reranker(folder.name, model, encoder.tokenizer, windows.get("tokens", encoder.max_seq_length), bf16,
                    batch_size, windows.get("stride"), meta.get("first_stage_weight", 0.0),
                    meta.get("hybrid_score_weight"), windows.get("per_passage"))


class QASpanScorer:
    """Zero-shot relevance from an extractive-QA model: a passage scores its best answer span's probability
    (P(start) x P(end), over the windows of the passage), as :class:`kalbert.tasks.qa.QAModel` answers."""

    def __init__(self, path: str | Path, precision: Precision = "auto") -> None:
        from kalbert.tasks.qa import QAModel

        self.qa = QAModel(path, precision)
        self.name = f"{Path(path).name} (best answer span)"
        self.bf16 = self.qa.bf16

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        check_passages(query, passages)
        if not passages:
            return np.zeros(0, dtype=np.float32)
        answers = self.qa.answer([query] * len(passages), list(passages))
        return np.array([answer.score for answer in answers], dtype=np.float32)
