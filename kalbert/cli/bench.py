"""`kalbert bench run|report`: score sentence models and baselines, then tabulate and chart them."""

from __future__ import annotations

import argparse
import time

from kalbert.cli.common import add_verb, config_from_args
from kalbert.verbs import command_for

HELP = "benchmark sentence models and baselines; write reports"
PLAIN_SETTINGS = ("cosine", "zero-shot cosine", "cosine, nearest of all")
"""how most records are scored: printed without their setting"""


def register(nouns) -> None:
    parser = nouns.add_parser("bench", help=HELP)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_verb(verbs, "bench run", _run)
    report = add_verb(verbs, "bench report", _report)
    report.add_argument(
        "results", nargs="+", help="results JSON files written by `kalbert bench run|mc train`"
    )
    report.add_argument("--out", required=True, help="Markdown file; the PNGs are written beside it")
    report.add_argument("--cards", nargs="+", default=[], metavar="FOLDER",
                        help="also rewrite the Benchmarks section of each model folder's README.md from the given "
                        "results files that name its current weights (kalbert.bench.cards)")


def _run(args: argparse.Namespace) -> int:
    from kalbert.bench import load_encoder, run_bench, select_tasks, write_results
    from kalbert.bench.finished import FinishedTasks, run_key
    from kalbert.bench.retrieval import load_rerank
    from kalbert.lineage import refuse_trained_on
    from kalbert.weights import weights_sha256

    started = time.perf_counter()
    config = config_from_args(args)
    tasks = select_tasks(config.tasks)
    refuse_trained_on(config.model, [f"{task.dataset}:{task.split}" for task in tasks], "the benchmark")
    encoder = load_encoder(config.model, batch_size=config.batch_size, name=config.name, backend=config.backend,
                           precision=config.precision)
    rerank = load_rerank(config.rerank_model, config.rerank_depth)
    command = command_for(config)
    key = run_key(command, weights_sha256(encoder.path) if encoder.path else None,
                  rerank.weights_sha256 if rerank else None)
    finished = FinishedTasks.open(config.out, key)
    results = run_bench(encoder, tasks, command, started=started, cache_dir=config.cache_dir, rerank=rerank,
                        finished=finished)
    write_results(config.out, results)
    finished.remove()
    for record in results.results:
        value = "n/a" if record["value"] is None else f"{record['value']:.2f}"
        setting = "" if record["setting"] in PLAIN_SETTINGS else f"  [{record['setting']}]"
        print(f"{record['task']:<18} {record['split']:<5} {record['metric']:<13} {value:>7}  "
              f"(n={record['n']}){setting}")
    print(f"wrote {config.out} ({results.wall_seconds:.1f} s)")
    return 0


def _report(args: argparse.Namespace) -> int:
    from kalbert.bench import write_report
    from kalbert.bench.cards import check_cards, write_cards

    check_cards(args.cards)
    for path in [*write_report(args.results, args.out), *write_cards(args.cards, args.results)]:
        print(f"wrote {path}")
    return 0
