"""Extractive-QA features: overlapping token windows over a context, their labels, and answers from logits.

Every position is kept in *original context characters*. The tokenizer reads the context normalised
as kalbert pretrained on it (NFC, zero-width and control characters dropped, exotic spaces made plain)
through :func:`align_normalized`, which remembers where each normalised character came from; the fast
tokenizer's offset mapping then gives each token a span of the original text. So a label is exact for
any context, and every predicted answer is ``context[start:end]``, an exact substring of what was
given (KorQuAD and CMRC text is NFC already: there the mapping is the identity). A metaspace tokenizer
whose offsets include the space before a word (XLM-R's, e5's) has that space cut off the token's span,
so answers never start with it.

Windows follow BERT's SQuAD recipe: ``[CLS] question [SEP] context part [SEP]`` (XLM-R's
``<s> question </s></s> context part </s>``) of at most ``max_seq_length`` tokens, consecutive parts
sharing ``doc_stride`` tokens (as in transformers' run_qa), the question cut to ``max_query_length``. A
training window whose context part does not hold the whole answer points both labels at the first
token, ``[CLS]`` or ``<s>`` (index 0).
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace

from kalbert.errors import KalbertError
from kalbert.text.normalize import removed_characters, space_characters

_TOKENIZE_BATCH = 256  # questions per tokenizer call (the fast tokenizer batches them)


@dataclass(frozen=True)
class AlignedText:
    """A text as the tokenizer reads it, with the original span of each of its characters."""

    text: str
    starts: tuple[int, ...]
    """original index where the i-th character's source begins"""
    ends: tuple[int, ...]
    """original index (exclusive) where the i-th character's source ends"""

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Original ``[start, end)`` of the normalised characters ``[start, end)`` (end > start)."""
        return self.starts[start], self.ends[end - 1]


@functools.cache
def _table() -> dict[int, str | None]:
    return {**str.maketrans(dict.fromkeys(space_characters(), " ")), **{ord(c): None for c in removed_characters()}}


def align_normalized(text: str) -> AlignedText:
    """NFC plus kalbert's character clean-up, without collapsing spaces (offsets stay one-to-one there).

    The text is cut into chunks that NFC cannot join across (a starter and the marks or jamo that
    compose with it); each chunk is normalised alone, and its characters map to the whole chunk.
    """
    if unicodedata.is_normalized("NFC", text) and text.translate(_table()) == text:
        return AlignedText(text, tuple(range(len(text))), tuple(range(1, len(text) + 1)))
    chunks: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        if chunks:
            start = chunks[-1][0]
            joined = unicodedata.normalize("NFC", text[start : i + 1])
            if joined != unicodedata.normalize("NFC", text[start:i]) + unicodedata.normalize("NFC", ch):
                chunks[-1] = (start, i + 1)
                continue
        chunks.append((i, i + 1))
    pieces, starts, ends = [], [], []
    for start, end in chunks:
        piece = unicodedata.normalize("NFC", text[start:end]).translate(_table())
        one_to_one = len(piece) == end - start
        for k, ch in enumerate(piece):
            pieces.append(ch)
            starts.append(start + k if one_to_one else start)
            ends.append(start + k + 1 if one_to_one else end)
    return AlignedText("".join(pieces), tuple(starts), tuple(ends))


@dataclass
class Window:
    """One model input: a question and a part of its context."""

    example: int
    """index of the question in the list the windows were made from"""
    input_ids: list[int]
    token_type_ids: list[int]
    spans: list[tuple[int, int] | None]
    """original-context character span of each token; None for the question, specials and empty tokens"""
    start: int = 0
    """training label: first answer token, 0 ([CLS]) where the answer is not in this window"""
    end: int = 0
    """training label: last answer token, 0 ([CLS]) where the answer is not in this window"""


def _token_span(text: AlignedText, start: int, end: int) -> tuple[int, int] | None:
    """Original span of a context token's normalised characters ``[start, end)`` without leading space;
    None when nothing else is left."""
    while start < end and text.text[start].isspace():
        start += 1
    return text.original_span(start, end) if end > start else None


def _short_question(tokenizer, question: str, max_query_length: int) -> str:
    """The question cut after ``max_query_length`` tokens (at a token boundary)."""
    encoded = tokenizer(question, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoded["offset_mapping"]
    return question if len(offsets) <= max_query_length else question[: offsets[max_query_length - 1][1]]


def make_windows(
    tokenizer,
    questions: Sequence[str],
    contexts: Sequence[str],
    max_seq_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
) -> list[Window]:
    """Windows for each (question, context) pair, in order; ``Window.example`` indexes the pair."""
    if not getattr(tokenizer, "is_fast", False):
        raise KalbertError("extractive QA needs a fast tokenizer (character offsets)",
                           "the model folder needs tokenizer.json, as kalbert vocabularies have")
    if len(questions) != len(contexts):
        raise ValueError("one context per question")
    specials = tokenizer.num_special_tokens_to_add(pair=True)  # 3 for [CLS] q [SEP] c [SEP], 4 for XLM-R's
    windows: list[Window] = []
    for first in range(0, len(questions), _TOKENIZE_BATCH):
        aligned = [align_normalized(c) for c in contexts[first : first + _TOKENIZE_BATCH]]
        short = [_short_question(tokenizer, align_normalized(q).text, max_query_length)
                 for q in questions[first : first + _TOKENIZE_BATCH]]
        room = max_seq_length - specials - max(len(tokenizer(q, add_special_tokens=False)["input_ids"]) for q in short)
        if doc_stride >= room:
            raise KalbertError(f"doc stride {doc_stride} leaves no room in {max_seq_length}-token windows",
                               f"use a doc stride below {room} or a longer max length")
        encoded = tokenizer(short, [a.text for a in aligned], truncation="only_second", max_length=max_seq_length,
                            stride=doc_stride, return_overflowing_tokens=True, return_offsets_mapping=True,
                            return_token_type_ids=True)
        for w, index in enumerate(encoded["overflow_to_sample_mapping"]):
            text = aligned[index]
            spans = [_token_span(text, a, b) if sequence == 1 else None
                     for (a, b), sequence in zip(encoded["offset_mapping"][w], encoded.sequence_ids(w), strict=True)]
            windows.append(Window(first + index, encoded["input_ids"][w], encoded["token_type_ids"][w], spans))
    return windows


def label_window(window: Window, answer_start: int, answer_end: int) -> None:
    """Set the window's labels to the tokens covering original characters ``[answer_start, answer_end)``.

    An answer that begins or ends inside a token (서울 in ▁서울특별시) is labelled with that whole token.
    """
    context = [i for i, span in enumerate(window.spans) if span is not None]
    window.start = window.end = 0
    if not context or window.spans[context[0]][0] > answer_start or window.spans[context[-1]][1] < answer_end:
        return
    start = next(i for i in context if window.spans[i][1] > answer_start)
    end = next(i for i in reversed(context) if window.spans[i][0] < answer_end)
    if start <= end:
        window.start, window.end = start, end


@dataclass(frozen=True)
class Answer:
    """The answer to one question: a span of the original context and how sure the model is."""

    text: str
    """``context[start:end]``; the best span even when ``answered`` is False"""
    start: int
    end: int
    score: float
    """P(start token) x P(end token) under the window's softmaxes (0..1): the model's probability of
    exactly this span in the window it came from; [CLS] takes the rest of the probability"""
    answered: bool = True
    """False when ``score`` fell below the caller's no-answer threshold"""


def _log_softmax(logits: Sequence[float]) -> list[float]:
    top = max(logits)
    log_total = top + math.log(sum(math.exp(x - top) for x in logits))
    return [x - log_total for x in logits]


def nbest_answers(
    context: str,
    windows: Sequence[Window],
    start_logits: Sequence[Sequence[float]],
    end_logits: Sequence[Sequence[float]],
    n_best: int = 20,
    max_answer_length: int = 30,
) -> list[Answer]:
    """The best distinct spans of one question across all its windows, most probable first.

    In each window the ``n_best`` most likely context tokens for start and for end are paired (end not
    before start, at most ``max_answer_length`` tokens); a span seen in two overlapping windows keeps
    its higher score. Logits are per window, cut to the window's length.
    """
    best: dict[tuple[int, int], float] = {}
    for window, starts, ends in zip(windows, start_logits, end_logits, strict=True):
        log_start, log_end = _log_softmax(starts), _log_softmax(ends)
        context_tokens = [i for i, span in enumerate(window.spans) if span is not None]
        top_starts = sorted(context_tokens, key=lambda i: log_start[i], reverse=True)[:n_best]
        top_ends = sorted(context_tokens, key=lambda i: log_end[i], reverse=True)[:n_best]
        for s in top_starts:
            for e in top_ends:
                if s <= e < s + max_answer_length:
                    span = (window.spans[s][0], window.spans[e][1])
                    best[span] = max(best.get(span, -math.inf), log_start[s] + log_end[e])
    ranked = sorted(best.items(), key=lambda item: item[1], reverse=True)[:n_best]
    return [Answer(context[a:b], a, b, math.exp(log_p)) for (a, b), log_p in ranked]


def choose_answer(candidates: Sequence[Answer], threshold: float = 0.0) -> Answer:
    """The most probable candidate, marked unanswered when its score is below ``threshold`` (or none exists)."""
    if not candidates:
        return Answer("", 0, 0, 0.0, answered=False)
    top = candidates[0]
    return top if top.score >= threshold else replace(top, answered=False)
