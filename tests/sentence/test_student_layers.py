"""A shallower student (`sbert distill --student-layers`): the kept layers keep their own weights and their order,
a shared-weight ALBERT keeps the number of passes, bad layer lists are refused in one line before any teacher
vector is computed."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from transformers import AlbertConfig, AlbertModel

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.sentence import load_sentence_model
from kalbert.sentence.config import DistillConfig
from kalbert.sentence.distill import distill_student
from kalbert.sentence.layers import keep_layers
from kalbert.training import LoopConfig


def _albert(layers: int, groups: int) -> SimpleNamespace:
    """Stands in for a SentenceTransformer: ``model[0].auto_model`` is all keep_layers reads."""
    torch.manual_seed(0)
    config = AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=layers,
                          num_hidden_groups=groups, num_attention_heads=2, intermediate_size=32)
    return [SimpleNamespace(auto_model=AlbertModel(config))]


def test_unshared_layers_are_kept_by_index_in_their_order():
    model = _albert(layers=4, groups=4)
    albert = model[0].auto_model
    groups = list(albert.encoder.albert_layer_groups)
    keep_layers(model, [3, 0, 2])
    assert list(albert.encoder.albert_layer_groups) == [groups[0], groups[2], groups[3]]
    assert (albert.config.num_hidden_layers, albert.config.num_hidden_groups) == (3, 3)
    hidden = albert(input_ids=torch.tensor([[1, 2, 3]])).last_hidden_state
    assert hidden.shape == (1, 3, 16)


def test_shared_layers_keep_how_many_passes():
    model = _albert(layers=4, groups=1)
    keep_layers(model, [0, 1])
    albert = model[0].auto_model
    assert (albert.config.num_hidden_layers, len(albert.encoder.albert_layer_groups)) == (2, 1)


@pytest.mark.parametrize("layers", [[], [4], [0, 0], [-1]])
def test_bad_layer_lists_are_refused(layers):
    with pytest.raises(KalbertError, match="the student has layers 0-3"):
        keep_layers(_albert(layers=4, groups=4), layers)


def test_layers_sharing_some_groups_cannot_be_dropped_one_by_one():
    with pytest.raises(KalbertError, match="share 2 weight groups"):
        keep_layers(_albert(layers=4, groups=2), [0, 1])


def test_distillation_teaches_the_kept_layers_and_saves_them(tiny_sbert, tiny_teacher, tiny_data, tmp_path):
    config = DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=["tatoeba-en-ko"],
                           out=str(tmp_path / "kd"), student_layers=[0], dev_rows=50, learn_source=False,
                           cache_dir=str(tmp_path / "cache"), loop=LoopConfig(lr=1e-3, batch_size=32, max_steps=2))
    result = distill_student(config)
    assert load_sentence_model(result.out)[0].auto_model.config.num_hidden_layers == 1
    assert json.loads((result.out / "kalbert.json").read_text())["stages"][-1]["config"]["student_layers"] == [0]


def test_a_bad_layer_list_exits_2_before_the_teacher_runs(tiny_sbert, tiny_teacher, tiny_data, tmp_path, capsys):
    code = main(["sbert", "distill", "--student", str(tiny_sbert), "--teacher", str(tiny_teacher),
                 "--parallel", "tatoeba-en-ko", "--student-layers", "5", "--cache-dir", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "kd")])
    assert code == 2
    assert "--student-layers 5: the student has layers 0-1" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()

