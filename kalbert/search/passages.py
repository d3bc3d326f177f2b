"""Long documents cut into passages that fit the model, at sentence boundaries, with character offsets.

A document whose tokens fit ``passage_tokens`` is one passage. A longer one is split into sentences
(:func:`kalbert.text.split_sentences`, per line) and packed greedily; the next passage starts with the
trailing sentences of the previous one that fit in ``stride`` tokens, so an answer that straddles a cut
is whole in one of them. A single sentence longer than the budget is cut at spaces (or anywhere, for
unspaced Chinese) into equal pieces. Offsets index the document text, so a hit points into the source.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from kalbert.text import split_sentences

TokenCounter = Callable[[Sequence[str]], list[int]]
Span = tuple[int, int]


def token_counter(model) -> TokenCounter:
    """Token counts (no special tokens) with the model's own tokenizer: a Hugging Face tokenizer for a
    transformer, a ``tokenizers.Tokenizer`` for a static model."""
    tokenizer = model.tokenizer
    if hasattr(tokenizer, "encode_batch"):
        return lambda texts: [len(e.ids) for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]
    return lambda texts: [len(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def sentence_spans(text: str) -> list[Span]:
    """(start, end) of each sentence of ``text``, line by line."""
    spans: list[Span] = []
    line_start = 0
    for line in text.split("\n"):
        cursor = 0
        for sentence in split_sentences(line, min_chars=1):
            start = line.index(sentence, cursor) if sentence in line[cursor:] else cursor
            end = start + len(sentence)
            spans.append((line_start + start, line_start + end))
            cursor = end
        line_start += len(line) + 1
    return spans


def _cut(text: str, span: Span, pieces: int) -> list[Span]:
    """``span`` in ``pieces`` of about equal length, each ending at a space where one is near."""
    start, end = span
    out = []
    for i in range(1, pieces):
        target = start + (end - start) * i // pieces
        space = text.rfind(" ", out[-1][1] if out else start, target + 1)
        cut = space if space > (out[-1][1] if out else start) else target
        out.append((out[-1][1] if out else start, cut))
    out.append((out[-1][1] if out else start, end))
    return [(a + (text[a] == " "), b) for a, b in out if b > a]


def split_passages(text: str, count: TokenCounter, passage_tokens: int, stride: int) -> list[Span]:
    """Character spans of ``text``'s passages of at most about ``passage_tokens`` tokens, overlapping by up
    to ``stride`` tokens of whole sentences."""
    if count([text])[0] <= passage_tokens:
        return [(0, len(text))]
    units: list[Span] = []
    tokens: list[int] = []
    spans = sentence_spans(text)
    for span, n in zip(spans, count([text[a:b] for a, b in spans]), strict=True):
        if n <= passage_tokens:
            units.append(span)
            tokens.append(n)
            continue
        pieces = _cut(text, span, math.ceil(n / passage_tokens) + 1)
        units += pieces
        tokens += count([text[a:b] for a, b in pieces])
    passages: list[Span] = []
    first = 0
    while first < len(units):
        last, total = first, tokens[first]
        while last + 1 < len(units) and total + tokens[last + 1] <= passage_tokens:
            last += 1
            total += tokens[last]
        passages.append((units[first][0], units[last][1]))
        if last + 1 >= len(units):
            break
        back, overlap = last + 1, 0
        while back - 1 > first and overlap + tokens[back - 1] <= stride:
            back -= 1
            overlap += tokens[back]
        first = back
    return passages
