"""The benchmark tasks: which data set, which split, which metrics, and how a selection is parsed.

A task is evaluated on one fixed split, the one published numbers use (KLUE-STS dev because KLUE's
test split is hidden; AFQMC dev because its test labels are not public), so a number in a results
file is comparable with the anchors without anyone having to remember which split was meant.
"""

from __future__ import annotations

from dataclasses import dataclass

from kalbert.errors import KalbertError

STS, PAIRS, MC, BITEXT, RETRIEVAL = "sts", "pairs", "mc", "bitext", "retrieval"
RETRIEVAL_METRICS = ("ndcg_at_10", "mrr_at_10", "recall_at_1", "recall_at_10", "recall_at_100")
"""MTEB's names of its retrieval scores, its main score (nDCG@10) first"""

# Report sections, in the order they appear in RESULTS.md.
GROUPS = ("Korean STS", "Chinese STS", "Cross-lingual STS", "Chinese pair classification", "Cross-lingual retrieval",
          "Passage retrieval", "Answer retrieval", "Multiple choice", "Multiple choice (fine-tuned)", "Extractive QA")

METRIC_LABELS = {
    "spearman": "Spearman",
    "pearson": "Pearson",
    "accuracy": "Acc",
    "f1": "F1",
    "exact_match": "EM",
    "ndcg_at_10": "nDCG@10",
    "mrr_at_10": "MRR@10",
    "recall_at_1": "R@1",
    "recall_at_10": "R@10",
    "recall_at_100": "R@100",
}


@dataclass(frozen=True)
class BenchTask:
    """One evaluation: a data set's split scored with cosine similarity of sentence embeddings."""

    name: str
    """task name used on the command line and in results files"""
    dataset: str
    """registry name of the data set (kalbert.data)"""
    split: str
    """the split evaluated; fixed so that numbers are comparable with published ones"""
    kind: str
    """"sts" (graded 0-5 scores), "pairs" (binary labels), "mc" (zero-shot multiple choice), "bitext" (find each
    sentence's translation among all the other language's sentences) or "retrieval" (find each question's
    paragraph among every paragraph of the data set's files, or its answers among an answer pool)"""
    lang: str
    """"ko" or "zh": picks the TF-IDF baseline's fitting corpus; "ko-zh" etc. for bitext (source-target)"""
    group: str
    """report section (one of GROUPS)"""
    label: str
    """human-readable name for tables and charts"""
    select_split: str | None = None
    """retrieval: the split whose questions pick the BM25 fusion weight; never the reported split"""

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics in report order; the first is the one charted."""
        return {STS: ("spearman", "pearson"), PAIRS: ("spearman", "accuracy"), MC: ("accuracy",),
                BITEXT: ("accuracy",), RETRIEVAL: RETRIEVAL_METRICS}[self.kind]

    @property
    def cross_lingual(self) -> bool:
        return "-" in self.lang


TASKS: dict[str, BenchTask] = {
    task.name: task
    for task in (
        BenchTask("korsts", "korsts", "test", STS, "ko", "Korean STS", "KorSTS"),
        BenchTask("klue-sts", "klue-sts", "dev", STS, "ko", "Korean STS", "KLUE-STS"),
        BenchTask("stsb-zh", "stsb-zh", "test", STS, "zh", "Chinese STS", "STS-B zh (MT)"),
        BenchTask("cnsd-stsb", "cnsd-stsb", "test", STS, "zh", "Chinese STS", "CNSD STS-B"),
        BenchTask("stsb-ko-zh", "stsb-ko-zh", "test", STS, "ko-zh", "Cross-lingual STS", "STS-B ko<->zh"),
        BenchTask("lcqmc", "lcqmc", "test", PAIRS, "zh", "Chinese pair classification", "LCQMC"),
        BenchTask("pawsx-zh", "pawsx-zh", "test", PAIRS, "zh", "Chinese pair classification", "PAWS-X zh"),
        BenchTask("afqmc", "afqmc", "dev", PAIRS, "zh", "Chinese pair classification", "AFQMC"),
        BenchTask("xnli-ko-zh", "parallel-xnli-test", "all", BITEXT, "ko-zh", "Cross-lingual retrieval",
                  "XNLI ko<->zh"),
        BenchTask("xnli-ko-en", "parallel-xnli-test", "all", BITEXT, "ko-en", "Cross-lingual retrieval",
                  "XNLI ko<->en"),
        BenchTask("xnli-zh-en", "parallel-xnli-test", "all", BITEXT, "zh-en", "Cross-lingual retrieval",
                  "XNLI zh<->en"),
        # the carved test articles' questions against every paragraph of the set's files (kalbert.bench.retrieval)
        BenchTask("korquad-retrieval", "korquad", "test", RETRIEVAL, "ko", "Passage retrieval", "KorQuAD retrieval",
                  select_split="val"),
        BenchTask("cmrc2018-retrieval", "cmrc2018", "test", RETRIEVAL, "zh", "Passage retrieval",
                  "CMRC 2018 retrieval", select_split="val"),
        BenchTask("drcd-retrieval", "drcd", "test", RETRIEVAL, "zh", "Passage retrieval", "DRCD retrieval",
                  select_split="val"),
        # the test carve's questions against the answers of the test and dev carves (kalbert.data.answer_pool)
        BenchTask("answers-ko-retrieval", "answers-ko", "test", RETRIEVAL, "ko", "Answer retrieval",
                  "Korean Q->A retrieval", select_split="dev"),
        BenchTask("answers-zh-retrieval", "answers-zh", "test", RETRIEVAL, "zh", "Answer retrieval",
                  "Chinese Q->A retrieval", select_split="dev"),
        BenchTask("kobest-copa", "kobest-copa", "test", MC, "ko", "Multiple choice", "KoBEST COPA"),
        BenchTask("xcopa-zh", "xcopa-zh", "test", MC, "zh", "Multiple choice", "XCOPA zh"),
    )
}

# Shorthands accepted by --tasks besides task names.
SELECTIONS: dict[str, tuple[str, ...]] = {
    "all": tuple(TASKS),
    "sts": tuple(name for name, task in TASKS.items() if task.kind == STS),
    "pairs": tuple(name for name, task in TASKS.items() if task.kind == PAIRS),
    "mc": tuple(name for name, task in TASKS.items() if task.kind == MC),
    "bitext": tuple(name for name, task in TASKS.items() if task.kind == BITEXT),
    "retrieval": tuple(name for name, task in TASKS.items() if task.kind == RETRIEVAL),
    "ko": tuple(name for name, task in TASKS.items() if task.lang == "ko"),
    "zh": tuple(name for name, task in TASKS.items() if task.lang == "zh"),
}


def get_task(name: str) -> BenchTask:
    if name not in TASKS:
        raise KalbertError(
            f"unknown benchmark task '{name}'",
            f"known tasks: {', '.join(TASKS)}; or one of: {', '.join(SELECTIONS)}",
        )
    return TASKS[name]


def select_tasks(spec: str) -> list[BenchTask]:
    """``"all"``, ``"sts,afqmc"``, ``"ko"`` ... -> tasks in registry order, each once."""
    names: set[str] = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        names.update(SELECTIONS[part] if part in SELECTIONS else (get_task(part).name,))
    if not names:
        raise KalbertError("no benchmark tasks given", f"known tasks: {', '.join(TASKS)}; or 'all'")
    return [task for name, task in TASKS.items() if name in names]


# Multiple-choice data sets fine-tuned by `kalbert mc train` (kalbert.tasks.multiple_choice).
FINETUNE_LABELS = {
    "kobest-copa": "KoBEST COPA",
    "kobest-hellaswag": "KoBEST HellaSwag",
    "kobest-boolq": "KoBEST BoolQ",
    "c3": "C3",
    "chid": "CHID",
    "xcopa-zh": "XCOPA zh",
}

# Extractive QA data sets fine-tuned by `kalbert qa train` (kalbert.tasks.qa).
QA_LABELS = {"korquad": "KorQuAD 1.0", "cmrc2018": "CMRC 2018", "drcd": "DRCD"}

# Column order in reports: the tasks above, then the fine-tuning-only ones.
TASK_ORDER = tuple(dict.fromkeys([*TASKS, *FINETUNE_LABELS, *QA_LABELS]))


def task_label(name: str) -> str:
    """Display name of a benchmark or fine-tuning task."""
    return TASKS[name].label if name in TASKS else {**FINETUNE_LABELS, **QA_LABELS}.get(name, name)


def task_group(name: str, setting: str = "") -> str:
    """Report section of a benchmark task, or of a fine-tuning task (``setting`` "fine-tuned")."""
    if name in QA_LABELS:
        return "Extractive QA"
    if name in TASKS and setting != "fine-tuned":
        return TASKS[name].group
    return "Multiple choice (fine-tuned)"
