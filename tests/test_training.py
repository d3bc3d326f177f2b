"""The shared fine-tuning loop on a toy regression: a crash mid-run resumes to the uninterrupted result (its
training time counted), also for a stage that trains in phases, the gradient clip is the configured one, and
without an evaluation every epoch is logged and the last one kept."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from kalbert.cli.main import main
from kalbert.training import LoopConfig, RunFolder, shuffled_batches, train_loop

SETTINGS = LoopConfig(epochs=3, lr=0.05, weight_decay=0.01, warmup_ratio=0.2, seed=7, max_grad_norm=1.0,
                      precision="fp32", checkpoint_steps=2, eval_steps=5)
X = torch.linspace(-1, 1, 96).reshape(24, 4)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 1)


def _fit(model, run=None, crash_at: int | None = None, evaluate=True, settings=SETTINGS):
    calls = []

    def step(rows: list[int]) -> torch.Tensor:
        calls.append(rows)
        if len(calls) == crash_at:
            raise RuntimeError("crash")
        return torch.nn.functional.mse_loss(model(X[rows]), Y[rows])

    def score() -> tuple[float, dict[str, float]]:
        return -torch.nn.functional.mse_loss(model(X), Y).item(), {}

    return train_loop(model, lambda rng: shuffled_batches(len(X), 5, rng), step, score if evaluate else None,
                      settings, run)


def test_a_crashed_run_resumes_to_the_uninterrupted_result(tmp_path):
    whole = _fit(_model(), RunFolder(tmp_path / "whole", {"lr": 0.05}))
    crashed = _model()
    with pytest.raises(RuntimeError, match="crash"):
        _fit(crashed, RunFolder.open(tmp_path / "crashed", {"lr": 0.05}), crash_at=8)
    assert (tmp_path / "crashed.partial" / "state.pt").is_file()
    resumed = _fit(_model(), RunFolder.open(tmp_path / "crashed", {"lr": 0.05}))
    assert resumed.resumed_from == 6 and whole.resumed_from is None  # the checkpoint before the crash
    assert [(e.step, e.score) for e in resumed.history] == [(e.step, e.score) for e in whole.history]
    assert [e.step for e in whole.history] == [5, 10, 15] and whole.steps == 15  # 5 batches x 3 epochs
    assert resumed.best.step == whole.best.step
    assert whole.earlier_seconds == 0 and 0 < resumed.earlier_seconds < resumed.seconds  # the crashed run's time counts


def test_weights_after_resume_are_exact(tmp_path):
    whole, crashed = _model(), _model()
    _fit(whole)
    with pytest.raises(RuntimeError):
        _fit(crashed, RunFolder.open(tmp_path / "out", {}), crash_at=13)
    resumed = _model()
    _fit(resumed, RunFolder.open(tmp_path / "out", {}))
    assert torch.equal(resumed.weight, whole.weight) and torch.equal(resumed.bias, whole.bias)


def test_a_stage_in_phases_resumes_each_from_its_own_checkpoint(tmp_path):
    first, second = _model(), _model()
    _fit(first, RunFolder.open(tmp_path / "out", {"lr": 0.05}, phase="first"))
    with pytest.raises(RuntimeError):
        _fit(second, RunFolder.open(tmp_path / "out", {"lr": 0.05}, phase="second"), crash_at=9)
    run = tmp_path / "out.partial"
    assert sorted(p.name for p in run.iterdir()) == ["run.json", "state-first.pt", "state-second.pt"]
    again = _fit(_model(), RunFolder.open(tmp_path / "out", {"lr": 0.05}, phase="first"))  # finished: not retrained
    assert again.resumed_from == 15 and [e.step for e in again.history] == [5, 10, 15]
    resumed = RunFolder.open(tmp_path / "out", {"lr": 0.05}, phase="second")
    assert resumed.state["step"] == 8
    resumed.remove()
    assert run.is_dir() and not (run / "state-second.pt").exists()
    RunFolder(tmp_path / "out", {}, phase="first").remove()  # the last checkpoint takes the folder with it
    assert not run.exists()


def test_the_configured_gradient_clip_is_used(monkeypatch):
    norms = []
    real = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_",
                        lambda parameters, max_norm: norms.append(max_norm) or real(parameters, max_norm))
    _fit(_model(), settings=replace(SETTINGS, max_grad_norm=0.25))
    assert norms == [0.25] * 15


def test_without_an_evaluation_the_last_epoch_is_kept():
    model = _model()
    result = _fit(model, evaluate=False, settings=replace(SETTINGS, eval_steps=0))
    assert [(e.step, e.epoch) for e in result.history] == [(5, 1), (10, 2), (15, 3)]
    assert all(e.train_loss > 0 for e in result.history) and result.best.epoch == 3
    assert (result.precision, result.bf16) == ("fp32", False)


@pytest.mark.parametrize("verb", [["sbert", "train"], ["sbert", "distill"], ["teacher", "finetune"],
                                  ["static", "train"], ["mc", "train"], ["qa", "train"]])
def test_every_fine_tuning_verb_takes_the_loop_flags(verb, capsys):
    with pytest.raises(SystemExit):
        main([*verb, "--help"])
    shown = capsys.readouterr().out
    assert all(flag in shown for flag in ("--precision {auto,fp32,bf16}", "--max-grad-norm", "--checkpoint-steps",
                                          "--warmup-ratio", "--eval-steps", "--max-steps", "--lr", "--epochs"))
