"""The sentence model behind an index: refused unless it is one, and identified so that queries are encoded
by the model and prompt that encoded the passages.

A model's identity is the SHA-256 of its weight files (:func:`kalbert.weights.weights_sha256`, what results
files record), so a copied or moved folder is the same model, a retrained one is not, and one whose
``kalbert.json`` was rewritten (an ONNX export into it) still is. Indexes built before recorded the hash of the
``kalbert.json`` instead (:func:`kalbert.stage.parent`); they are still checked that way. Prompts come from
``config_sentence_transformers.json``: ``passage`` (or ``document``) for passages, ``query`` for queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kalbert.artifact import META_FILE, MODULES_FILE, Kind, is_sentence_model, read_meta
from kalbert.errors import KalbertError
from kalbert.stage import parent
from kalbert.weights import check_weight_files, weights_sha256

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

SENTENCE_KINDS = (Kind.SENTENCE_MODEL, Kind.STATIC_MODEL)
PASSAGE_PROMPTS = ("passage", "document")
QUERY_PROMPT = "query"


def check_model(folder: str | Path) -> dict[str, Any]:
    """The identity of a sentence-model folder (path, kind, record hash, weights hashes); a one-line error for
    anything else, such as a QA model or damaged weights, checked before the model loads."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise KalbertError(f"model folder {path} not found", "pass a sentence-model folder with --model")
    if read_meta(path):
        read_meta(path, expect=SENTENCE_KINDS)
    elif not is_sentence_model(path):
        raise KalbertError(f"{path} is not a sentence model (no {META_FILE} or {MODULES_FILE})",
                           "make one with `kalbert sbert export|train|distill` or `kalbert static distill|train`")
    check_weight_files(path)
    identity = parent(path)
    identity["path"] = str(path.resolve())
    identity["weights_sha256"] = weights_sha256(path)
    return identity


def model_hash(identity: dict[str, Any]) -> Any:
    """What tells two models apart: their weights' hashes (their record's where a folder holds no
    ``*.safetensors``, or an index recorded none)."""
    return identity.get("weights_sha256") or identity.get("sha256")


@dataclass(frozen=True)
class Prompts:
    """Prompt names and texts a model defines for each side ("" and None where it defines none)."""

    passage_name: str | None
    passage: str
    query_name: str | None
    query: str


def model_prompts(model: SentenceTransformer) -> Prompts:
    prompts = dict(getattr(model, "prompts", None) or {})
    passage_name = next((name for name in PASSAGE_PROMPTS if name in prompts), None)
    query_name = QUERY_PROMPT if QUERY_PROMPT in prompts else None
    return Prompts(passage_name, prompts.get(passage_name or "", ""), query_name, prompts.get(QUERY_PROMPT, ""))


def check_identity(record: dict[str, Any], identity: dict[str, Any]) -> None:
    """Refuse a query model other than the one that encoded the index, before it loads."""
    built = record["model"]
    if "weights_sha256" not in built:  # built before indexes recorded the weights: its record's hash is all
        if identity.get("sha256") != built.get("sha256"):
            raise KalbertError(f"the index names its model {built['path']} by the hash of its {built.get('file')}, "
                               f"which {identity['path']} does not match (another model, or the same one with a "
                               "rewritten record)", "rebuild the index, which then names the model by its weights: "
                               "kalbert search build --config INDEX/kalbert.json --overwrite")
        return
    if model_hash(identity) != model_hash(built):
        raise KalbertError(f"the index was built with {built['path']}, not {identity['path']} (another model)",
                           "query with the model that built it, or rebuild the index with this one")


def check_query_side(record: dict[str, Any], model: SentenceTransformer) -> None:
    """Refuse query vectors of another size or prompt than the index's, before encoding."""
    dim = model.get_embedding_dimension()
    if dim != record["dim"]:
        raise KalbertError(f"the query model gives {dim}-d vectors, the index holds {record['dim']}-d ones",
                           "query with the model that built the index")
    query = model_prompts(model).query
    if query != record["prompts"]["query"]:
        raise KalbertError(f"the query prompt {query!r} is not the index's {record['prompts']['query']!r}",
                           "query with the model (and prompts) that built the index")
