"""The files of a vocabulary folder: spiece.model/.vocab, HF tokenizer files, normalisation rules.

A vocab folder loads with plain ``AutoTokenizer.from_pretrained(dir)``: the HF tokenizer is an
``AlbertTokenizer`` with ``do_lower_case=False`` and ``keep_accents=True`` (its defaults turn
Hangul into jamo and then ``<unk>``), and ``token_type_ids`` among its outputs for sentence pairs.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

from kalbert.errors import KalbertError
from kalbert.io import atomic_write_bytes, atomic_write_text
from kalbert.text.normalize import space_characters

SPIECE = "spiece.model"
SPECIAL_TOKENS = ("<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]")
"""ALBERT's special pieces, at ids 0..4 in every kalbert vocabulary: the one place these ids are written."""
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = range(len(SPECIAL_TOKENS))
MODEL_MAX_LENGTH = 512


def normalization_rules() -> str:
    """SentencePiece rule TSV: compose decomposed Hangul (NFC) and map exotic spaces to a space.

    Unlike SentencePiece's default ``nmt_nfkc`` this keeps full-width punctuation, so Chinese text
    decodes back to itself.
    """
    rules = []
    for cp in range(0xAC00, 0xD7A4):
        decomposed = unicodedata.normalize("NFD", chr(cp))
        rules.append(" ".join(f"{ord(c):X}" for c in decomposed) + f"\t{cp:X}")
    rules.extend(f"{ord(c):X}\t20" for c in space_characters())
    return "\n".join(rules) + "\n"


def spiece_path(path: str | Path) -> Path:
    """The spiece.model of a vocab/model folder (or the file itself), with a clear error if absent."""
    path = Path(path)
    candidate = path / SPIECE if path.is_dir() else path
    if not candidate.exists():
        if path.is_dir():
            raise KalbertError(
                f"{path} has no {SPIECE}",
                "pass a folder made by `kalbert vocab build` or a kalbert model folder",
            )
        raise KalbertError(f"{path} does not exist", "check the path")
    return candidate


def load_model_proto(path: str | Path) -> sp_pb2.ModelProto:
    """Parse a SentencePiece ModelProto; anything else is a one-line error."""
    file = spiece_path(path)
    proto = sp_pb2.ModelProto()
    try:
        proto.ParseFromString(file.read_bytes())
    except Exception:
        raise KalbertError(f"{file} is not a SentencePiece model", "pass the spiece.model of a vocabulary") from None
    if not proto.pieces:
        raise KalbertError(f"{file} is not a SentencePiece model (no pieces)")
    return proto


def load_processor(path: str | Path) -> spm.SentencePieceProcessor:
    """A SentencePieceProcessor for a vocab folder or a .model file."""
    proto = load_model_proto(path)
    return spm.SentencePieceProcessor(model_proto=proto.SerializeToString())


def write_vocab_files(out_dir: Path, model_bytes: bytes) -> None:
    """Write spiece.model, spiece.vocab and the HF tokenizer files into ``out_dir``."""
    from transformers import AlbertTokenizer

    atomic_write_bytes(out_dir / SPIECE, model_bytes)
    proto = sp_pb2.ModelProto()
    proto.ParseFromString(model_bytes)
    atomic_write_text(out_dir / "spiece.vocab", "".join(f"{p.piece}\t{p.score:g}\n" for p in proto.pieces))
    tokenizer = AlbertTokenizer.from_pretrained(
        str(out_dir),
        do_lower_case=False,
        keep_accents=True,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
        model_max_length=MODEL_MAX_LENGTH,
    )
    tokenizer.save_pretrained(str(out_dir))


def check_special_ids(processor: spm.SentencePieceProcessor) -> None:
    """Raise unless ids 0..4 are <pad> <unk> [CLS] [SEP] [MASK] (the ALBERT layout models expect)."""
    found = tuple(processor.id_to_piece(i) for i in range(min(5, processor.get_piece_size())))
    if found != SPECIAL_TOKENS:
        raise KalbertError(
            f"vocabulary ids 0-4 are {found}, ALBERT needs {SPECIAL_TOKENS}",
            "build the vocabulary with `kalbert vocab build`",
        )
