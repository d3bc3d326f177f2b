"""The automatic precision choice: what was asked, else what the resumed run had, else what the hardware has."""

from __future__ import annotations

import torch

from kalbert.pretrain import speed


def test_an_explicit_or_recorded_choice_wins_over_the_hardware(monkeypatch):
    cpu = torch.device("cpu")
    monkeypatch.setattr(speed, "_cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    assert speed.choose_bf16(False, None, cpu) == (False, "as requested")
    assert speed.choose_bf16(None, False, cpu) == (False, "as the run being resumed")
    assert speed.choose_bf16(None, None, cpu) == (True, "native bf16 here: AVX512-BF16")
    monkeypatch.setattr(speed, "_cpu_flags", lambda: frozenset({"avx2"}))
    assert speed.choose_bf16(None, None, cpu) == (False, "no native bf16 on this device")
    assert speed.choose_bf16(True, None, cpu)[0] is True
