"""The artifact contract: every folder kalbert writes describes itself in ``kalbert.json``.

The record says what the folder is (:class:`Kind`), which languages it serves, the config that made
it and the command line that ran; the folder's README card is rendered from it, and the folder itself
appears atomically (:func:`kalbert.io.atomic_output_dir`). ``--config FOLDER/kalbert.json`` reruns it.
"""

from __future__ import annotations

import json
import shlex
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any

from kalbert.errors import KalbertError, WrongKind
from kalbert.io import atomic_write_json

META_FILE = "kalbert.json"
MODULES_FILE = "modules.json"
"""What sentence-transformers writes in every folder it saves: the list of the model's modules."""
ST_SETTINGS_FILE = "config_sentence_transformers.json"
"""sentence-transformers' own settings of a folder: its prompts and, since v4, its ``model_type``."""


class Kind(StrEnum):
    """What an artifact folder holds (its ``kind`` in ``kalbert.json``)."""

    VOCAB = "vocab"
    PRETRAINING_DATA = "pretraining-data"
    PRETRAINING_RUN = "pretraining-run"
    PRETRAINED_MODEL = "pretrained-model"
    SENTENCE_MODEL = "sentence-model"
    STATIC_MODEL = "static-model"
    TEACHER = "teacher"
    QA_MODEL = "qa"
    MC_MODEL = "multiple-choice"
    SEARCH_INDEX = "search-index"
    RERANKER = "reranker"


def kind_name(kind: str) -> str:
    """A kind as messages say it: "QA model" for ``qa``, "sentence model" for ``sentence-model``."""
    return {Kind.QA_MODEL: "QA model", Kind.MC_MODEL: "multiple-choice model"}.get(kind, kind.replace("-", " "))


def meta_path(folder: str | Path) -> Path:
    return Path(folder) / META_FILE


def read_meta(folder: str | Path, expect: Kind | tuple[Kind, ...] | None = None) -> dict[str, Any]:
    """The folder's ``kalbert.json``.

    Without ``expect``: ``{}`` when it has none or it is unreadable (a plain HF or SentenceTransformer
    folder). With ``expect``: a one-line error unless the record exists and is of that kind (one of them),
    a :class:`~kalbert.errors.WrongKind`, whose hint the verb layer completes with the verbs that make one.
    """
    path = meta_path(folder)
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        meta = None
    meta = meta if isinstance(meta, dict) else None
    if expect is None:
        return meta or {}
    kinds = (expect,) if isinstance(expect, Kind) else expect
    wanted = " or ".join(kind_name(kind) for kind in kinds)
    if meta is None:
        raise WrongKind(f"{folder} is not a {wanted} folder (no readable {META_FILE})", tuple(kinds))
    if meta.get("kind") not in kinds:
        raise WrongKind(f"{folder} is a {kind_name(str(meta.get('kind', 'unknown')))} folder, not a {wanted} folder",
                        tuple(kinds))
    return meta


def folder_kind(folder: str | Path) -> str | None:
    """What ``folder`` holds: its record's ``kind``, else what its files show for folders made elsewhere (a
    SentenceTransformer folder, a Hugging Face checkpoint by its head, a bare SentencePiece vocabulary); None
    when nothing says."""
    folder = Path(folder)
    kind = read_meta(folder).get("kind")
    if kind:
        return str(kind)
    if _is_cross_encoder(folder):
        return Kind.RERANKER
    if is_sentence_model(folder):
        return Kind.SENTENCE_MODEL
    if (folder / "config.json").is_file():
        try:
            heads = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures") or []
        except (OSError, ValueError, AttributeError):
            heads = []
        heads = " ".join(map(str, heads))
        return (Kind.QA_MODEL if "ForQuestionAnswering" in heads else
                Kind.MC_MODEL if "ForMultipleChoice" in heads else Kind.PRETRAINED_MODEL)
    return Kind.VOCAB if (folder / "spiece.model").is_file() else None


def is_sentence_model(folder: str | Path) -> bool:
    """True for a SentenceTransformer folder, made by kalbert or elsewhere: it has ``modules.json`` and is not a
    CrossEncoder (a reranker, which sentence-transformers saves with a ``modules.json`` too). The one test of
    "is this a sentence-transformers folder" in the kit; :func:`folder_kind` answers "what does it hold"."""
    folder = Path(folder)
    return (folder / MODULES_FILE).is_file() and not _is_cross_encoder(folder)


def _is_cross_encoder(folder: Path) -> bool:
    """A sentence-transformers CrossEncoder folder (a reranker made elsewhere): its modules.json makes it look like
    a sentence model, its config_sentence_transformers.json says otherwise."""
    try:
        settings = json.loads((folder / ST_SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(settings, dict) and settings.get("model_type") == "CrossEncoder"


def write_meta(folder: str | Path, meta: dict[str, Any]) -> None:
    atomic_write_json(meta_path(folder), meta)


def folder_languages(folder: str | Path) -> list[str]:
    """Languages a folder declares: ``kalbert.json`` ``languages`` (or ``language: "ko+zh"``), else the
    README card's ``language:`` front matter (as on Hugging Face model cards); ``[]`` when neither says."""
    meta = read_meta(folder)
    if meta.get("languages"):
        return list(meta["languages"])
    if isinstance(meta.get("language"), str):
        return meta["language"].split("+")
    readme = Path(folder) / "README.md"
    if not readme.is_file():
        return []
    lines = readme.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    found: list[str] = []
    in_list = False
    for line in lines[1:]:
        if line.strip() == "---":
            break
        if line.startswith("language:"):
            value = line.partition(":")[2].strip()
            found += [value] if value else []
            in_list = not value
        elif in_list and line.lstrip().startswith("- "):
            found.append(line.strip()[2:].strip())
        else:
            in_list = False
    return found


def folder_language(folder: str | Path) -> str:
    """The analyzer language of a vocabulary or model folder ("ko", "zh" or "ko+zh"); an error when it
    declares none, since guessing would segment the text with the wrong analyzer."""
    languages = folder_languages(folder)
    if not languages:
        raise KalbertError(f"{folder} declares no languages (no {META_FILE} or card that names them)",
                           "pass a folder made by kalbert vocab build, or give --lang")
    return "+".join(languages)


def invocation() -> str | None:
    """The command line that is running, when it is the ``kalbert`` program (None from the Python API)."""
    program = Path(sys.argv[0]) if sys.argv else Path()
    # `kalbert ...`, `python -m kalbert ...`, `python -m kalbert.cli.main ...`; not `python -m pytest`, even from
    # a checkout folder that is itself called kalbert
    package = Path(__file__).resolve().parent
    if program.name == "kalbert" or program.resolve() in (package / "__main__.py", package / "cli" / "main.py"):
        return shlex.join(["kalbert", *sys.argv[1:]])
    return None
