"""`kalbert qa train|predict|evaluate`: extractive question answering with ALBERT or BERT (KorQuAD, CMRC 2018, DRCD)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kalbert.cli.common import (
    add_noun,
    add_overwrite,
    add_results_arguments,
    add_verb,
    config_from_args,
    positive_int,
    probability,
    results_command,
)
from kalbert.errors import KalbertError
from kalbert.precision import PRECISION_HELP, PRECISIONS

HELP = "extractive QA: fine-tune ALBERT (or BERT, e.g. the e5 teacher), predict, evaluate"


def register(nouns) -> None:
    from kalbert.data.registry import list_datasets

    verbs = add_noun(nouns, "qa", HELP, "kalbert qa train --model outputs/pretrain-tiny/model --task korquad --out "
                     "outputs/qa-korquad\n  kalbert qa predict --model outputs/qa-korquad --context "
                     "\"대한민국의 수도는 서울특별시이다.\" --question \"대한민국의 수도는?\"")

    train = add_verb(verbs, "qa train", _train)
    add_results_arguments(train)
    add_overwrite(train)
    predict = add_verb(verbs, "qa predict", _predict)
    predict.add_argument("--model", required=True, help="a folder written by `kalbert qa train`")
    predict.add_argument("--context", help="the passage that holds the answer")
    predict.add_argument("--question", help="the question")
    predict.add_argument("--jsonl", help='batch mode: a file of {"context": ..., "question": ...} lines; each '
                         'comes back with "answer" (null below --threshold), "span", "start", "end", "score"')
    predict.add_argument("--out", help="(with --jsonl) write the answers here instead of stdout")
    predict.add_argument("--threshold", type=probability, default=0.0,
                         help="no answer when the best span's probability (start x end) is below this (0 to 1)")
    predict.add_argument("--precision", choices=PRECISIONS, default="auto", help=PRECISION_HELP)
    predict.add_argument("--overwrite", action="store_true", help="replace an existing --out file")

    export = add_verb(verbs, "qa export", _export)
    export.add_argument("--model", required=True, help="a folder written by `kalbert qa train`")
    export.add_argument("--out", required=True, help="the float16 copy")
    add_overwrite(export)

    evaluate = add_verb(verbs, "qa evaluate", _evaluate)
    evaluate.add_argument("--model", required=True, help="a folder written by `kalbert qa train`")
    evaluate.add_argument("--task", required=True, choices=list_datasets("qa"))
    evaluate.add_argument("--split", default="test", help="train, val, test (the reported part), or the whole public "
                          "file(s): dev (korquad, cmrc2018), all (drcd)")
    evaluate.add_argument("--max-rows", type=positive_int, help="only the first N questions")
    evaluate.add_argument("--out", help="write the scores and every prediction ({id: answer}) as JSON here")
    evaluate.add_argument("--overwrite", action="store_true", help="replace an existing --out file")


def _train(args: argparse.Namespace) -> int:
    from kalbert.tasks.qa import train_qa

    config = config_from_args(args)
    summary = train_qa(config, overwrite=args.overwrite)
    report = summary["report"]
    subset = f", first {report['n']} of {report['n_split']}" if report["subset"] else ""
    print(f"{config.task}: EM {report['exact_match']:.2f} F1 {report['f1']:.2f} on the {report['split']} split "
          f"(n={report['n']}{subset}; epoch {summary['selected_epoch']} selected on {summary['splits']['select']})")
    print(f"trained on the {summary['splits']['train']} parts of {', '.join(summary['train_sets'])}")
    print(f"wrote {config.out}")
    if args.results:
        from kalbert.bench.results import qa_results, write_results

        name = args.name or Path(config.model).resolve().name
        write_results(args.results, qa_results(summary, name, results_command(args, config), args.note))
        print(f"wrote {args.results}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from kalbert.tasks.qa.export import export_qa_float16

    meta = export_qa_float16(args.model, args.out, overwrite=args.overwrite)
    change = meta["weights_storage"]["max_probe_score_change"]
    print(f"wrote {args.out}: float16 weights, probe answers unchanged (score change at most {change:.2e})")
    return 0


def _jsonl_items(path: str) -> list[dict]:
    """The {"context", "question"} objects of a JSONL file; a bad line is a one-line error."""
    from kalbert.io import json_lines

    items = []
    for no, item in json_lines(path):
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
    qa = QAModel(args.model, precision=args.precision)
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
    from kalbert.data import parse_ref
    from kalbert.io import atomic_write_json
    from kalbert.tasks.qa import evaluate_qa

    parse_ref(f"{args.task}:{args.split}")
    result = evaluate_qa(args.model, args.task, args.split, args.max_rows)
    subset = f", first {result['n']} of {result['n_split']}" if result["subset"] else ""
    print(f"{args.task}:{args.split}: EM {result['exact_match']:.2f} F1 {result['f1']:.2f} "
          f"(n={result['n']}{subset}; {result['metric']}; read as {result['read_as']})")
    if args.out:
        atomic_write_json(Path(args.out), result)
        print(f"wrote {args.out}")
    return 0
