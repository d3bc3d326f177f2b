"""The one place that looks at the hardware: which instruction sets the CPU has, what gives native bf16 and
fast int8 dot products, and the record of it that every results file and model card carries.

Everything reads ``/proc/cpuinfo`` (x86 ``flags``, ARM ``Features``, the model name) through
:func:`_cpuinfo_text` and :func:`_machine`, on every call and without a cache, so a test fakes a CPU by
monkeypatching either those two readers (the ``fake_cpu`` fixture in ``tests/conftest.py`` does) or
:func:`cpu_flags` itself. Off Linux there is no ``/proc/cpuinfo``: the architecture comes from
``platform.machine()``, an x86 CPU counts as having no optional instruction sets (the int8 preset then falls
back to AVX2, which every x86-64 machine sold in the last decade runs) and an ARM64 one as having NEON.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

CPUINFO = Path("/proc/cpuinfo")
# The instruction sets that change what kalbert runs fast, in the order reports list them.
X86_SETS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
            "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")
ARM_SETS = ("asimd", "asimddp", "i8mm", "bf16", "sve")
PACKAGES = ("torch", "transformers", "sentence-transformers", "onnxruntime", "kalbert")
NOT_RECORDED = "CPU not recorded"


# --- the readers (the only code that touches the machine; tests replace these) -------------------------------

def _cpuinfo_text() -> str:
    """The text of ``/proc/cpuinfo``, or "" where there is none (macOS, Windows)."""
    try:
        return CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _machine() -> str:
    return platform.machine()


# --- parsing -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CpuInfo:
    model: str
    arch: str
    flags: frozenset[str]
    physical_cores: int | None
    logical_cpus: int | None


def normalise_arch(machine: str) -> str:
    """``x86_64`` or ``aarch64`` for the spellings different OSes use (AMD64, arm64), else as given."""
    lowered = machine.lower()
    if lowered in ("x86_64", "amd64", "x64"):
        return "x86_64"
    if lowered in ("aarch64", "arm64", "armv8", "armv8l"):
        return "aarch64"
    return lowered or "unknown"


_ARM_IMPLEMENTERS = {"0x41": "Arm", "0x42": "Broadcom", "0x43": "Cavium", "0x46": "Fujitsu", "0x48": "HiSilicon",
                     "0x4e": "NVIDIA", "0x51": "Qualcomm", "0x61": "Apple", "0xc0": "Ampere"}
_ARM_PARTS = {"0xd0c": "Neoverse N1", "0xd40": "Neoverse V1", "0xd49": "Neoverse N2", "0xd4f": "Neoverse V2",
              "0xd8e": "Neoverse N3", "0xd84": "Neoverse V3"}


def parse_cpuinfo(text: str, machine: str) -> CpuInfo:
    """Model name, architecture, flags and core counts from ``/proc/cpuinfo`` text (x86 or ARM)."""
    arch = normalise_arch(machine)
    fields: dict[str, str] = {}
    cores: set[tuple[str, str]] = set()
    logical = 0
    physical_id = ""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        fields.setdefault(key, value)  # every processor repeats these; the first one speaks for all
        if key == "processor":
            logical += 1
        elif key == "physical id":
            physical_id = value
        elif key == "core id":
            cores.add((physical_id, value))
    flags = frozenset((fields.get("flags") or fields.get("features") or "").split())
    if arch == "aarch64" and not text:  # no /proc/cpuinfo (macOS): NEON is part of ARMv8-A
        flags = frozenset({"asimd"})
    model = fields.get("model name") or fields.get("cpu model") or fields.get("hardware") or ""
    if not model and "cpu implementer" in fields:
        implementer, part = fields["cpu implementer"].lower(), fields.get("cpu part", "?").lower()
        vendor = _ARM_IMPLEMENTERS.get(implementer, f"ARM implementer {implementer}")
        model = f"{vendor} {_ARM_PARTS[part]}" if implementer == "0x41" and part in _ARM_PARTS else \
            f"{vendor} core {part}"
    if not model:
        model = platform.processor() or arch
    logical_cpus = logical or os.cpu_count()
    return CpuInfo(model=" ".join(model.split()), arch=arch, flags=flags,
                   physical_cores=len(cores) or logical_cpus, logical_cpus=logical_cpus)


def cpu_info() -> CpuInfo:
    """This machine's CPU, read now (nothing is cached, so a monkeypatched reader takes effect at once)."""
    return parse_cpuinfo(_cpuinfo_text(), _machine())


def cpu_flags() -> frozenset[str]:
    """The CPU's instruction-set flags as the kernel names them (``avx512_vnni``, ``amx_bf16``, ``asimddp``...)."""
    return cpu_info().flags


def cpu_arch() -> str:
    """``x86_64``, ``aarch64`` or whatever else ``platform.machine()`` says."""
    return normalise_arch(_machine())


# --- what the flags mean -------------------------------------------------------------------------------------

def _device_type(device: torch.device | str) -> str:
    return getattr(device, "type", None) or str(device).partition(":")[0]


def native_bf16(device: torch.device | str = "cpu") -> str | None:
    """What gives ``device`` native bf16 matmuls (for logs and records), or None where bf16 is emulated.

    On a CPU: AMX (AMX-BF16 tiles), AVX512-BF16 (dot products of bf16 pairs) or ARM's BF16 extension;
    on CUDA the device's name when it supports bf16 (Ampere and later).
    """
    kind = _device_type(device)
    if kind == "cuda":
        import torch

        if not torch.cuda.is_available() or not torch.cuda.is_bf16_supported():
            return None
        return torch.cuda.get_device_name(torch.device(device) if isinstance(device, str) else device)
    if kind != "cpu":
        return None
    flags = cpu_flags()
    if "amx_bf16" in flags:
        return "AMX-BF16"
    if "avx512_bf16" in flags:
        return "AVX512-BF16"
    if cpu_arch() == "aarch64" and "bf16" in flags:
        return "ARM bf16"
    return None


def int8_dot_product() -> str | None:
    """The CPU's int8 dot-product instructions (what makes int8 ONNX files fast), or None."""
    flags = cpu_flags()
    if cpu_arch() == "aarch64":
        return "ARM i8mm" if "i8mm" in flags else "ARM dotprod" if "asimddp" in flags else None
    for flag, name in (("amx_int8", "AMX-INT8"), ("avx512_vnni", "AVX512-VNNI"), ("avx_vnni", "AVX-VNNI")):
        if flag in flags:
            return name
    return None


def instruction_sets(flags: frozenset[str] | None = None, arch: str | None = None) -> list[str]:
    """The instruction sets that matter here, in a fixed order (ARM's ``asimd`` is NEON)."""
    flags = cpu_flags() if flags is None else flags
    arch = cpu_arch() if arch is None else arch
    return [name for name in (ARM_SETS if arch == "aarch64" else X86_SETS) if name in flags]


# --- the record ----------------------------------------------------------------------------------------------

def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Python's and the relevant packages' versions (None: not installed), without importing the packages."""
    return {"python": platform.python_version(), **{name: _version(name) for name in PACKAGES}}


def _usable_cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


@dataclass
class Hardware:
    """What this machine runs kalbert on, as ``kalbert env`` shows it and results files record it."""

    cpu: str
    arch: str
    instruction_sets: list[str]
    native_bf16: str | None
    int8_dot_product: str | None
    physical_cores: int | None
    logical_cpus: int | None
    usable_cpus: int | None
    """CPUs this process may run on (a container or ``taskset`` can allow fewer than the machine has)."""
    torch_threads: int | None
    torch_cpu_capability: str | None
    """The kernels torch dispatches to here (``torch.backends.cpu.get_cpu_capability()``: DEFAULT, AVX2, AVX512...)."""
    cuda: str | None
    platform: str
    versions: dict[str, str | None] = field(default_factory=dict)


def _torch_facts() -> tuple[int | None, str | None, str | None]:
    try:
        import torch
    except ImportError:
        return None, None, None
    capability = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: None)()
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return torch.get_num_threads(), capability, cuda


def detect() -> Hardware:
    """Everything :class:`Hardware` holds, read now."""
    info = cpu_info()
    flags = cpu_flags()  # through the public reader, so a test that fakes only the flags is respected
    threads, capability, cuda = _torch_facts()
    return Hardware(
        cpu=info.model, arch=info.arch, instruction_sets=instruction_sets(flags, info.arch),
        native_bf16=native_bf16("cpu"), int8_dot_product=int8_dot_product(),
        physical_cores=info.physical_cores, logical_cpus=info.logical_cpus, usable_cpus=_usable_cpus(),
        torch_threads=threads, torch_cpu_capability=capability, cuda=cuda,
        platform=f"{platform.system()} {platform.release()}".strip(), versions=versions())


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):  # Windows
        return None


def hardware_block() -> dict[str, Any]:
    """The JSON-ready hardware record for results files and model cards (with the 1-minute load average,
    since a busy machine measures slower)."""
    return {**asdict(detect()), "load_avg_1min": _load_average()}


_MODEL_NOISE = re.compile(r"\((R|TM)\)|\b(CPU|Processor)\b|\b\d+-Core\b", re.IGNORECASE)


def _short_model(model: str) -> str:
    """"Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz" -> "Intel Xeon Gold 6148"."""
    return " ".join(_MODEL_NOISE.sub("", model.split(" @ ")[0]).split())


def _isa_label(sets: list[str], arch: str) -> str:
    have = set(sets)
    if arch == "aarch64":
        extras = [label for flag, label in (("asimddp", "dotprod"), ("i8mm", "i8mm"), ("bf16", "BF16"),
                                            ("sve", "SVE")) if flag in have]
        return "NEON" + (" " + "/".join(extras) if extras else "") if "asimd" in have or extras else ""
    if "avx512f" in have:
        extras = [label for flag, label in (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16")) if flag in have]
        label = "AVX-512" + (" " + "/".join(extras) if extras else "")
    elif "avx2" in have:
        label = "AVX2" + (" + AVX-VNNI" if "avx_vnni" in have else "")
    elif "avx" in have:
        label = "AVX"
    elif "sse4_2" in have:
        label = "SSE4.2"
    else:
        return ""
    amx = [label for flag, label in (("amx_bf16", "BF16"), ("amx_int8", "INT8")) if flag in have]
    return (f"AMX-{'/'.join(amx)}, " if amx else "") + label


def describe_cpu(block: dict[str, Any] | None) -> str:
    """One short label for a hardware block, e.g. "AMD EPYC, AVX-512 VNNI/BF16"; "CPU not recorded" for a
    results file written before blocks existed."""
    if not block or not block.get("cpu"):
        return NOT_RECORDED
    if block.get("recorded_later"):  # written by hand from the file's own notes: quoted as it is
        return f"{block['cpu']} (recorded later)"
    model = _short_model(str(block["cpu"]))
    sets = block.get("instruction_sets")
    label = f"{model}, {_isa_label(list(sets), block.get('arch', 'x86_64'))}" if sets else model
    return label.rstrip(", ")


def describe_machine(block: dict[str, Any] | None) -> str:
    """:func:`describe_cpu`, and the GPU where there was one: where a run trained, not only its CPU."""
    gpu = (block or {}).get("cuda")
    return f"{describe_cpu(block)} + {gpu}" if gpu else describe_cpu(block)


def env_lines(hardware: Hardware) -> list[str]:
    """``kalbert env``'s bullet list, in the style of ``transformers env``."""
    versions = hardware.versions
    cores = f"{hardware.physical_cores} physical cores, {hardware.logical_cpus} logical CPUs"
    if hardware.usable_cpus is not None and hardware.usable_cpus != hardware.logical_cpus:
        cores += f" ({hardware.usable_cpus} usable by this process)"
    lines = [
        f"- `kalbert` version: {versions.get('kalbert') or 'not installed'}",
        f"- Platform: {hardware.platform} ({hardware.arch})",
        f"- Python version: {versions.get('python') or sys.version.split()[0]}",
        f"- CPU: {hardware.cpu}",
        f"- CPU cores: {cores}",
        f"- Instruction sets: {', '.join(hardware.instruction_sets) or 'none detected'}",
        f"- Native bf16: {hardware.native_bf16 or 'no (bf16 is emulated on this CPU: slower than fp32)'}",
        f"- int8 dot product: {hardware.int8_dot_product or 'no'}",
        f"- Torch CPU capability: {hardware.torch_cpu_capability or 'unknown'}",
        f"- Torch threads: {hardware.torch_threads if hardware.torch_threads is not None else 'unknown'}",
        f"- GPU: {hardware.cuda or 'none'}",
    ]
    for package in PACKAGES:
        if package != "kalbert":
            lines.append(f"- {package} version: {versions.get(package) or 'not installed'}")
    return lines
