"""`kalbert mc train|predict`: fine-tune ALBERT for multiple choice, and answer a question with it."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from kalbert.cli.common import add_verb, positive_int
from kalbert.tasks.multiple_choice import MC_TASKS


def register(nouns) -> None:
    parser = nouns.add_parser("mc", help="multiple choice: fine-tune ALBERT, predict")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    train = add_verb(
        verbs,
        "train",
        "fine-tune AlbertForMultipleChoice (train split; dev selects the epoch; "
        "accuracy on the labelled test split, else dev)",
        "kalbert mc train --model outputs/albert-tiny --task kobest-copa --out outputs/mc-copa "
        "--results benchmarks/results/mc_kobest-copa_albert-tiny.json",
        _train,
    )
    train.add_argument("--model", required=True, help="ALBERT checkpoint folder (with its tokenizer files)")
    train.add_argument("--task", required=True, choices=list(MC_TASKS))
    train.add_argument("--out", required=True, help="output folder for the fine-tuned model")
    train.add_argument(
        "--results", help="also write a benchmark results JSON here (for `kalbert bench report`)"
    )
    train.add_argument("--name", help="model name in reports (default: the --model folder name)")
    train.add_argument("--note", default="", help="caveat printed beside the result in reports")
    train.add_argument("--epochs", type=positive_int, default=3)
    train.add_argument("--batch-size", type=positive_int, default=16)
    train.add_argument("--learning-rate", type=float, default=3e-5)
    train.add_argument("--max-length", type=positive_int, default=128)
    train.add_argument("--max-train-examples", type=positive_int, help="only the first N training examples")
    train.add_argument(
        "--max-eval-examples",
        type=positive_int,
        help="only the first N examples of the dev and reported splits (the result says so)",
    )
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")

    predict = add_verb(
        verbs,
        "predict",
        "score the choices for a context (and a COPA question)",
        'kalbert mc predict --model outputs/mc-copa --context "전쟁이 시작되었다." --question 결과 '
        '--choices "병사들이 집으로 돌아왔다." "병사들이 전투에 파견되었다."',
        _predict,
    )
    predict.add_argument("--model", required=True, help="a folder written by `kalbert mc train`")
    predict.add_argument("--context", required=True, help="premise, passage or dialogue")
    predict.add_argument(
        "--question", default="", help="question text (C3), or 원인/결과 / cause/effect for COPA-style tasks"
    )
    predict.add_argument("--choices", required=True, nargs="+", help="two or more candidate answers")


def _command(args: argparse.Namespace) -> str:
    """The command line that reproduces this run (defaults left out)."""
    words = ["kalbert", "mc", "train", "--model", args.model, "--task", args.task, "--out", args.out]
    for flag, value, default in [
        ("--results", args.results, None),
        ("--name", args.name, None),
        ("--note", args.note, ""),
        ("--epochs", args.epochs, 3),
        ("--batch-size", args.batch_size, 16),
        ("--learning-rate", args.learning_rate, 3e-5),
        ("--max-length", args.max_length, 128),
        ("--max-train-examples", args.max_train_examples, None),
        ("--max-eval-examples", args.max_eval_examples, None),
        ("--seed", args.seed, 42),
    ]:
        if value != default:
            words += [flag, str(value)]
    return shlex.join(words + (["--overwrite"] if args.overwrite else []))


def _train(args: argparse.Namespace) -> int:
    from kalbert.bench.results import write_results
    from kalbert.tasks import MCTrainConfig, mc_results, train_mc

    config = MCTrainConfig(
        model=args.model,
        task=args.task,
        out=args.out,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        max_length=args.max_length,
        max_train_examples=args.max_train_examples,
        max_eval_examples=args.max_eval_examples,
        seed=args.seed,
    )
    summary = train_mc(config, overwrite=args.overwrite)
    report = summary["report"]
    subset = f", first {report['n']} of {report['n_split']}" if report["subset"] else ""
    print(
        f"{args.task}: accuracy {report['accuracy']:.2f} on the {report['split']} split "
        f"(n={report['n']}{subset}; epoch {summary['selected_epoch']} selected on "
        f"{summary['splits']['select'] or 'nothing: last epoch kept'})"
    )
    print(f"wrote {args.out}")
    if args.results:
        name = args.name or Path(args.model).resolve().name
        write_results(args.results, mc_results(summary, name, _command(args), args.note))
        print(f"wrote {args.results}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from kalbert.tasks import predict_mc

    probs = predict_mc(args.model, args.context, args.choices, question=args.question)
    best = max(range(len(probs)), key=probs.__getitem__)
    for i, (choice, prob) in enumerate(zip(args.choices, probs, strict=True)):
        print(f"{'*' if i == best else ' '} {prob:.3f}  {choice}")
    return 0
