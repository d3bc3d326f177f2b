"""`kalbert bench run|report`: score sentence models and baselines, then tabulate and chart them."""

from __future__ import annotations

import argparse
import shlex
import time

from kalbert.cli.common import add_verb, positive_int
from kalbert.sentence import BACKENDS


def register(nouns) -> None:
    parser = nouns.add_parser("bench", help="benchmark sentence models and baselines; write reports")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    run = add_verb(
        verbs,
        "run",
        "evaluate a sentence model (or a baseline) on STS, pair and multiple-choice tasks",
        "kalbert bench run --model tfidf --tasks all --out benchmarks/results/tfidf.json\n"
        "  kalbert bench run --model outputs/sbert-ko-tiny-onnx --backend onnx-int8 --tasks sts "
        "--out benchmarks/results/sbert-ko-tiny-int8.json",
        _run,
    )
    run.add_argument(
        "--model",
        required=True,
        help="a sentence-model folder, or a baseline: 'tfidf', 'minilm' (all-MiniLM-L6-v2), or a teacher: "
        "'multilingual-e5-small', 'use-multilingual'",
    )
    run.add_argument(
        "--tasks",
        default="all",
        help="comma-separated task names or groups (all, sts, pairs, mc, ko, zh); default: all",
    )
    run.add_argument("--out", required=True, help="results JSON file to write")
    run.add_argument("--name", help="model name in reports (default: the folder name)")
    run.add_argument("--batch-size", type=positive_int, default=32, help="sentences per encoding batch")
    run.add_argument(
        "--backend",
        choices=BACKENDS,
        default="torch",
        help="run a sentence model in PyTorch or from its ONNX files (kalbert sbert export --backend onnx)",
    )

    report = add_verb(
        verbs,
        "report",
        "write RESULTS.md and a PNG chart per task group from results files",
        "kalbert bench report benchmarks/results/*.json --out benchmarks/RESULTS.md",
        _report,
    )
    report.add_argument(
        "results", nargs="+", help="results JSON files written by `kalbert bench run|mc train`"
    )
    report.add_argument("--out", required=True, help="Markdown file; the PNGs are written beside it")


def _run(args: argparse.Namespace) -> int:
    from kalbert.bench import load_encoder, run_bench, select_tasks, write_results

    started = time.perf_counter()
    tasks = select_tasks(args.tasks)
    encoder = load_encoder(args.model, batch_size=args.batch_size, name=args.name, backend=args.backend)
    command = ["kalbert", "bench", "run", "--model", args.model, "--tasks", args.tasks, "--out", args.out]
    if args.name:
        command += ["--name", args.name]
    if args.batch_size != 32:
        command += ["--batch-size", str(args.batch_size)]
    if args.backend != "torch":
        command += ["--backend", args.backend]
    results = run_bench(encoder, tasks, shlex.join(command), started=started)
    write_results(args.out, results)
    for record in results.results:
        value = "n/a" if record["value"] is None else f"{record['value']:.2f}"
        print(
            f"{record['task']:<12} {record['split']:<5} {record['metric']:<9} {value:>7}  (n={record['n']})"
        )
    print(f"wrote {args.out} ({results.wall_seconds:.1f} s)")
    return 0


def _report(args: argparse.Namespace) -> int:
    from kalbert.bench import write_report

    for path in write_report(args.results, args.out):
        print(f"wrote {path}")
    return 0
