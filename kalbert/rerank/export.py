"""`kalbert rerank export`: a reranker folder copied for shipping, its weights stored as float16 (computed in
float32, :mod:`kalbert.weights`), optionally with ONNX files beside them for fast CPU scoring.

The ONNX files are those of sentence models (:mod:`kalbert.onnx_files`): ``onnx/model.onnx`` exported from the
classifier with dynamic batch and sequence axes and a ``logits`` output, and the int8 file sentence-transformers'
dynamic quantisation writes for a CPU preset. Plain ``CrossEncoder(path, backend="onnx", model_kwargs={"file_name":
...})`` loads either; ``load_reranker(path, backend="onnx-int8")`` finds them in kalbert.json. The copy must score
probe pairs as the original does (float16 storage and the fp32 ONNX file within 3e-3 of the probe scores'
spread); what int8 changes is recorded, and measured on real candidates by ``benchmarks/rerank_latency.py``.
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.artifact import Kind, read_meta
from kalbert.errors import KalbertError
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_text
from kalbert.onnx_files import FP32_FILE, ONNX_DIR, cpu_int8_config, export_fp32_file, quantise_int8_file, require_onnx
from kalbert.rerank.card import render_card
from kalbert.rerank.model import check_reranker_folder, window_stride
from kalbert.rerank.train import PROBES
from kalbert.stage import artifact_folder, write_record
from kalbert.weights import store_float16

TOLERANCE = 3e-3
"""largest change of a probe pair's logit (relative to the probes' spread, :func:`_change`) that float16 storage
or the fp32 ONNX file may make: float16 rounds each weight by up to 5e-4 of itself, and six shared layers
compound that to about 1e-3 of the spread, far below the gaps that order passages"""

MIN_WINDOW_TOKENS = 32
"""shortest pair kalbert reads: the question keeps at most half of it, so a shorter one leaves room for a few words"""


def _scores(folder: Path, file_name: str | None = None) -> tuple[Any, np.ndarray]:
    """The folder loaded by sentence-transformers (from ``file_name`` with onnxruntime), and its probe scores."""
    from sentence_transformers import CrossEncoder

    onnx = {"backend": "onnx", "model_kwargs": {"file_name": file_name}} if file_name else {}
    model = CrossEncoder(str(folder), device="cpu", local_files_only=True, **onnx)
    return model, np.asarray(model.predict(PROBES, convert_to_numpy=True), dtype=np.float64)


def _change(reference: np.ndarray, scores: np.ndarray) -> float:
    """Largest change of a probe score, relative to the probes' spread where that exceeds 1: logits span about
    ±10, and float16's three significant digits move one by 1e-3 of that, far below the gaps that order passages."""
    return float(np.abs(reference - scores).max() / max(1.0, float(np.ptp(reference))))


def _check_window_tokens(tokens: int, folder: Path) -> None:
    """One line for a pair length ``folder``'s model cannot read, or too short to hold a question beside some
    passage; reads its config only."""
    positions = json.loads((folder / "config.json").read_text(encoding="utf-8"))["max_position_embeddings"]
    if not MIN_WINDOW_TOKENS <= tokens <= positions:
        raise KalbertError(f"--window-tokens {tokens} is outside {MIN_WINDOW_TOKENS}-{positions} (the model reads "
                           f"at most {positions} positions)", "e.g. --window-tokens 128")


def export_reranker(model: str | Path, out: str | Path, onnx: bool = False, int8: bool = False,
                    int8_config: str | None = None, overwrite: bool = False,
                    hybrid_score_weight: float | None = None,
                    windows_per_passage: int | None = None, window_tokens: int | None = None) -> dict[str, Any]:
    """Write ``out``: ``model`` with float16 weights and, with ``onnx``, its ONNX file (and the int8 one with
    ``int8``, for ``int8_config`` or this CPU's preset), with ``hybrid_score_weight``, ``windows_per_passage`` and
    ``window_tokens`` recorded where given (a fusion or reading chosen on dev after training); returns its record."""
    source = check_reranker_folder(model)
    if int8 and not onnx:
        raise KalbertError("--int8 quantises the ONNX file", "add --onnx")
    if hybrid_score_weight is not None and not (math.isfinite(hybrid_score_weight) and hybrid_score_weight >= 0):
        raise KalbertError(f"--hybrid-score-weight {hybrid_score_weight} is not a number of 0 or more",
                           "e.g. --hybrid-score-weight 1.0")
    if windows_per_passage is not None and windows_per_passage < 1:
        raise KalbertError(f"--windows-per-passage {windows_per_passage} reads nothing",
                           "give 1 or more, e.g. --windows-per-passage 1")
    if window_tokens is not None:
        _check_window_tokens(window_tokens, source)
    if onnx:
        require_onnx()
    _, reference = _scores(source)
    with artifact_folder(out, Kind.RERANKER, overwrite=overwrite) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        shutil.rmtree(tmp / ONNX_DIR, ignore_errors=True)  # files made from other weights would score another model
        store_float16(tmp)
        copy, scores = _scores(tmp)
        if _change(reference, scores) > TOLERANCE:
            raise KalbertError(f"float16 weights change the scores of {source} by {_change(reference, scores):.2e}",
                               "keep the float32 folder")
        meta = read_meta(tmp)
        # a folder exported again: its change from the trained folder is the earlier export's plus this one's
        earlier = (meta.get("weights_storage") or {}).get("max_probe_score_change", 0.0)
        meta["weights_storage"] = {"dtype": "float16", "computed_in": "float32",
                                   "max_probe_score_change": earlier + _change(reference, scores)}
        # the selection ran where the source was trained; the record's hardware becomes this machine's
        meta["evaluation"].setdefault("hardware", meta.get("hardware"))
        meta["size_mb"] = round(sum(p.stat().st_size for p in tmp.glob("*.safetensors")) / 1e6, 1)
        meta.pop("onnx", None)
        if hybrid_score_weight is not None:
            meta["hybrid_score_weight"] = hybrid_score_weight
        if windows_per_passage is not None:
            meta["windows"] = {**meta.get("windows", {}), "per_passage": windows_per_passage}
        if window_tokens is not None:
            meta["windows"] = {**meta.get("windows", {}), "tokens": window_tokens,
                               "stride": window_stride(window_tokens)}
        if onnx:
            export_fp32_file(copy, tmp / FP32_FILE, output="logits")
            fp32, onnx_scores = _scores(tmp, FP32_FILE)
            if _change(scores, onnx_scores) > TOLERANCE:
                raise RuntimeError(f"the ONNX export of {source} scores the probes {_change(scores, onnx_scores):.2e} "
                                   "away from its weights")
            files, changes = {"fp32": FP32_FILE}, {"fp32": _change(scores, onnx_scores)}
            preset = None
            if int8:
                preset = int8_config or cpu_int8_config()
                files["int8"] = quantise_int8_file(fp32, preset, tmp)
                changes["int8"] = _change(scores, _scores(tmp, files["int8"])[1])
            meta["onnx"] = {"files": files, "int8_config": preset, "max_probe_score_change": changes,
                            "made_on": hardware_block()}
        command = ["kalbert", "rerank", "export", "--model", str(source), "--out", str(out),
                   *(["--onnx"] if onnx else []), *(["--int8"] if int8 else []),
                   *(["--int8-config", int8_config] if int8_config else []),
                   *(["--hybrid-score-weight", str(hybrid_score_weight)] if hybrid_score_weight is not None else []),
                   *(["--windows-per-passage", str(windows_per_passage)] if windows_per_passage is not None else []),
                   *(["--window-tokens", str(window_tokens)] if window_tokens is not None else []),
                   *(["--overwrite"] if overwrite else [])]
        meta["command"] = None
        meta = write_record(tmp, meta, Kind.RERANKER, [source], command=shlex.join(command))
        atomic_write_text(tmp / "README.md", render_card(meta))
    return meta
