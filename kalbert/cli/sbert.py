"""`kalbert sbert export|sts|distill`."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb, positive_int


def _loop_arguments(parser: argparse.ArgumentParser, epochs: float, lr: float, batch_size: int) -> None:
    group = parser.add_argument_group("training schedule")
    group.add_argument("--epochs", type=float, default=epochs)
    group.add_argument("--batch-size", type=positive_int, default=batch_size)
    group.add_argument("--lr", type=float, default=lr, help="peak learning rate (AdamW, linear warmup/decay)")
    group.add_argument("--warmup-ratio", type=float, default=0.1)
    group.add_argument("--weight-decay", type=float, default=0.01)
    group.add_argument("--eval-steps", type=int, default=0, help="evaluate every N steps (0: every epoch)")
    group.add_argument("--max-steps", type=positive_int, default=None, help="stop after N steps")
    group.add_argument("--seed", type=int, default=13)
    group.add_argument("--on-collapse", choices=["stop", "warn"], default="stop",
                       help="when embeddings collapse: stop (keep the best healthy checkpoint) or warn")
    group.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def _loop(args: argparse.Namespace):
    from kalbert.sentence.loop import LoopConfig

    return LoopConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, warmup_ratio=args.warmup_ratio,
                      weight_decay=args.weight_decay, eval_steps=args.eval_steps, max_steps=args.max_steps,
                      seed=args.seed, on_collapse=args.on_collapse)


def register(nouns) -> None:
    parser = nouns.add_parser("sbert", help="sentence models: export, STS training, distillation")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    export = add_verb(
        verbs, "export", "wrap an ALBERT checkpoint as a SentenceTransformer folder, or add ONNX files to one",
        "kalbert sbert export --model outputs/pretrain-ko-tiny --out outputs/sbert-ko-tiny --eval korsts:dev\n"
        "  kalbert sbert export --backend onnx --quantize int8 --model outputs/sbert-ko-tiny "
        "--out outputs/sbert-ko-tiny-onnx",
        _export)
    export.add_argument("--model", required=True,
                        help="ALBERT checkpoint folder (with --backend onnx: a sentence-model folder)")
    export.add_argument("--out", required=True, help="output sentence-model folder")
    export.add_argument("--tokenizer", help="vocab folder, when the checkpoint has no tokenizer files")
    export.add_argument("--pooling", choices=["mean", "cls"], default="mean")
    export.add_argument("--max-seq-length", type=positive_int, default=128)
    export.add_argument("--dense-dim", type=positive_int, help="append a linear layer to this size")
    export.add_argument("--normalize", action="store_true", help="append a Normalize module (unit-length output)")
    export.add_argument("--eval", nargs="*", default=[], metavar="SPLIT", help="STS splits to measure, e.g. korsts:dev")
    export.add_argument("--languages", nargs="+", help="languages of the model (default: from kalbert.json)")
    export.add_argument("--backend", choices=["torch", "onnx"], default="torch",
                        help="onnx: copy a sentence-model folder and add onnx/model.onnx (checked against PyTorch), "
                             "for --backend onnx|onnx-int8 in search and bench")
    export.add_argument("--quantize", choices=["int8"], help="with --backend onnx: also write an int8 ONNX file")
    export.add_argument("--weights", choices=["float32", "float16"], default="float32",
                        help="float16: copy a sentence-model folder with half-size weights (still computed in "
                             "float32), e.g. to ship it")
    export.add_argument("--int8-config", metavar="PRESET",
                        help="int8 preset: avx512_vnni, avx512, avx2 or arm64 (default: the best for this CPU)")
    export.add_argument("--overwrite", action="store_true")

    sts = add_verb(
        verbs, "sts", "train a sentence model on STS (and NLI/paraphrase) pairs; keep the best dev checkpoint",
        "kalbert sbert sts --model outputs/sbert-ko-tiny --train korsts --eval korsts:dev --test korsts:test "
        "--out outputs/sbert-ko-tiny-sts", _sts)
    sts.add_argument("--model", required=True, help="sentence-model folder or ALBERT checkpoint")
    sts.add_argument("--train", nargs="+", default=["korsts"],
                     help="STS, NLI or pair sets (split after ':', default train): korsts kornli:dev ocnli afqmc")
    sts.add_argument("--eval", nargs="+", default=["korsts:dev"],
                     help="STS dev split(s) that pick the best checkpoint (several: their mean)")
    sts.add_argument("--test", nargs="*", default=[], help="STS splits scored once at the end, e.g. korsts:test")
    sts.add_argument("--out", required=True)
    sts.add_argument("--loss", choices=["cosent", "angle", "cosine"], default="cosent")
    sts.add_argument("--pooling", choices=["mean", "cls"], default="mean", help="for a plain checkpoint")
    sts.add_argument("--max-seq-length", type=positive_int, default=128)
    sts.add_argument("--max-rows", type=positive_int, help="use at most N rows of each training set")
    _loop_arguments(sts, epochs=4.0, lr=5e-5, batch_size=32)

    distill = add_verb(
        verbs, "distill", "distil a teacher sentence model into a student on corpus and/or parallel sentences",
        "kalbert sbert distill --teacher multilingual-e5-small --student outputs/albert-ko-zh-transplant "
        "--corpus kowiki nsmc zh-laws zh-clue --max-sentences 150000 --loss mse --eval korsts:dev "
        "--out outputs/sbert-ko-zh-kd",
        _distill)
    distill.add_argument("--teacher", default="all-MiniLM-L6-v2",
                         help="multilingual-e5-small, use-multilingual, all-MiniLM-L6-v2 (default), or a "
                              "SentenceTransformer folder or hub id")
    distill.add_argument("--student", required=True, help="sentence-model folder or ALBERT checkpoint")
    distill.add_argument("--corpus", nargs="+", default=[],
                         help="monolingual corpora (kalbert data list, or files) the student learns to embed")
    distill.add_argument("--max-sentences", type=positive_int, default=150_000,
                         help="corpus sentences sampled, deduplicated and language-balanced")
    distill.add_argument("--parallel", nargs="+", default=[],
                         help="parallel set names or TSV files with a language header (en<TAB>ko)")
    distill.add_argument("--out", required=True)
    distill.add_argument("--source-lang", help="parallel column the teacher reads (default: the teacher's language)")
    distill.add_argument("--target-langs", nargs="+", help="parallel columns the student learns (default: its "
                         "languages)")
    distill.add_argument("--eval", nargs="+", help="STS dev split(s) that pick the best checkpoint (several: "
                         "their mean; default: agreement with the teacher on held-out rows)")
    distill.add_argument("--loss", choices=["similarity", "mse", "infonce"], default="similarity",
                         help="match the teacher's in-batch cosine similarities (default), its vectors (MSE), or "
                              "its vectors among the batch's (InfoNCE)")
    distill.add_argument("--targets-only", action="store_true",
                         help="train the student on the target columns only, not on the teacher's source "
                              "column (for a vocabulary that cannot read the source language)")
    distill.add_argument("--dev-rows", type=int, default=500, help="rows of each source held out for evaluation")
    distill.add_argument("--max-rows", type=positive_int, help="use at most N rows of each parallel set")
    distill.add_argument("--pooling", choices=["mean", "cls"], default="mean", help="for a plain checkpoint")
    distill.add_argument("--max-seq-length", type=positive_int, default=128)
    distill.add_argument("--cache-dir", help="teacher-embedding cache (default ~/.cache/kalbert/teacher-embeddings)")
    _loop_arguments(distill, epochs=2.0, lr=2e-4, batch_size=64)


def _export(args: argparse.Namespace) -> int:
    from kalbert.errors import KalbertError
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    if args.backend == "onnx":
        from kalbert.sentence.backends import OnnxExportConfig, export_onnx
        from kalbert.sentence.card import read_meta

        ignored = [flag for flag, value in (("--tokenizer", args.tokenizer), ("--dense-dim", args.dense_dim),
                                            ("--normalize", args.normalize), ("--eval", args.eval),
                                            ("--languages", args.languages)) if value]
        if ignored:
            raise KalbertError(f"{', '.join(ignored)} cannot be used with --backend onnx",
                               "the ONNX export copies the sentence model as it is")
        out = export_onnx(OnnxExportConfig(model=args.model, out=args.out, quantize=args.quantize,
                                           int8_config=args.int8_config), overwrite=args.overwrite)
        record = read_meta(out)["onnx"]
        print(f"ONNX sentence model: {out} (int8 preset: {record['int8_config'] or 'none'})")
        for backend, file_name in record["files"].items():
            cosine = record["min_cosine_vs_torch"][backend]
            print(f"  --backend {backend}: {file_name} (min cosine to PyTorch {cosine:.6f})")
        return 0
    if args.quantize or args.int8_config:
        raise KalbertError("--quantize and --int8-config need --backend onnx")
    if args.weights == "float16":
        from kalbert.sentence.export import export_half_weights

        out = export_half_weights(args.model, args.out, overwrite=args.overwrite)
        print(f"sentence model with float16 weights: {out} (loads with SentenceTransformer('{out}'))")
        return 0
    config = ExportConfig(model=args.model, out=args.out, tokenizer=args.tokenizer, pooling=args.pooling,
                          max_seq_length=args.max_seq_length, dense_dim=args.dense_dim, normalize=args.normalize,
                          eval=args.eval, languages=args.languages)
    out = export_sentence_model(config, overwrite=args.overwrite)
    print(f"sentence model: {out} (loads with SentenceTransformer('{out}'))")
    from kalbert.sentence.card import read_meta

    for metric in read_meta(out)["metrics"]:
        print(f"  {metric['data']} {metric['metric']}: {metric['value']:.4f}")
    return 0


def _sts(args: argparse.Namespace) -> int:
    from kalbert.sentence.sts import STSConfig, summary, train_sts

    config = STSConfig(model=args.model, out=args.out, train=args.train, eval=args.eval, test=args.test,
                       loss=args.loss, pooling=args.pooling, max_seq_length=args.max_seq_length,
                       max_rows=args.max_rows, loop=_loop(args))
    print(summary(train_sts(config, overwrite=args.overwrite)))
    return 0


def _distill(args: argparse.Namespace) -> int:
    from kalbert.sentence.distill import DistillConfig, distill_student

    config = DistillConfig(student=args.student, out=args.out, parallel=args.parallel, corpus=args.corpus,
                           max_sentences=args.max_sentences, teacher=args.teacher,
                           source_lang=args.source_lang, target_langs=args.target_langs, eval=args.eval,
                           dev_rows=args.dev_rows, max_rows=args.max_rows, loss=args.loss,
                           learn_source=not args.targets_only, pooling=args.pooling,
                           max_seq_length=args.max_seq_length, cache_dir=args.cache_dir, loop=_loop(args))
    result = distill_student(config, overwrite=args.overwrite)
    print(f"student: {result.out} (best step {result.fit.best.step} of {result.fit.steps})")
    for key, value in result.metrics.items():
        print(f"  {key}: {value:.4f}")
    return 0
