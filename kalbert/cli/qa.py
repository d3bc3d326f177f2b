"""`kalbert qa train|predict|evaluate`: extractive question answering with ALBERT (KorQuAD 1.0, CMRC 2018)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from kalbert.cli.common import add_verb, positive_int
from kalbert.errors import KalbertError

TASKS = ["korquad", "cmrc2018"]


def register(nouns) -> None:
    parser = nouns.add_parser("qa", help="extractive QA: fine-tune ALBERT, predict, evaluate")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    train = add_verb(
        verbs,
        "train",
        "fine-tune AlbertForQuestionAnswering on the task's train part (val picks the epoch; EM/F1 on test)",
        "kalbert qa train --model outputs/pretrain-tiny/model --task korquad --out outputs/qa-korquad",
        _train,
    )
    train.add_argument("--model", required=True, help="ALBERT checkpoint folder (with its tokenizer files)")
    train.add_argument("--task", required=True, choices=TASKS)
    train.add_argument("--out", required=True, help="output folder for the fine-tuned model")
    train.add_argument("--results", help="also write a benchmark results JSON here (for `kalbert bench report`)")
    train.add_argument("--name", help="model name in reports (default: the --model folder name)")
    train.add_argument("--note", default="", help="caveat printed beside the result in reports")
    train.add_argument("--epochs", type=positive_int, default=3)
    train.add_argument("--batch-size", type=positive_int, default=16, help="windows per step")
    train.add_argument("--lr", type=float, default=5e-5, help="peak learning rate")
    train.add_argument("--max-seq-length", type=positive_int, default=384, help="tokens per window")
    train.add_argument("--doc-stride", type=positive_int, default=128,
                       help="tokens shared by consecutive windows of a long context")
    train.add_argument("--max-answer-length", type=positive_int, default=30, help="longest answer, in tokens")
    train.add_argument("--max-rows", type=positive_int, help="only the first N training questions")
    train.add_argument("--max-eval-rows", type=positive_int,
                       help="only the first N questions of val and test (the result says so)")
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--overwrite", action="store_true", help="replace an existing --out folder")

    predict = add_verb(
        verbs,
        "predict",
        "answer a question from a context (or a JSONL file of them) with a fine-tuned QA model",
        'kalbert qa predict --model outputs/qa-korquad --context "대한민국의 수도는 서울특별시이다." '
        '--question "대한민국의 수도는?"',
        _predict,
    )
    predict.add_argument("--model", required=True, help="a folder written by `kalbert qa train`")
    predict.add_argument("--context", help="the passage that holds the answer")
    predict.add_argument("--question", help="the question")
    predict.add_argument("--jsonl", help='batch mode: a file of {"context": ..., "question": ...} lines; each '
                         'comes back with "answer" (null below --threshold), "span", "start", "end", "score"')
    predict.add_argument("--out", help="(with --jsonl) write the answers here instead of stdout")
    predict.add_argument("--threshold", type=float, default=0.0,
                         help="no answer when the best span's probability (start x end) is below this (0..1)")

    evaluate = add_verb(
        verbs,
        "evaluate",
        "EM/F1 of a QA model on a split, as the official KorQuAD 1.0 / CMRC 2018 scripts compute them",
        "kalbert qa evaluate --model outputs/qa-korquad --task korquad --split test --out outputs/qa-korquad-test.json",
        _evaluate,
    )
    evaluate.add_argument("--model", required=True, help="a folder written by `kalbert qa train`")
    evaluate.add_argument("--task", required=True, choices=TASKS)
    evaluate.add_argument("--split", default="test", help="train, val, test (the reported part), or dev (all)")
    evaluate.add_argument("--max-rows", type=positive_int, help="only the first N questions")
    evaluate.add_argument("--out", help="write the scores and every prediction ({id: answer}) as JSON here")


def _train(args: argparse.Namespace) -> int:
    from kalbert.tasks.qa import QATrainConfig, train_qa

    config = QATrainConfig(
        model=args.model, task=args.task, out=args.out, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.lr, max_length=args.max_seq_length, doc_stride=args.doc_stride,
        max_answer_tokens=args.max_answer_length, max_train_rows=args.max_rows, max_eval_rows=args.max_eval_rows,
        seed=args.seed,
    )
    summary = train_qa(config, overwrite=args.overwrite)
    report = summary["report"]
    subset = f", first {report['n']} of {report['n_split']}" if report["subset"] else ""
    print(f"{args.task}: EM {report['exact_match']:.2f} F1 {report['f1']:.2f} on the {report['split']} split "
          f"(n={report['n']}{subset}; epoch {summary['selected_epoch']} selected on {summary['splits']['select']})")
    print(f"wrote {args.out}")
    if args.results:
        from kalbert.bench.results import write_results
        from kalbert.tasks.qa import qa_results

        command = summary["command"] + " " + shlex.join(
            ["--results", args.results] + (["--name", args.name] if args.name else [])
            + (["--note", args.note] if args.note else []))
        name = args.name or Path(args.model).resolve().name
        write_results(args.results, qa_results(summary, name, command, args.note))
        print(f"wrote {args.results}")
    return 0


def _jsonl_items(path: str) -> list[dict]:
    """The {"context", "question"} objects of a JSONL file; a bad line is a one-line error."""
    from kalbert.io import open_text

    items = []
    for no, line in enumerate(open_text(path), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            item = None
        if not (isinstance(item, dict) and isinstance(item.get("context"), str)
                and isinstance(item.get("question"), str)):
            raise KalbertError(f"{path} line {no} is not a JSON object with string \"context\" and \"question\"")
        items.append(item)
    if not items:
        raise KalbertError(f"{path} holds no questions", 'write one {"context": ..., "question": ...} per line')
    return items


def _predict(args: argparse.Namespace) -> int:
    from kalbert.io import atomic_write_text
    from kalbert.tasks.qa import QAModel

    if args.jsonl and (args.context or args.question):
        raise KalbertError("give --jsonl or --context/--question, not both")
    if not args.jsonl and (args.context is None or args.question is None):
        raise KalbertError("give --context and --question (or --jsonl FILE)")
    items = _jsonl_items(args.jsonl) if args.jsonl else [{"context": args.context, "question": args.question}]
    qa = QAModel(args.model)
    answers = qa.answer([i["question"] for i in items], [i["context"] for i in items], args.threshold)
    if not args.jsonl:
        (answer,) = answers
        verdict = answer.text if answer.answered else f"(no answer: best span {answer.text!r} is below the threshold)"
        print(f"{verdict}\nscore {answer.score:.4f}  characters {answer.start}-{answer.end}")
        return 0
    lines = "".join(json.dumps({**item, "answer": a.text if a.answered else None, "span": a.text, "start": a.start,
                                "end": a.end, "score": round(a.score, 6)}, ensure_ascii=False) + "\n"
                    for item, a in zip(items, answers, strict=True))
    if args.out:
        atomic_write_text(args.out, lines)
        print(f"wrote {len(items)} answers to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(lines)
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from kalbert.datasets import parse_ref
    from kalbert.io import atomic_write_json
    from kalbert.tasks.qa import evaluate_qa

    parse_ref(f"{args.task}:{args.split}")
    result = evaluate_qa(args.model, args.task, args.split, args.max_rows)
    subset = f", first {result['n']} of {result['n_split']}" if result["subset"] else ""
    print(f"{args.task}:{args.split}: EM {result['exact_match']:.2f} F1 {result['f1']:.2f} "
          f"(n={result['n']}{subset}; {result['metric']})")
    if args.out:
        atomic_write_json(Path(args.out), result)
        print(f"wrote {args.out}")
    return 0
