"""`kalbert transplant`: a BERT/XLM-R sentence encoder turned into an ALBERT on a kalbert vocabulary."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb

EXAMPLE = ("kalbert transplant --teacher multilingual-e5-small --vocab vocab/ko-zh-48k --layers 5 --embedding-size 80 "
           "--out outputs/albert-ko-zh-transplant")


def register(nouns) -> None:
    parser = add_verb(
        nouns, "transplant",
        "turn a BERT-family sentence encoder (e.g. multilingual-e5-small) into an ALBERT on a kalbert "
        "vocabulary, without training",
        EXAMPLE, _transplant)
    parser.add_argument("--teacher", required=True,
                        help="multilingual-e5-small, a SentenceTransformer folder (kalbert teacher export) or an HF "
                             "BertModel/XLM-R folder")
    parser.add_argument("--vocab", required=True, help="kalbert vocab folder (kalbert vocab build)")
    parser.add_argument("--out", required=True, help="output model folder")
    parser.add_argument("--layers", type=int, default=6, help="L: teacher layers kept (default 6)")
    parser.add_argument("--embedding-size", type=int, default=128,
                        help="E: factorised embedding width, 2..H (default 128; H reproduces the teacher exactly)")
    parser.add_argument("--layer-choice", choices=["every-other", "first", "last"], default="every-other",
                        help="which teacher layers: evenly spaced ending with the last (12 -> 6: 1,3,5,7,9,11), "
                             "the first L or the last L")
    parser.add_argument("--share-groups", type=int,
                        help="N shared layer groups (divides L), each the mean of its L/N layers (default: L, none)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the new MLM/SOP heads")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def _transplant(args: argparse.Namespace) -> int:
    from kalbert.transplant import TransplantConfig, transplant

    config = TransplantConfig(teacher=args.teacher, vocab=args.vocab, out=args.out, layers=args.layers,
                              embedding_size=args.embedding_size, layer_choice=args.layer_choice,
                              share_groups=args.share_groups, seed=args.seed)
    result = transplant(config, overwrite=args.overwrite)
    kept = result.variance_kept
    mapping = ("identity (the teacher's own vocabulary)" if result.identity_vocab else
               ", ".join(f"{count:,} {kind}" for kind, count in result.mapping.items()))
    print(f"model: {result.out} ({result.model})")
    print(f"  teacher layers: {', '.join(map(str, result.teacher_layers))}")
    print(f"  variance kept: {kept['all']:.2%} (words {kept['words']:.2%}, positions {kept['positions']:.2%}, "
          f"types {kept['types']:.2%})")
    print(f"  pieces: {mapping}")
    return 0
