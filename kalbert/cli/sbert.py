"""`kalbert sbert export|train|distill|mine|average|widen` (`sbert sts`: the old name of `sbert train`)."""

from __future__ import annotations

import argparse
import sys

from kalbert.artifact import read_meta
from kalbert.cli.common import add_noun, add_overwrite, add_verb, config_from_args

HELP = ("sentence models: export, training on pairs and question -> passage rows, distillation, teacher-graded "
        "pair mining, weight averaging, embedding widening")


def register(nouns) -> None:
    verbs = add_noun(nouns, "sbert", HELP, "kalbert sbert export --model outputs/pretrain-ko-tiny/model --out "
                     "outputs/sbert-ko-tiny\n  kalbert sbert train --model outputs/sbert-ko-tiny --train korsts "
                     "--out outputs/sbert-ko-tiny-sts")

    export = add_verb(verbs, "sbert export", _export)
    export.add_argument("--backend", choices=["torch", "onnx"], default="torch",
                        help="onnx: copy a sentence-model folder and add onnx/model.onnx (checked against PyTorch), "
                             "for --backend onnx|onnx-int8 in search and bench")
    export.add_argument("--quantize", choices=["int8"],
                        help="with --backend onnx: also write an int8 ONNX file, named by sentence-transformers "
                             "after the preset (onnx/model_quint8_avx2.onnx, onnx/model_qint8_avx512.onnx, "
                             "onnx/model_qint8_avx512_vnni.onnx, onnx/model_qint8_arm64.onnx) and recorded in "
                             "kalbert.json")
    export.add_argument("--weights", choices=["float32", "float16"], default="float32",
                        help="float16: copy a sentence-model folder with half-size weights (still computed in "
                             "float32), e.g. to ship it; with --max-seq-length, the copy reads that many tokens")
    export.add_argument("--int8-config", metavar="PRESET",
                        help="int8 preset: avx512_vnni, avx512, avx2 or arm64 (default: the best for this CPU: "
                             "avx512_vnni with AVX-512 VNNI or AMX, avx512 with AVX-512, else avx2; arm64 on ARM; "
                             "`kalbert env` shows what this CPU has)")
    add_overwrite(export)
    add_overwrite(add_verb(verbs, "sbert train", _train))
    add_overwrite(add_verb(verbs, "sbert distill", _distill))
    mine = add_verb(verbs, "sbert mine", _mine)
    mine.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    add_overwrite(add_verb(verbs, "sbert average", _average))
    add_overwrite(add_verb(verbs, "sbert widen", _widen))


def _export(args: argparse.Namespace) -> int:
    from kalbert.errors import KalbertError
    from kalbert.sentence.export import export_sentence_model

    config = config_from_args(args)
    if args.backend == "onnx":
        from kalbert.sentence.backends import OnnxExportConfig, export_onnx

        ignored = [flag for flag, value in (("--tokenizer", config.tokenizer), ("--dense-dim", config.dense_dim),
                                            ("--normalize", config.normalize), ("--eval", config.eval),
                                            ("--languages", config.languages)) if value]
        if ignored:
            raise KalbertError(f"{', '.join(ignored)} cannot be used with --backend onnx",
                               "the ONNX export copies the sentence model as it is")
        out = export_onnx(OnnxExportConfig(model=config.model, out=config.out, quantize=args.quantize,
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

        out = export_half_weights(config.model, config.out, max_seq_length=getattr(args, "max_seq_length", None),
                                  overwrite=args.overwrite)
        print(f"sentence model with float16 weights: {out} (loads with SentenceTransformer('{out}'))")
        return 0
    out = export_sentence_model(config, overwrite=args.overwrite)
    print(f"sentence model: {out} (loads with SentenceTransformer('{out}'))")

    for metric in read_meta(out)["metrics"]:
        print(f"  {metric['data']} {metric['metric']}: {metric['value']:.4f}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from kalbert.sentence.train import summary, train_sentence_model

    if args.verb == "sts":
        print("kalbert: note: `kalbert sbert sts` is now `kalbert sbert train`; the old name goes in the next release",
              file=sys.stderr)
    print(summary(train_sentence_model(config_from_args(args), overwrite=args.overwrite)))
    return 0


def _distill(args: argparse.Namespace) -> int:
    from kalbert.sentence.distill import distill_student

    config = config_from_args(args)
    result = distill_student(config, overwrite=args.overwrite)
    print(f"student: {result.out} (best step {result.fit.best.step} of {result.fit.steps})")
    for key, value in result.metrics.items():
        print(f"  {key}: {value:.4f}")
    return 0


def _average(args: argparse.Namespace) -> int:
    from kalbert.sentence.average import average_models
    from kalbert.sentence.evaluate import dev_metric

    result = average_models(config_from_args(args), overwrite=args.overwrite)
    print(f"averaged sentence model: {result.out} (loads with SentenceTransformer('{result.out}'))")
    for ref, score in result.scores.items():
        print(f"  {ref} {dev_metric(ref)}: {score:.4f}")
    if len(result.scores) > 1:  # the figure `sbert train` picks by, so an average and its sources compare at a glance
        print(f"  dev score (mean of the --eval splits): {sum(result.scores.values()) / len(result.scores):.4f}")
    return 0


def _mine(args: argparse.Namespace) -> int:
    from kalbert.lineage import record_beside
    from kalbert.sentence.mine import mine_pairs

    result = mine_pairs(config_from_args(args), overwrite=args.overwrite)
    if result.found < result.asked:
        print(f"found {result.found} of the {result.asked} pairs asked (corpus sample too small or too repetitive); "
              f"wrote them all (--allow-fewer)")
    pairs, score = result.record["pairs"], result.record["score"]
    languages = ", ".join(f"{lang} {n}" for lang, n in pairs["per_language"].items())
    print(f"mined pairs: {result.out} ({result.found} pairs: {languages}; {pairs['from_neighbours']} from nearest "
          f"neighbours, {pairs['random']} random), record {record_beside(result.out)}")
    print(f"  score 0-5 = teacher cosine {score['cosine_at_0']:.4f}-{score['cosine_at_5']:.4f}, linear; "
          f"{result.record['sample']['heldout_dropped']} evaluation sentences left out of the sample")
    print(f"  train with: kalbert sbert train --train {result.out} ...")
    return 0


def _widen(args: argparse.Namespace) -> int:
    from kalbert.sentence.widen import widen_model

    out = widen_model(config_from_args(args), overwrite=args.overwrite)
    meta = read_meta(out)
    stage = meta["stages"][-1]
    print(f"widened sentence model: {out} ({stage['parameters']:,} parameters; the teacher's word-embedding variance "
          f"kept {stage['variance_kept']['before']:.1%} -> {stage['variance_kept']['after']:.1%})")
    for metric in meta["metrics"]:
        if metric["stage"] == "widen":
            print(f"  {metric['data']} {metric['metric']}: {metric['value']:.4f}")
    return 0
