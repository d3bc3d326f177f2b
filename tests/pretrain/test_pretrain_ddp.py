"""The same command under torchrun: 2 CPU processes (gloo) reproduce the 1-process losses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from pretrain_helpers import tiny_run

from kalbert.pretrain import pretrain


def _losses(run) -> dict[tuple[str, int], float]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    return {(r["split"], r["step"]): r["loss"] for r in records}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gradient_accumulation_matches_one_big_batch(ko_data, tmp_path):
    one = tiny_run(ko_data, tmp_path / "one", max_steps=3, eval_every=3, save_every=3)
    accumulated = tiny_run(ko_data, tmp_path / "accum", max_steps=3, eval_every=3, save_every=3, grad_accum=4)
    pretrain(one)
    pretrain(accumulated)
    a, b = _losses(tmp_path / "one"), _losses(tmp_path / "accum")
    assert a.keys() == b.keys()
    assert all(a[k] == pytest.approx(b[k], rel=1e-5) for k in a)


def test_two_gloo_processes_match_one(ko_data, tmp_path):
    config = tiny_run(ko_data, tmp_path / "single", max_steps=4, eval_every=2, save_every=4)
    pretrain(config)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               "--master-addr", "127.0.0.1", "--master-port", str(_free_port()), "-m", "kalbert", "pretrain",
               "--data", str(ko_data), "--out", str(tmp_path / "ddp"), "--max-steps", "4", "--batch-size", "8",
               "--embedding-size", "16", "--hidden-size", "32", "--num-layers", "2", "--num-heads", "2",
               "--intermediate-size", "64", "--eval-every", "2", "--eval-instances", "16", "--save-every", "4",
               "--log-every", "1", "--warmup-ratio", "0.2", "--threads", "1", "--no-tensorboard",
               "--precision", "fp32"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    single, ddp = _losses(tmp_path / "single"), _losses(tmp_path / "ddp")
    assert single.keys() == ddp.keys()
    assert all(single[k] == pytest.approx(ddp[k], rel=1e-5) for k in single), (single, ddp)
    meta = json.loads((tmp_path / "ddp" / "model" / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["world_size"] == 2
