"""`kalbert vocab build`: a SentencePiece vocabulary trained on morph-segmented text.

Pipeline: stream documents -> paragraphs -> sentences (normalised) -> a seeded sample per
language (temperature-balanced for ``ko+zh``) with a held-out slice for the card's stats ->
segmentation on all cores -> SentencePiece with ``pretokenization_delimiter`` -> a self-describing
folder written atomically.
"""

from __future__ import annotations

import io
import os
import random
import re
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as sp_pb2
from tqdm.auto import tqdm

from kalbert import __version__
from kalbert.artifact import Kind
from kalbert.data import get_spec, iter_documents, list_datasets, resolve_sources
from kalbert.errors import KalbertError
from kalbert.io import refuse_existing_output, sha256_file
from kalbert.stage import artifact_folder, write_record
from kalbert.text.balance import temperature_quotas
from kalbert.text.normalize import normalize_text
from kalbert.text.segment import BOUNDARY, make_segmenter, segment_lines
from kalbert.text.sentences import split_sentences
from kalbert.verbs import command_for
from kalbert.vocab.card import write_vocab_card
from kalbert.vocab.config import VocabBuildConfig
from kalbert.vocab.files import SPECIAL_TOKENS, load_processor, normalization_rules, write_vocab_files
from kalbert.vocab.stats import measure_vocab
from kalbert.vocab.traditional import add_traditional_map, describe_normalizer

LANGUAGES = ("ko", "zh", "ko+zh")
NORMALIZATION = "kalbert-nfc (NFC Hangul composition, exotic spaces -> space; no NFKC)"
_HELDOUT_PER_MILLE = 2


@dataclass
class _Sample:
    """A seeded reservoir sample of sentences plus a held-out slice chosen by hash."""

    size: int
    heldout_size: int
    rng: random.Random
    seen: int = 0
    train: list[str] = field(default_factory=list)
    heldout: list[str] = field(default_factory=list)
    heldout_seen: int = 0

    def add(self, sentence: str) -> None:
        if zlib.crc32(sentence.encode("utf-8")) % 1000 < _HELDOUT_PER_MILLE:
            self.heldout_seen += 1
            _reservoir(self.heldout, self.heldout_size, self.heldout_seen, sentence, self.rng)
        else:
            self.seen += 1
            _reservoir(self.train, self.size, self.seen, sentence, self.rng)


def _reservoir(items: list[str], size: int, seen: int, item: str, rng: random.Random) -> None:
    if len(items) < size:
        items.append(item)
    else:
        slot = rng.randrange(seen)
        if slot < size:
            items[slot] = item


def _source_language(source: str, path: Path, lang: str) -> str:
    """The language of one input: the registry's for a data-set name, else guessed from its script."""
    if lang != "ko+zh":
        return lang
    if source in list_datasets() and get_spec(source).lang in ("ko", "zh"):
        return get_spec(source).lang
    hangul = han = 0
    for document in iter_documents([str(path)]):
        text = " ".join(document)
        hangul += sum(1 for c in text if "\uac00" <= c <= "\ud7a3")
        han += sum(1 for c in text if "\u4e00" <= c <= "\u9fff")
        if hangul + han > 20000:
            break
    return "ko" if hangul >= han else "zh"


def _sentences(sources: Iterable[str], min_chars: int) -> Iterable[str]:
    for document in iter_documents(list(sources)):
        for paragraph in document:
            for sentence in split_sentences(normalize_text(paragraph)):
                if len(sentence) >= min_chars:
                    yield sentence


def sample_corpus(config: VocabBuildConfig) -> tuple[dict[str, list[str]], dict[str, list[str]], dict[str, int]]:
    """Train sentences and held-out sentences per language, and how many sentences each language had."""
    by_lang: dict[str, list[str]] = {}
    for source in config.inputs:
        paths = resolve_sources([source])
        by_lang.setdefault(_source_language(source, paths[0], config.lang), []).extend(str(p) for p in paths)
    train: dict[str, list[str]] = {}
    heldout: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    for lang, paths in sorted(by_lang.items()):
        sample = _Sample(config.max_sentences, config.heldout_sentences, random.Random(f"{config.seed}-{lang}"))
        for sentence in tqdm(_sentences(paths, config.min_chars), desc=f"reading {lang}", unit=" sent", mininterval=2):
            sample.add(sentence)
        if not sample.train:
            raise KalbertError(
                f"no {lang} sentences of at least {config.min_chars} characters in {', '.join(paths)}",
                "check that the input holds text in that language",
            )
        train[lang], heldout[lang], counts[lang] = sample.train, sample.heldout, sample.seen
    if len(train) > 1:
        train = _balance(train, counts, config)
    return train, heldout, counts


def _balance(train: dict[str, list[str]], counts: dict[str, int], config: VocabBuildConfig) -> dict[str, list[str]]:
    """Temperature sampling: keep n_l ** (1/T) / sum(n ** (1/T)) of the budget for language l."""
    total = min(config.max_sentences, sum(len(v) for v in train.values()))
    quotas = temperature_quotas(counts, total, config.lang_temperature)
    return {lang: random.Random(f"{config.seed}-balance-{lang}").sample(sentences, min(quotas[lang], len(sentences)))
            for lang, sentences in train.items()}


def required_characters(languages: list[str], sentences: list[str]) -> str:
    """Characters that get a piece whatever ``character_coverage`` says, so they never become <unk>.

    Korean: the 2,350 KS X 1001 syllables plus every Hangul syllable in the training sample.
    Chinese: the 6,763 GB 2312 hanzi.
    """
    required: set[str] = set()
    if "ko" in languages:
        required.update(c for c in map(chr, range(0xAC00, 0xD7A4)) if len(c.encode("euc_kr", "ignore")) == 2)
        required.update(c for c in set().union(*map(set, sentences)) if "\uac00" <= c <= "\ud7a3")
    if "zh" in languages:
        required.update(c for c in map(chr, range(0x4E00, 0xA000)) if len(c.encode("gb2312", "ignore")) == 2)
    return "".join(sorted(required))


def _train_sentencepiece(sentences: list[str], config: VocabBuildConfig) -> bytes:
    model = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.tsv"
        rules.write_text(normalization_rules(), encoding="utf-8")
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(sentences),
                model_writer=model,
                vocab_size=config.vocab_size,
                model_type=config.model_type,
                character_coverage=config.character_coverage,
                required_chars=required_characters(config.lang.split("+"), sentences),
                pretokenization_delimiter=BOUNDARY,
                normalization_rule_tsv=str(rules),
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=list(SPECIAL_TOKENS[2:]),
                max_sentencepiece_length=config.max_piece_length,
                max_sentence_length=1 << 14,
                input_sentence_size=0,
                num_threads=os.cpu_count() or 1,
                train_extremely_large_corpus=len(sentences) > 5_000_000,
                minloglevel=2,
            )
        except RuntimeError as exc:
            raise _training_error(str(exc), config) from None
    return model.getvalue()


def _training_error(message: str, config: VocabBuildConfig) -> KalbertError:
    """Turn SentencePiece's CHECK failures into one line that says what to change."""
    message = message.strip().splitlines()[-1]
    if match := re.search(r"smaller than required_chars\. \d+ vs (\d+)", message):
        return KalbertError(
            f"--vocab-size {config.vocab_size} is below the {match.group(1)} characters the text needs "
            f"at --character-coverage {config.character_coverage}",
            "raise --vocab-size or lower --character-coverage",
        )
    if match := re.search(r"Vocabulary size (?:is )?too high \((\d+)\).*<= (\d+)", message):
        return KalbertError(
            f"the text is too small for --vocab-size {config.vocab_size}: at most {match.group(2)} pieces",
            "lower --vocab-size or add more text",
        )
    return KalbertError(f"SentencePiece training failed: {message}")


def _add_traditional(model_bytes: bytes, config: VocabBuildConfig) -> tuple[bytes, dict]:
    """The trained model with the Traditional map in its normalizer: normalizer version 2 (1 is kalbert-nfc),
    the pieces and charsmap that `kalbert vocab normalize` gives the folder built without it."""
    proto = sp_pb2.ModelProto()
    proto.ParseFromString(model_bytes)
    proto, normalizer = add_traditional_map(proto, config.traditional_to_simplified)
    return proto.SerializeToString(), {"version": 2, **normalizer, "parent": None}


def _file_fingerprint(path: Path) -> dict[str, object]:
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def build_vocab(config: VocabBuildConfig, overwrite: bool = False) -> Path:
    """Build the vocabulary described by ``config``; returns the output folder."""
    if config.lang not in LANGUAGES:
        raise KalbertError(f"unknown language {config.lang!r}", f"use one of {', '.join(LANGUAGES)}")
    if config.model_type not in ("unigram", "bpe"):
        raise KalbertError(f"unknown model type {config.model_type!r}", "use unigram or bpe")
    if config.vocab_size <= len(SPECIAL_TOKENS):
        raise KalbertError(f"--vocab-size {config.vocab_size} is too small", "use at least a few hundred")
    if config.traditional_to_simplified != "off" and "zh" not in config.lang:
        raise KalbertError(f"--traditional-to-simplified needs Simplified pieces to map to; --lang {config.lang} "
                           "has none", "use --lang zh or ko+zh")
    out = Path(config.out)
    refuse_existing_output(out, overwrite)
    segmenter = make_segmenter(config.lang, config.segmenter)
    started = time.time()
    train, heldout, counts = sample_corpus(config)
    sentences = [s for lang in sorted(train) for s in train[lang]]
    random.Random(config.seed).shuffle(sentences)
    segmented = list(
        tqdm(
            segment_lines(sentences, segmenter, processes=config.processes or None),
            total=len(sentences),
            desc=f"segmenting ({segmenter.name})",
            unit=" sent",
            mininterval=2,
        )
    )
    segment_seconds = time.time() - started
    tqdm.write(f"training SentencePiece {config.model_type} ({config.vocab_size} pieces) on {len(segmented):,} "
               "sentences; this takes a few minutes for 1M sentences", file=sys.stderr)
    model_bytes = _train_sentencepiece(segmented, config)
    normalizer = None
    if config.traditional_to_simplified != "off":
        model_bytes, normalizer = _add_traditional(model_bytes, config)
    build_seconds = time.time() - started
    with artifact_folder(out, Kind.VOCAB, overwrite=overwrite) as tmp:
        write_vocab_files(tmp, model_bytes)
        processor = load_processor(tmp)
        analyzer = make_segmenter(config.lang)
        stats = {lang: measure_vocab(processor, held, analyzer).as_dict() for lang, held in sorted(heldout.items())}
        metadata = {
            "kalbert_version": __version__,
            "kind": Kind.VOCAB,
            "languages": config.lang.split("+"),
            "segmenter": segmenter.name,
            "segmenter_versions": segmenter.versions(),
            "sentencepiece_version": spm.__version__,
            "normalization": describe_normalizer(NORMALIZATION, normalizer) if normalizer else NORMALIZATION,
            **({"normalizer": normalizer} if normalizer else {}),
            "pretokenization_delimiter": BOUNDARY,
            "vocab_size": processor.get_piece_size(),
            "special_tokens": list(SPECIAL_TOKENS),
            "config": asdict(config),
            "inputs": [_file_fingerprint(p) for source in config.inputs for p in resolve_sources([source])],
            "sentences_available": counts,
            "sentences_trained": {lang: len(v) for lang, v in train.items()},
            "heldout_stats": stats,
            "build_seconds": round(build_seconds, 1),
            "read_and_segment_seconds": round(segment_seconds, 1),
        }
        metadata = write_record(tmp, metadata, Kind.VOCAB, command=command_for(config))
        write_vocab_card(tmp, metadata)
    return out
