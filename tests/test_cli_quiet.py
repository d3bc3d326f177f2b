"""The command line leaves out library warnings about what kalbert handles itself (kalbert.cli.quiet): the LOAD
REPORT of a checkpoint's left-out or new heads and the tokenizer's "sequence length is longer" warning; a report
of mismatched shapes, other library messages and kalbert's own stay, and KALBERT_DEBUG=1 keeps everything."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import kalbert.cli  # noqa: F401 - what the `kalbert` command imports first, installing the filters
from kalbert.cli.quiet import HandledByKalbert, quiet_libraries

MODELS = Path(__file__).resolve().parents[1] / "models"
LOGGERS = ("transformers.modeling_utils", "transformers.tokenization_utils_base", "kalbert.search.build")


class AlbertModel:
    """Stands in for the model a load report names."""


@pytest.fixture
def heard():
    """Messages that reach a handler of the filtered loggers (and of one of kalbert's)."""
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    for name in LOGGERS:
        logging.getLogger(name).addHandler(handler)
    yield messages
    for name in LOGGERS:
        logging.getLogger(name).removeHandler(handler)


def _report(unexpected=(), missing=(), mismatched=()) -> None:
    from transformers.utils.loading_report import LoadStateDictInfo, log_state_dict_report

    info = LoadStateDictInfo(missing_keys=set(missing), unexpected_keys=set(unexpected),
                             mismatched_keys=set(mismatched), error_msgs=[], conversion_errors={},
                             skipped_pp_keys=set())
    log_state_dict_report(AlbertModel(), "outputs/pretrain/model", True, info,
                          logging.getLogger("transformers.modeling_utils"))


def test_handled_warnings_are_left_out_and_others_kept(heard):
    from transformers import AutoTokenizer

    _report(unexpected=["predictions.decoder.bias", "sop_classifier.classifier.weight"])
    _report(missing=["pooler.dense.weight"])
    assert heard == []
    AutoTokenizer.from_pretrained(str(MODELS / "sbert-ko-zh-small"))("가나다 " * 200)  # past its 64 tokens
    assert heard == []
    _report(mismatched=[("embeddings.word_embeddings.weight", (8000, 128), (9000, 128))])
    logging.getLogger("transformers.tokenization_utils_base").warning("another tokenizer warning")
    logging.getLogger("kalbert.search.build").warning("Token indices sequence length is longer than the specified "
                                                      "maximum: kalbert's own words are never filtered")
    assert len(heard) == 3 and "LOAD REPORT" in heard[0] and "MISMATCH" in heard[0]


def test_debug_keeps_every_warning(monkeypatch):
    monkeypatch.setenv("KALBERT_DEBUG", "1")
    logger = logging.getLogger("transformers.modeling_utils")
    installed = [f for f in logger.filters if isinstance(f, HandledByKalbert)]
    for f in installed:
        logger.removeFilter(f)
    try:
        quiet_libraries()
        assert not any(isinstance(f, HandledByKalbert) for f in logger.filters)
    finally:
        for f in installed:
            logger.addFilter(f)
