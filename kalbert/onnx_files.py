"""ONNX files of a SentenceTransformer's Transformer module: export, int8 quantisation and loading.

The primitives that sentence models (:mod:`kalbert.sentence.backends`, which adds the checks and records
of a served folder) and teachers (:mod:`kalbert.teachers.fastest`, which runs a teacher from a private
copy) share; they know nothing of either.
"""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from kalbert import hardware
from kalbert.artifact import MODULES_FILE
from kalbert.errors import KalbertError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder, SentenceTransformer

ONNX_DIR = "onnx"
FP32_FILE = f"{ONNX_DIR}/model.onnx"
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
        modules = json.loads((folder / MODULES_FILE).read_text(encoding="utf-8"))
        path = next(m["path"] for m in modules if m["type"].endswith(".Transformer"))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, StopIteration):
        raise KalbertError(f"{folder}/{MODULES_FILE} names no Transformer module",
                           "ONNX export needs a SentenceTransformer folder with a Transformer module") from None
    return folder / path


def export_fp32_file(model: SentenceTransformer | CrossEncoder, target: Path, output: str = "last_hidden_state"
                     ) -> None:
    """``torch.onnx.export`` of the Transformer module with dynamic batch and sequence axes, named the way
    optimum's ORTModelForFeatureExtraction reads it (tokenizer input names in, ``last_hidden_state`` out), or with
    ``output="logits"`` a CrossEncoder's classifier as ORTModelForSequenceClassification reads it.

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
        torch.onnx.export(network, (), str(target), kwargs=inputs, output_names=[output],
                          dynamic_shapes={name: {0: batch, 1: sequence} for name in inputs}, dynamo=True,
                          external_data=False, verbose=False)


def load_onnx_model(folder: Path, file_name: str) -> SentenceTransformer:
    """The sentence model of ``folder`` run by onnxruntime from ``file_name`` (relative to its Transformer module;
    no weights needed), with the folder's tokenizer, pooling and prompts."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", backend="onnx", local_files_only=True,
                               model_kwargs={"file_name": file_name})


def quantise_int8_file(fp32: SentenceTransformer, int8_config: str, module_dir: Path) -> str:
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
