"""Model presets: parameter counts as in the ALBERT paper, sharing options, standard HF loading."""

from __future__ import annotations

import pytest
from transformers import AutoModel, AutoModelForPreTraining

from kalbert.errors import KalbertError
from kalbert.pretrain import ModelConfig, albert_config, count_parameters


@pytest.mark.parametrize(("preset", "millions"), [("base", 12), ("large", 18)])
def test_parameter_counts_match_the_albert_paper(preset, millions):
    assert count_parameters(albert_config(ModelConfig(preset=preset), 30000)) / 1e6 == pytest.approx(millions, abs=0.5)


def test_tiny_and_sharing_options():
    tiny = albert_config(ModelConfig(), 32000)
    shape = (tiny.embedding_size, tiny.hidden_size, tiny.num_hidden_layers, tiny.intermediate_size)
    assert shape == (128, 312, 4, 1248)
    unshared = albert_config(ModelConfig(sharing="none"), 32000)
    pairs = albert_config(ModelConfig(sharing="2"), 32000)
    assert (tiny.num_hidden_groups, pairs.num_hidden_groups, unshared.num_hidden_groups) == (1, 2, 4)
    assert count_parameters(tiny) < count_parameters(pairs) < count_parameters(unshared)
    assert count_parameters(albert_config(ModelConfig(embedding_size=64), 32000)) < count_parameters(tiny)
    with pytest.raises(KalbertError, match="sharing"):
        albert_config(ModelConfig(sharing="3"), 32000)
    with pytest.raises(KalbertError, match="preset"):
        albert_config(ModelConfig(preset="huge"), 32000)


def test_checkpoints_are_plain_albert(tmp_path):
    from transformers import AlbertForPreTraining

    config = albert_config(ModelConfig(hidden_size=32, num_heads=2, intermediate_size=64, num_layers=2), 500)
    AlbertForPreTraining(config).save_pretrained(tmp_path)
    assert type(AutoModel.from_pretrained(tmp_path)).__name__ == "AlbertModel"
    assert type(AutoModelForPreTraining.from_pretrained(tmp_path)).__name__ == "AlbertForPreTraining"
