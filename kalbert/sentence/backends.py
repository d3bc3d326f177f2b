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

import inspect
import json
import logging
import shutil
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from kalbert import hardware
from kalbert.artifact import Kind, read_meta
from kalbert.config import render_command
from kalbert.errors import KalbertError
from kalbert.io import sha256_file
from kalbert.sentence.card import add_stage, write_meta_and_card
from kalbert.sentence.folder import is_sentence_model, module_names
from kalbert.stage import artifact_folder, write_record

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
ONNX_DIR = "onnx"
FP32_FILE = f"{ONNX_DIR}/model.onnx"
MIN_COSINE_FP32 = 0.9999
MIN_COSINE_INT8 = 0.98
INT8_CONFIGS = ("avx512_vnni", "avx512", "avx2", "arm64")
INSTALL_HINT = "pip install -e '.[onnx]'"
# Sentences of different lengths, so the check batches carry padding (a wrong attention mask shows).
CHECK_SENTENCES = [
    "배우들의 연기도 좋았다.",
    "한 남자가 기타를 치고 있고 다른 남자는 옆에서 노래를 부르고 있다.",
    "一架飞机正在起飞。",
    "一个女人正在厨房里切洋葱，旁边的孩子在看书。",
    "A plane is taking off.",
]


@dataclass
class OnnxExportConfig:
    """What to export: a sentence-model folder in, a copy with ONNX files out."""

    model: str
    """Sentence-model folder (``modules.json``), e.g. the output of ``kalbert sbert sts|distill``."""
    out: str
    """Output folder: a copy of ``model`` with ``onnx/`` files added (may be ``model`` itself, with overwrite)."""
    quantize: Literal["int8"] | None = None
    """Also write a dynamically quantised int8 file (weights int8, activations quantised at run time)."""
    int8_config: str | None = None
    """sentence-transformers' quantisation preset: avx512_vnni, avx512, avx2 or arm64 (None: this CPU's best)."""


def require_onnx() -> None:
    """Fail with the pip extra to install when the ONNX packages are missing."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        from optimum.onnxruntime import ORTModelForFeatureExtraction, ORTQuantizer  # noqa: F401
    except ImportError as exc:
        raise KalbertError(f"the ONNX backend needs packages that are not installed ({exc})", INSTALL_HINT) from None


def cpu_int8_config() -> str:
    """The sentence-transformers int8 preset for this CPU, from its instruction sets (read by
    :mod:`kalbert.hardware`): AVX-512 VNNI (and AMX machines, which have it) runs int8 dot products in one
    instruction, so a file quantised for it is the fastest where it exists; AVX2 runs everywhere on x86-64."""
    if hardware.cpu_arch() == "aarch64":
        return "arm64"
    flags = hardware.cpu_flags()
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    return "avx512" if "avx512bw" in flags else "avx2"


def transformer_dir(folder: Path) -> Path:
    """The folder of the model's Transformer module (where its weights and ``onnx/`` live)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        path = next(m["path"] for m in modules if m["type"].endswith(".Transformer"))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, StopIteration):
        raise KalbertError(f"{folder}/modules.json names no Transformer module",
                           "ONNX export needs a SentenceTransformer folder with a Transformer module") from None
    return folder / path


def weight_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of each weight file of a Transformer module folder (the inputs of its ONNX file)."""
    files = sorted([*folder.glob("*.safetensors"), *folder.glob("pytorch_model*.bin")])
    if not files:
        raise KalbertError(f"{folder} has no model weights (*.safetensors or pytorch_model*.bin)")
    return {f.name: sha256_file(f) for f in files}


def export_command(folder: Path, int8: bool) -> str:
    quantize = " --quantize int8" if int8 else ""
    return f"kalbert sbert export --backend onnx{quantize} --model {folder} --out {folder} --overwrite"


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
                           f"export it: {export_command(folder, int8)}")
    require_onnx()
    if weight_hashes(module_dir) != record.get("weights"):
        raise KalbertError(f"ONNX file {relative} is older than the weights of {folder}",
                           f"re-run {export_command(folder, 'onnx-int8' in record['files'])}")
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
                           f"use --backend onnx, or re-export here: {export_command(folder, True)}") from None


def _min_cosine(reference: np.ndarray, model: SentenceTransformer) -> float:
    """Smallest cosine to the PyTorch vectors, encoding in one padded batch and one sentence at a time."""
    from sentence_transformers.util import pairwise_cos_sim

    batched = model.encode(CHECK_SENTENCES, batch_size=len(CHECK_SENTENCES), convert_to_numpy=True)
    single = model.encode(CHECK_SENTENCES, batch_size=1, convert_to_numpy=True)
    return float(min(pairwise_cos_sim(reference, batched).min(), pairwise_cos_sim(reference, single).min()))


def _export_fp32(model: SentenceTransformer, target: Path) -> None:
    """``torch.onnx.export`` of the Transformer module with dynamic batch and sequence axes, named the way
    optimum's ORTModelForFeatureExtraction reads it (tokenizer input names in, ``last_hidden_state`` out).

    Not optimum's own exporter (what ``SentenceTransformer(..., backend="onnx")`` runs when no file exists):
    its model patcher swaps in attention-mask functions written for an older transformers, and tracing ALBERT
    under transformers 5.23 fails ("sdpa_mask_without_vmap() missing ... 'cache_position'").
    """
    import torch

    network = model[0].auto_model.eval()
    accepted = inspect.signature(network.forward).parameters
    inputs = {k: v for k, v in model.tokenizer(CHECK_SENTENCES, padding=True, return_tensors="pt").items()
              if k in accepted}
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    target.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # axis-renaming and pytree deprecation chatter from the exporter
        torch.onnx.export(network, (), str(target), kwargs=inputs, output_names=["last_hidden_state"],
                          dynamic_shapes={name: {0: batch, 1: sequence} for name in inputs}, dynamo=True,
                          external_data=False, verbose=False)


def _load_onnx(folder: Path, file_name: str) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", backend="onnx", local_files_only=True,
                               model_kwargs={"file_name": file_name})


def export_onnx(config: OnnxExportConfig, overwrite: bool = False) -> Path:
    """Copy the sentence model ``config.model`` to ``config.out`` with ONNX fp32 (and int8) files added,
    checked against PyTorch on probe sentences and recorded in ``kalbert.json``; return the folder."""
    from sentence_transformers import SentenceTransformer

    source = Path(config.model).expanduser()
    if not is_sentence_model(source):
        raise KalbertError(f"{source} is not a sentence model (no modules.json)",
                           "--backend onnx takes a SentenceTransformer folder: make one with "
                           "`kalbert sbert export --model CHECKPOINT --out FOLDER` first")
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
        _export_fp32(model, module_dir / FP32_FILE)
        fp32 = _load_onnx(tmp, FP32_FILE)
        files = {"onnx": FP32_FILE}
        cosines = {"onnx": _min_cosine(reference, fp32)}
        if cosines["onnx"] < MIN_COSINE_FP32:
            raise KalbertError(f"the ONNX export of {source} disagrees with PyTorch (cosine {cosines['onnx']:.6f} "
                               f"< {MIN_COSINE_FP32})", "report this model and the installed torch/onnx versions")
        if config.quantize == "int8":
            files["onnx-int8"] = _quantise(fp32, int8_config, module_dir)
            cosines["onnx-int8"] = _min_cosine(reference, _load_onnx(tmp, files["onnx-int8"]))
            if cosines["onnx-int8"] < MIN_COSINE_INT8:
                log.warning("int8 vectors of %s are far from PyTorch's (cosine %.4f); prefer --backend onnx",
                            source, cosines["onnx-int8"])
        meta = read_meta(tmp)
        meta["onnx"] = _record(module_dir, files, cosines, int8_config if config.quantize else None)
        add_stage(meta, "onnx-export", asdict(config), seconds=round(time.perf_counter() - started, 1))
        command = render_command("kalbert sbert export --backend onnx", config)
        if meta.get("kind") == Kind.SENTENCE_MODEL:  # a kalbert folder: refresh its card too
            write_meta_and_card(tmp, meta, module_names(model), model.get_embedding_dimension(),
                                model.max_seq_length, [source], command)
        else:  # someone else's folder keeps its own README
            write_record(tmp, meta, Kind.SENTENCE_MODEL, [source], command=command)
    return Path(config.out)


def _quantise(fp32: SentenceTransformer, int8_config: str, module_dir: Path) -> str:
    """Write the int8 file for ``int8_config`` and return its path relative to ``module_dir``, as the library
    named it: the one new file in ``onnx/`` (sentence-transformers names it after the preset's weight type,
    ``model_quint8_avx2.onnx`` but ``model_qint8_avx512_vnni.onnx``, and may rename it in another version)."""
    from sentence_transformers.backend import export_dynamic_quantized_onnx_model

    before = set((module_dir / ONNX_DIR).glob("*.onnx"))
    export_dynamic_quantized_onnx_model(fp32, int8_config, str(module_dir))
    written = sorted(set((module_dir / ONNX_DIR).glob("*.onnx")) - before)
    if len(written) != 1:
        raise KalbertError(f"sentence-transformers' int8 export ({int8_config}) wrote {len(written)} new ONNX files "
                           f"in {module_dir / ONNX_DIR}, expected one", "report the installed "
                           "sentence-transformers/optimum versions")
    return f"{ONNX_DIR}/{written[0].name}"


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
