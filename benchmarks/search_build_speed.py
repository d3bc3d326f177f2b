"""How long `kalbert search build` takes to index a million corpus sentences, per sentence model.

    .venv/bin/python benchmarks/search_build_speed.py --model models/static-ko-zh-48k \\
        --model models/sbert-ko-zh-small --model ~/.cache/kalbert/teachers/multilingual-e5-small \\
        --sentences 1000000 --sample 20000

The first --sentences sentences of the --corpus sources, in order, are written to one text file; the first
--model indexes all of them (reading, encoding and writing the index, as a user's build does), then answers
the first --queries of them as queries (top 10, exact search). Each further
model indexes only every n-th of them (about --sample sentences), and its time for all of them is extrapolated
linearly (an encoder's time grows with the sentence count); the ratio column compares every model with
the first. Writes benchmarks/results/search_build_speed.{json,md} (or --out PREFIX) with the load
average before and after each row.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator
from itertools import chain, islice
from pathlib import Path

from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.search import Index, SearchBuildConfig, build_index
from kalbert.search.documents import read_documents

RESULTS = Path(__file__).parent / "results"


def _lines(source: str) -> Iterator[str]:
    """The paragraph lines of a corpus (or the lines of a file), each indexed as one passage."""
    for document in read_documents([source]):
        yield from (line for line in document.text.split("\n") if line.strip())


def _write_corpus(sources: list[str], sentences: int, sample: int, folder: Path) -> tuple[Path, Path]:
    """The first ``sentences`` sentences of ``sources`` as a text file, and every n-th of them as a second one
    of about ``sample`` sentences (the same mix of short and long)."""
    lines = list(islice(chain.from_iterable(_lines(source) for source in sources), sentences))
    if len(lines) < sentences:
        raise SystemExit(f"{', '.join(sources)} hold only {len(lines)} sentences: add --corpus sources")
    full, spread = folder / "corpus.txt", folder / "sample.txt"
    full.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spread.write_text("\n".join(lines[:: max(1, sentences // sample)]) + "\n", encoding="utf-8")
    return full, spread


def _build(model: Path, corpus: str, sentences: int, folder: Path) -> dict:
    """Index the first ``sentences`` corpus sentences with ``model``; its wall time and the load around it."""
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    index = build_index(SearchBuildConfig(corpus=corpus, out=str(folder), model=str(model),
                                          max_passages=sentences))
    seconds = time.perf_counter() - started
    return {"model": str(model), "sentences": len(Index(index)), "seconds": round(seconds, 2),
            "load_avg": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, action="append", required=True,
                        help="sentence-model folder; the first indexes every sentence, the others --sample")
    parser.add_argument("--corpus", nargs="+", default=["nsmc", "kowiki", "zh-clue", "zh-laws"],
                        help="corpus names or text files (one sentence per line), read in this order")
    parser.add_argument("--sentences", type=int, default=1_000_000)
    parser.add_argument("--sample", type=int, default=20_000, help="sentences indexed by the other models")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--out", type=Path, help="output prefix (default: benchmarks/results/search_build_speed)")
    args = parser.parse_args()
    hardware = hardware_block()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        corpus, spread = _write_corpus(args.corpus, args.sentences, args.sample, Path(scratch))
        first = _build(args.model[0], str(corpus), args.sentences, Path(scratch) / "first")
        index = Index(Path(scratch) / "first")
        queries = list(islice(_lines(str(corpus)), args.queries))
        index.query(queries[:1], k=10)  # loads the model
        started = time.perf_counter()
        index.query(queries, k=10)
        first["ms_per_query"] = round(1000 * (time.perf_counter() - started) / len(queries), 2)
        rows.append(first)
        for model in args.model[1:]:
            rows.append(_build(model, str(spread), args.sample, Path(scratch) / model.name))
    for row in rows:
        row["seconds_per_million"] = round(row["seconds"] * 1_000_000 / row["sentences"], 1)
        row["times_first"] = round(row["seconds_per_million"] / rows[0]["seconds_per_million"], 1)
    report = {"command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]), "corpus": args.corpus,
              "rows": rows, "hardware": hardware}
    prefix = args.out or RESULTS / "search_build_speed"
    atomic_write_json(prefix.with_suffix(".json"), report)
    table = ["| model | sentences indexed | seconds | seconds per 1M sentences | x the first | load avg |",
             "|---|---:|---:|---:|---:|---|"]
    table += [f"| {r['model']} | {r['sentences']:,} | {r['seconds']} | {r['seconds_per_million']:,} | "
              f"{r['times_first']}x | {r['load_avg'][0]} -> {r['load_avg'][1]} |" for r in rows]
    text = "\n".join([
        "# Building a search index over a million sentences", "", "```", report["command"], "```", "",
        f"`kalbert search build` on the first {args.sentences:,} sentences of {', '.join(args.corpus)} "
        f"({describe_cpu(hardware)}, "
        f"{hardware['usable_cpus']} usable CPUs): reading the corpus, encoding, writing the float16 index. "
        f"The first model indexes them all; the others index every n-th (about {args.sample:,}) and are "
        f"extrapolated. "
        f"Exact top-10 search over the first model's index: {first['ms_per_query']} ms per query "
        f"({len(queries)} queries).", "", *table, ""])
    atomic_write_text(prefix.with_suffix(".md"), text)
    print(text)


if __name__ == "__main__":
    main()
