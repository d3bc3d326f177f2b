"""A vocabulary's normalizer as bytes: SentencePiece's precompiled charsmap, in spiece.model and tokenizer.json.

The charsmap is the only thing that changes when a vocabulary learns to read new characters: pieces, scores
and ids stay, so every model on the vocabulary keeps working. SentencePiece decompiles a charsmap into its
rules and compiles rules back (byte-identical for an unchanged map), so new rules compose with whatever the
vocabulary normalises today (kalbert-nfc, or nmt_nfkc for a foreign one). The HF fast tokenizer reads the same
bytes in its ``Precompiled`` normalizer, so both tokenizers stay in step.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

from kalbert.errors import KalbertError


def alphabet(proto: sp_pb2.ModelProto) -> set[str]:
    """Every character that occurs in a normal or user-defined piece: what the vocabulary can read."""
    kinds = (sp_pb2.ModelProto.SentencePiece.NORMAL, sp_pb2.ModelProto.SentencePiece.USER_DEFINED)
    return {char for piece in proto.pieces if piece.type in kinds for char in piece.piece}


def charsmap_sha256(charsmap: bytes) -> str:
    return hashlib.sha256(charsmap).hexdigest()


def compose_charsmap(proto: sp_pb2.ModelProto, mapping: dict[str, str]) -> bytes:
    """``proto``'s charsmap followed by the one-character ``mapping``: old rules' outputs are mapped too, and a
    character gets a new rule unless an old rule already rewrites it."""
    spm.set_min_log_level(2)  # the builder logs each compile at INFO
    rules = spm.SentencePieceNormalizer(model_proto=proto.SerializeToString()).Decompile()
    sources = {source for source, _ in rules}
    composed = [(source, "".join(mapping.get(c, c) for c in target)) for source, target in rules]
    composed += [(char, simplified) for char, simplified in sorted(mapping.items()) if char not in sources]
    spec = sp_pb2.NormalizerSpec()
    spec.ParseFromString(spm.SentencePieceNormalizer(norm_map=composed).serialized_normalizer_spec())
    return spec.precompiled_charsmap


def with_charsmap(proto: sp_pb2.ModelProto, charsmap: bytes) -> sp_pb2.ModelProto:
    """A copy of ``proto`` with a new charsmap and everything else (pieces, flags) as it was."""
    new = sp_pb2.ModelProto()
    new.CopyFrom(proto)
    new.normalizer_spec.precompiled_charsmap = charsmap
    return new


def _precompiled_nodes(node: Any) -> list[dict]:
    if isinstance(node, dict):
        found = [node] if node.get("type") == "Precompiled" else []
        return found + [n for child in node.get("normalizers") or [] for n in _precompiled_nodes(child)]
    return []


def rewrite_tokenizer_json(path: Path, old: bytes, new: bytes) -> None:
    """Swap ``old`` for ``new`` in the ``Precompiled`` normalizer of ``path``; refuse a tokenizer.json whose
    charsmap is not ``old`` (it was not made from this spiece.model, and rewriting it would hide that)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    nodes = _precompiled_nodes(data.get("normalizer"))
    if not nodes:
        raise KalbertError(f"{path} has no SentencePiece (Precompiled) normalizer",
                           "pass a folder whose tokenizer.json was made from its spiece.model")
    for node in nodes:
        if base64.b64decode(node["precompiled_charsmap"] or "") != old:
            raise KalbertError(f"{path} normalises differently from the spiece.model beside it",
                               "rebuild the folder's tokenizer files from one vocabulary")
        node["precompiled_charsmap"] = base64.b64encode(new).decode("ascii")
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
