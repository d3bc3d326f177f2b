"""Data sets by name: the registry, where their files are, how they are read, typed loaders, corpora."""

from kalbert.data.corpus import iter_documents, resolve_sources
from kalbert.data.loaders import (
    BLANK,
    NLI_LABELS,
    AnswerPool,
    BoolQExample,
    LabeledPair,
    MCExample,
    NLIPair,
    ParallelSet,
    QAExample,
    QAPair,
    STSPair,
    answer_pool,
    load_answers,
    load_boolq,
    load_mc,
    load_mc_file,
    load_nli,
    load_pairs,
    load_parallel,
    load_qa,
    load_sts,
)
from kalbert.data.registry import (
    DATASETS,
    KINDS,
    QA_CARVES,
    DatasetSpec,
    article_parts,
    assert_trainable,
    get_spec,
    list_datasets,
    parse_ref,
    question_parts,
    training_split,
)
from kalbert.data.roots import data_path, data_roots, describe_datasets

__all__ = [
    "AnswerPool", "answer_pool", "BLANK", "DATASETS", "KINDS", "NLI_LABELS", "QA_CARVES", "article_parts",
    "assert_trainable", "BoolQExample", "data_path", "data_roots", "DatasetSpec", "describe_datasets", "get_spec",
    "iter_documents", "LabeledPair", "list_datasets", "load_answers", "load_boolq", "load_mc", "load_mc_file",
    "load_nli", "load_pairs", "load_parallel", "load_qa", "load_sts", "MCExample", "NLIPair", "ParallelSet",
    "parse_ref", "QAExample", "QAPair", "question_parts", "resolve_sources", "STSPair", "training_split",
]
