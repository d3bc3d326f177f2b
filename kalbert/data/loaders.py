"""Typed loaders: each data set's rows as small frozen dataclasses (STS pairs, labelled pairs, NLI,
multiple choice, extractive QA, parallel text), so nothing else in kalbert parses these files."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kalbert.data.formats import (
    Rows,
    csv_rows,
    index_value,
    json_list_rows,
    json_value,
    jsonl_rows,
    read_records,
    score_value,
    text_value,
    tsv_rows,
)
from kalbert.data.registry import (
    DATASETS,
    QA_CARVES,
    article_parts,
    get_spec,
    list_datasets,
    question_key,
    question_parts,
    split_of,
)
from kalbert.data.roots import data_path
from kalbert.errors import KalbertError

T = TypeVar("T")


NLI_LABELS = ("entailment", "neutral", "contradiction")
BLANK = "[BLANK]"  # replaces CHID's ``#idiom#`` slot in MCExample.context


@dataclass(frozen=True)
class STSPair:
    sentence1: str
    sentence2: str
    score: float  # 0..5


@dataclass(frozen=True)
class LabeledPair:
    sentence1: str
    sentence2: str
    label: int  # 0 or 1


@dataclass(frozen=True)
class NLIPair:
    premise: str
    hypothesis: str
    label: str  # one of NLI_LABELS


@dataclass(frozen=True)
class MCExample:
    context: str
    question: str  # "" where the task has none (HellaSwag, CHID)
    choices: tuple[str, ...]
    label: int  # index into choices
    id: str


@dataclass(frozen=True)
class BoolQExample:
    passage: str
    question: str
    answer: bool
    id: str


@dataclass(frozen=True)
class QAExample:
    id: str
    title: str
    context: str
    question: str
    answers: tuple[str, ...]
    answer_starts: tuple[int, ...]  # -1 where the answer text does not occur in the context


@dataclass(frozen=True)
class QAPair:
    """A question and an answer written for it (not a span of a passage: it says it in other words)."""

    question: str
    answer: str
    source: str
    """the file's stem, e.g. naver_kin_qa"""


@dataclass(frozen=True)
class ParallelSet:
    languages: tuple[str, ...]
    rows: list[tuple[str, ...]]


def _sts(s1: str, s2: str, score: str) -> STSPair:
    return STSPair(text_value(s1), text_value(s2), score_value(score))


def _sts_file(path: Path) -> list[STSPair]:
    if path.suffix == ".json":  # KLUE-STS
        return read_records(path, json_list_rows(path),
                        lambda r: _sts(r["sentence1"], r["sentence2"], r["labels"]["label"]))
    if path.suffix == ".csv":  # stsb-zh, stsb-en: quoted csv, no header
        return read_records(path, csv_rows(path), lambda c: _sts(*c))
    if path.suffix == ".txt":  # CNSD: plain tsv, no header
        return read_records(path, tsv_rows(path, header=False), lambda c: _sts(*c))
    return read_records(path, tsv_rows(path, header=True),  # KorSTS, stsbenchmark, ChineseSTS: named columns
                    lambda r: _sts(r["sentence1"], r["sentence2"], r.get("score", r.get("score (0-5)"))))


def _pair(s1: str, s2: str, label: str) -> LabeledPair:
    return LabeledPair(text_value(s1), text_value(s2), index_value(label, 2))


def _boolq_file(path: Path) -> list[BoolQExample]:
    answers = {"true": True, "false": False}
    return read_records(path, tsv_rows(path, header=True), lambda r: BoolQExample(
        text_value(r["Text"]), text_value(r["Question"]), answers[r["Answer"].lower()], r["ID"]))


def _nli(premise: str, hypothesis: str, label: str | None) -> NLIPair | None:
    if label in (None, "", "-"):
        return None
    if label not in NLI_LABELS:
        raise ValueError(f"label {label!r}")
    return NLIPair(text_value(premise), text_value(hypothesis), label)


def _c3_rows(path: Path) -> Rows:
    """One row per question: (doc lines, question dict, id)."""
    for where, item in json_list_rows(path):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[1], list)):
            yield where, None
            continue
        doc, questions, doc_id = item
        for j, question in enumerate(questions):
            yield where, (doc, question, f"{path.stem}/{doc_id}/{j}")


def _c3(doc: list[str], q: dict[str, Any], ex_id: str) -> MCExample:
    choices = tuple(text_value(choice) for choice in q["choice"])
    context = text_value("\n".join(line.strip() for line in doc if line.strip()))
    return MCExample(context, text_value(q["question"]), choices, choices.index(q["answer"].strip()), ex_id)


def _chid(r: dict[str, Any]) -> MCExample:
    content = text_value(r["content"])
    if content.count("#idiom#") != 1:  # FewCLUE CHID: one blank and one answer per record
        raise ValueError("expected exactly one #idiom# blank")
    choices = tuple(text_value(c) for c in r["candidates"])
    label = index_value(r["answer"], len(choices))
    return MCExample(content.replace("#idiom#", BLANK), "", choices, label, str(r["id"]))


def _xcopa(r: dict[str, Any]) -> MCExample:
    if r["question"] not in ("cause", "effect"):
        raise ValueError(f"question {r['question']!r}")
    return MCExample(text_value(r["premise"]), r["question"], (text_value(r["choice1"]), text_value(r["choice2"])),
                     index_value(r["label"], 2), str(r["idx"]))


def _copa_file(path: Path) -> list[MCExample]:
    return read_records(path, tsv_rows(path, header=True), lambda r: MCExample(
        text_value(r["sentence"]), text_value(r["question"]), (text_value(r["1"]), text_value(r["2"])),
        index_value(r["Answer"], 2, base=1), r["ID"]))


def _hellaswag_file(path: Path) -> list[MCExample]:
    ids = itertools.count(1)  # no id column: number the rows
    return read_records(path, tsv_rows(path, header=True), lambda r: MCExample(
        text_value(r["context"]), "", tuple(text_value(r[f"choice{i}"]) for i in range(1, 5)),
        index_value(r["label"], 4), f"{path.stem}-{next(ids)}"))


def locate_answer(context: str, text: str, start: int) -> int:
    """``start`` if the answer is there, else its nearest occurrence, else -1."""
    if start >= 0 and context.startswith(text, start):
        return start
    hits = [m.start() for m in re.finditer(re.escape(text), context)]
    return min(hits, key=lambda hit: abs(hit - start), default=-1)


def _squad_rows(path: Path) -> Rows:
    data = json_value(path)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise KalbertError(f"{path} is not SQuAD-format JSON (no 'data' list)")
    for a, article in enumerate(articles):
        try:
            title = article.get("title", "")
            rows = [(title, para["context"], qa) for para in article["paragraphs"] for qa in para["qas"]]
        except (AttributeError, LookupError, TypeError):
            rows = [None]
        for row in rows:
            yield f"article {a}", row


def _qa(title: str, context: str, qa: dict[str, Any]) -> QAExample:
    answers = qa["answers"]
    if not answers:
        raise ValueError("no answers")
    texts = tuple(text_value(a["text"]) for a in answers)
    starts = tuple(locate_answer(context, t, int(a["answer_start"])) for t, a in zip(texts, answers, strict=True))
    return QAExample(str(qa["id"]), str(title), context, text_value(qa["question"]), texts, starts)


def _backtranslation_pairs(path: Path) -> list[LabeledPair]:
    """Each premise and hypothesis with its back-translation, as a paraphrase pair."""
    rows = read_records(path, tsv_rows(path, header=True), lambda r: (
        _pair(r["premise"], r["premise_backtranslated"], "1"),
        _pair(r["hypothesis"], r["hypothesis_backtranslated"], "1")))
    return list(dict.fromkeys(pair for row in rows for pair in row))


def _paraphrase_group_pairs(path: Path) -> list[LabeledPair]:
    """paraKQC groups as pairs: each sentence with the next of its group (label 1), and with the sentence at
    the same place in the next group of the file (label 0): neighbouring groups share a subject and differ in
    what they ask, so they make hard negatives."""
    groups: dict[str, list[str]] = defaultdict(list)
    for group, sentence in read_records(path, tsv_rows(path, header=True),
                                        lambda r: (r["group"], text_value(r["sentence"]))):
        groups[group].append(sentence)
    ordered = list(groups.values())
    pairs = []
    for g, sentences in enumerate(ordered):
        neighbour = ordered[(g + 1) % len(ordered)]
        for i, sentence in enumerate(sentences):
            pairs.append(LabeledPair(sentence, sentences[(i + 1) % len(sentences)], 1))
            pairs.append(LabeledPair(sentence, neighbour[i % len(neighbour)], 0))
    return [pair for pair in pairs if pair.sentence1 != pair.sentence2]


def _simclue_pairs(path: Path) -> list[LabeledPair]:
    """SimCLUE's three sample files: labelled pairs; query/positive pairs (label 1); query/positive/negative
    triples, as one positive and one negative pair."""
    if "rank" in path.name:
        rows = read_records(path, tsv_rows(path, header=True), lambda r: (
            _pair(r["query"], r["title"], "1"), _pair(r["query"], r["neg_title"], "0")))
        return [pair for row in rows for pair in row]
    if "postive" in path.name:
        return read_records(path, tsv_rows(path, header=True), lambda r: _pair(r["query"], r["title"], "1"))
    return read_records(path, tsv_rows(path, header=True), lambda r: _pair(r["sentence1"], r["sentence2"], r["label"]))


def _named_pairs(path: Path) -> list[LabeledPair]:
    return read_records(path, tsv_rows(path, header=True), lambda r: _pair(r["sentence1"], r["sentence2"], r["label"]))


def _named_nli(path: Path) -> list[NLIPair]:
    return read_records(path, tsv_rows(path, header=True), lambda r: _nli(r["sentence1"], r["sentence2"], r["label"]))


Reader = Callable[[Path], list[T]]
_PAIR_READERS: dict[str, Reader[LabeledPair]] = {
    "afqmc": lambda p: read_records(p, tsv_rows(p, header=False), lambda c: _pair(*c)),
    "lcqmc": lambda p: read_records(p, tsv_rows(p, header=False), lambda c: _pair(*c)),
    "atec": lambda p: read_records(p, tsv_rows(p, header=False), lambda c: _pair(*c[1:])),  # idx s1 s2 label
    "pawsx-zh": lambda p: read_records(p, tsv_rows(p, header=True),
                                   lambda r: _pair(r["sentence1"], r["sentence2"], r["label"])),
    "kobest-boolq": lambda p: [LabeledPair(e.passage, e.question, int(e.answer)) for e in _boolq_file(p)],
    "klue-nli-bt": _backtranslation_pairs,
    "parakqc": _paraphrase_group_pairs,
    "question-pair": lambda p: read_records(p, tsv_rows(p, header=False), lambda c: _pair(  # 0 = same meaning
        c[0], c[1], str(1 - int(c[2]))) if c[2].isdigit() else None),
    "oppo-xiaobu": _named_pairs,
    "simclue": _simclue_pairs,
}
_NLI_READERS: dict[str, Reader[NLIPair]] = {
    "kornli": lambda p: read_records(p, tsv_rows(p, header=True),
                                 lambda r: _nli(r["sentence1"], r["sentence2"], r["gold_label"])),
    "ocnli": lambda p: read_records(p, jsonl_rows(p), lambda r: _nli(r["sentence1"], r["sentence2"], r.get("label"))),
    "klue-nli": lambda p: read_records(p, tsv_rows(p, header=True),
                                       lambda r: _nli(r["premise"], r["hypothesis"], r["label"])),
    "cmnli": _named_nli,
    "csnli": _named_nli,
}
BOOLQ_CHOICES = ("아니요", "예")
"""KoBEST BoolQ's answers as the choices of a two-way multiple choice (False, True)"""
_MC_READERS: dict[str, Reader[MCExample]] = {
    "kobest-copa": _copa_file,
    "kobest-boolq": lambda p: [MCExample(e.passage, e.question, BOOLQ_CHOICES, int(e.answer), e.id)
                               for e in _boolq_file(p)],
    "kobest-hellaswag": _hellaswag_file,
    "c3": lambda p: read_records(p, _c3_rows(p), lambda r: _c3(*r)),
    "chid": lambda p: read_records(p, jsonl_rows(p), _chid),
    "xcopa-zh": lambda p: read_records(p, jsonl_rows(p), _xcopa),
}


def _load(name: str, split: str | None, root: str | Path | None, readers: dict[str, Reader[T]],
          loader: str) -> list[T]:
    """Read every file of the split with ``name``'s reader; other data sets are refused."""
    spec = get_spec(name)
    if name not in readers:
        raise KalbertError(f"{loader} cannot read '{name}' (a {spec.kind} data set)",
                           f"{loader} reads: {', '.join(readers)}")
    return [record for path in data_path(name, split, root) for record in readers[name](path)]


CROSSED_STS = ("stsb-ko-zh",)
"""STS sets made of two row-aligned translations of one set (registry: one file of each per split)"""


def _crossed_sts(name: str, split: str, root: str | Path | None) -> list[STSPair]:
    """Each pair of the first translation with one sentence taken from the other, whose gold score is the
    monolingual one: first every row once, the direction alternating, then every row the other way, so the
    first n rows (``--max-rows``) are n distinct pairs in both directions."""
    first_path, second_path = data_path(name, split, root)
    first, second = _sts_file(first_path), _sts_file(second_path)
    if len(first) != len(second) or any(a.score != b.score for a, b in zip(first, second, strict=True)):
        raise KalbertError(f"{first_path} and {second_path} are not row-aligned translations of one STS set",
                           "re-download both files from their data sets' URLs")
    rows = list(zip(first, second, strict=True))
    return [STSPair(a.sentence1, b.sentence2, a.score) if (i + turn) % 2 == 0
            else STSPair(b.sentence1, a.sentence2, a.score) for turn in (0, 1) for i, (a, b) in enumerate(rows)]


def load_sts(name: str, split: str, root: str | Path | None = None) -> list[STSPair]:
    """Sentence pairs with a 0-5 similarity score."""
    if name in CROSSED_STS:
        return _crossed_sts(name, split, root)
    return _load(name, split, root, dict.fromkeys(list_datasets("sts"), _sts_file), "load_sts")


def load_sts_file(path: str | Path) -> list[STSPair]:
    """Graded pairs from a file of one's own (a TSV with sentence1/sentence2/score columns, e.g. what
    `kalbert sbert mine` writes), read as :func:`load_sts` reads the registered ones."""
    return _sts_file(Path(path).expanduser())


def load_pairs(name: str, split: str, root: str | Path | None = None) -> list[LabeledPair]:
    """Sentence pairs with a binary label (paraphrase / same question / BoolQ yes)."""
    return _load(name, split, root, _PAIR_READERS, "load_pairs")


def load_nli(name: str, split: str, root: str | Path | None = None) -> list[NLIPair]:
    """Premise/hypothesis pairs; rows without a gold label are left out."""
    return _load(name, split, root, _NLI_READERS, "load_nli")


def load_mc(name: str, split: str, root: str | Path | None = None) -> list[MCExample]:
    """Multiple-choice examples (COPA, HellaSwag, C3, CHID, XCOPA; BoolQ as no/yes) with a 0-based answer index."""
    return _load(name, split, root, _MC_READERS, "load_mc")


def load_mc_file(name: str, path: str | Path) -> list[MCExample]:
    """Examples of one's own in ``name``'s file format (e.g. what `kalbert mc cloze` writes for CHID), read as
    :func:`load_mc` reads the registered ones."""
    if name not in _MC_READERS:
        raise KalbertError(f"no multiple-choice reader for '{name}'", f"known: {', '.join(_MC_READERS)}")
    path = Path(path).expanduser()
    if not path.is_file():
        raise KalbertError(f"{path} does not exist", f"write one with `kalbert mc cloze --out {path}` (CHID) "
                           "or pass a file in the task's own format")
    return _MC_READERS[name](path)


def load_boolq(name: str, split: str, root: str | Path | None = None) -> list[BoolQExample]:
    """KoBEST BoolQ passages with a yes/no question."""
    return _load(name, split, root, {"kobest-boolq": _boolq_file}, "load_boolq")


def load_qa(name: str, split: str, root: str | Path | None = None) -> list[QAExample]:
    """SQuAD-format extractive QA; misplaced answer offsets are moved to the nearest occurrence.

    A carved split (QA_CARVES: ``korquad:train``, ``cmrc2018:test``, ...) keeps only its part of the
    divided files' articles.
    """
    def read(path: Path) -> list[QAExample]:
        return read_records(path, _squad_rows(path), lambda r: _qa(*r))

    carve = QA_CARVES.get((name, split))
    if carve is None:
        return _load(name, split, root, dict.fromkeys(list_datasets("qa"), read), "load_qa")
    files = list(zip(DATASETS[name].splits[split], data_path(name, split, root), strict=True))
    records = {rel: read(path) for rel, path in files}
    parts = article_parts(record.title for rel in carve.sources for record in records[rel])
    return [record for rel, _ in files for record in records[rel]
            if rel not in carve.sources or parts[record.title] == carve.part]


def load_answers(name: str, split: str, root: str | Path | None = None) -> list[QAPair]:
    """Question -> answer pairs of a split carved by question (:func:`kalbert.data.registry.question_parts`) from
    every file of the set; a question's answers are all in one split."""
    carves = _answer_carves(name, root)
    return carves[split_of(get_spec(name), split)]


def _answer_carves(name: str, root: str | Path | None) -> dict[str, list[QAPair]]:
    """Every pair of the set's files, read once, by the carve its question falls in."""
    spec = get_spec(name)
    if spec.kind != "answers":
        raise KalbertError(f"load_answers cannot read '{name}' (a {spec.kind} data set)",
                           f"load_answers reads: {', '.join(list_datasets('answers'))}")
    pairs = [record for path in data_path(name, "train", root) for record in _answer_file(path)]
    parts = question_parts(pair.question for pair in pairs)
    carves: dict[str, list[QAPair]] = {split: [] for split in spec.splits}
    for pair in pairs:
        carves[parts[question_key(pair.question)]].append(pair)
    return carves


def _answer_file(path: Path) -> list[QAPair]:
    source = path.name.split(".")[0]
    return read_records(path, tsv_rows(path, header=True),
                        lambda r: QAPair(text_value(r["question"]), text_value(r["answer"]), source))


ANSWER_POOL_MIN = 2000
"""answers a question -> answer retrieval pool holds at least: train-carve answers fill it up when the dev and test
carves have fewer (Korean), so a question is not ranked among a few hundred answers only"""


@dataclass(frozen=True)
class AnswerPool:
    """A question -> answer retrieval split: its questions, the answers they are ranked among, and which of those
    answer each question (a question may have several)."""

    questions: list[str]
    answers: list[str]
    relevant: list[list[int]]
    """per question, the indices in ``answers`` of its own answers"""


def answer_pool(name: str, split: str, root: str | Path | None = None) -> AnswerPool:
    """Each question of ``split`` (dev or test) against every distinct answer of the set's dev and test carves, plus
    train-carve answers (in a fixed hash order) up to :data:`ANSWER_POOL_MIN`. Dev and test share the pool, so their
    scores are comparable; test answers among dev's candidates are distractors only, never relevant."""
    carves = _answer_carves(name, root)
    answers = list(dict.fromkeys(pair.answer for part in ("dev", "test") for pair in carves[part]))
    if len(answers) < ANSWER_POOL_MIN:
        seen = set(answers)
        fill = sorted({pair.answer for pair in carves["train"]} - seen,
                      key=lambda text: hashlib.sha256(text.encode()).hexdigest())
        answers += fill[: ANSWER_POOL_MIN - len(answers)]
    place = {text: i for i, text in enumerate(answers)}
    by_question: dict[str, list[int]] = defaultdict(list)
    for pair in carves[split]:
        by_question[pair.question].append(place[pair.answer])
    return AnswerPool(list(by_question), answers, [sorted(set(ids)) for ids in by_question.values()])


def load_parallel(name: str, root: str | Path | None = None) -> ParallelSet:
    """Rows of translations; the header names the language of each column."""
    just_the_path = dict.fromkeys(list_datasets("parallel"), lambda p: [p])
    (path,) = _load(name, None, root, just_the_path, "load_parallel")
    rows = tsv_rows(path, header=False)
    _, header = next(rows, ("", None))
    if header is None:
        raise KalbertError(f"{path} is empty", "re-download the file from the data set's URL")
    languages = tuple(header)

    def make(cells: list[str]) -> tuple[str, ...]:
        if len(cells) != len(languages):
            raise ValueError("wrong number of columns")
        return tuple(text_value(cell) for cell in cells)

    return ParallelSet(languages, read_records(path, rows, make))
