"""kalbert.precision: auto is bf16 exactly where it is native; explicit choices are obeyed; a resumed bf16 run
on a CPU without native bf16 goes on in fp32 unless bf16 is asked for; emulated bf16 warns with its cost."""

from __future__ import annotations

import logging

import pytest
import torch

from kalbert import precision
from kalbert.errors import KalbertError
from kalbert.precision import autocast, resolve_precision

NATIVE = {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}
PLAIN = {"avx2", "fma"}


@pytest.fixture
def no_timing(monkeypatch):
    """The emulation cost without timing a matmul: 3x."""
    monkeypatch.setattr(precision, "emulated_bf16_slowdown", lambda: 3.0)


def test_auto_follows_the_hardware(fake_cpu):
    fake_cpu(NATIVE)
    assert resolve_precision("auto", "cpu") == (True, "native bf16 here: AVX512-BF16")
    fake_cpu(NATIVE | {"amx_bf16"})
    assert resolve_precision("auto", torch.device("cpu")) == (True, "native bf16 here: AMX-BF16")
    fake_cpu(PLAIN)
    assert resolve_precision("auto", "cpu") == (False, "no native bf16 on this device")
    fake_cpu({"asimd", "bf16"}, arch="aarch64")
    assert resolve_precision("auto", "cpu")[0] is True


def test_explicit_fp32_wins_everywhere(fake_cpu):
    fake_cpu(NATIVE | {"amx_bf16"})
    assert resolve_precision("fp32", "cpu") == (False, "fp32 as requested")
    assert resolve_precision("fp32", "cpu", recorded="bf16") == (False, "fp32 as requested")


def test_explicit_bf16_without_native_support_warns_with_the_measured_cost(fake_cpu, no_timing, caplog):
    fake_cpu(PLAIN)
    with caplog.at_level(logging.WARNING, logger="kalbert.precision"):
        use, why = resolve_precision("bf16", "cpu")
    assert use is True and "~3.0x slower than fp32 in a quick matmul check" in why
    (record,) = caplog.records
    assert "bf16 is emulated here: ~3.0x slower than fp32 in a quick matmul check" in record.getMessage()
    fake_cpu(NATIVE)
    caplog.clear()
    assert resolve_precision("bf16", "cpu") == (True, "bf16 as requested (native here: AVX512-BF16)")
    assert not caplog.records


def test_a_resumed_run(fake_cpu, no_timing, caplog):
    fake_cpu(NATIVE)
    assert resolve_precision("auto", "cpu", recorded="bf16") == (
        True, "bf16, as the run being resumed (native here: AVX512-BF16)")
    assert resolve_precision("auto", "cpu", recorded="fp32") == (False, "fp32, as the run being resumed")
    fake_cpu(PLAIN)  # the run moved to a machine without native bf16
    with caplog.at_level(logging.INFO, logger="kalbert.precision"):
        use, why = resolve_precision("auto", "cpu", recorded="bf16")
    assert use is False and "continuing in fp32" in why and "--precision bf16" in why
    assert len(caplog.records) == 1
    assert resolve_precision("bf16", "cpu", recorded="bf16")[0] is True  # asked for explicitly: kept


def test_bad_values_are_refused():
    with pytest.raises(KalbertError, match="unknown precision 'fp16'"):
        resolve_precision("fp16", "cpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        resolve_precision("auto", "cpu", recorded="yes")


def test_the_measured_slowdown_is_a_positive_ratio():
    precision.emulated_bf16_slowdown.cache_clear()
    assert precision.emulated_bf16_slowdown(size=64, reps=2) > 0
    assert precision.emulation_cost().startswith("bf16 is emulated here")


def test_autocast_runs_matmuls_in_bf16_only_when_enabled():
    a = torch.randn(8, 8)
    with autocast("cpu", True):
        assert (a @ a).dtype == torch.bfloat16
    with autocast(torch.device("cpu"), False):
        assert (a @ a).dtype == torch.float32


def test_precision_of_an_old_bf16_flag():
    assert [precision.precision_of(v) for v in (True, False, None)] == ["bf16", "fp32", None]
