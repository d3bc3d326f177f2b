"""`kalbert vocab extend`: append pieces to a SentencePiece model without moving any old id.

New pieces go into the ModelProto as NORMAL unigram pieces (never ``tokenizer.add_tokens``, whose
greedy matching splits neighbouring words). Each new piece gets the score of its old best
segmentation plus a margin, so that Viterbi prefers it exactly where the old model split it.
:func:`grow_embeddings` then grows a model's embedding matrix, each new row the mean of the
embeddings of the pieces the *old* vocabulary split the new piece into.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

from kalbert.artifact import Kind, read_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, open_text
from kalbert.stage import artifact_folder, write_record
from kalbert.text.normalize import normalize_text
from kalbert.text.segment import make_segmenter
from kalbert.verbs import command_for
from kalbert.vocab.config import VocabExtendConfig
from kalbert.vocab.files import load_model_proto, load_processor, write_vocab_files

SCORE_MARGIN = 1.0
_WORD_START = "\u2581"


@dataclass
class Extension:
    added: list[str]
    skipped_present: list[str]
    before: dict[str, list[str]]
    after: dict[str, list[str]]


def _read_words(path: str) -> list[str]:
    words = [normalize_text(line) for line in open_text(path)]
    words = [w for w in words if w and not w.startswith("#")]
    if not words:
        raise KalbertError(f"{path} holds no words", "write one word per line")
    bad = [w for w in words if " " in w]
    if bad:
        raise KalbertError(f"{path}: entries must be single words without spaces, e.g. {bad[0]!r}")
    return words


def mine_corpus_words(config: VocabExtendConfig, processor: spm.SentencePieceProcessor) -> list[str]:
    """Frequent word-initial analyzer units that the old vocabulary splits into several pieces."""
    from kalbert.data import iter_documents

    segmenter = make_segmenter(config.lang)
    counts: Counter[str] = Counter()
    sentences = 0
    batch: list[str] = []
    for document in iter_documents(config.from_corpus or []):
        batch.extend(normalize_text(p) for p in document)
        if len(batch) >= 2000 or sentences + len(batch) >= config.max_corpus_sentences:
            for words in segmenter.split_words(batch):
                counts.update(pieces[0] for pieces in words if len(pieces[0]) >= 2 and pieces[0][0].isalpha())
            sentences += len(batch)
            batch = []
        if sentences >= config.max_corpus_sentences:
            break
    for words in segmenter.split_words(batch):
        counts.update(pieces[0] for pieces in words if len(pieces[0]) >= 2 and pieces[0][0].isalpha())
    ranked = []
    for word, count in counts.items():
        if count < config.min_count:
            continue
        pieces = len(processor.encode(word, out_type=str))
        if pieces >= 2:
            ranked.append((count * (pieces - 1), word))
    ranked.sort(reverse=True)
    return [word for _, word in ranked[: config.max_new]]


def append_pieces(proto: sp_pb2.ModelProto, words: list[str]) -> Extension:
    """Append ``▁word`` pieces to ``proto`` in place; words already single pieces are skipped."""
    if proto.trainer_spec.model_type != sp_pb2.TrainerSpec.UNIGRAM:
        raise KalbertError("only unigram vocabularies can be extended", "build the base with --model-type unigram")
    old = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    existing = {p.piece for p in proto.pieces}
    added, present = [], []
    before: dict[str, list[str]] = {}
    for word in dict.fromkeys(words):
        piece = _WORD_START + word
        if piece in existing:
            present.append(word)
            continue
        pieces = old.encode(word, out_type=str)
        ids = old.encode(word)
        before[word] = pieces
        new = proto.pieces.add()
        new.piece = piece
        new.type = sp_pb2.ModelProto.SentencePiece.NORMAL
        new.score = sum(old.get_score(i) for i in ids) + SCORE_MARGIN
        existing.add(piece)
        added.append(word)
    new_processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    after = {word: new_processor.encode(word, out_type=str) for word in added}
    return Extension(added=added, skipped_present=present, before=before, after=after)


def extend_vocab(config: VocabExtendConfig, overwrite: bool = False) -> tuple[Path, Extension]:
    """Write an extended copy of ``config.base`` to ``config.out``."""
    if not config.words and not config.from_corpus:
        raise KalbertError("nothing to add", "pass --words FILE or --from-corpus FILES")
    if config.words and config.from_corpus:
        raise KalbertError("--words and --from-corpus cannot be combined", "pass one of them")
    proto = load_model_proto(config.base)
    processor = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    words = _read_words(config.words) if config.words else mine_corpus_words(config, processor)
    words = words[: config.max_new]
    old_size = len(proto.pieces)
    extension = append_pieces(proto, words)
    if not extension.added:
        raise KalbertError(
            f"all {len(extension.skipped_present)} words are already pieces of {config.base}; nothing to add"
        )
    base = Path(config.base)
    meta = read_meta(base)
    with artifact_folder(config.out, Kind.VOCAB, overwrite=overwrite) as tmp:
        write_vocab_files(tmp, proto.SerializeToString())
        new_processor = load_processor(tmp)
        moved = [i for i in range(old_size) if new_processor.id_to_piece(i) != processor.id_to_piece(i)]
        if moved:
            raise KalbertError(f"internal error: ids {moved[:5]} moved while extending")
        meta.update(
            vocab_size=new_processor.get_piece_size(),
            extended_from={"base": str(base), "base_vocab_size": old_size, "config": asdict(config)},
            added_pieces=[_WORD_START + w for w in extension.added],
        )
        write_record(tmp, {**meta, "command": None}, Kind.VOCAB, parents=[base],
                     command=command_for(config))
        base_card = base / "README.md"
        if base_card.exists():
            shutil.copyfile(base_card, tmp / "BASE_README.md")
        atomic_write_text(tmp / "README.md", extension_card(config, extension, old_size))
    return Path(config.out), extension


def extension_card(config: VocabExtendConfig, extension: Extension, old_size: int) -> str:
    rows = "\n".join(
        f"| {w} | {' '.join(extension.before[w])} | {' '.join(extension.after[w])} |" for w in extension.added[:50]
    )
    more = f"\n({len(extension.added) - 50} more in kalbert.json)" if len(extension.added) > 50 else ""
    source = f"`--words {config.words}`" if config.words else f"`--from-corpus {' '.join(config.from_corpus or [])}`"
    return f"""# Extended kalbert vocabulary

`{config.base}` ({old_size:,} pieces) extended with {len(extension.added):,} pieces from {source};
ids 0-{old_size - 1} are unchanged, new ids start at {old_size}. The base card is `BASE_README.md`.
Grow a model to match with `kalbert.vocab.grow_embeddings` (new rows: mean of the old sub-piece embeddings).

| word | before | after |
|---|---|---|
{rows}{more}
"""


def grow_embeddings(model, old_vocab: str | Path, new_vocab: str | Path) -> int:
    """Resize ``model``'s input embeddings to ``new_vocab``; new rows are old sub-piece means.

    Returns the number of rows added. The model's vocabulary must match ``old_vocab``.
    """
    import torch

    old = load_processor(old_vocab)
    new = load_processor(new_vocab)
    old_size, new_size = old.get_piece_size(), new.get_piece_size()
    embeddings = model.get_input_embeddings()
    if embeddings.weight.shape[0] != old_size:
        raise KalbertError(
            f"the model has {embeddings.weight.shape[0]} embedding rows but {old_vocab} has {old_size} pieces",
            "pass the vocabulary the model was trained with as the old vocabulary",
        )
    if any(new.id_to_piece(i) != old.id_to_piece(i) for i in range(old_size)):
        raise KalbertError(f"{new_vocab} is not an extension of {old_vocab}: old ids moved")
    model.resize_token_embeddings(new_size, mean_resizing=False)
    weight = model.get_input_embeddings().weight
    word_start = old.piece_to_id(_WORD_START)
    with torch.no_grad():
        for new_id in range(old_size, new_size):
            text = new.id_to_piece(new_id).replace(_WORD_START, " ")
            ids = [i for i in old.encode(text) if i != word_start] or old.encode(text)
            weight[new_id] = weight[ids].mean(dim=0)
    model.config.vocab_size = new_size
    return new_size - old_size
