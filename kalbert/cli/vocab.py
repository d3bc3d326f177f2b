"""`kalbert vocab build|extend|inspect`."""

from __future__ import annotations

import argparse
import json

from kalbert.cli.common import add_verb, positive_int


def register(nouns) -> None:
    parser = nouns.add_parser("vocab", help="build, extend and inspect SentencePiece vocabularies")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    build = add_verb(
        verbs,
        "build",
        "train a morphology-aware SentencePiece vocabulary",
        "kalbert vocab build --lang ko --input kowiki nsmc --vocab-size 32000 --out vocab/ko-32k",
        _build,
    )
    build.add_argument("--lang", required=True, choices=["ko", "zh", "ko+zh"])
    build.add_argument("--input", nargs="+", required=True, help="data-set names (kalbert data list) or text files")
    build.add_argument("--out", required=True, help="output folder")
    build.add_argument("--vocab-size", type=positive_int, default=32000)
    build.add_argument("--model-type", choices=["unigram", "bpe"], default="unigram")
    build.add_argument("--segmenter", choices=["auto", "none"], default="auto",
                       help="auto: mecab-ko/jieba pre-segmentation; none: plain SentencePiece")
    build.add_argument("--max-sentences", type=positive_int, default=1_000_000, help="sentences sampled for training")
    build.add_argument("--character-coverage", type=float, default=0.9995)
    build.add_argument("--lang-temperature", type=float, default=2.0, help="ko+zh: language sampling temperature")
    build.add_argument("--seed", type=int, default=13)
    build.add_argument("--processes", type=int, default=0, help="segmentation processes (0: all cores)")
    build.add_argument("--overwrite", action="store_true", help="replace an existing output folder")

    extend = add_verb(
        verbs,
        "extend",
        "append pieces to a vocabulary without moving any existing id",
        "kalbert vocab extend --base vocab/ko-32k --from-corpus nsmc --max-new 500 --out outputs/ko-32k-nsmc",
        _extend,
    )
    extend.add_argument("--base", required=True, help="vocabulary folder to extend")
    source = extend.add_mutually_exclusive_group(required=True)
    source.add_argument("--words", help="file with one word per line")
    source.add_argument("--from-corpus", nargs="+", help="mine frequent words from these files/data sets")
    extend.add_argument("--lang", choices=["ko", "zh", "ko+zh"], default="ko", help="language of --from-corpus")
    extend.add_argument("--max-new", type=positive_int, default=1000)
    extend.add_argument("--min-count", type=positive_int, default=5)
    extend.add_argument("--out", required=True)
    extend.add_argument("--overwrite", action="store_true")

    inspect = add_verb(
        verbs,
        "inspect",
        "show pieces and ids, or measure a vocabulary on evaluation text",
        'kalbert vocab inspect vocab/ko-32k "배우들의 연기도 좋았다" --eval korsts:dev',
        _inspect,
    )
    inspect.add_argument("vocab", help="vocabulary or model folder")
    inspect.add_argument("text", nargs="*", help="sentences to show as pieces")
    inspect.add_argument("--eval", nargs="+", default=[], metavar="SOURCE",
                         help="text files (a sentence per line) or STS sets like korsts:dev, stsb-zh:dev")
    inspect.add_argument("--lang", choices=["ko", "zh", "ko+zh"],
                         help="analyzer for boundary checks (default: the vocab's languages)")
    inspect.add_argument("--limit", type=positive_int, default=5000, help="evaluation sentences per source")
    inspect.add_argument("--json", action="store_true", help="print JSON")


def _build(args: argparse.Namespace) -> int:
    from kalbert.vocab import VocabBuildConfig, build_vocab

    config = VocabBuildConfig(
        lang=args.lang, inputs=args.input, out=args.out, vocab_size=args.vocab_size, model_type=args.model_type,
        segmenter=args.segmenter, max_sentences=args.max_sentences, character_coverage=args.character_coverage,
        lang_temperature=args.lang_temperature, seed=args.seed,
        processes=args.processes,
    )
    out = build_vocab(config, overwrite=args.overwrite)
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    print(f"vocabulary: {out} ({meta['vocab_size']} pieces, {meta['build_seconds']:.0f} s)")
    for lang, stats in meta["heldout_stats"].items():
        print(f"  held-out {lang}: UNK {100 * stats['unk_rate']:.3f}%, {stats['pieces_per_word']:.2f} pieces/word, "
              f"{stats['pieces_per_char']:.2f} pieces/char")
    return 0


def _extend(args: argparse.Namespace) -> int:
    from kalbert.vocab import VocabExtendConfig, extend_vocab

    config = VocabExtendConfig(
        base=args.base, out=args.out, words=args.words, from_corpus=args.from_corpus, max_new=args.max_new,
        min_count=args.min_count, lang=args.lang,
    )
    out, extension = extend_vocab(config, overwrite=args.overwrite)
    if extension.skipped_present:
        shown = ", ".join(extension.skipped_present[:10])
        print(f"note: {len(extension.skipped_present)} words were already pieces and were skipped: {shown}")
    print(f"added {len(extension.added)} pieces -> {out}")
    for word in extension.added[:20]:
        print(f"  {word}: {' '.join(extension.before[word])}  ->  {' '.join(extension.after[word])}")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    from kalbert.vocab.inspect import inspect_vocab

    report = inspect_vocab(args.vocab, args.text, args.eval, lang=args.lang, limit=args.limit)
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
