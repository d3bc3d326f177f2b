"""The automatic precision choice: what was asked, else what the resumed run had, else what the hardware has."""

from __future__ import annotations

import torch

from kalbert import precision
from kalbert.pretrain import speed
from kalbert.pretrain.config import PretrainConfig, recorded_precision, run_bf16

CPU = torch.device("cpu")


def test_an_explicit_or_recorded_choice_wins_over_the_hardware(fake_cpu, monkeypatch):
    monkeypatch.setattr(precision, "emulated_bf16_slowdown", lambda: 2.0)
    fake_cpu({"avx512f", "avx512_bf16"})
    resolve = precision.resolve_precision
    assert resolve("fp32", CPU) == (False, "fp32 as requested")
    assert resolve("auto", CPU, "fp32") == (False, "fp32, as the run being resumed")
    assert resolve("auto", CPU) == (True, "native bf16 here: AVX512-BF16")
    fake_cpu({"avx2"})
    assert resolve("auto", CPU) == (False, "no native bf16 on this device")
    assert resolve("bf16", CPU)[0] is True
    assert resolve("auto", CPU, "bf16")[0] is False  # a bf16 run resumed here goes on in fp32


def test_bf16_cpus_use_eager_attention(fake_cpu):
    assert speed.choose_attention("auto", True, CPU) == ("eager", "faster than SDPA for bf16 on CPUs")
    assert speed.choose_attention("auto", False, CPU)[0] == "sdpa"


def test_recorded_runs_old_and_new_give_their_precision():
    assert PretrainConfig(data="d", out="o").precision == "auto"
    assert [recorded_precision(c) for c in ({"precision": "bf16"}, {"precision": "fp32"}, {"bf16": True},
                                            {"bf16": False}, {"bf16": None}, {})] == [
        "bf16", "fp32", "bf16", "fp32", None, None]
    assert run_bf16({"bf16": True}) and not run_bf16({"precision": "fp32"})
    assert PretrainConfig.upgrade_values({"bf16": True, "lr": 1e-3}) == {"lr": 1e-3, "precision": "bf16"}
    assert PretrainConfig.upgrade_values({"bf16": None}) == {"precision": "auto"}


def test_a_run_records_its_precision_and_a_resume_on_another_cpu(ko_data, tmp_path, fake_cpu, monkeypatch, caplog):
    """auto resolves to bf16 on a native-bf16 CPU and is recorded; resumed on an AVX2-only CPU the run goes on
    in fp32 (one log line), and so does a run recorded before --precision existed (``"bf16": true``)."""
    import json
    import logging

    from pretrain_helpers import tiny_run

    from kalbert.pretrain import trainer as trainer_module
    from kalbert.pretrain.distributed import DistEnv

    env = DistEnv(0, 1, 0, CPU)  # a GPU, where there is one, would decide otherwise
    monkeypatch.setattr(trainer_module, "setup_distributed", lambda: env)
    monkeypatch.setattr(precision, "emulated_bf16_slowdown", lambda: 2.0)
    out = tmp_path / "run"
    fake_cpu({"avx2", "avx512f", "avx512bw", "avx512_bf16"}, model="Intel Xeon Test")
    model = trainer_module.pretrain(tiny_run(ko_data, out, max_steps=2, save_every=2, precision="auto"))
    assert json.loads((out / "kalbert.json").read_text(encoding="utf-8"))["config"]["precision"] == "bf16"
    meta = json.loads((model / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["hardware"]["native_bf16"] == "AVX512-BF16"
    assert "- trained on: Intel Xeon Test, AVX-512 BF16, bf16" in (model / "README.md").read_text(encoding="utf-8")

    fake_cpu({"avx", "avx2", "fma"})
    resumed = tiny_run(ko_data, out, max_steps=2, save_every=2, precision="auto", resume=True)
    with caplog.at_level(logging.INFO, logger="kalbert.precision"):
        trainer = trainer_module.Trainer(resumed, env, overwrite=False)
    assert trainer.bf16 is False and trainer.config.precision == "fp32"
    assert "the run being resumed used bf16" in caplog.text
    assert trainer_module.Trainer(resumed.__class__(**{**resumed.__dict__, "precision": "bf16"}), env,
                                  overwrite=False).bf16 is True  # asked for: kept, emulated

    meta_path = out / "kalbert.json"
    run_meta = json.loads(meta_path.read_text(encoding="utf-8"))
    run_meta["config"].pop("precision")
    run_meta["config"]["bf16"] = True  # as runs were recorded before --precision
    meta_path.write_text(json.dumps(run_meta), encoding="utf-8")
    assert trainer_module.Trainer(resumed, env, overwrite=False).config.precision == "fp32"
    fake_cpu({"avx512f", "amx_bf16"})
    assert trainer_module.Trainer(resumed, env, overwrite=False).config.precision == "bf16"


def test_config_of_a_run_recorded_before_precision_still_reads(tmp_path):
    import json

    from kalbert.config import read_config_file

    record = {"kind": "pretraining-run", "kalbert_version": "0.1.0", "config": {"data": "d", "out": "o", "bf16": True}}
    (tmp_path / "kalbert.json").write_text(json.dumps(record), encoding="utf-8")
    assert read_config_file(tmp_path, PretrainConfig) == {"data": "d", "out": "o", "precision": "bf16"}
