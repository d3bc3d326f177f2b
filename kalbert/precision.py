"""One rule for bf16 vs fp32, shared by pretraining, fine-tuning and the encoding verbs.

bf16 autocast runs matmuls several times faster than fp32 where the hardware has native bf16 (AMX,
AVX512-BF16, ARM BF16, Ampere+ GPUs) and reaches the same held-out loss; elsewhere bf16 is emulated and
slower. So ``auto`` (the default) picks bf16 exactly where it is native, a resumed run keeps the precision it
started with where this machine can run it natively, and an explicit ``bf16`` is obeyed everywhere, with a
warning that quotes what the emulation costs on this machine rather than a crash.
"""

from __future__ import annotations

import contextlib
import logging
import time
from functools import cache
from typing import TYPE_CHECKING, Literal, get_args

from kalbert.hardware import native_bf16

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "bf16"]
PRECISIONS: tuple[str, ...] = get_args(Precision)
PRECISION_HELP = ("auto (default): bf16 where the hardware has native bf16 (AMX, AVX512-BF16, ARM BF16, "
                  "Ampere+ GPUs), else fp32; fp32 or bf16 to force one (bf16 without native support is "
                  "emulated and slower)")


def precision_of(bf16: bool | None) -> str | None:
    """The precision name for an old-style ``bf16`` flag (None stays None: nothing recorded)."""
    return None if bf16 is None else "bf16" if bf16 else "fp32"


def check_precision(value: str) -> Precision:
    if value not in PRECISIONS:
        from kalbert.errors import KalbertError

        raise KalbertError(f"unknown precision {value!r}", f"use one of {', '.join(PRECISIONS)}")
    return value  # type: ignore[return-value]


@cache
def emulated_bf16_slowdown(size: int = 256, reps: int = 5) -> float:
    """How many times slower a ``size``x``size`` bf16 matmul runs than an fp32 one on this CPU (best of
    ``reps``, measured once per process)."""
    import torch

    def best(dtype: torch.dtype) -> float:
        a = torch.randn(size, size).to(dtype)
        b = torch.randn(size, size).to(dtype)
        a @ b  # warm-up: the first call picks and builds the kernel
        times = []
        for _ in range(reps):
            started = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - started)
        return min(times)

    return best(torch.bfloat16) / max(best(torch.float32), 1e-9)


def emulation_cost() -> str:
    """The measured cost of emulated bf16, as the warning quotes it."""
    ratio = emulated_bf16_slowdown()
    if ratio >= 1.05:
        return f"bf16 is emulated here: ~{ratio:.1f}x slower than fp32 in a quick matmul check"
    return f"bf16 is emulated here (a quick matmul check ran it at {ratio:.2f}x the fp32 time)"


def _device_type(device: torch.device | str) -> str:
    return getattr(device, "type", None) or str(device).partition(":")[0]


def resolve_precision(requested: Precision, device: torch.device | str,
                      recorded: str | None = None) -> tuple[bool, str]:
    """Use bf16?, and one line saying why.

    ``requested`` is what the user asked for; ``recorded`` the precision of the run being resumed
    ("bf16"/"fp32", None for a fresh run). ``auto`` keeps a resumed run's fp32, and its bf16 where this
    device has native bf16; on a CPU without it, a bf16 run continues in fp32 (logged: pass ``--precision
    bf16`` to keep bf16). An explicit ``bf16`` without native support runs, with a warning that quotes the
    measured cost of the emulation.
    """
    check_precision(requested)
    if recorded not in (None, *PRECISIONS[1:]):
        raise ValueError(f"recorded precision must be fp32, bf16 or None, not {recorded!r}")
    support = native_bf16(device)
    if requested == "fp32":
        return False, "fp32 as requested"
    if requested == "bf16":
        if support:
            return True, f"bf16 as requested (native here: {support})"
        cost = emulation_cost() if _device_type(device) == "cpu" else f"bf16 is not native on {device}"
        log.warning("--precision bf16 without native bf16 support: %s; --precision auto would use fp32", cost)
        return True, f"bf16 as requested ({cost})"
    if recorded == "fp32":
        return False, "fp32, as the run being resumed"
    if recorded == "bf16":
        if support:
            return True, f"bf16, as the run being resumed (native here: {support})"
        reason = ("the run being resumed used bf16, but this device has no native bf16: continuing in fp32 "
                  "(--precision bf16 keeps bf16)")
        log.info("%s", reason)
        return False, reason
    if support:
        return True, f"native bf16 here: {support}"
    return False, "no native bf16 on this device"


def encoding_bf16(requested: Precision, backend: str = "torch", device: torch.device | str = "cpu"
                  ) -> tuple[bool, str]:
    """Use bf16 to encode with a sentence model run by ``backend``?, and why. Only PyTorch models take bf16
    autocast: ONNX files run in the precision they were exported in, so ``bf16`` with them is an error."""
    check_precision(requested)
    if backend != "torch":
        if requested == "bf16":
            from kalbert.errors import KalbertError

            raise KalbertError(f"--precision bf16 runs PyTorch models, not --backend {backend}",
                               "ONNX files run in their own precision (int8: --backend onnx-int8)")
        return False, f"--backend {backend} runs the ONNX file in its own precision"
    return resolve_precision(requested, device)


def autocast(device: torch.device | str, enabled: bool) -> contextlib.AbstractContextManager:
    """bf16 autocast on ``device`` when ``enabled``; a no-op context otherwise."""
    if not enabled:
        return contextlib.nullcontext()
    import torch

    return torch.autocast(_device_type(device), dtype=torch.bfloat16)
