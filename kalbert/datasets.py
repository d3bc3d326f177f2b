"""Named data sets: where their files live, where they come from, and how to read them.

Configs and commands name data (``korsts:test``, ``c3:dev``, ``kowiki``) instead of paths, so the
same experiment runs on a laptop, in CI and on a GPU machine. This module is the one place that
knows each data set's files, public origin and licence, which splits are evaluation splits (never
trained on, DESIGN §5), and each file's quirks (BOMs, CRLF, quoted csv, misaligned answer
offsets). Loaders return small frozen dataclasses, so nothing else in kalbert parses these files.

A split's files are taken from the first data root that holds all of them: an explicit ``root``,
``$KALBERT_DATA``, ``../shared/data`` beside the checkout (or the working directory), then
``$XDG_CACHE_HOME/kalbert/data`` (default ``~/.cache/kalbert/data``). Without network a missing
data set is a one-line :class:`KalbertError` naming every place looked and the download URL.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import itertools
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kalbert.errors import KalbertError
from kalbert.io import kalbert_cache, open_text

log = logging.getLogger(__name__)
T = TypeVar("T")

KINDS = ("corpus", "sts", "pairs", "nli", "mc", "qa", "parallel")
NLI_LABELS = ("entailment", "neutral", "contradiction")
BLANK = "[BLANK]"  # replaces CHID's ``#idiom#`` slot in MCExample.context


@dataclass(frozen=True)
class DatasetSpec:
    """One named data set: its files per split (relative to a data root), origin and licence."""

    name: str
    kind: str
    lang: str
    splits: dict[str, tuple[str, ...]] = field(hash=False)
    url: str
    licence: str
    description: str
    eval_splits: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.kind not in KINDS or not self.eval_splits <= self.splits.keys():
            raise ValueError(f"bad registry entry {self.name!r}")


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
class ParallelSet:
    languages: tuple[str, ...]
    rows: list[tuple[str, ...]]


def _spec(name: str, kind: str, lang: str, splits: dict[str, str | tuple[str, ...]], url: str,
          licence: str, description: str, eval_splits: Iterable[str] = ()) -> DatasetSpec:
    files = {split: (f,) if isinstance(f, str) else f for split, f in splits.items()}
    return DatasetSpec(name, kind, lang, files, url, licence, description, frozenset(eval_splits))


def _each(pattern: str, *splits: str) -> dict[str, str | tuple[str, ...]]:
    """``{split: pattern.format(split)}`` for the given splits (default train, dev, test)."""
    return {split: pattern.format(split) for split in splits or ("train", "dev", "test")}


_KOBEST = "https://github.com/SKT-LSL/KoBEST_datarepo"
_KORNLU = "https://github.com/kakaobrain/KorNLUDatasets"
_CSTS = "https://github.com/zejunwang1/CSTS"
_TATOEBA = "https://www.manythings.org/anki/"
_XNLI = "https://github.com/facebookresearch/XNLI"
_KORQUAD_DEV = "bench/ko/korquad/KorQuAD_v1.0_dev.json"
_CMRC_DEV = "bench/zh/cmrc2018/cmrc2018_dev.json"
_CMRC_TRIAL = "bench/zh/cmrc2018/cmrc2018_trial.json"
_DATASETS = [
    _spec("kowiki", "corpus", "ko", {"all": "corpus/ko/kowiki.txt.gz"},
          "https://github.com/97danielj/WordEmbedding", "CC BY-SA",
          "Korean Wikipedia sample (~43.5k articles, 2022-09), one paragraph per line"),
    _spec("nsmc", "corpus", "ko", {"all": "corpus/ko/nsmc_reviews.txt.gz"},
          "https://github.com/e9t/nsmc", "CC0",
          "688k Naver movie reviews, one per document"),
    _spec("zh-laws", "corpus", "zh", {"all": "corpus/zh/laws.txt.gz"},
          "https://github.com/LawRefBook/Laws", "PRC statutes are not copyrighted",
          "3,469 Chinese laws and regulations"),
    _spec("zh-clue", "corpus", "zh", {"all": "corpus/zh/clue_news_reviews.txt.gz"},
          "https://github.com/CLUEbenchmark/FewCLUE", "research use",
          "131k Chinese news titles, reviews, app descriptions, abstracts (FewCLUE, UER-py, SophonPlus)"),
    _spec("korsts", "sts", "ko", _each("bench/ko/korsts/sts-{}.tsv"),
          _KORNLU, "CC BY-SA 4.0",
          "KorSTS: STS-B translated to Korean, score 0-5", ["test"]),
    _spec("klue-sts", "sts", "ko", {"dev": "bench/ko/klue-sts/klue-sts-v1.1_dev.json"},
          "https://github.com/KLUE-benchmark/KLUE", "CC BY-SA 4.0",
          "KLUE-STS v1.1 dev, score 0-5 (the KLUE test split is hidden)", ["dev"]),
    _spec("kornli", "nli", "ko", _each("bench/ko/kornli/xnli.{}.ko.tsv", "dev", "test"),
          _KORNLU, "CC BY-SA 4.0",
          "KorNLI: XNLI dev and test in Korean", ["test"]),
    _spec("kobest-copa", "mc", "ko", _each("bench/ko/kobest/copa/{}.tsv"),
          _KOBEST, "CC BY-SA 4.0",
          "KoBEST COPA: premise, cause (원인) or effect (결과), 2 choices", ["test"]),
    _spec("kobest-hellaswag", "mc", "ko", _each("bench/ko/kobest/hellaswag/{}.tsv"),
          _KOBEST, "CC BY-SA 4.0",
          "KoBEST HellaSwag: context, 4 endings", ["test"]),
    _spec("kobest-boolq", "pairs", "ko", _each("bench/ko/kobest/boolq/{}.tsv"),
          _KOBEST, "CC BY-SA 4.0",
          "KoBEST BoolQ: passage and yes/no question (load_boolq; load_pairs gives (passage, question))",
          ["test"]),
    _spec("korquad", "qa", "ko", dict.fromkeys(("dev", "train", "val", "test"), _KORQUAD_DEV),
          "https://korquad.github.io", "CC BY-ND 2.0 KR",
          "KorQuAD 1.0 dev, the only split here; train/val/test are fixed parts of it by article "
          "(QA_CARVES)", ["dev", "test"]),
    _spec("stsb-zh", "sts", "zh", _each("bench/zh/stsb-mt/stsb-zh-{}.csv"),
          "https://github.com/PhilipMay/stsb-multi-mt", "CC BY-SA 4.0 (scores)",
          "STS-B machine-translated to Chinese, row-aligned with STS-B and KorSTS", ["test"]),
    _spec("cnsd-stsb", "sts", "zh", _each("bench/zh/cnsd-stsb/sts-b-{}.txt"),
          _CSTS, "academic use",
          "CNSD STS-B, human-corrected Chinese translation, integer scores 0-5", ["test"]),
    _spec("afqmc", "pairs", "zh", _each("bench/zh/afqmc/{}.txt", "train", "dev"),
          _CSTS, "academic use",
          "CLUE AFQMC paraphrase pairs (binary)", ["dev"]),
    _spec("lcqmc", "pairs", "zh", _each("bench/zh/lcqmc/{}.txt", "dev", "test"),
          _CSTS, "research use",
          "LCQMC question matching (binary); no train split here", ["test"]),
    _spec("pawsx-zh", "pairs", "zh", _each("bench/zh/pawsx/{}_2k.tsv", "dev", "test"),
          _CSTS, "free with attribution",
          "PAWS-X Chinese paraphrase adversaries (binary)", ["test"]),
    _spec("atec", "pairs", "zh", {"train": "bench/zh/atec/atec_nlp_sim_train.csv"},
          "https://github.com/IceFlameWorm/NLP_Datasets", "unstated",
          "ATEC question pairs (binary)"),
    _spec("c3", "mc", "zh", {s: (f"bench/zh/c3/c3-m-{s}.json", f"bench/zh/c3/c3-d-{s}.json")
                             for s in ("train", "dev", "test")},
          "https://github.com/nlpdata/c3", "non-commercial research",
          "C3 reading comprehension; a split is its mixed-genre (m) plus its dialogue (d) file", ["test"]),
    _spec("chid", "mc", "zh", {"train": "bench/zh/chid/train_few_all.json",
                               "dev": "bench/zh/chid/dev_few_all.json",
                               "test_public": "bench/zh/chid/test_public.json"},
          "https://github.com/CLUEbenchmark/FewCLUE", "research use",
          "FewCLUE CHID idiom cloze, 7 candidates", ["test_public"]),
    _spec("xcopa-zh", "mc", "zh", {"dev": "bench/zh/xcopa/val.zh.jsonl",
                                   "test": "bench/zh/xcopa/test.zh.jsonl"},
          "https://github.com/cambridgeltl/xcopa", "CC BY 4.0",
          "XCOPA Chinese, cause or effect, 2 choices (dev is XCOPA's val)", ["test"]),
    _spec("ocnli", "nli", "zh", {"train": "bench/zh/ocnli/train.10k.json", "dev": "bench/zh/ocnli/dev.json"},
          "https://github.com/CLUEbenchmark/OCNLI", "CC BY-NC 2.0",
          "OCNLI Chinese NLI (10k train, dev)", ["dev"]),
    _spec("cmrc2018", "qa", "zh", {**_each("bench/zh/cmrc2018/cmrc2018_{}.json", "dev", "trial"),
                                   "train": (_CMRC_TRIAL, _CMRC_DEV), "val": _CMRC_DEV, "test": _CMRC_DEV},
          "https://github.com/ymcui/cmrc2018", "CC BY-SA 4.0",
          "CMRC 2018 Chinese extractive QA; train is trial plus a fixed part of dev by article, "
          "val/test the other dev parts (QA_CARVES)", ["dev", "test"]),
    _spec("stsb-en", "sts", "en", {**_each("bench/en/stsb/stsb-en-{}.csv"),
                                   "all": "bench/en/stsb/stsbenchmark.tsv.gz"},
          "https://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark", "CC BY-SA 4.0 (scores)",
          "English STS Benchmark; 'all' is the original file holding every split, test included",
          ["test", "all"]),
    _spec("parallel-stsb-train", "parallel", "en-ko-zh", {"all": "parallel/stsb-train.en-ko-zh.tsv"},
          "https://github.com/PhilipMay/stsb-multi-mt", "CC BY-SA 4.0",
          "STS-B train sentences in English, Korean (KorSTS) and Chinese (stsb-zh)"),
    _spec("parallel-xnli-dev", "parallel", "en-ko-zh", {"all": "parallel/xnli-dev.en-ko-zh.tsv"},
          _XNLI, "CC BY-NC 4.0",
          "XNLI dev premises and hypotheses in English, Korean (KorNLI) and Chinese"),
    _spec("parallel-xnli-test", "parallel", "en-ko-zh", {"all": "parallel/xnli-test.en-ko-zh.tsv"},
          _XNLI, "CC BY-NC 4.0",
          "XNLI test sentences in en, ko, zh: the KorNLI test text, so evaluation only", ["all"]),
    _spec("tatoeba-en-zh", "parallel", "en-zh", {"all": "parallel/tatoeba.en-zh.tsv"},
          _TATOEBA, "CC BY 2.0 FR",
          "Tatoeba English-Chinese sentence pairs"),
    _spec("tatoeba-en-ko", "parallel", "en-ko", {"all": "parallel/tatoeba.en-ko.tsv"},
          _TATOEBA, "CC BY 2.0 FR",
          "Tatoeba English-Korean sentence pairs"),
    _spec("news-en-ko", "parallel", "en-ko", {"all": "parallel/news.en-ko.tsv"},
          "https://github.com/jungyeul/korean-parallel-corpora", "CC BY-SA 3.0",
          "Korean-English news sentence pairs (dev and test of the original)"),
]
DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in _DATASETS}


@dataclass(frozen=True)
class ArticleCarve:
    """A QA split that keeps only some articles of one file, so fine-tuning has data without a train file."""

    source: str
    """the file (as in the registry) whose articles are divided; the split's other files are read whole"""
    part: str
    """"train", "val" or "test": which part of the divided articles the split keeps (article_parts)"""


QA_CARVE_SEED = "kalbert-qa-v1"
QA_TEST_SHARE = 0.2
"""share of the divided file's articles in the test part (rounded)"""
QA_VAL_SHARE = 0.1
"""share of the remaining articles in the val part, for picking checkpoints (rounded); the rest is train"""
QA_CARVES: dict[tuple[str, str], ArticleCarve] = {
    **{("korquad", part): ArticleCarve(_KORQUAD_DEV, part) for part in ("train", "val", "test")},
    **{("cmrc2018", part): ArticleCarve(_CMRC_DEV, part) for part in ("train", "val", "test")},
}


def article_parts(titles: Iterable[str]) -> dict[str, str]:
    """Title -> "train", "val" or "test"; fixed for a given set of titles, on every machine and Python.

    Articles (all paragraphs sharing a title) are ordered by the SHA-256 of ``QA_CARVE_SEED`` and the
    title: the first ``QA_TEST_SHARE`` are test, the next ``QA_VAL_SHARE`` of the rest val, the rest train.
    Dividing by article keeps a passage's questions out of training when another question on it is tested.
    """
    order = sorted(set(titles), key=lambda t: hashlib.sha256(f"{QA_CARVE_SEED}\0{t}".encode()).hexdigest())
    n_test = round(QA_TEST_SHARE * len(order))
    n_val = round(QA_VAL_SHARE * (len(order) - n_test))
    return {t: "test" if i < n_test else "val" if i < n_test + n_val else "train" for i, t in enumerate(order)}


# ``../shared/data`` beside the checkout: the repository is <work>/main, the data <work>/shared/data.
_BESIDE_CHECKOUT = Path(__file__).resolve().parents[2] / "shared" / "data"


# ----------------------------------------------------------------------------------------- registry
def list_datasets(kind: str | None = None) -> list[str]:
    """Registered names in registry order, optionally only those of one kind."""
    return [name for name, spec in DATASETS.items() if kind is None or spec.kind == kind]


def get_spec(name: str) -> DatasetSpec:
    if name in DATASETS:
        return DATASETS[name]
    close = difflib.get_close_matches(name, DATASETS, n=1)
    guess = f"did you mean '{close[0]}'? " if close else ""
    raise KalbertError(f"unknown data set '{name}'", f"{guess}known data sets: {', '.join(DATASETS)}")


def _split_of(spec: DatasetSpec, split: str | None) -> str:
    if split is None and len(spec.splits) == 1:
        return next(iter(spec.splits))
    if split not in spec.splits:
        what = "name a split" if split is None else f"unknown split '{split}'"
        raise KalbertError(f"data set '{spec.name}': {what}", f"splits: {', '.join(spec.splits)}")
    return split


def parse_ref(ref: str) -> tuple[str, str | None]:
    """``"korsts:dev"`` -> ``("korsts", "dev")``; ``"kowiki"`` -> ``("kowiki", None)``; both checked."""
    name, _, split = ref.strip().partition(":")
    spec = get_spec(name)
    if split:
        _split_of(spec, split)
    return name, split or None


def assert_trainable(name: str, split: str) -> None:
    """Refuse evaluation splits: nothing reported in a results table is ever trained on."""
    spec = get_spec(name)
    split = _split_of(spec, split)
    if split in spec.eval_splits:
        allowed = [s for s in spec.splits if s not in spec.eval_splits]
        hint = f"train on {', '.join(allowed)}" if allowed else f"'{name}' has no training split"
        raise KalbertError(f"{name}:{split} is an evaluation split; kalbert never trains on it", hint)


# ------------------------------------------------------------------------------------- resolution
def data_roots(root: str | Path | None = None) -> list[Path]:
    """The data roots searched, in order, without duplicates (they need not exist)."""
    candidates = [Path(root)] if root is not None else []
    if os.environ.get("KALBERT_DATA"):
        candidates.append(Path(os.environ["KALBERT_DATA"]))
    candidates += [_BESIDE_CHECKOUT, Path("..", "shared", "data"), kalbert_cache() / "data"]
    roots: list[Path] = []
    for candidate in candidates:
        path = Path(os.path.abspath(candidate.expanduser()))
        if path not in roots:
            roots.append(path)
    return roots


def _find(spec: DatasetSpec, split: str, roots: list[Path]) -> Path | None:
    """The first root holding every file of the split."""
    return next((root for root in roots if all((root / rel).is_file() for rel in spec.splits[split])), None)


def data_path(name: str, split: str | None = None, root: str | Path | None = None) -> list[Path]:
    """The files of ``name``'s split (``None`` for a one-split set) from the first root that has them."""
    spec = get_spec(name)
    split = _split_of(spec, split)
    roots = data_roots(root)
    found = _find(spec, split, roots)
    if found is None:
        raise KalbertError(
            f"data set '{name}' (split {split}) not found; looked in: {', '.join(map(str, roots))}",
            f"download it from {spec.url} into {roots[0]} as {', '.join(spec.splits[split])} "
            "or set KALBERT_DATA",
        )
    return [found / rel for rel in spec.splits[split]]


def describe_datasets(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One plain dict per data set, with which splits are found where (for ``kalbert data list``)."""
    roots = data_roots(root)
    rows = []
    for spec in DATASETS.values():
        found = {split: _find(spec, split, roots) for split in spec.splits}
        located = [root for root in found.values() if root]
        rows.append({
            "name": spec.name, "kind": spec.kind, "lang": spec.lang, "splits": list(spec.splits),
            "eval_splits": [s for s in spec.splits if s in spec.eval_splits],
            "found": [s for s, root in found.items() if root],
            "missing": [s for s, root in found.items() if not root],
            "location": str(located[0]) if located else None,
            "url": spec.url, "licence": spec.licence, "description": spec.description,
        })
    return rows


# ------------------------------------------------------------------------------------ file readers
Rows = Iterator[tuple[str, Any]]  # (where, row); row None marks a malformed line


def _clean(cell: str) -> str:
    return cell.replace("\ufeff", "").strip()


def _tsv(path: Path, header: bool) -> Rows:
    """Tab-separated cells (no quoting); with ``header``, dicts keyed by the first line's names."""
    names: list[str] | None = None
    for no, line in enumerate(open_text(path), start=1):
        if not line.strip():
            continue
        cells = [_clean(cell) for cell in line.split("\t")]
        if header and names is None:
            names = cells
        elif names is None:
            yield f"line {no}", cells
        else:
            yield f"line {no}", dict(zip(names, cells, strict=True)) if len(cells) == len(names) else None


def _csv(path: Path) -> Rows:
    reader = csv.reader(open_text(path))
    try:
        for cells in reader:
            if cells:
                yield f"line {reader.line_num}", [_clean(cell) for cell in cells]
    except csv.Error as exc:
        raise KalbertError(f"{path} line {reader.line_num} is not valid csv: {exc}") from None


def _jsonl(path: Path) -> Rows:
    for no, line in enumerate(open_text(path), start=1):
        line = _clean(line)
        if line:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            yield f"line {no}", row


def _json(path: Path) -> Any:
    try:
        return json.loads(_clean("\n".join(open_text(path))))
    except json.JSONDecodeError as exc:
        raise KalbertError(f"{path} line {exc.lineno} is not valid JSON: {exc.msg}",
                           "re-download the file from the data set's URL") from None


def _json_list(path: Path) -> Rows:
    data = _json(path)
    if not isinstance(data, list):
        raise KalbertError(f"{path} is not a JSON list", "re-download the file from the data set's URL")
    return ((f"item {i}", item) for i, item in enumerate(data))


def _records(path: Path, rows: Rows, make: Callable[[Any], T | None]) -> list[T]:
    """``make`` each row; malformed rows (None, or ``make`` failing) are skipped, counted and logged."""
    out: list[T] = []
    bad, first_bad = 0, ""
    for where, row in rows:
        try:
            if row is None:
                raise ValueError(where)
            record = make(row)
        except (LookupError, TypeError, ValueError, AttributeError):
            bad, first_bad = bad + 1, first_bad or where
            continue
        if record is not None:  # None: a row deliberately left out (e.g. NLI label "-")
            out.append(record)
    if not out:
        problem = f"no readable rows ({bad} malformed, first at {first_bad})" if bad else "is empty"
        raise KalbertError(f"{path} {problem}", "re-download the file from the data set's URL")
    if bad:
        log.warning("%s: skipped %d malformed rows (first at %s)", path, bad, first_bad)
    return out


def _text(value: Any) -> str:
    """A non-empty stripped string; anything else marks the row malformed."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("empty text")
    return value.strip()


def _score(value: Any) -> float:
    score = float(value)
    if not 0.0 <= score <= 5.0:
        raise ValueError(f"score {score} outside 0..5")
    return score


def _index(value: Any, n: int, base: int = 0) -> int:
    index = int(value) - base
    if isinstance(value, bool) or not 0 <= index < n:
        raise ValueError(f"label {value!r} out of range")
    return index


# ------------------------------------------------------------------------------------------- loaders
def _sts(s1: str, s2: str, score: str) -> STSPair:
    return STSPair(_text(s1), _text(s2), _score(score))


def _sts_file(path: Path) -> list[STSPair]:
    if path.suffix == ".json":  # KLUE-STS
        return _records(path, _json_list(path),
                        lambda r: _sts(r["sentence1"], r["sentence2"], r["labels"]["label"]))
    if path.suffix == ".csv":  # stsb-zh, stsb-en: quoted csv, no header
        return _records(path, _csv(path), lambda c: _sts(*c))
    if path.suffix == ".txt":  # CNSD: plain tsv, no header
        return _records(path, _tsv(path, header=False), lambda c: _sts(*c))
    return _records(path, _tsv(path, header=True),  # KorSTS, stsbenchmark.tsv.gz: named columns
                    lambda r: _sts(r["sentence1"], r["sentence2"], r["score"]))


def _pair(s1: str, s2: str, label: str) -> LabeledPair:
    return LabeledPair(_text(s1), _text(s2), _index(label, 2))


def _boolq_file(path: Path) -> list[BoolQExample]:
    answers = {"true": True, "false": False}
    return _records(path, _tsv(path, header=True), lambda r: BoolQExample(
        _text(r["Text"]), _text(r["Question"]), answers[r["Answer"].lower()], r["ID"]))


def _nli(premise: str, hypothesis: str, label: str | None) -> NLIPair | None:
    if label in (None, "", "-"):
        return None
    if label not in NLI_LABELS:
        raise ValueError(f"label {label!r}")
    return NLIPair(_text(premise), _text(hypothesis), label)


def _c3_rows(path: Path) -> Rows:
    """One row per question: (doc lines, question dict, id)."""
    for where, item in _json_list(path):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[1], list)):
            yield where, None
            continue
        doc, questions, doc_id = item
        for j, question in enumerate(questions):
            yield where, (doc, question, f"{path.stem}/{doc_id}/{j}")


def _c3(doc: list[str], q: dict[str, Any], ex_id: str) -> MCExample:
    choices = tuple(_text(choice) for choice in q["choice"])
    context = _text("\n".join(line.strip() for line in doc if line.strip()))
    return MCExample(context, _text(q["question"]), choices, choices.index(q["answer"].strip()), ex_id)


def _chid(r: dict[str, Any]) -> MCExample:
    content = _text(r["content"])
    if content.count("#idiom#") != 1:  # FewCLUE CHID: one blank and one answer per record
        raise ValueError("expected exactly one #idiom# blank")
    choices = tuple(_text(c) for c in r["candidates"])
    label = _index(r["answer"], len(choices))
    return MCExample(content.replace("#idiom#", BLANK), "", choices, label, str(r["id"]))


def _xcopa(r: dict[str, Any]) -> MCExample:
    if r["question"] not in ("cause", "effect"):
        raise ValueError(f"question {r['question']!r}")
    return MCExample(_text(r["premise"]), r["question"], (_text(r["choice1"]), _text(r["choice2"])),
                     _index(r["label"], 2), str(r["idx"]))


def _copa_file(path: Path) -> list[MCExample]:
    return _records(path, _tsv(path, header=True), lambda r: MCExample(
        _text(r["sentence"]), _text(r["question"]), (_text(r["1"]), _text(r["2"])),
        _index(r["Answer"], 2, base=1), r["ID"]))


def _hellaswag_file(path: Path) -> list[MCExample]:
    ids = itertools.count(1)  # no id column: number the rows
    return _records(path, _tsv(path, header=True), lambda r: MCExample(
        _text(r["context"]), "", tuple(_text(r[f"choice{i}"]) for i in range(1, 5)),
        _index(r["label"], 4), f"{path.stem}-{next(ids)}"))


def _locate(context: str, text: str, start: int) -> int:
    """``start`` if the answer is there, else its nearest occurrence, else -1."""
    if start >= 0 and context.startswith(text, start):
        return start
    hits = [m.start() for m in re.finditer(re.escape(text), context)]
    return min(hits, key=lambda hit: abs(hit - start), default=-1)


def _squad_rows(path: Path) -> Rows:
    data = _json(path)
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
    texts = tuple(_text(a["text"]) for a in answers)
    starts = tuple(_locate(context, t, int(a["answer_start"])) for t, a in zip(texts, answers, strict=True))
    return QAExample(str(qa["id"]), str(title), context, _text(qa["question"]), texts, starts)


Reader = Callable[[Path], list[T]]
_PAIR_READERS: dict[str, Reader[LabeledPair]] = {
    "afqmc": lambda p: _records(p, _tsv(p, header=False), lambda c: _pair(*c)),
    "lcqmc": lambda p: _records(p, _tsv(p, header=False), lambda c: _pair(*c)),
    "atec": lambda p: _records(p, _tsv(p, header=False), lambda c: _pair(*c[1:])),  # idx s1 s2 label
    "pawsx-zh": lambda p: _records(p, _tsv(p, header=True),
                                   lambda r: _pair(r["sentence1"], r["sentence2"], r["label"])),
    "kobest-boolq": lambda p: [LabeledPair(e.passage, e.question, int(e.answer)) for e in _boolq_file(p)],
}
_NLI_READERS: dict[str, Reader[NLIPair]] = {
    "kornli": lambda p: _records(p, _tsv(p, header=True),
                                 lambda r: _nli(r["sentence1"], r["sentence2"], r["gold_label"])),
    "ocnli": lambda p: _records(p, _jsonl(p), lambda r: _nli(r["sentence1"], r["sentence2"], r.get("label"))),
}
_MC_READERS: dict[str, Reader[MCExample]] = {
    "kobest-copa": _copa_file,
    "kobest-hellaswag": _hellaswag_file,
    "c3": lambda p: _records(p, _c3_rows(p), lambda r: _c3(*r)),
    "chid": lambda p: _records(p, _jsonl(p), _chid),
    "xcopa-zh": lambda p: _records(p, _jsonl(p), _xcopa),
}


def _load(name: str, split: str | None, root: str | Path | None, readers: dict[str, Reader[T]],
          loader: str) -> list[T]:
    """Read every file of the split with ``name``'s reader; other data sets are refused."""
    spec = get_spec(name)
    if name not in readers:
        raise KalbertError(f"{loader} cannot read '{name}' (a {spec.kind} data set)",
                           f"{loader} reads: {', '.join(readers)}")
    return [record for path in data_path(name, split, root) for record in readers[name](path)]


def load_sts(name: str, split: str, root: str | Path | None = None) -> list[STSPair]:
    """Sentence pairs with a 0-5 similarity score."""
    return _load(name, split, root, dict.fromkeys(list_datasets("sts"), _sts_file), "load_sts")


def load_pairs(name: str, split: str, root: str | Path | None = None) -> list[LabeledPair]:
    """Sentence pairs with a binary label (paraphrase / same question / BoolQ yes)."""
    return _load(name, split, root, _PAIR_READERS, "load_pairs")


def load_nli(name: str, split: str, root: str | Path | None = None) -> list[NLIPair]:
    """Premise/hypothesis pairs; rows without a gold label are left out."""
    return _load(name, split, root, _NLI_READERS, "load_nli")


def load_mc(name: str, split: str, root: str | Path | None = None) -> list[MCExample]:
    """Multiple-choice examples (COPA, HellaSwag, C3, CHID, XCOPA) with a 0-based answer index."""
    return _load(name, split, root, _MC_READERS, "load_mc")


def load_boolq(name: str, split: str, root: str | Path | None = None) -> list[BoolQExample]:
    """KoBEST BoolQ passages with a yes/no question."""
    return _load(name, split, root, {"kobest-boolq": _boolq_file}, "load_boolq")


def load_qa(name: str, split: str, root: str | Path | None = None) -> list[QAExample]:
    """SQuAD-format extractive QA; misplaced answer offsets are moved to the nearest occurrence.

    A carved split (QA_CARVES: ``korquad:train``, ``cmrc2018:test``, ...) keeps only its part of the
    divided file's articles.
    """
    def read(path: Path) -> list[QAExample]:
        return _records(path, _squad_rows(path), lambda r: _qa(*r))

    carve = QA_CARVES.get((name, split))
    if carve is None:
        return _load(name, split, root, dict.fromkeys(list_datasets("qa"), read), "load_qa")
    examples: list[QAExample] = []
    for rel, path in zip(DATASETS[name].splits[split], data_path(name, split, root), strict=True):
        records = read(path)
        if rel == carve.source:
            parts = article_parts(record.title for record in records)
            records = [record for record in records if parts[record.title] == carve.part]
        examples += records
    return examples


def load_parallel(name: str, root: str | Path | None = None) -> ParallelSet:
    """Rows of translations; the header names the language of each column."""
    just_the_path = dict.fromkeys(list_datasets("parallel"), lambda p: [p])
    (path,) = _load(name, None, root, just_the_path, "load_parallel")
    rows = _tsv(path, header=False)
    _, header = next(rows, ("", None))
    if header is None:
        raise KalbertError(f"{path} is empty", "re-download the file from the data set's URL")
    languages = tuple(header)

    def make(cells: list[str]) -> tuple[str, ...]:
        if len(cells) != len(languages):
            raise ValueError("wrong number of columns")
        return tuple(_text(cell) for cell in cells)

    return ParallelSet(languages, _records(path, rows, make))


# ------------------------------------------------------------------------------------------ corpora
def _is_jsonl(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        return True
    if name.endswith((".txt", ".txt.gz")):
        return False
    raise KalbertError(f"unsupported corpus file {path}", "use .txt, .txt.gz, .jsonl or .jsonl.gz")


def resolve_sources(sources: str | Path | Iterable[str | Path], root: str | Path | None = None) -> list[Path]:
    """Corpus names (``kowiki``) and file paths -> existing corpus files, checked before any reading."""
    if isinstance(sources, str | Path):
        sources = [sources]
    corpora = ", ".join(list_datasets("corpus"))
    paths: list[Path] = []
    for source in sources:
        name = str(source).partition(":")[0]
        if isinstance(source, str) and name in DATASETS:
            if DATASETS[name].kind != "corpus":
                raise KalbertError(f"'{name}' is a {DATASETS[name].kind} data set, not a corpus",
                                   f"corpora: {corpora}")
            paths += data_path(*parse_ref(source), root=root)
            continue
        path = Path(source).expanduser()
        if not path.is_file():
            raise KalbertError(f"corpus source {source} not found",
                               f"give a .txt/.txt.gz/.jsonl file or a corpus name: {corpora}")
        _is_jsonl(path)
        paths.append(path)
    if not paths:
        raise KalbertError("no corpus sources given", f"corpora: {corpora}")
    return paths


def _text_documents(path: Path) -> Iterator[list[str]]:
    doc: list[str] = []
    for line in open_text(path):
        line = _clean(line)
        if line:
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def _jsonl_documents(path: Path) -> Iterator[list[str]]:
    bad, first_bad = 0, 0
    for no, line in enumerate(open_text(path), start=1):
        line = _clean(line)
        if not line:
            continue
        try:
            text = json.loads(line)["text"]
            doc = [p for p in (_clean(part) for part in text.splitlines()) if p]
        except (json.JSONDecodeError, LookupError, TypeError, AttributeError):
            bad, first_bad = bad + 1, first_bad or no
            continue
        if doc:
            yield doc
    if bad:
        log.warning("%s: skipped %d malformed lines (first at line %d)", path, bad, first_bad)


def iter_documents(sources: str | Path | Iterable[str | Path], root: str | Path | None = None
                   ) -> Iterator[list[str]]:
    """Stream documents (lists of paragraph lines) from corpus names and .txt/.jsonl files, in order."""
    for path in resolve_sources(sources, root):
        read = _jsonl_documents if _is_jsonl(path) else _text_documents
        empty = True
        for doc in read(path):
            empty = False
            yield doc
        if empty:
            raise KalbertError(f"{path} is empty", "a corpus needs text: one paragraph per line, "
                               "blank lines between documents (or JSON lines with a 'text' field)")
