"""Morph-aware vs plain SentencePiece: fertility, UNK rate and morpheme-boundary crossing.

    python benchmarks/vocab_comparison.py vocab/ko-32k:korsts:dev vocab/zh-32k:stsb-zh:dev

For each shipped vocabulary, builds its plain twin (same inputs and settings, `--segmenter none`)
under outputs/vocab-plain/ unless it exists, then measures both on the sentences of the named
evaluation split (measured only: no vocabulary is built on it). Writes
benchmarks/results/vocab_comparison.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

from kalbert.vocab import VocabBuildConfig, build_vocab
from kalbert.vocab.inspect import compare_vocabs

HERE = Path(__file__).parent
PLAIN_ROOT = Path("outputs/vocab-plain")


def plain_twin(vocab: Path) -> Path:
    """The `--segmenter none` build of ``vocab``'s recorded config (built once, then reused)."""
    config = json.loads((vocab / "kalbert.json").read_text(encoding="utf-8"))["config"]
    known = {f.name for f in fields(VocabBuildConfig)}
    plain = VocabBuildConfig(**{k: v for k, v in config.items() if k in known})
    plain.segmenter = "none"
    plain.out = str(PLAIN_ROOT / vocab.name)
    if not (Path(plain.out) / "kalbert.json").exists():
        build_vocab(plain, overwrite=True)
    return Path(plain.out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", nargs="+", help="VOCAB_DIR:DATASET:SPLIT")
    args = parser.parse_args()
    rows = []
    for pair in args.pairs:
        folder, source = pair.split(":", 1)
        vocab = Path(folder)
        lang = "+".join(json.loads((vocab / "kalbert.json").read_text(encoding="utf-8"))["languages"])
        folders = {"morph-aware": str(vocab), "plain": str(plain_twin(vocab))}
        for kind, stats in compare_vocabs(folders, source, lang).items():
            rows.append({"vocab": folders[kind], "kind": kind, "eval": source, **stats})
    command = "python " + " ".join(sys.argv)
    (HERE / "vocab_comparison.json").write_text(
        json.dumps({"command": command, "rows": rows}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    table = [
        "| vocabulary | kind | eval sentences | UNK rate | pieces/word | pieces/char | boundary crossing "
        "| round-trip failures |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        table.append(
            f"| `{r['vocab']}` | {r['kind']} | {r['eval']} ({r['sentences']}) | {100 * r['unk_rate']:.3f}% "
            f"| {r['pieces_per_word']:.3f} | {r['pieces_per_char']:.3f} | {100 * r['boundary_crossing']:.2f}% "
            f"| {r['roundtrip_failures']} |"
        )
    markdown = f"""# Morph-aware vs plain SentencePiece vocabularies

Command: `{command}`. Evaluation sentences are the unique sentences of the named split; the
vocabularies were built on the pretraining corpora only. Boundary crossing: share of pieces that
straddle a mecab-ko (Korean) or jieba (Chinese) boundary inside a whitespace word.

{chr(10).join(table)}
"""
    (HERE / "vocab_comparison.md").write_text(markdown, encoding="utf-8")
    print(markdown)


if __name__ == "__main__":
    main()
