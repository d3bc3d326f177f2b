"""`kalbert vocab normalize`: a vocabulary or model folder as a new version that also reads Traditional Chinese.

The folder is copied whole; every ``spiece.model`` in it gets the new normalizer and every ``tokenizer.json``
the same charsmap, so a plain ``SentenceTransformer(out)`` or ``AutoTokenizer.from_pretrained(out)`` reads
zh-TW/zh-HK text with no OpenCC call. Pieces, ids and weights are the parent's; the record names the parent and
the normalizer version, and the card says what changed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2
from tokenizers import Tokenizer

from kalbert.artifact import Kind, read_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_bytes, atomic_write_text, refuse_existing_output
from kalbert.stage import artifact_folder, write_record
from kalbert.verbs import command_for
from kalbert.vocab.config import VocabNormalizeConfig
from kalbert.vocab.files import SPIECE, load_model_proto, spiece_path
from kalbert.vocab.normalizer import rewrite_tokenizer_json, with_charsmap
from kalbert.vocab.traditional import add_traditional_map, describe_normalizer

TOKENIZER_JSON = "tokenizer.json"
PROBE = "這個說話很難聽"
"""shown before/after on the card: five of its seven characters are <unk> for vocab/ko-zh-48k"""


def _same_vocabulary(protos: dict[Path, sp_pb2.ModelProto]) -> sp_pb2.ModelProto:
    """The folder's one vocabulary; an error when its spiece.model files disagree on pieces or normaliser."""
    (first_path, first), *rest = protos.items()
    for path, proto in rest:
        if (list(proto.pieces) != list(first.pieces)
                or proto.normalizer_spec.precompiled_charsmap != first.normalizer_spec.precompiled_charsmap):
            raise KalbertError(f"{path} and {first_path} are different vocabularies",
                               "normalize one vocabulary's folders at a time")
    return first


def _check_parity(folder: Path, proto: sp_pb2.ModelProto, texts: list[str]) -> None:
    """Prove the rewritten tokenizer.json files tokenise ``texts`` as the new spiece.model does."""
    processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    for path in sorted(folder.rglob(TOKENIZER_JSON)):
        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.no_truncation()
        for text in texts:
            if tokenizer.encode(text, add_special_tokens=False).ids != processor.encode(text):
                raise KalbertError(f"internal error: {path} and {SPIECE} disagree on {text[:40]!r}")


def _pieces(proto: sp_pb2.ModelProto, text: str) -> str:
    processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    return " ".join(processor.id_to_piece(i) for i in processor.encode(text))


def card_section(source: Path, old: sp_pb2.ModelProto, new: sp_pb2.ModelProto, normalizer: dict[str, Any],
                 command: str) -> str:
    """The README section that says this folder is its parent with a new normalizer."""
    known = ("characters it has no piece for" if normalizer["traditional_to_simplified"] == "unknown"
             else "characters, also those it has pieces for (Korean Hanja, whose ids change),")
    return f"""## Normalizer version {normalizer['version']}: Traditional Chinese read as Simplified

This folder is `{source}` with a new normalizer and nothing else changed: the same {len(new.pieces):,} pieces and
ids, the same weights. {normalizer['characters_mapped']:,} Traditional {known} are mapped to their
Simplified form inside `spiece.model` and `tokenizer.json` (OpenCC {normalizer['opencc_version']} character
tables), so zh-TW/zh-HK text needs no conversion before it is tokenised.

| text | pieces before | pieces after |
|---|---|---|
| {PROBE} | {_pieces(old, PROBE)} | {_pieces(new, PROBE)} |

Made with `{command}`.
"""


def _insert_section(card: str, section: str) -> str:
    """``section`` after the card's title (after its YAML front matter when there is no title)."""
    lines = card.splitlines(keepends=True)
    start = 0
    if lines and lines[0].strip() == "---":
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
    title = next((i for i in range(start, len(lines)) if lines[i].startswith("# ")), None)
    at = start if title is None else title + 1
    head, rest = "".join(lines[:at]).rstrip("\n"), "".join(lines[at:]).lstrip("\n")
    return "\n\n".join(part for part in (head, section.rstrip("\n"), rest.rstrip("\n")) if part) + "\n"


def normalize_folder(config: VocabNormalizeConfig, overwrite: bool = False) -> tuple[Path, dict[str, Any]]:
    """Write ``config.folder`` with the Traditional -> Simplified normalizer to ``config.out``; returns the
    folder and its record's ``normalizer`` block."""
    source, out = Path(config.folder), Path(config.out)
    if not source.is_dir():
        raise KalbertError(f"{source} is not a folder", "pass a vocabulary or model folder")
    meta = read_meta(source)
    if not meta.get("kind"):
        raise KalbertError(f"{source} has no kalbert.json saying what it is",
                           "pass a vocabulary or model folder made by kalbert")
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        raise KalbertError(f"--out {out} is inside {source}", "write the new version beside it")
    refuse_existing_output(out, overwrite)
    models = sorted(source.rglob(SPIECE)) or [spiece_path(source)]
    protos = {path: load_model_proto(path) for path in models}
    old = _same_vocabulary(protos)
    new, normalizer = add_traditional_map(old, config.traditional_to_simplified)
    charsmap = new.normalizer_spec.precompiled_charsmap
    normalizer = {"version": (meta.get("normalizer") or {}).get("version", 1) + 1, **normalizer,
                  "parent": str(source)}
    command = command_for(config)
    with artifact_folder(out, Kind(meta["kind"]), overwrite=overwrite) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)
        for path, proto in protos.items():
            atomic_write_bytes(tmp / path.relative_to(source),
                               with_charsmap(proto, charsmap).SerializeToString())
        for path in sorted(tmp.rglob(TOKENIZER_JSON)):
            rewrite_tokenizer_json(path, old.normalizer_spec.precompiled_charsmap, charsmap)
        _check_parity(tmp, new, [PROBE, "배우들의 연기도 좋았다.", "这部电影非常好看。", "臺灣的國語與簡體字"])
        base = meta.get("normalization", "the parent's normalizer")
        record = {**meta, "command": None, "normalizer": normalizer,
                  "normalization": describe_normalizer(base, normalizer)}
        write_record(tmp, record, Kind(meta["kind"]), parents=[source], command=command)
        card = tmp / "README.md"
        section = card_section(source, old, new, normalizer, command)
        atomic_write_text(card, _insert_section(card.read_text(encoding="utf-8"), section) if card.exists()
                          else f"# {out.name}\n\n{section}")
    return out, normalizer
