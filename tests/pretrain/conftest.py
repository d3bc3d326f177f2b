"""Pretraining fixtures: SOP data built once per session from the tiny Korean vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest
from pretrain_helpers import SEQ_LEN

from kalbert.pretrain import DataBuildConfig, build_pretraining_data


@pytest.fixture(scope="session")
def ko_data(tmp_path_factory, ko_corpus, ko_vocab) -> Path:
    """SOP instances (length 64, 5% of documents held out) from the Korean test corpus."""
    out = tmp_path_factory.mktemp("pretrain-data") / "ko"
    config = DataBuildConfig(vocab=str(ko_vocab), inputs=[str(ko_corpus)], out=str(out), max_seq_length=SEQ_LEN,
                             heldout_fraction=0.05, processes=1, documents_per_task=200)
    return build_pretraining_data(config)
