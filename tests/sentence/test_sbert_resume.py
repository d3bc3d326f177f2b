"""Resuming fine-tuning: `kalbert sbert train` killed with SIGKILL mid-run and rerun ends with the weights and
scores of an uninterrupted run; a rerun with other settings is refused and the unfinished run kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from kalbert.cli.main import main
from kalbert.sentence.config import SentenceTrainConfig
from kalbert.training import LoopConfig, RunFolder

TOTAL_STEPS = 24  # two epochs of the tiny KorSTS train split (96 rows) at batch size 8
KILL_AFTER = 6
# Every checkpoint save sleeps, so the run is still training when the test kills it; the numbers are untouched.
SLOW_KALBERT = """
import sys, time
from kalbert.cli.main import main
from kalbert.training.resume import RunFolder

save = RunFolder.save
def slow_save(self, state):
    save(self, state)
    time.sleep(0.4)
RunFolder.save = slow_save
sys.exit(main(sys.argv[1:]))
"""


def _args(model: Path, out: Path, lr: str = "1e-3") -> list[str]:
    return ["sbert", "train", "--model", str(model), "--train", "korsts", "--out", str(out), "--batch-size", "8",
            "--lr", lr, "--max-steps", str(TOTAL_STEPS), "--eval-steps", "8", "--checkpoint-steps", "1"]


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    with open(log, "w") as handle:
        return subprocess.Popen([sys.executable, *argv], stdout=handle, stderr=subprocess.STDOUT, env=env)


def _finish(process: subprocess.Popen, log: Path) -> str:
    assert process.wait(timeout=300) == 0, log.read_text()
    return log.read_text()


def _checkpoint_step(state: Path) -> int:
    try:
        return torch.load(state, map_location="cpu", weights_only=False)["step"]
    except (FileNotFoundError, EOFError, RuntimeError):  # not written yet
        return -1


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return {f"{path.relative_to(folder)}:{name}": tensor for path in sorted(folder.rglob("*.safetensors"))
            for name, tensor in load_file(path).items()}


def test_a_killed_run_resumes_to_the_uninterrupted_result(tiny_sbert, tiny_data, tmp_path):
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    script = tmp_path / "slow_kalbert.py"
    script.write_text(SLOW_KALBERT)
    victim = _start([str(script), *_args(tiny_sbert, killed)], tmp_path / "victim.log")
    reference = _start(["-m", "kalbert", *_args(tiny_sbert, whole)], tmp_path / "whole.log")
    state = tmp_path / "killed.partial" / "state.pt"
    deadline = time.monotonic() + 240
    while _checkpoint_step(state) < KILL_AFTER:
        assert victim.poll() is None, f"the run ended before it was killed:\n{(tmp_path / 'victim.log').read_text()}"
        assert time.monotonic() < deadline, "no checkpoint in time"
        time.sleep(0.05)
    assert victim.poll() is None, "the run ended before it could be killed"
    victim.send_signal(signal.SIGKILL)
    assert victim.wait(timeout=30) == -signal.SIGKILL
    at = _checkpoint_step(state)
    assert KILL_AFTER <= at < TOTAL_STEPS and not killed.exists()

    resumed = _finish(_start(["-m", "kalbert", *_args(tiny_sbert, killed)], tmp_path / "resumed.log"),
                      tmp_path / "resumed.log")
    _finish(reference, tmp_path / "whole.log")
    assert f"at step {at} of {TOTAL_STEPS}" in resumed
    assert not (tmp_path / "killed.partial").exists() and not (tmp_path / "whole.partial").exists()
    logs = [json.loads((out / "training_log.json").read_text())["history"] for out in (killed, whole)]
    assert [e["step"] for e in logs[0]] == [e["step"] for e in logs[1]] == [0, 8, 16, 24]
    assert [e["score"] for e in logs[0]] == pytest.approx([e["score"] for e in logs[1]], abs=1e-6)
    got, expected = _weights(killed), _weights(whole)
    assert got.keys() == expected.keys() and got
    assert max((got[k] - expected[k]).abs().max().item() for k in got) <= 1e-6
    stage = json.loads((killed / "kalbert.json").read_text())["stages"][-1]
    assert stage["precision"] in ("bf16", "fp32") and stage["precision_reason"]


def test_a_rerun_with_other_settings_is_refused(tiny_sbert, tiny_data, tmp_path, capsys):
    out = tmp_path / "sts"
    started = SentenceTrainConfig(model=str(tiny_sbert), out=str(out), train=["korsts"],
                        loop=LoopConfig(batch_size=8, lr=1e-3, max_steps=TOTAL_STEPS, eval_steps=8, checkpoint_steps=1))
    RunFolder(out, asdict(started)).save({"step": 3})  # what a killed run of these settings leaves
    assert main(_args(tiny_sbert, out, lr="2e-3")) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "other settings (lr 0.001 -> 0.002)" in error
    assert (tmp_path / "sts.partial" / "state.pt").is_file() and not out.exists()


def _interrupt(*args, **kwargs) -> None:
    raise KeyboardInterrupt  # as Ctrl-C would land; a raised signal is ignored where CI runs in the background


def test_a_run_that_dies_writing_its_folder_finishes_from_its_last_checkpoint(tiny_sbert, tiny_data, tmp_path,
                                                                              monkeypatch):
    from kalbert.sentence import train as sentence_train

    out = tmp_path / "sts"
    args = ["sbert", "train", "--model", str(tiny_sbert), "--train", "korsts", "--out", str(out), "--batch-size", "8",
            "--max-steps", "4", "--eval-steps", "2", "--checkpoint-steps", "1"]
    with monkeypatch.context() as patch:
        patch.setattr(sentence_train, "save_sentence_model", _interrupt)
        assert main(args) != 0  # interrupted after the last checkpoint, before the folder is written
    assert _checkpoint_step(tmp_path / "sts.partial" / "state.pt") == 4 and not out.exists()
    assert main(args) == 0
    meta = json.loads((out / "kalbert.json").read_text())
    assert [m["data"] for m in meta["metrics"] if m["stage"] == "sts"] == ["korsts:dev"]
    assert not (tmp_path / "sts.partial").exists()
