"""How `kalbert search` scales: build time, peak memory, recall@10, query latency and disk size per engine,
from 10^4 to 10^6 passages of the shared corpora, with Milvus Lite beside faiss at 10^4 and 10^5.

    .venv/bin/python benchmarks/search_scale.py --sizes 10000 100000 1000000 --milvus-sizes 10000 100000

The corpora (kowiki, NSMC, zh-laws, zh-clue) are merged at random, document by document (seed 0), into one
JSONL file, so every prefix holds them in the same proportions; a build of size N indexes its first N
passages (--passage-tokens 256, the static model: models/static-ko-zh-48k), encoded once per size
(`search build --shard 0/1`); each (engine, size) then runs `build_index` in a fresh process that resumes from
a copy of those vectors, sampling the memory of that process and its children (the Milvus Lite server) every
50 ms for the peak. Queries are the first sentences of KorSTS test and stsb-zh test (half
each), never in the corpora: latency is one query at a time at k=10 over its encoded vector (faiss on every
usable core), query encoding timed apart; recall@10 is against the exact engine's hits at the same size.
The 10^8 row is a paper estimate: each measure extrapolated along the log-log slope of its two largest
sizes, next to the bytes the vectors, graph and codes need. Writes benchmarks/results/search_scale.{json,md,png}
(or --out PREFIX).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import shlex
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text

RESULTS = Path(__file__).parent / "results"
CORPORA = ["kowiki", "nsmc", "zh-laws", "zh-clue"]
ENGINES = ["exact", "hnsw", "ivfpq"]
K = 10
PAPER_SIZE = 100_000_000
SWEEPS = {"hnsw": ("ef_search", [32, 64, 128, 256, 512]), "ivfpq": ("nprobe", [4, 8, 16, 32, 64])}
"""query-time settings measured beside the default, for choosing it"""


class PeakMemory:
    """The largest resident memory of this process and its children, sampled in a thread."""

    def __init__(self, every: float = 0.05) -> None:
        import psutil

        self.process, self.every, self.peak = psutil.Process(), every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        total = 0
        for process in [self.process, *self.process.children(recursive=True)]:
            try:
                total += process.memory_info().rss
            except Exception:  # a child that just ended
                continue
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            time.sleep(self.every)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._sample())


def write_corpus(path: Path, sources: list[str]) -> None:
    """Every document of ``sources`` in one JSONL file, merged uniformly at random (seed 0)."""
    from kalbert.search.documents import read_documents

    counts = {source: sum(1 for _ in read_documents([source])) for source in sources}
    streams = {source: read_documents([source]) for source in sources}
    left = dict(counts)
    rng = np.random.default_rng(0)
    tmp = path.with_suffix(".partial")
    with open(tmp, "w", encoding="utf-8") as handle:
        while left:
            names = list(left)
            source = names[rng.choice(len(names), p=np.array([left[n] for n in names]) / sum(left.values()))]
            document = next(streams[source])
            handle.write(json.dumps({"id": document.id, "text": document.text, "corpus": source},
                                    ensure_ascii=False) + "\n")
            left[source] -= 1
            if not left[source]:
                del left[source]
    os.replace(tmp, path)


def queries(count: int) -> list[str]:
    from kalbert.data import load_sts

    ko = [pair.sentence1 for pair in load_sts("korsts", "test")]
    zh = [pair.sentence1 for pair in load_sts("stsb-zh", "test")]
    return ko[: count // 2] + zh[: count - count // 2]


def _folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 3), "p99_ms": round(float(np.percentile(ms, 99)), 3)}


def encode_once(job: dict[str, Any]) -> dict[str, Any]:
    """Read, split and encode the first ``size`` passages into ``OUT.work`` (a one-shard build), once per size:
    every engine's build then resumes from a copy of it, so build figures are the engines' own."""
    from kalbert.search import SearchBuildConfig, build_index, work_folder

    reused = work_folder(Path(job["out"])).exists()  # a kept encoding resumes: its time is not an encoding's
    started = time.perf_counter()
    with PeakMemory() as memory:
        build_index(SearchBuildConfig(corpus=[job["corpus"]], out=job["out"], model=job["model"],
                                      max_passages=job["size"], shard="0/1"))
    if reused:
        return {"encode_seconds": None, "encode_peak_rss_mb": None, "encoding_reused": True}
    return {"encode_seconds": round(time.perf_counter() - started, 2),
            "encode_peak_rss_mb": round(memory.peak / 2**20, 1)}


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Build one (engine, size) index from the encoded passages and query it; runs in a fresh process."""
    import faiss

    from kalbert.artifact import read_meta
    from kalbert.search import SearchBuildConfig, build_index, open_index, work_folder

    faiss.omp_set_num_threads(job["threads"])
    out = Path(job["out"])
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work_folder(out), ignore_errors=True)
    shutil.copytree(work_folder(job["encoded"]), work_folder(out))
    config = SearchBuildConfig(corpus=[job["corpus"]], out=str(out), model=job["model"],
                               engine=job["engine"], max_passages=job["size"], uri=job.get("uri"))
    started = time.perf_counter()
    with PeakMemory() as memory:
        build_index(config, overwrite=True)
    build_seconds = time.perf_counter() - started
    record = read_meta(out)
    index = open_index(out)
    texts = job["queries"]
    vectors = index.encode(texts)
    index.dense.search(vectors[:8], K)  # opens the engine, loads the model: not part of the latency
    latency, rows = _timed_queries(index.dense, vectors, job["engine"])
    sweep = []
    knob = SWEEPS.get(job["engine"])
    if knob:  # the query-time setting against recall and latency, on the same built index
        name, values = knob
        for value in values:
            setattr(index.dense.index.hnsw if name == "ef_search" else index.dense.index,
                    "efSearch" if name == "ef_search" else name, value)
            swept_latency, swept_rows = _timed_queries(index.dense, vectors, job["engine"])
            sweep.append({name: value, **_percentiles(swept_latency), "rows": swept_rows})
    encode = []
    if job["engine"] == "exact":
        for text in texts[:200]:
            begin = time.perf_counter()
            index.encode([text])
            encode.append(time.perf_counter() - begin)
    engine_file = out / f"{record['engine']}.faiss"
    engine_bytes = _folder_bytes(engine_file) if engine_file.exists() else _folder_bytes(Path(job["uri"]).parent)
    return {
        "engine": record["engine"], "passages": record["passages"], "documents": record["documents"],
        "dim": record["dim"], "engine_params": record["engine_params"], "encoded_here": record["encoded_here"],
        "build_seconds": round(build_seconds, 2), "engine_seconds": record["seconds"]["engine"],
        "peak_rss_mb": round(memory.peak / 2**20, 1), **_percentiles(latency),
        "query_encode": _percentiles(encode) if encode else None,
        "engine_mb": round(engine_bytes / 2**20, 2), "folder_mb": round(_folder_bytes(out) / 2**20, 2),
        "rows": rows, "sweep": sweep,
    }


def _timed_queries(searcher, vectors: np.ndarray, engine: str) -> tuple[list[float], list[list[int]]]:
    """Seconds and top-k rows of each query, one at a time."""
    latency, rows = [], []
    for vector in vectors:
        begin = time.perf_counter()
        found = searcher.search(vector[None, :], K)
        latency.append(time.perf_counter() - begin)
        rows.append([hit["row"] for hit in found[0]] if engine == "milvus" else found[1][0].tolist())
    return latency, rows


def _in_fresh_process(function, job: dict[str, Any]) -> dict[str, Any]:
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, (job,))


def recall(rows: list[list[int]], truth: list[list[int]]) -> float:
    return round(float(np.mean([len(set(r) & set(t)) / len(t) for r, t in zip(rows, truth, strict=True)])), 4)


def paper_estimate(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each engine's measures at 10^8 along the log-log slope of its two largest sizes."""
    estimates = []
    for engine in dict.fromkeys(r["engine"] for r in results):
        rows = sorted((r for r in results if r["engine"] == engine), key=lambda r: r["passages"])
        if len(rows) < 2:
            continue
        a, b = rows[-2], rows[-1]
        scale = math.log(PAPER_SIZE / b["passages"]) / math.log(b["passages"] / a["passages"])
        estimate = {"engine": engine, "passages": PAPER_SIZE, "from": [a["passages"], b["passages"]]}
        for key in ("build_seconds", "peak_rss_mb", "p99_ms", "engine_mb"):
            if a[key] > 0 and b[key] > 0:
                estimate[key] = round(b[key] * (b[key] / a[key]) ** scale, 1)
        estimates.append(estimate)
    return estimates


def bytes_at(size: int, dim: int, params: dict[str, dict[str, Any]]) -> dict[str, float]:
    """GiB the index structures need for ``size`` passages: what the paper estimate rests on."""
    gib = 2**30
    m = params.get("hnsw", {}).get("m", 32)
    pq = params.get("ivfpq", {}).get("pq_bytes", dim // 4)
    return {"float16 vectors (exact, hnsw, ivfpq re-ranking)": round(size * dim * 2 / gib, 1),
            f"hnsw graph (M={m}: ~{2 * m} links of 4 bytes on level 0)": round(size * 2 * m * 4 / gib, 1),
            f"ivfpq codes ({pq} bytes + 8-byte id)": round(size * (pq + 8) / gib, 1)}


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("build_seconds", "build time (s)"), ("peak_rss_mb", "peak memory (MiB)"),
              ("p99_ms", "query latency p99, k=10 (ms)"), ("engine_mb", "engine on disk (MiB)")]
    figure, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    for axis, (key, label) in zip(axes.flat, panels, strict=True):
        for engine in dict.fromkeys(r["engine"] for r in results):
            rows = sorted((r for r in results if r["engine"] == engine), key=lambda r: r["passages"])
            axis.plot([r["passages"] for r in rows], [r[key] for r in rows], marker="o", label=engine)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("passages")
        axis.set_title(label)
        axis.grid(True, which="both", alpha=0.3)
    axes.flat[0].legend()
    figure.suptitle("kalbert search: how each figure grows with the index")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _or_reused(value: float | None) -> str:
    return "reused" if value is None else f"{value:,}"


def markdown(report: dict[str, Any]) -> str:
    hardware = report["hardware"]
    sizes = sorted({result["passages"] for result in report["runs"]})
    lines = [f"# Search at scale: engines from {sizes[0]:,} to {sizes[-1]:,} passages", "", "```", report["command"],
             "```", "",
             f"{describe_cpu(hardware)}, {hardware['usable_cpus']} usable CPUs, load average "
             f"{report['load_avg'][0]} before and {report['load_avg'][1]} after; model {report['model']} "
             f"({report['dim']}-d); {report['queries']} queries (KorSTS and stsb-zh test sentences). Latency is "
             "one query at a time over its encoded vector; encoding a query is reported apart. Recall@10 is "
             "against the exact engine at the same size. Reading, splitting and encoding the passages (encode s, "
             "encode MiB) is done once per size (\"reused\": kept from an earlier run in OUT.work); each engine's "
             "build (build s: assembling the vectors, the engine "
             "(engine s), the record) resumes from a copy of it, in a fresh process whose peak memory (with its "
             "children) is peak MiB: Python, torch and the loaded model alone hold about 550 MiB of it. faiss ran "
             f"on {report['faiss_threads']} threads.", "",
             "| engine | passages | encode s | encode MiB | build s | engine s | peak MiB | recall@10 | p50 ms "
             "| p99 ms | engine MiB | folder MiB |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["runs"]:
        lines.append(f"| {r['engine']} | {r['passages']:,} | {_or_reused(r['encode_seconds'])} | "
                     f"{_or_reused(r['encode_peak_rss_mb'])} | {r['build_seconds']} | {r['engine_seconds']} | "
                     f"{r['peak_rss_mb']:,} | {r['recall_at_10']} | "
                     f"{r['p50_ms']} | {r['p99_ms']} | {r['engine_mb']:,} | {r['folder_mb']:,} |")
    encode = next((r["query_encode"] for r in reversed(report["runs"]) if r["query_encode"]), None)
    if encode:
        lines += ["", f"Encoding one query: p50 {encode['p50_ms']} ms, p99 {encode['p99_ms']} ms."]
    lines += ["", "Query-time settings on the same indexes:", "",
              "| engine | passages | setting: recall@10, p99 ms |", "|---|---:|---|"]
    for r in report["runs"]:
        if r["sweep"]:
            name = next(iter(r["sweep"][0]))
            lines.append(f"| {r['engine']} | {r['passages']:,} | " + "; ".join(
                f"{name} {p[name]}: {p['recall_at_10']}, {p['p99_ms']}" for p in r["sweep"]) + " |")
    lines += ["", "![how each figure grows](search_scale.png)", "",
              "## Paper estimate at 10^8 passages", "",
              "Each measure extrapolated along the log-log slope between the two largest sizes measured:", "",
              "| engine | from sizes | build s | peak MiB | p99 ms | engine MiB |", "|---|---|---:|---:|---:|---:|"]
    for e in report["paper_estimate"]:
        lines.append(f"| {e['engine']} | {e['from'][0]:,} -> {e['from'][1]:,} | {e.get('build_seconds', '')} | "
                     f"{e.get('peak_rss_mb', '')} | {e.get('p99_ms', '')} | {e.get('engine_mb', '')} |")
    lines += ["", "What the structures alone need at 10^8 (GiB):", ""]
    lines += [f"- {name}: {gib}" for name, gib in report["bytes_at_paper_size"].items()]
    lines += ["", "At that size one machine holds IVF-PQ codes in RAM but not HNSW's float16 vectors plus graph "
              "(memory-mapped, they page from disk); past it, `--engine milvus --uri http://host:19530` spreads "
              "the collection over a Milvus cluster, and `--shard I/N` splits the encoding.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--milvus-sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--engines", nargs="+", default=ENGINES, choices=ENGINES)
    parser.add_argument("--model", default="models/static-ko-zh-48k")
    parser.add_argument("--corpus", nargs="+", default=CORPORA)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="faiss (OpenMP) threads while building and querying (default: every usable CPU)")
    parser.add_argument("--work", type=Path, default=Path("outputs/search_scale"),
                        help="scratch folder: the merged corpus (kept for reruns) and the indexes")
    parser.add_argument("--out", type=Path, help="output prefix (default: benchmarks/results/search_scale)")
    args = parser.parse_args()
    os.environ["TQDM_DISABLE"] = "1"  # the builds' progress bars, in every child process
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = args.work / "corpus.jsonl"
    if not corpus.exists():
        write_corpus(corpus, args.corpus)
    texts = queries(args.queries)
    load_before = os.getloadavg()[0]
    results = []
    jobs = [(engine, size) for size in args.sizes for engine in ["exact", *[e for e in args.engines if e != "exact"]]]
    jobs += [("milvus", size) for size in args.milvus_sizes]
    truth: dict[int, list[list[int]]] = {}
    encoded: dict[int, dict[str, Any]] = {}
    for engine, size in jobs:
        if size not in encoded:
            print(f"encoding {size:,} passages ...", flush=True)
            encoded[size] = _in_fresh_process(encode_once, {"size": size, "corpus": str(corpus), "model": args.model,
                                                            "out": str(args.work / f"encoded-{size}")})
        job = {"engine": engine, "size": size, "corpus": str(corpus), "model": args.model, "queries": texts,
               "out": str(args.work / f"{engine}-{size}"), "encoded": str(args.work / f"encoded-{size}"),
               "threads": args.threads}
        if engine == "milvus":
            job["uri"] = str(args.work / f"milvus-lite-{size}" / "milvus.db")
            shutil.rmtree(Path(job["uri"]).parent, ignore_errors=True)
        if size not in truth and engine != "exact":
            sys.exit(f"{engine} at {size} needs the exact engine at {size} first")
        print(f"{engine} at {size:,} passages ...", flush=True)
        result = {**_in_fresh_process(run_one, job), **encoded[size]}
        if engine == "exact":
            truth[size] = result["rows"]
        result["recall_at_10"] = recall(result.pop("rows"), truth[size])
        for point in result["sweep"]:
            point["recall_at_10"] = recall(point.pop("rows"), truth[size])
        print(json.dumps(result), flush=True)
        results.append(result)
    prefix = args.out or RESULTS / "search_scale"
    params = {r["engine"]: r["engine_params"] for r in results}
    report = {"command": shlex.join(["python", *sys.argv]), "model": args.model, "dim": results[0]["dim"],
              "queries": len(texts), "k": K, "corpus": args.corpus, "faiss_threads": args.threads, "runs": results,
              "paper_estimate": paper_estimate(results),
              "bytes_at_paper_size": bytes_at(PAPER_SIZE, results[0]["dim"], params),
              "load_avg": [round(load_before, 2), round(os.getloadavg()[0], 2)], "hardware": hardware_block()}
    atomic_write_json(prefix.with_suffix(".json"), report)
    plot(results, prefix.with_suffix(".png"))
    atomic_write_text(prefix.with_suffix(".md"), markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
