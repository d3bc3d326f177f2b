"""`kalbert vocab build|extend|normalize|inspect`."""

from __future__ import annotations

import argparse
import json

from kalbert.artifact import read_meta
from kalbert.cli.common import add_noun, add_overwrite, add_verb, config_from_args, positive_int

HELP = "build, extend, normalize and inspect SentencePiece vocabularies"


def register(nouns) -> None:
    verbs = add_noun(nouns, "vocab", HELP, "kalbert vocab build --lang ko --inputs kowiki nsmc --out vocab/ko-32k\n"
                     "  kalbert vocab inspect vocab/ko-32k \"배우들의 연기도 좋았다\"")
    add_overwrite(add_verb(verbs, "vocab build", _build))
    add_overwrite(add_verb(verbs, "vocab extend", _extend))
    add_overwrite(add_verb(verbs, "vocab normalize", _normalize))
    inspect = add_verb(verbs, "vocab inspect", _inspect)
    inspect.add_argument("vocab", help="vocabulary or model folder")
    inspect.add_argument("text", nargs="*", help="sentences to show as pieces")
    inspect.add_argument("--eval", nargs="+", default=[], metavar="SOURCE",
                         help="text files (a sentence per line) or STS sets like korsts:dev, stsb-zh:dev")
    inspect.add_argument("--lang", choices=["ko", "zh", "ko+zh"],
                         help="analyzer for boundary checks (default: the vocab's languages)")
    inspect.add_argument("--max-rows", type=positive_int, default=5000, help="evaluation sentences per source")
    inspect.add_argument("--json", action="store_true", help="print JSON")


def _build(args: argparse.Namespace) -> int:
    from kalbert.vocab import build_vocab

    out = build_vocab(config_from_args(args), overwrite=args.overwrite)
    meta = read_meta(out)
    print(f"vocabulary: {out} ({meta['vocab_size']} pieces, {meta['build_seconds']:.0f} s)")
    for lang, stats in meta["heldout_stats"].items():
        print(f"  held-out {lang}: UNK {100 * stats['unk_rate']:.3f}%, {stats['pieces_per_word']:.2f} pieces/word, "
              f"{stats['pieces_per_char']:.2f} pieces/char")
    return 0


def _extend(args: argparse.Namespace) -> int:
    from kalbert.vocab import extend_vocab

    out, extension = extend_vocab(config_from_args(args), overwrite=args.overwrite)
    if extension.skipped_present:
        shown = ", ".join(extension.skipped_present[:10])
        print(f"note: {len(extension.skipped_present)} words were already pieces and were skipped: {shown}")
    print(f"added {len(extension.added)} pieces -> {out}")
    for word in extension.added[:20]:
        print(f"  {word}: {' '.join(extension.before[word])}  ->  {' '.join(extension.after[word])}")
    return 0


def _normalize(args: argparse.Namespace) -> int:
    from kalbert.vocab.normalize import normalize_folder

    out, normalizer = normalize_folder(config_from_args(args), overwrite=args.overwrite)
    print(f"normalizer version {normalizer['version']}: {normalizer['characters_mapped']:,} Traditional characters "
          f"read as Simplified (scope {normalizer['traditional_to_simplified']}) -> {out}")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from kalbert.errors import KalbertError
    from kalbert.vocab.inspect import inspect_vocab

    if not args.text and not args.eval:
        raise KalbertError("nothing to inspect", f'give sentences (kalbert vocab inspect {args.vocab} "TEXT") or '
                           "--eval SOURCE")

    report = inspect_vocab(args.vocab, args.text, args.eval, lang=args.lang, max_rows=args.max_rows)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    for item in report["texts"]:
        print(item["text"])
        print("  pieces:", " ".join(item["pieces"]))
        print("  ids:   ", " ".join(map(str, item["ids"])))
    for source, stats in report["eval"].items():
        crossing = "n/a" if stats["boundary_crossing"] is None else f"{100 * stats['boundary_crossing']:.2f}%"
        print(
            f"{source}: {stats['sentences']} sentences, UNK {100 * stats['unk_rate']:.3f}%, "
            f"{stats['pieces_per_word']:.3f} pieces/word, {stats['pieces_per_char']:.3f} pieces/char, "
            f"boundary crossing {crossing}, round-trip failures {stats['roundtrip_failures']}"
        )
    return 0
