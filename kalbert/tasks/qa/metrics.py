"""Exact match and F1 as the official KorQuAD 1.0 and CMRC 2018 evaluation scripts compute them.

Published numbers on these data sets come from those scripts, so kalbert reimplements them rule for
rule instead of using SQuAD's metric (English articles removed, whitespace tokens: too coarse for
Korean, where a particle sticks to its word, and meaningless for Chinese):

- KorQuAD 1.0 (``KorQuAD_v1.0_evaluate.py``): replace quotes, 《》<>〈〉() and ‘’ by spaces, lower-case,
  delete ASCII punctuation, collapse whitespace; EM compares the normalised strings; F1 counts common
  *characters* of the normalised strings with the spaces removed (a bag of characters).
- CMRC 2018 (``cmrc2018_evaluate.py``): lower-case; EM deletes the script's punctuation list and
  compares; F1 segments both strings (each CJK character alone, other runs by ``nltk.word_tokenize``,
  the punctuation list deleted) and scores the longest common *contiguous* run of segments.
  nltk is not a kalbert dependency: :func:`_nltk_words` is NLTK's ``NLTKWordTokenizer`` rules
  (Apache 2.0) without the Punkt sentence split, which only differs on a period inside an English run.

Both take the maximum over the reference answers and report percentages. DRCD (Chinese, SQuAD format) is
scored with the CMRC 2018 rules, as Chinese models' DRCD results usually are.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

from kalbert.errors import KalbertError

# ------------------------------------------------------------------------------------------ KorQuAD
_KORQUAD_SPACED = re.compile("['\"《》<>〈〉()‘’]")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def korquad_normalize(text: str) -> str:
    """``normalize_answer`` of the KorQuAD 1.0 script."""
    text = _KORQUAD_SPACED.sub(" ", text).lower()
    text = "".join(ch for ch in text if ch not in _ASCII_PUNCTUATION)
    return " ".join(text.split())


def korquad_exact(prediction: str, truth: str) -> float:
    return float(korquad_normalize(prediction) == korquad_normalize(truth))


def korquad_f1(prediction: str, truth: str) -> float:
    """Character-level F1 of the normalised strings, spaces left out."""
    pred = list(korquad_normalize(prediction).replace(" ", ""))
    gold = list(korquad_normalize(truth).replace(" ", ""))
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------------------- CMRC 2018
# The script's list; its '……' entry is two characters, so a lone '…' is never removed (kept as is).
_CMRC_PUNCTUATION = frozenset([
    "-", ":", "_", "*", "^", "/", "\\", "~", "`", "+", "=", "，", "。", "：", "？", "！", "“", "”", "；",
    "’", "《", "》", "……", "·", "、", "「", "」", "（", "）", "－", "～", "『", "』",
])
_CJK = re.compile("[\u4e00-\u9fa5]")


def _nltk_words(text: str) -> list[str]:
    """``nltk.tokenize.NLTKWordTokenizer().tokenize`` (the rules ``word_tokenize`` applies per sentence)."""
    for pattern, repl in _NLTK_STARTING_QUOTES + _NLTK_PUNCTUATION + _NLTK_BRACKETS:
        text = pattern.sub(repl, text)
    text = f" {text} "
    for pattern, repl in _NLTK_ENDING_QUOTES:
        text = pattern.sub(repl, text)
    for pattern in _NLTK_CONTRACTIONS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


def _rules(*pairs: tuple[str, str]) -> list[tuple[re.Pattern[str], str]]:
    return [(re.compile(pattern), repl) for pattern, repl in pairs]


_NLTK_STARTING_QUOTES = _rules(
    ("([«“‘„]|[`]+)", r" \1 "), (r'^"', r"``"), (r"(``)", r" \1 "), (r"([ \(\[{<])(\"|\'{2})", r"\1 `` "),
    (r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", r"\1 "),
)
_NLTK_PUNCTUATION = _rules(
    (r"([^\.])(\.)([\]\)}>\"\'»”’ ]*)\s*$", r"\1 \2 \3 "), (r"([:,])([^\d])", r" \1 \2"), (r"([:,])$", r" \1 "),
    (r"\.{2,}", r" \g<0> "), (r"[;@#$%&]", r" \g<0> "), ("[\u2012-\u2015]", r" \g<0> "),
    (r"([^\.])(\.)([\]\)}>\"\']*)\s*$", r"\1 \2\3 "), (r"[?!]", r" \g<0> "), (r"([^'])' ", r"\1 ' "),
    (r"[*]", r" \g<0> "),
)
_NLTK_BRACKETS = _rules((r"[\]\[\(\)\{\}\<\>]", r" \g<0> "), (r"--", r" -- "))
_NLTK_ENDING_QUOTES = _rules(
    ("([»”’])", r" \1 "), (r"''", " '' "), (r'"', " '' "), (r"\s+", " "),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 "), (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 "),
)
_NLTK_CONTRACTIONS = [re.compile(p) for p in (
    r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b", r"(?i)\b(gon)(?#X)(na)\b",
    r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b", r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)",
    r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b",
)]


def cmrc_segments(text: str) -> list[str]:
    """``mixed_segmentation(text, rm_punc=True)`` of the CMRC 2018 script."""
    segments: list[str] = []
    run = ""
    for ch in text.lower().strip():
        if ch in _CMRC_PUNCTUATION:
            continue
        if _CJK.match(ch):
            if run:
                segments += _nltk_words(run)
                run = ""
            segments.append(ch)
        else:
            run += ch
    return segments + (_nltk_words(run) if run else [])


def cmrc_remove_punctuation(text: str) -> str:
    """``remove_punctuation`` of the CMRC 2018 script."""
    return "".join(ch for ch in text.lower().strip() if ch not in _CMRC_PUNCTUATION)


def _longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    best, previous = 0, [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def cmrc_exact(prediction: str, truth: str) -> float:
    return float(cmrc_remove_punctuation(prediction) == cmrc_remove_punctuation(truth))


def cmrc_f1(prediction: str, truth: str) -> float:
    """F1 of the longest common contiguous run of segments."""
    pred, gold = cmrc_segments(prediction), cmrc_segments(truth)
    same = _longest_common_run(gold, pred)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


# ------------------------------------------------------------------------------------------ scoring
METRICS = {
    "korquad": (korquad_exact, korquad_f1, "KorQuAD 1.0 official script (character F1)"),
    "cmrc2018": (cmrc_exact, cmrc_f1, "CMRC 2018 official script (mixed segmentation, longest-common-run F1)"),
    "drcd": (cmrc_exact, cmrc_f1, "CMRC 2018 script's rules, as Chinese DRCD results are usually reported"),
}


def qa_scores(task: str, predictions: Mapping[str, str], answers: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """EM and F1 x100 over every question of ``answers`` (a question without a prediction scores 0)."""
    if task not in METRICS:
        raise KalbertError(f"no QA metric for '{task}'", f"metrics: {', '.join(METRICS)}")
    if not answers:
        raise KalbertError("no questions to score")
    exact_fn, f1_fn, _ = METRICS[task]
    exact = f1 = 0.0
    for qid, truths in answers.items():
        if qid in predictions:
            exact += max(exact_fn(predictions[qid], truth) for truth in truths)
            f1 += max(f1_fn(predictions[qid], truth) for truth in truths)
    return {"exact_match": 100.0 * exact / len(answers), "f1": 100.0 * f1 / len(answers)}
