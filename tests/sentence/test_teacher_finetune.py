"""`kalbert teacher finetune`: an STS run on a teacher folder with frozen token embeddings, whose record
then keeps its training splits out of every later evaluation."""

from __future__ import annotations

import json

import pytest
import torch

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.sentence import load_sentence_model
from kalbert.sentence.config import TeacherFinetuneConfig
from kalbert.sentence.teacher_finetune import finetune_teacher, teacher_folder
from kalbert.training import LoopConfig


def _embeddings(folder) -> torch.Tensor:
    return load_sentence_model(folder)[0].auto_model.get_input_embeddings().weight.detach().clone()


def test_finetuning_moves_the_layers_but_not_the_token_embeddings(tiny_teacher, tiny_data, tmp_path):
    config = TeacherFinetuneConfig(out=str(tmp_path / "ft"), teacher=str(tiny_teacher), train=["korsts", "kornli:dev"],
                                   eval=["korsts:dev"], test=["korsts:test"], max_rows=64,
                                   loop=LoopConfig(lr=1e-2, batch_size=16, max_steps=4, eval_steps=2, precision="fp32"))
    result = finetune_teacher(config)
    before, after = load_sentence_model(tiny_teacher), load_sentence_model(result.out)
    assert torch.equal(_embeddings(tiny_teacher), _embeddings(result.out))
    layer = "encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"
    assert not torch.equal(before[0].auto_model.state_dict()[layer], after[0].auto_model.state_dict()[layer])
    stage = json.loads((result.out / "kalbert.json").read_text())["stages"][-1]
    assert stage["config"]["freeze_word_embeddings"] is True and stage["config"]["train"] == ["korsts", "kornli:dev"]


def test_a_student_of_the_finetuned_teacher_cannot_evaluate_on_its_training_split(tiny_teacher, tiny_data, tmp_path):
    ft = tmp_path / "ft"
    finetune_teacher(TeacherFinetuneConfig(out=str(ft), teacher=str(tiny_teacher), train=["kornli:dev"],
                                           eval=["korsts:dev"], test=[], max_rows=32,
                                           loop=LoopConfig(batch_size=16, max_steps=1, precision="fp32")))
    assert main(["bench", "run", "--model", str(ft), "--tasks", "korsts", "--out", str(tmp_path / "r.json")]) != 2
    with pytest.raises(KalbertError, match="kornli:dev"):
        from kalbert.lineage import refuse_trained_on

        refuse_trained_on(ft, ["kornli:dev"], "--eval")


def test_teachers_without_torch_weights_are_refused_in_one_line(tmp_path):
    with pytest.raises(KalbertError, match="cannot be fine-tuned"):
        teacher_folder("use-multilingual")
    with pytest.raises(KalbertError, match="no modules.json"):
        teacher_folder(str(tmp_path))
