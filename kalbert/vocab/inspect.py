"""`kalbert vocab inspect`: pieces of given text and measured stats on evaluation sources."""

from __future__ import annotations

from pathlib import Path

from kalbert.artifact import folder_language
from kalbert.errors import KalbertError
from kalbert.io import open_text
from kalbert.text.segment import make_segmenter
from kalbert.vocab.files import load_processor
from kalbert.vocab.stats import measure_vocab


def eval_sentences(source: str, limit: int) -> list[str]:
    """Sentences of an STS set reference (``korsts:dev``) or of a text file (one per line)."""
    from kalbert.data import load_sts, parse_ref

    if Path(source).is_file():
        sentences = [line.strip() for line in open_text(source) if line.strip()]
    else:
        name, split = parse_ref(source)
        pairs = load_sts(name, split or "dev")
        sentences = list(dict.fromkeys(s for p in pairs for s in (p.sentence1, p.sentence2)))
    if not sentences:
        raise KalbertError(f"{source} holds no sentences")
    return sentences[:limit]


def inspect_vocab(vocab: str, texts: list[str], sources: list[str], lang: str | None = None,
                  max_rows: int = 5000) -> dict:
    processor = load_processor(vocab)
    segmenter = make_segmenter(lang or folder_language(vocab))
    report: dict = {"vocab": vocab, "vocab_size": processor.get_piece_size(), "texts": [], "eval": {}}
    for text in texts:
        report["texts"].append(
            {"text": text, "pieces": processor.encode(text, out_type=str), "ids": processor.encode(text)}
        )
    for source in sources:
        report["eval"][source] = measure_vocab(processor, eval_sentences(source, max_rows), segmenter).as_dict()
    return report


def compare_vocabs(folders: dict[str, str], source: str, lang: str, limit: int = 100_000) -> dict[str, dict]:
    """Stats of several vocabularies on the same evaluation sentences, analysed with the same segmenter."""
    sentences = eval_sentences(source, limit)
    segmenter = make_segmenter(lang)
    return {
        name: measure_vocab(load_processor(folder), sentences, segmenter).as_dict() for name, folder in folders.items()
    }
