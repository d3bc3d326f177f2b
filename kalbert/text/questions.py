"""A statement turned into the question it answers, by rule: one of its names or numbers asked for.

Extractive QA questions are mostly a sentence of their paragraph with the answer, a name or a number, replaced by
a question word ("세종은 1443년에 무엇을 창제하였는가?", "北京大学成立于多少年？").
Lewis et al. (2019) trained QA models on questions made that way from unlabelled text ("cloze translation", its
identity rule). The same rule here, on mecab-ko morphemes and jieba's part-of-speech tags; the question keeps the
rest of the sentence word for word.
"""

from __future__ import annotations

import random
import re

from kalbert.text.lexical import jieba_tokenizer, mecab_tagger

KO_NOUNS = ("NNP", "NNG")
KO_NUMBER = "SN"
KO_WHAT, KO_HOW_MANY = "무엇", "몇"
KO_AFTER_CONSONANT = {"를": "을", "가": "이", "는": "은", "와": "과", "로": "으로", "랑": "이랑", "나": "이나"}
"""a particle after a vowel -> its form after a consonant: 무엇 ends in one"""
KO_PAST_CONSONANT = 20
"""the final ㅆ of a past-tense syllable (했, 었, 갔)"""
ZH_WHAT = {"nr": "谁", "ns": "哪里", "nt": "什么", "nz": "什么", "n": "什么", "m": "多少"}
"""jieba tag of the word asked for -> the question word that stands in for it"""
_END = re.compile(r"[.!。！]+$")
_DIGITS = re.compile(r"\d")


def question_form(sentence: str, lang: str, rng: random.Random) -> str | None:
    """``sentence`` with one name or number (chosen with ``rng``; names twice as likely as common nouns) asked
    for, or None when it has none."""
    return _korean(sentence, rng) if lang == "ko" else _chinese(sentence, rng)


def _korean(sentence: str, rng: random.Random) -> str | None:
    morphemes = mecab_tagger().parse(sentence)
    spans = []  # (start, end, question word, weight) of each noun run or number followed by a particle
    i = 0
    while i < len(morphemes):
        j, pos = i, morphemes[i].pos
        if pos in KO_NOUNS or pos == KO_NUMBER:
            while j + 1 < len(morphemes) and morphemes[j + 1].pos in KO_NOUNS and pos != KO_NUMBER:
                j += 1
            after = morphemes[j + 1] if j + 1 < len(morphemes) else None
            touching = after is not None and after.span.start == morphemes[j].span.end
            if pos == KO_NUMBER and touching and after.pos.startswith("NNB"):  # 1443년 -> 몇 년
                spans.append((morphemes[i].span.start, morphemes[j].span.end, f"{KO_HOW_MANY} ", 2))
            elif pos != KO_NUMBER and touching and after.pos.startswith("J"):
                named = any(m.pos == "NNP" for m in morphemes[i: j + 1])
                spans.append((morphemes[i].span.start, morphemes[j].span.end, KO_WHAT, 2 if named else 1))
        i = j + 1
    if not spans:
        return None
    start, end, word, _ = rng.choices(spans, weights=[s[3] for s in spans])[0]
    rest = sentence[end:]
    if word == KO_WHAT:
        for vowel_form, consonant_form in KO_AFTER_CONSONANT.items():
            if rest.startswith(vowel_form):
                rest = consonant_form + rest[len(vowel_form):]
                break
    return _korean_question(sentence[:start] + word + rest)


def _chinese(sentence: str, rng: random.Random) -> str | None:
    from jieba import posseg

    words = list(posseg.POSTokenizer(jieba_tokenizer()).cut(sentence))
    places = [i for i, w in enumerate(words) if w.flag in ZH_WHAT and len(w.word) > 1
              and (w.flag != "m" or _DIGITS.search(w.word))]
    if not places:
        return None
    weights = [1 if words[i].flag == "n" else 2 for i in places]
    place = rng.choices(places, weights=weights)[0]
    text = "".join(ZH_WHAT[w.flag] if i == place else w.word for i, w in enumerate(words))
    return _END.sub("", text) + "？"


def _final_consonant(syllable: str) -> int:
    """The index of a Hangul syllable's final consonant (0: none; -1: not a syllable)."""
    code = ord(syllable) - 0xAC00
    return code % 28 if 0 <= code < 11172 else -1


def _korean_question(statement: str) -> str:
    """A statement's final punctuation as a question mark; a past "-었다" ending as "-었는가", "-이다" as "-인가"."""
    text = _END.sub("", statement.strip())
    if text.endswith("다") and len(text) > 1 and _final_consonant(text[-2]) == KO_PAST_CONSONANT:
        text = text[:-1] + "는가"
    elif text.endswith("이다"):
        text = text[:-2] + "인가"
    return text + "?"
