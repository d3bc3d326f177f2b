"""`kalbert mc train|predict|cloze`: fine-tune ALBERT or BERT for multiple choice, answer a question with it,
and cut idiom cloze training examples (CHID's format) from a Chinese corpus."""

from __future__ import annotations

import argparse
from pathlib import Path

from kalbert.cli.common import (
    add_noun,
    add_overwrite,
    add_results_arguments,
    add_verb,
    config_from_args,
    results_command,
)
from kalbert.precision import PRECISION_HELP, PRECISIONS

HELP = "multiple choice: fine-tune ALBERT (or BERT, e.g. the e5 teacher), predict, idiom cloze data"


def register(nouns) -> None:
    verbs = add_noun(nouns, "mc", HELP, "kalbert mc train --model outputs/albert-tiny --task kobest-copa --out "
                     "outputs/mc-copa\n  kalbert mc predict --model outputs/mc-copa --context \"전쟁이 시작되었다.\" "
                     "--question 결과 --choices \"병사들이 집으로 돌아왔다.\" \"병사들이 전투에 파견되었다.\"")
    train = add_verb(verbs, "mc train", _train)
    add_results_arguments(train)
    add_overwrite(train)
    add_overwrite(add_verb(verbs, "mc cloze", _cloze))
    average = add_verb(verbs, "mc average", _average)
    add_results_arguments(average)
    add_overwrite(average)
    predict = add_verb(verbs, "mc predict", _predict)
    predict.add_argument("--model", required=True, help="a folder written by `kalbert mc train`")
    predict.add_argument("--context", required=True, help="premise, passage or dialogue")
    predict.add_argument(
        "--question", default="", help="question text (C3), or 원인/결과 / cause/effect for COPA-style tasks"
    )
    predict.add_argument("--choices", required=True, nargs="+", help="two or more distinct candidate answers")
    predict.add_argument("--precision", choices=PRECISIONS, default="auto", help=PRECISION_HELP)


def _written(args: argparse.Namespace, config, summary: dict, named_after: Path) -> int:
    """Say where the model went and, with --results, write its results file (named after ``named_after``)."""
    from kalbert.bench.results import mc_results, write_results

    print(f"wrote {config.out}")
    if args.results:
        name = args.name or named_after.resolve().name
        write_results(args.results, mc_results(summary, name, results_command(args, config), args.note))
        print(f"wrote {args.results}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from kalbert.tasks import train_mc

    config = config_from_args(args)
    summary = train_mc(config, overwrite=args.overwrite)
    report = summary["report"]
    subset = f", first {report['n']} of {report['n_split']}" if report["subset"] else ""
    print(
        f"{config.task}: accuracy {report['accuracy']:.2f} on the {report['split']} split "
        f"(n={report['n']}{subset}; epoch {summary['selected_epoch']} selected on "
        f"{summary['splits']['select'] or 'nothing: last epoch kept'})"
    )
    return _written(args, config, summary, Path(config.model))


def _average(args: argparse.Namespace) -> int:
    from kalbert.tasks.mc_average import average_mc

    config = config_from_args(args)
    summary = average_mc(config, overwrite=args.overwrite)
    report, select = summary["report"], summary["select"]
    subset = f", first {report['n']} of {report['n_split']}" if report["subset"] else ""
    measured = f"; {select['accuracy']:.2f} on {select['split']}" if select["accuracy"] is not None else ""
    sources = ", ".join(f"{s['select_accuracy']}" for s in summary["sources"])
    print(f"{summary['task']}: the average of {len(summary['sources'])} runs (their best {select['split']} accuracy: "
          f"{sources}) scores {report['accuracy']:.2f} on the {report['split']} split "
          f"(n={report['n']}{subset}){measured}")
    return _written(args, config, summary, Path(config.out))


def _cloze(args: argparse.Namespace) -> int:
    from kalbert.lineage import record_beside
    from kalbert.tasks.idiom_cloze import build_cloze

    config = config_from_args(args)
    record = build_cloze(config, overwrite=args.overwrite)
    examples = record["examples"]
    print(f"wrote {examples['written']} idiom cloze examples ({examples['distinct_answers']} idioms answered, "
          f"{record['distinct_idioms']} found in {record['documents_read']} documents; "
          f"{record['passage_filter']['dropped_documents']} documents holding an evaluation passage dropped) "
          f"to {config.out}, record {record_beside(config.out)}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from kalbert.precision import autocast, resolve_precision
    from kalbert.tasks import predict_mc

    bf16, _ = resolve_precision(args.precision, "cpu")  # predict_mc runs the model on the CPU
    with autocast("cpu", bf16):
        probs = predict_mc(args.model, args.context, args.choices, question=args.question)
    best = max(range(len(probs)), key=probs.__getitem__)
    for i, (choice, prob) in enumerate(zip(args.choices, probs, strict=True)):
        print(f"{'*' if i == best else ' '} {prob:.3f}  {choice}")
    return 0
