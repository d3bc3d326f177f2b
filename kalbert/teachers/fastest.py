"""The fastest way this CPU runs a teacher whose vectors stay within cosine 0.999 of its torch fp32 vectors.

Encoding is the cost of distillation on a small CPU, and which backend is fastest depends on the CPU (native
bf16, int8 dot products) and the model, so ``auto`` measures rather than guesses: before a large fill it
encodes a probe of the sentences to encode (spread over their lengths) with torch fp32 and with every other
backend this CPU runs (torch under bf16 autocast where bf16 is native, the ONNX fp32 and int8 exports where
onnxruntime is installed), and keeps the fastest whose smallest cosine to torch fp32 reaches
:data:`MIN_COSINE`. Vectors that close are interchangeable, so they share torch fp32's cache folder; the
probe's torch vectors are stored too, not thrown away. A backend asked for by name is checked the same way
and refused below the tolerance.

ONNX exports of a teacher folder live under ``teachers_home()/onnx/<fingerprint>`` (rebuildable, written
atomically, never inside the teacher's own folder): the folder's tokenizer, pooling and prompt files
without its weights, plus the fp32 file and the int8 file for this CPU's preset, made by the exporter of
:mod:`kalbert.onnx_files`.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.hardware import native_bf16
from kalbert.io import atomic_output_dir, atomic_write_json
from kalbert.teachers.backends import SentenceTransformerTeacher, Teacher, encode_unit, teachers_home

log = logging.getLogger(__name__)
MIN_COSINE = 0.999
PROBE_SENTENCES = 256
MIN_SENTENCES_TO_PROBE = 2048
"""``auto`` fills smaller than this (one shard) run the reference: probing would cost more than it saves."""
ONNX_RECORD = "teacher-onnx.json"
NOT_COPIED = ("*.safetensors", "*.bin", "onnx", "kalbert.json", "README.md", "training_log.json")
"""Teacher-folder files an ONNX copy does without: torch weights, older ONNX files, the folder's own record."""

Encode = Callable[[list[str]], np.ndarray]


@dataclass
class Choice:
    """The backend a fill runs, and what probing it measured (nothing when it was not probed)."""

    backend: str
    encode: Encode
    probe: list[str] = field(default_factory=list)
    probe_vectors: np.ndarray | None = None
    """the reference's vectors of ``probe`` (stored by the fill like any other)"""
    min_cosine: float | None = None
    table: list[dict[str, Any]] = field(default_factory=list)


def candidate_backends(teacher: Teacher) -> list[str]:
    """The backends ``auto`` measures for ``teacher`` on this machine, its reference first."""
    found = [teacher.backends[0]]
    for backend in teacher.backends[1:]:
        if backend == "torch-bf16" and not native_bf16("cpu"):
            log.debug("torch-bf16 left out: no native bf16 on this CPU")
        elif backend.startswith("onnx") and not _onnx_installed():
            log.debug("%s left out: the ONNX packages are not installed", backend)
        else:
            found.append(backend)
    return found


def _onnx_installed() -> bool:
    from kalbert.onnx_files import require_onnx

    try:
        require_onnx()
    except KalbertError:
        return False
    return True


def onnx_folder(teacher: SentenceTransformerTeacher) -> Path:
    """The teacher's ONNX copy for this CPU's int8 preset, exported (fp32 file, then int8) on first use."""
    from kalbert.onnx_files import (
        FP32_FILE,
        cpu_int8_config,
        export_fp32_file,
        load_onnx_model,
        quantise_int8_file,
        require_onnx,
        transformer_dir,
    )

    assert teacher.path is not None, "a hub-id teacher has no ONNX backend (see SentenceTransformerTeacher.backends)"
    folder = teachers_home() / "onnx" / teacher.fingerprint
    preset = cpu_int8_config()
    if (folder / ONNX_RECORD).is_file() and _onnx_record(folder).get("int8_config") == preset:
        return folder
    require_onnx()
    log.info("exporting teacher %s to ONNX (fp32, int8 %s) into %s, once", teacher.name, preset, folder)
    with atomic_output_dir(folder, overwrite=True) as tmp:
        shutil.copytree(teacher.path, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
        module_dir = transformer_dir(tmp)
        export_fp32_file(teacher.model, module_dir / FP32_FILE)
        int8 = quantise_int8_file(load_onnx_model(tmp, FP32_FILE), preset, module_dir)
        atomic_write_json(tmp / ONNX_RECORD, {"teacher": teacher.name, "fingerprint": teacher.fingerprint,
                                              "files": {"onnx": FP32_FILE, "onnx-int8": int8}, "int8_config": preset})
    return folder


def _onnx_record(folder: Path) -> dict[str, Any]:
    return json.loads((folder / ONNX_RECORD).read_text(encoding="utf-8"))


def backend_encoder(teacher: Teacher, backend: str) -> Encode:
    """``encode`` of ``teacher`` run by ``backend`` (one of ``teacher.backends``)."""
    if backend == teacher.backends[0]:
        return teacher.encode
    if not isinstance(teacher, SentenceTransformerTeacher):
        raise ValueError(f"teacher {teacher.name} has no {backend} backend")
    if backend == "torch-bf16":
        return lambda texts: encode_unit(teacher.model, texts, teacher.batch_size, bf16=True)
    from kalbert.onnx_files import load_onnx_model

    folder = onnx_folder(teacher)
    model = load_onnx_model(folder, _onnx_record(folder)["files"][backend])
    return lambda texts: encode_unit(model, texts, teacher.batch_size)


def probe_sentences(todo: list[str], size: int = PROBE_SENTENCES) -> list[str]:
    """``size`` of the sentences, evenly spread over ``todo``'s order (shortest first: over their lengths)."""
    if len(todo) <= size:
        return list(todo)
    return [todo[i] for i in np.unique(np.linspace(0, len(todo) - 1, size).round().astype(int))]


def _timed(encode: Encode, probe: list[str]) -> tuple[np.ndarray, float]:
    """The probe's vectors and sentences/s, after a short warm-up (first calls build kernels and buffers)."""
    encode(probe[:: max(1, len(probe) // 8)])
    started = time.perf_counter()
    vectors = encode(probe)
    return vectors, len(probe) / max(time.perf_counter() - started, 1e-9)


def min_cosine(reference: np.ndarray, vectors: np.ndarray) -> float:
    """The smallest row-wise cosine between two [n, dim] arrays."""
    a, b = reference.astype(np.float64), vectors.astype(np.float64)
    cosines = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return float(cosines.min())


def choose_backend(teacher: Teacher, requested: str | None, todo: list[str]) -> Choice:
    """How a fill of ``todo`` runs: ``None`` or the reference as it is; ``auto`` the fastest backend within
    :data:`MIN_COSINE` on a probe; a named backend after the same check (refused below it)."""
    reference = teacher.backends[0]
    if requested is None or requested == reference:
        return Choice(reference, teacher.encode)
    if requested != "auto" and requested not in teacher.backends:
        raise KalbertError(f"the {teacher.name} teacher runs on {', '.join(teacher.backends)}, not "
                           f"--teacher-backend {requested}", "pass --teacher-backend auto")
    if requested == "auto":
        names = candidate_backends(teacher)[1:] if len(todo) >= MIN_SENTENCES_TO_PROBE else []
        if not names:
            log.debug("teacher %s runs on %s: %s", teacher.name, reference,
                      "nothing else to try" if len(todo) >= MIN_SENTENCES_TO_PROBE
                      else f"{len(todo)} sentences are too few to gain from probing")
            return Choice(reference, teacher.encode)
    else:
        names = [requested]
    probe = probe_sentences(todo)
    reference_vectors, speed = _timed(teacher.encode, probe)
    table = [{"backend": reference, "sentences_per_second": round(speed, 1), "min_cosine": 1.0}]
    encoders = {reference: teacher.encode}
    for name in names:
        try:
            encoders[name] = backend_encoder(teacher, name)
            vectors, speed = _timed(encoders[name], probe)
        except Exception as exc:  # noqa: BLE001 - auto is an optimisation: a backend that fails is skipped
            if requested != "auto":
                raise
            log.warning("teacher backend %s skipped: %s", name, str(exc).strip().splitlines()[0][:200])
            continue
        table.append({"backend": name, "sentences_per_second": round(speed, 1),
                      "min_cosine": round(min_cosine(reference_vectors, vectors), 6)})
    if requested == "auto":
        chosen = max((row for row in table if row["min_cosine"] >= MIN_COSINE),
                     key=lambda row: row["sentences_per_second"])
    else:
        chosen = table[-1]
        if chosen["min_cosine"] < MIN_COSINE:
            raise KalbertError(f"--teacher-backend {requested} gives vectors at cosine {chosen['min_cosine']:.6f} "
                               f"to torch fp32 on {len(probe)} probe sentences, below {MIN_COSINE}",
                               "use --teacher-backend auto or torch")
    for row in table:
        row["chosen"] = row is chosen
    log.info("%s", describe_probe(teacher.name, len(probe), table))
    return Choice(chosen["backend"], encoders[chosen["backend"]], probe, reference_vectors, chosen["min_cosine"],
                  table)


def describe_probe(name: str, sentences: int, table: list[dict[str, Any]]) -> str:
    """The probe's table as the log shows it."""
    lines = [f"teacher {name} on {sentences} probe sentences (the fastest within cosine {MIN_COSINE} of torch "
             f"fp32 runs the fill):", f"  {'backend':<12} {'sentences/s':>11} {'min cosine':>11}"]
    for row in table:
        note = "  chosen" if row["chosen"] else f"  below {MIN_COSINE}" if row["min_cosine"] < MIN_COSINE else ""
        lines.append(f"  {row['backend']:<12} {row['sentences_per_second']:>11.1f} {row['min_cosine']:>11.6f}{note}")
    return "\n".join(lines)
