"""ONNX files inside a sentence-model folder, for fast CPU serving: export, int8 quantisation, and the checks
that make loading them safe.

The files sit where sentence-transformers looks for them (``onnx/model.onnx`` and, beside it, the int8 file
that ``export_dynamic_quantized_onnx_model`` names after its preset's weight type, e.g.
``onnx/model_quint8_avx2.onnx`` or ``onnx/model_qint8_avx512_vnni.onnx``; kalbert takes the name from the file
it wrote, never rebuilds it), so plain ``SentenceTransformer(path, backend="onnx", model_kwargs={"file_name":
...})`` loads them. ``kalbert.json`` records which files exist, the preset the int8 file was quantised for, the
machine that made them, and the SHA-256 of the weights they were made from: a file made before the weights
changed would silently give the old model's vectors, so loading refuses it. A folder exported on another CPU
loads anywhere: the fp32 file always, the int8 file wherever onnxruntime runs it (else one line naming the
preset and this CPU).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kalbert import hardware
from kalbert.artifact import MODULES_FILE, Kind, is_sentence_model, read_meta
from kalbert.config import render_command
from kalbert.errors import KalbertError
from kalbert.io import refuse_existing_output, sha256_file
from kalbert.onnx_files import (
    CHECK_SENTENCES,
    FP32_FILE,
    INT8_CONFIGS,
    ONNX_DIR,
    cpu_int8_config,
    export_fp32_file,
    load_onnx_model,
    quantise_int8_file,
    require_onnx,
    transformer_dir,
)
from kalbert.sentence.card import add_stage, write_meta_and_card
from kalbert.sentence.folder import module_names
from kalbert.stage import artifact_folder, write_record
from kalbert.verbs import VERBS
from kalbert.weights import check_weight_files

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
MIN_COSINE_FP32 = 0.9999
MIN_COSINE_INT8 = 0.98
ONNX_EXPORT = f"{VERBS['sbert export'].command} --backend onnx"
"""the command that runs :func:`export_onnx`: ``sbert export`` with a flag, as its config is not the verb's"""


@dataclass
class OnnxExportConfig:
    """What to export: a sentence-model folder in, a copy with ONNX files out."""

    model: str
    """Sentence-model folder (``modules.json``), e.g. the output of ``kalbert sbert train|distill``."""
    out: str
    """Output folder: a copy of ``model`` with ``onnx/`` files added (may be ``model`` itself, with overwrite)."""
    quantize: Literal["int8"] | None = None
    """Also write a dynamically quantised int8 file (weights int8, activations quantised at run time)."""
    int8_config: str | None = None
    """sentence-transformers' quantisation preset: avx512_vnni, avx512, avx2 or arm64 (None: this CPU's best)."""


def weight_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of each weight file of a Transformer module folder (the inputs of its ONNX file)."""
    files = sorted([*folder.glob("*.safetensors"), *folder.glob("pytorch_model*.bin")])
    if not files:
        raise KalbertError(f"{folder} has no model weights (*.safetensors or pytorch_model*.bin)")
    return {f.name: sha256_file(f) for f in files}


def export_command(folder: Path, int8: bool) -> str:
    """How to get ``folder``'s ONNX files: an export into a new folder, then that folder as the model. An export
    into ``folder`` itself would rewrite the ``kalbert.json`` of a model as shipped or as others use it."""
    quantize = " --quantize int8" if int8 else ""
    copy = Path("outputs") / f"{folder.name}-onnx"
    return f"{ONNX_EXPORT}{quantize} --model {folder} --out {copy}, then pass --model {copy}"


def onnx_file(folder: str | Path, backend: str) -> str:
    """The ``file_name`` to load ``backend`` from, relative to the Transformer module's folder, after
    checking that the packages are installed, the export exists, and it was made from the current weights."""
    folder = Path(folder)
    record = read_meta(folder).get("onnx") or {}
    int8 = backend == "onnx-int8"
    relative = (record.get("files") or {}).get(backend)
    module_dir = transformer_dir(folder)
    if not relative or not (module_dir / relative).is_file():
        raise KalbertError(f"{folder} has no {'int8 ' if int8 else ''}ONNX file for --backend {backend}",
                           f"export a copy with one: {export_command(folder, int8)}")
    require_onnx()
    if weight_hashes(module_dir) != record.get("weights"):
        raise KalbertError(f"ONNX file {relative} is older than the weights of {folder}",
                           f"export a copy again: {export_command(folder, 'onnx-int8' in record['files'])}")
    if int8 and record.get("int8_config") != cpu_int8_config():
        log.warning("%s was quantised for %s; this CPU suits %s (re-export here for the best speed)",
                    relative, record.get("int8_config"), cpu_int8_config())
        check_int8_runs(folder, module_dir / relative, record.get("int8_config"))
    return relative


def check_int8_runs(folder: Path, path: Path, preset: str | None) -> None:
    """One line naming the preset and this CPU when onnxruntime cannot run an int8 file quantised elsewhere."""
    import onnxruntime

    try:
        onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own (Fail, NotImplemented, ...)
        block = hardware.hardware_block()
        raise KalbertError(f"onnxruntime cannot run {path.name} (int8 preset {preset}) on this CPU "
                           f"({hardware.describe_cpu(block)}): {str(exc).strip().splitlines()[0][:200]}",
                           f"use --backend onnx, or export a copy here: {export_command(folder, True)}") from None


def _min_cosine(reference: np.ndarray, model: SentenceTransformer) -> float:
    """Smallest cosine to the PyTorch vectors, encoding in one padded batch and one sentence at a time."""
    from sentence_transformers.util import pairwise_cos_sim

    batched = model.encode(CHECK_SENTENCES, batch_size=len(CHECK_SENTENCES), convert_to_numpy=True)
    single = model.encode(CHECK_SENTENCES, batch_size=1, convert_to_numpy=True)
    return float(min(pairwise_cos_sim(reference, batched).min(), pairwise_cos_sim(reference, single).min()))


def export_onnx(config: OnnxExportConfig, overwrite: bool = False) -> Path:
    """Copy the sentence model ``config.model`` to ``config.out`` with ONNX fp32 (and int8) files added,
    checked against PyTorch on probe sentences and recorded in ``kalbert.json``; return the folder."""
    from sentence_transformers import SentenceTransformer

    source = Path(config.model).expanduser()
    if not is_sentence_model(source):
        raise KalbertError(f"{source} is not a sentence model (no {MODULES_FILE})",
                           "--backend onnx takes a SentenceTransformer folder: make one with "
                           "`kalbert sbert export --model CHECKPOINT --out FOLDER` first")
    refuse_existing_output(config.out, overwrite)
    check_weight_files(source)
    if config.int8_config not in (None, *INT8_CONFIGS):
        raise KalbertError(f"unknown int8 preset {config.int8_config!r}", f"use one of {', '.join(INT8_CONFIGS)}")
    require_onnx()
    int8_config = config.int8_config or cpu_int8_config()
    started = time.perf_counter()
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    reference = model.encode(CHECK_SENTENCES, convert_to_numpy=True)
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        module_dir = transformer_dir(tmp)
        shutil.rmtree(module_dir / ONNX_DIR, ignore_errors=True)  # files of an earlier export are stale
        export_fp32_file(model, module_dir / FP32_FILE)
        fp32 = load_onnx_model(tmp, FP32_FILE)
        files = {"onnx": FP32_FILE}
        cosines = {"onnx": _min_cosine(reference, fp32)}
        if cosines["onnx"] < MIN_COSINE_FP32:
            raise KalbertError(f"the ONNX export of {source} disagrees with PyTorch (cosine {cosines['onnx']:.6f} "
                               f"< {MIN_COSINE_FP32})", "report this model and the installed torch/onnx versions")
        if config.quantize == "int8":
            files["onnx-int8"] = quantise_int8_file(fp32, int8_config, module_dir)
            cosines["onnx-int8"] = _min_cosine(reference, load_onnx_model(tmp, files["onnx-int8"]))
            if cosines["onnx-int8"] < MIN_COSINE_INT8:
                log.warning("int8 vectors of %s are far from PyTorch's (cosine %.4f); prefer --backend onnx",
                            source, cosines["onnx-int8"])
        meta = read_meta(tmp)
        meta["onnx"] = _record(module_dir, files, cosines, int8_config if config.quantize else None)
        add_stage(meta, "onnx-export", asdict(config), seconds=round(time.perf_counter() - started, 1))
        command = render_command(ONNX_EXPORT, config)
        if meta.get("kind") == Kind.SENTENCE_MODEL:  # a kalbert folder: refresh its card too
            write_meta_and_card(tmp, meta, module_names(model), model.get_embedding_dimension(),
                                model.max_seq_length, [source], command)
        else:  # someone else's folder keeps its own README
            write_record(tmp, meta, Kind.SENTENCE_MODEL, [source], command=command)
    return Path(config.out)


def _record(module_dir: Path, files: dict[str, str], cosines: dict[str, float], int8_config: str | None
            ) -> dict[str, Any]:
    import onnx
    import onnxruntime
    import torch

    graph = onnx.load(str(module_dir / FP32_FILE), load_external_data=False)
    return {
        "files": files,
        "weights": weight_hashes(module_dir),
        "int8_config": int8_config,
        "min_cosine_vs_torch": {k: round(v, 6) for k, v in cosines.items()},
        "check_sentences": len(CHECK_SENTENCES),
        "opset": next(o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")),
        "versions": {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
        "hardware": hardware.hardware_block(),  # the CPU the int8 file was quantised and checked on
    }
