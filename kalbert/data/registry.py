"""The registry of named data sets: what each is, its splits' files, its origin, and which splits are
never trained on.

Configs and commands name data (``korsts:test``, ``c3:dev``, ``kowiki``) instead of paths, so the same
experiment runs on a laptop, in CI and on a GPU machine. QA dev files are divided by article into named
train/val/test parts (``QA_CARVES``), question -> answer sets by question (``question_parts``), fixed on every
machine."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from kalbert.errors import KalbertError

KINDS = ("corpus", "sts", "pairs", "nli", "mc", "qa", "answers", "parallel")


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
_KLUE = "https://github.com/KLUE-benchmark/KLUE"
_TATOEBA = "https://www.manythings.org/anki/"
_XNLI = "https://github.com/facebookresearch/XNLI"
_KORQUAD_DEV = "bench/ko/korquad/KorQuAD_v1.0_dev.json"
_CMRC_DEV = "bench/zh/cmrc2018/cmrc2018_dev.json"
_CMRC_TRIAL = "bench/zh/cmrc2018/cmrc2018_trial.json"
_DRCD = ("bench/zh/drcd/DRCD_dev.json", "bench/zh/drcd/DRCD_test.json")
_ANSWERS_KO = tuple(f"train/qa/ko/{f}.tsv" for f in ("naver_kin_qa", "hrc_human_rights_qa", "hrc_counsel_cases"))
_ANSWERS_ZH = tuple(f"train/qa/zh/{f}.tsv" for f in (
    "toyhom_medical_dialogue", "lawyer_llama_legal_consult", "huatuo_med_instruct", "alpaca_zh_questions",
    "medicalgpt_medical_sft_1k", "moss_sft_helpful_zh", "chatmed_consult_sample"))
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
    _spec("stsb-ko-zh", "sts", "ko-zh",
          {split: (f"bench/ko/korsts/sts-{split}.tsv", f"bench/zh/stsb-mt/stsb-zh-{split}.csv")
           for split in ("train", "dev", "test")},
          _KORNLU, "CC BY-SA 4.0",
          "STS-B across languages: each KorSTS pair with one sentence swapped for its stsb-zh translation "
          "(the two files are row-aligned), both ways, same score", ["test"]),
    _spec("klue-sts", "sts", "ko", {"dev": "bench/ko/klue-sts/klue-sts-v1.1_dev.json"},
          _KLUE, "CC BY-SA 4.0",
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
    _spec("drcd", "qa", "zh", dict.fromkeys(("all", "train", "val", "test"), _DRCD),
          "https://github.com/DRCKnowledgeTeam/DRCD", "CC BY-SA 3.0",
          "DRCD Chinese extractive QA in Traditional script (SQuAD format); 'all' is its public dev and test "
          "files, which share articles; train/val/test are fixed parts of both by article (QA_CARVES)",
          ["all", "test"]),
    # Training-only sets (../shared/data README): every row holding a sentence of an evaluation split was
    # removed before they were added, so they have one split, train, and no evaluation split of their own.
    _spec("klue-nli", "nli", "ko", {"train": "bench/ko/klue-nli/train.tsv"},
          _KLUE, "CC BY-SA 4.0",
          "KLUE-NLI train: 24,992 Korean premise/hypothesis pairs (KLUE-NLI dev rows removed)"),
    _spec("klue-nli-bt", "pairs", "ko", {"train": "bench/ko/klue-nli/train-backtranslated.tsv"},
          "https://github.com/hahajjjun/KorNLI-DACON", "CC BY-SA 4.0",
          "KLUE-NLI train premises and hypotheses beside a machine back-translation of each, as paraphrase "
          "pairs (label 1; some back-translations change the meaning)"),
    _spec("parakqc", "pairs", "ko", {"train": "bench/ko/parakqc/paraKQC_v1.filtered.tsv"},
          "https://github.com/warnikchow/paraKQC", "CC BY-SA 4.0",
          "paraKQC: 836 groups of 10 Korean paraphrased questions/commands, as pairs: each sentence with the "
          "next of its group (label 1) and with one of another group on the same topic (label 0)"),
    _spec("question-pair", "pairs", "ko", {"train": "bench/ko/question-pair/train.tsv"},
          "https://github.com/songys/Question_pair", "MIT",
          "Korean question pairs, label 1 = same meaning (the file's is_duplicate 0)"),
    _spec("cmnli", "nli", "zh", {"train": "bench/zh/cmnli/dev.tsv"},
          _CSTS, "research use",
          "CMNLI (MNLI translated to Chinese), its dev file used as training data"),
    _spec("csnli", "nli", "zh", {"train": "bench/zh/csnli/dev.tsv"},
          _CSTS, "research use",
          "Chinese-SNLI, its dev file used as training data"),
    _spec("oppo-xiaobu", "pairs", "zh", {"train": "bench/zh/oppo-xiaobu/dev.tsv"},
          _CSTS, "academic use",
          "OPPO xiaobu dialogue paraphrase pairs (binary), its dev file used as training data"),
    _spec("simclue", "pairs", "zh", {"train": tuple(f"bench/zh/simclue/train_{part}.tsv"
                                                    for part in ("pair_1w", "pair_postive_1w", "rank_1w"))},
          "https://github.com/CLUEbenchmark/SimCLUE", "none stated",
          "SimCLUE samples: labelled pairs, positive pairs, and query/positive/negative triples (as a positive "
          "and a negative pair)"),
    _spec("chinesests", "sts", "zh", {"train": "bench/zh/chinesests/simtrain.tsv"},
          "https://github.com/IAdmireu/ChineseSTS", "citation requested",
          "ChineseSTS sentence pairs, scores 0-5 (nearly all 0 or 5)"),
    # Question -> answer pairs (../shared/data/train/qa): questions asked before their answer existed, so the answer
    # says it in other words. No split of their own: train/dev/test are fixed parts by question (question_parts).
    _spec("answers-ko", "answers", "ko", dict.fromkeys(("train", "dev", "test"), _ANSWERS_KO),
          "https://github.com/CertifiedJoon/open-assistant-data-crawling",
          "research use (Naver KiN); CC BY-SA 4.0 (HRC)",
          "Korean question -> answer pairs: Naver KiN questions with their answers, human-rights questions and "
          "counselling cases with NHRCK answers (HRC, github human-rights-corpus/HRC); dev/test carved by question",
          ["test"]),
    _spec("answers-zh", "answers", "zh", dict.fromkeys(("train", "dev", "test"), _ANSWERS_ZH),
          "https://github.com/Toyhom/Chinese-medical-dialogue-data", "MIT / Apache-2.0 / research use (per file)",
          "Chinese question -> answer pairs: patients' questions with doctors' answers (Toyhom, MedicalGPT, ChatMed), "
          "legal consultations (lawyer-llama), medical instructions (Huatuo), Alpaca and MOSS questions; dev/test "
          "carved by question", ["test"]),
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
    """A QA split that keeps only some articles of its files, so fine-tuning has data without a train file."""

    sources: tuple[str, ...]
    """the files (as in the registry) whose articles are divided together (DRCD's dev and test files share
    articles); the split's other files are read whole"""
    part: str
    """"train", "val" or "test": which part of the divided articles the split keeps (article_parts)"""


QA_CARVE_SEED = "kalbert-qa-v1"
QA_TEST_SHARE = 0.2
"""share of the divided file's articles in the test part (rounded)"""
QA_VAL_SHARE = 0.1
"""share of the remaining articles in the val part, for picking checkpoints (rounded); the rest is train"""
QA_CARVES: dict[tuple[str, str], ArticleCarve] = {
    **{("korquad", part): ArticleCarve((_KORQUAD_DEV,), part) for part in ("train", "val", "test")},
    **{("cmrc2018", part): ArticleCarve((_CMRC_DEV,), part) for part in ("train", "val", "test")},
    **{("drcd", part): ArticleCarve(_DRCD, part) for part in ("train", "val", "test")},
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


ANSWERS_CARVE_SEED = "kalbert-answers-v1"
ANSWERS_TEST = (0.15, 1500)
"""share of a question -> answer set's distinct questions in its test part, and the most it takes"""
ANSWERS_DEV = (0.10, 1000)
"""share of the distinct questions in the dev part (decisions), and the most it takes; the rest is train"""


def question_key(question: str) -> str:
    """What makes two questions the same one: their text without whitespace."""
    return "".join(question.split())


def question_parts(questions: Iterable[str]) -> dict[str, str]:
    """:func:`question_key` -> "train", "dev" or "test"; fixed for a given set of questions on every machine.

    Questions are ordered by the SHA-256 of ``ANSWERS_CARVE_SEED`` and their key: the first ``ANSWERS_TEST`` share
    (capped) is test, the next ``ANSWERS_DEV`` share (capped) dev, the rest train. A question's answers stay
    together, so no tested question was seen with another of its answers."""
    keys = sorted({question_key(q) for q in questions},
                  key=lambda k: hashlib.sha256(f"{ANSWERS_CARVE_SEED}\0{k}".encode()).hexdigest())
    n_test = min(round(ANSWERS_TEST[0] * len(keys)), ANSWERS_TEST[1])
    n_dev = min(round(ANSWERS_DEV[0] * len(keys)), ANSWERS_DEV[1])
    return {k: "test" if i < n_test else "dev" if i < n_test + n_dev else "train" for i, k in enumerate(keys)}


def list_datasets(kind: str | None = None) -> list[str]:
    """Registered names in registry order, optionally only those of one kind."""
    return [name for name, spec in DATASETS.items() if kind is None or spec.kind == kind]


def get_spec(name: str) -> DatasetSpec:
    if name in DATASETS:
        return DATASETS[name]
    close = difflib.get_close_matches(name, DATASETS, n=1)
    guess = f"did you mean '{close[0]}'? " if close else ""
    raise KalbertError(f"unknown data set '{name}'", f"{guess}known data sets: {', '.join(DATASETS)}")


def split_of(spec: DatasetSpec, split: str | None) -> str:
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
        split_of(spec, split)
    return name, split or None


def training_split(ref: str, kinds: tuple[str, ...], flag: str, eval_refs: list[str]) -> tuple[str, str]:
    """``name[:split]`` given to a training flag -> (name, split), the split defaulting to train; one-line
    errors for a data set of another kind, a missing split, an evaluation split, or one ``eval_refs`` scores."""
    name, split = parse_ref(ref)
    spec = get_spec(name)
    if spec.kind not in kinds:
        raise KalbertError(f"'{name}' is a {spec.kind} data set; {flag} takes {' or '.join(kinds)} sets",
                           "e.g. korsts, stsb-zh, afqmc")
    split = split or ("train" if "train" in spec.splits else "all" if spec.kind == "corpus" else None)
    if split is None:
        raise KalbertError(f"'{name}' has no train split", f"name one: {', '.join(spec.splits)}")
    assert_trainable(name, split)
    if f"{name}:{split}" in eval_refs:
        raise KalbertError(f"{name}:{split} is both training and evaluation data", "evaluate on another split")
    return name, split


def assert_trainable(name: str, split: str) -> None:
    """Refuse evaluation splits: nothing reported in a results table is ever trained on."""
    spec = get_spec(name)
    split = split_of(spec, split)
    if split in spec.eval_splits:
        allowed = [s for s in spec.splits if s not in spec.eval_splits]
        hint = f"train on {', '.join(allowed)}" if allowed else f"'{name}' has no training split"
        raise KalbertError(f"{name}:{split} is an evaluation split; kalbert never trains on it", hint)


def assert_selectable(name: str, split: str, flag: str = "--eval") -> None:
    """Refuse reported splits for selection too: a split that picked a checkpoint, a learning rate, a soup member
    or a stage no longer measures the model fairly, so reported splits are scored only by --test and bench run."""
    spec = get_spec(name)
    split = split_of(spec, split)
    if split in spec.eval_splits:
        allowed = [s for s in spec.splits if s not in spec.eval_splits and s != "train"]
        pick = f"pick on {', '.join(f'{name}:{s}' for s in allowed)}" if allowed else "pick on korsts:dev"
        raise KalbertError(f"{name}:{split} is a reported split; {flag} selects on dev splits only",
                           f"{pick}; score {name}:{split} with --test or kalbert bench run")
