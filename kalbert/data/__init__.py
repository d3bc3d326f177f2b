"""Data sets by name: the registry, where their files are, how they are read, typed loaders, corpora."""

from kalbert.data.corpus import iter_documents, resolve_sources
from kalbert.data.loaders import (
    BLANK,
    NLI_LABELS,
    BoolQExample,
    LabeledPair,
    MCExample,
    NLIPair,
    ParallelSet,
    QAExample,
    STSPair,
    load_boolq,
    load_graded,
    load_mc,
    load_mc_file,
    load_nli,
    load_nli_triplets,
    load_pairs,
    load_parallel,
    load_qa,
    load_qa_triplets,
    load_question_passages,
    load_sts,
    trains_as,
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
    training_split,
)
from kalbert.data.roots import data_path, data_roots, describe_datasets

__all__ = [
    "BLANK", "DATASETS", "KINDS", "NLI_LABELS", "QA_CARVES", "article_parts", "assert_trainable", "BoolQExample",
    "data_path", "data_roots", "DatasetSpec", "describe_datasets", "get_spec", "iter_documents", "LabeledPair",
    "list_datasets", "load_boolq", "load_graded", "load_mc", "load_mc_file", "load_nli", "load_nli_triplets",
    "load_qa_triplets", "load_question_passages", "load_pairs", "load_parallel", "load_qa", "load_sts", "MCExample",
    "NLIPair", "ParallelSet", "parse_ref", "QAExample", "resolve_sources", "STSPair", "trains_as", "training_split",
]
