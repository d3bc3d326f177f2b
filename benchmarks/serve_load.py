"""Load test of `kalbert serve` on the loopback address, beside the in-process Python API on the same work.

    .venv/bin/python benchmarks/serve_load.py            # 10^5 passages: benchmarks/results/serve_load.{json,md}
    .venv/bin/python benchmarks/serve_load.py --small    # 2,000 passages, a smoke test: outputs/serve_load_small.*

For each model (models/static-ko-zh-48k, models/sbert-ko-zh-retrieval): an index of the first --passages passages of
kowiki and zh-clue documents, taken in turn (--passage-tokens 256, BM25 beside; built once under --work and reused),
then `kalbert serve` on it as its own process, the seconds from its start to its first /search answer recorded.
Clients: 1, 8 and 32 at once (in this process, one keep-alive HTTP/1.1 connection each on asyncio streams, a client
that costs the shared CPUs little, as wrk does; each sends its next request when the last is answered and checks
every answer), at least --requests requests and --seconds seconds per level (a few requests are over in a fraction
of a second, too short for a steady rate). Search: hybrid, k=10, over KorQuAD and CMRC 2018 test questions (half
each, never indexed), query encoding included. Embeddings: /v1/embeddings with --embed-batch passages of the index
per request. Each gives requests/s (texts/s), p50 and p99 latency. Then the server stops and the same index, opened
in this process (`open_index`, faiss on one thread as in the server), answers the same questions one at a time, and
the model encodes the same passages in batches of the server's --batch-size for --seconds: the overhead ratios are
server p50 / in-process p50 at one client and server texts/s at 8 clients / in-process texts/s. The clients share
the CPU with the server, as on any one machine.
Records the command, the hardware block (CPU, instruction sets) and the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
MODELS = [ROOT / "models" / "static-ko-zh-48k", ROOT / "models" / "sbert-ko-zh-retrieval"]
SOURCES = ["kowiki", "zh-clue"]
CLIENTS = (1, 8, 32)
TARGETS = {"startup_seconds": 15.0, "static_p50_ms": 20.0, "retrieval_p50_ms": 60.0, "embeddings_ratio": 0.8}


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def write_corpus(path: Path, documents: int) -> None:
    """The first ``documents`` documents of the sources, taken in turn, as JSONL (each document is at least one
    passage, so the index's first --passages passages are all there)."""
    from kalbert.search.documents import read_documents

    if path.exists():
        return
    streams = [read_documents([source]) for source in SOURCES]
    tmp = path.with_suffix(".partial")
    written = 0
    with open(tmp, "w", encoding="utf-8") as handle:
        while streams and written < documents:
            for stream in list(streams):
                document = next(stream, None)
                if document is None:
                    streams.remove(stream)
                    continue
                handle.write(json.dumps({"id": document.id, "text": document.text,
                                         "corpus": document.id.rsplit(":", 1)[0]}, ensure_ascii=False) + "\n")
                written += 1
    os.replace(tmp, path)


def index_for(model: Path, corpus: Path, passages: int, work: Path) -> Path:
    """The index of ``model`` over the corpus's first ``passages`` passages, built once, and again when the model's
    weights have changed since (the server refuses an index built by other weights)."""
    from kalbert.artifact import read_meta
    from kalbert.search import SearchBuildConfig, build_index
    from kalbert.search.model import check_model, model_hash

    out = work / f"{model.name}-{passages}"
    built = read_meta(out)
    if built.get("passages") == passages and model_hash(built["model"]) == model_hash(check_model(model)):
        return out
    build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(out), model=str(model), lexical="bm25",
                                  max_passages=passages), overwrite=True)
    return out


def questions(count: int) -> list[str]:
    from kalbert.data import load_qa

    found = []
    for name in ("korquad", "cmrc2018"):
        distinct = list(dict.fromkeys(example.question for example in load_qa(name, "test")))
        found.append(distinct[: count - count // 2] if name == "korquad" else distinct[: count // 2])
    return [q for pair in zip(*found, strict=False) for q in pair]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(index: Path, batch_size: int) -> tuple[subprocess.Popen, str, float]:
    """`kalbert serve` on ``index``; (process, URL, seconds from its start to its first /search answer)."""
    import httpx

    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "kalbert", "serve", "--index", str(index), "--port", str(port),
                                "--rerank-model", "none", "--compact-after", "0", "--batch-size", str(batch_size)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"kalbert serve exited: {process.stderr.read()}")
        try:
            if httpx.post(f"{url}/search", json={"query": "시작", "k": 1}, timeout=5).status_code == 200:
                return process, url, time.perf_counter() - started
        except httpx.HTTPError:
            time.sleep(0.1)


def stop_server(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2)}


class _Connection:
    """One keep-alive HTTP/1.1 connection that sends ready-made POST requests and reads each answer by its
    Content-Length. httpx spends a few milliseconds of Python per request, and the clients share the server's 2
    CPUs: at 8 clients they took about half of them (py-spy, stop 85), so the test measured its clients. A load
    generator should cost the machine little, as wrk does; every answer is still checked."""

    def __init__(self, url: str) -> None:
        self.host, self.port = url.removeprefix("http://").split(":")
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> _Connection:
        self.reader, self.writer = await asyncio.open_connection(self.host, int(self.port))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.writer.close()
        await self.writer.wait_closed()

    def request(self, path: str, body: dict[str, Any]) -> bytes:
        payload = json.dumps(body, ensure_ascii=False).encode()
        return (f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload

    async def post(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        length = next((int(v) for k, v in headers.items() if k.lower() == "content-length"), None)
        if length is None:
            raise RuntimeError(f"an answer without Content-Length: {lines[0]}")
        return int(lines[0].split(" ", 2)[1]), await self.reader.readexactly(length)


def _answered(path: str, body: dict[str, Any], status: int, answer: bytes) -> None:
    """Raise unless the server answered ``body`` in full: one result per query, one vector per text."""
    if status != 200:
        raise RuntimeError(f"{path} answered {status}: {answer[:200]!r}")
    found = json.loads(answer)
    sent = body.get("input", body.get("query"))
    wanted = len(sent) if isinstance(sent, list) else 1
    got = len(found["data"] if path == "/v1/embeddings" else found["results"])
    if got != wanted:
        raise RuntimeError(f"{path} answered {got} results for {wanted} inputs")


async def _load(url: str, path: str, bodies: list[dict[str, Any]], clients: int,
                seconds: float = 0.0) -> tuple[list[float], float]:
    """Send ``bodies`` from ``clients`` connections at once, each sending its next request when the last is
    answered, and go on cycling them until ``seconds`` have passed: (each request's seconds, the wall seconds)."""
    latencies: list[float] = []
    sent = 0
    started = time.perf_counter()

    def next_body() -> dict[str, Any] | None:
        nonlocal sent
        if sent >= len(bodies) and time.perf_counter() - started >= seconds:
            return None
        sent += 1
        return bodies[(sent - 1) % len(bodies)]

    async def client() -> None:
        async with _Connection(url) as connection:
            while (body := next_body()) is not None:
                request = connection.request(path, body)
                begin = time.perf_counter()
                status, answer = await connection.post(request)
                latencies.append(time.perf_counter() - begin)
                _answered(path, body, status, answer)

    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, time.perf_counter() - started


def run_load(url: str, path: str, bodies: list[dict[str, Any]], clients: int, texts_per_request: int,
             warm: int, seconds: float) -> dict[str, Any]:
    asyncio.run(_load(url, path, bodies[:warm], min(clients, warm)))
    before = load_average()
    latencies, wall = asyncio.run(_load(url, path, bodies, clients, seconds))
    return {"endpoint": path, "clients": clients, "requests": len(latencies), **percentiles(latencies),
            "seconds": round(wall, 1), "requests_per_s": round(len(latencies) / wall, 2),
            "texts_per_s": round(len(latencies) * texts_per_request / wall, 1),
            "load_average_before": before, "load_average_after": load_average()}


def in_process(index_folder: Path, queries: list[str], texts: list[str], batch_size: int,
               seconds: float) -> dict[str, Any]:
    """The same questions through the Python API, one at a time, and the same passages encoded in batches, over
    and over for ``seconds`` as the server was loaded."""
    import faiss

    from kalbert.precision import autocast
    from kalbert.search import open_index
    from kalbert.search.model import model_prompts

    faiss.omp_set_num_threads(1)  # as the server runs it: one query at a time gains nothing from more
    index = open_index(index_folder)
    index.warm_up()
    seconds_each = []
    for query in queries:
        begin = time.perf_counter()
        index.query(query, k=10, mode="hybrid")
        seconds_each.append(time.perf_counter() - begin)
    model, prompt = index.model, model_prompts(index.model).passage_name
    encoded, spent = 0, 0.0
    with autocast("cpu", index.bf16):  # the precision the server encodes in
        model.encode(texts[:batch_size], prompt_name=prompt, batch_size=batch_size, normalize_embeddings=True)
        while spent < seconds or not encoded:
            begin = time.perf_counter()
            model.encode(texts, prompt_name=prompt, batch_size=batch_size, normalize_embeddings=True)
            spent += time.perf_counter() - begin
            encoded += len(texts)
    return {"search": {**percentiles(seconds_each), "requests_per_s": round(len(queries) / sum(seconds_each), 2)},
            "encode_texts_per_s": round(encoded / spent, 1), "encode_seconds": round(spent, 1)}


def measure(model: Path, corpus: Path, args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    from kalbert.search import open_index

    folder = index_for(model, corpus, args.passages, args.work)
    texts = open_index(folder).store.passages(0, min(args.embed_texts, args.passages))
    process, url, startup = start_server(folder, args.batch_size)
    try:
        rows = []
        for clients in CLIENTS:
            count = max(args.requests, clients * args.per_client)
            search = [{"query": queries[i % len(queries)], "k": 10, "mode": "hybrid"} for i in range(count)]
            rows.append(run_load(url, "/search", search, clients, 1, len(queries) // 4, args.seconds))
            embed = [{"input": [texts[(i * args.embed_batch + j) % len(texts)] for j in range(args.embed_batch)],
                      "model": model.name, "encoding_format": "base64"} for i in range(max(count // 4, clients * 4))]
            rows.append(run_load(url, "/v1/embeddings", embed, clients, args.embed_batch, 8, args.seconds))
    finally:
        stop_server(process)
    local = in_process(folder, queries, texts, args.batch_size, args.seconds)
    at = {(row["endpoint"], row["clients"]): row for row in rows}
    return {"model": model.name, "index": str(folder), "passages": args.passages, "startup_seconds": round(startup, 2),
            "rows": rows, "in_process": local,
            "search_overhead_p50": round(at[("/search", 1)]["p50_ms"] / local["search"]["p50_ms"], 2),
            "embeddings_ratio_8_clients": round(at[("/v1/embeddings", 8)]["texts_per_s"]
                                                / local["encode_texts_per_s"], 3)}


def targets(results: list[dict[str, Any]]) -> dict[str, Any]:
    by_model = {r["model"]: r for r in results}
    p50 = {name: next(row["p50_ms"] for row in r["rows"] if row["endpoint"] == "/search" and row["clients"] == 1)
           for name, r in by_model.items()}
    checks = {"startup_seconds": (max(r["startup_seconds"] for r in results), "<="),
              "static_p50_ms": (p50.get("static-ko-zh-48k"), "<="),
              "retrieval_p50_ms": (p50.get("sbert-ko-zh-retrieval"), "<="),
              "embeddings_ratio": (min(r["embeddings_ratio_8_clients"] for r in results), ">=")}
    return {name: {"measured": value, "target": TARGETS[name], "met": value is not None and (
        value <= TARGETS[name] if way == "<=" else value >= TARGETS[name])} for name, (value, way) in checks.items()}


def markdown(report: dict[str, Any]) -> str:
    lines = ["# `kalbert serve` under load, beside the in-process Python API", "", "```", report["command"], "```", "",
             f"{report['passages']:,} passages per index; {describe_cpu(report['hardware'])}, "
             f"{report['hardware'].get('usable_cpus')} usable CPUs; load average (1 min) before/after: "
             f"{report['load_average_before']} -> {report['load_average_after']}. Search: hybrid, k=10, query "
             f"encoding included; embeddings: {report['embed_batch']} passages per request; each level runs "
             f"{report['seconds']} s at least. Clients (lean asyncio HTTP/1.1 connections) run in the benchmark's "
             "process on the same CPUs as the server.", "",
             "| model | endpoint | clients | requests/s | texts/s | p50 ms | p99 ms | load before -> after |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for result in report["models"]:
        for row in result["rows"]:
            lines.append(f"| {result['model']} | {row['endpoint']} | {row['clients']} | {row['requests_per_s']} | "
                         f"{row['texts_per_s']} | {row['p50_ms']} | {row['p99_ms']} | "
                         f"{row['load_average_before']} -> {row['load_average_after']} |")
    lines += ["", "| model | start-up to first answer (s) | in-process search p50 / p99 ms | server p50 / in-process "
                  "p50 (1 client) | in-process encode texts/s | server texts/s at 8 clients / in-process |",
              "|---|---:|---:|---:|---:|---:|"]
    for result in report["models"]:
        local = result["in_process"]
        lines.append(f"| {result['model']} | {result['startup_seconds']} | {local['search']['p50_ms']} / "
                     f"{local['search']['p99_ms']} | {result['search_overhead_p50']}x | "
                     f"{local['encode_texts_per_s']} | {result['embeddings_ratio_8_clients']} |")
    lines += ["", "| target | measured | wanted | met |", "|---|---:|---:|---|"]
    for name, check in report["targets"].items():
        wanted = f"{'>=' if name == 'embeddings_ratio' else '<='} {check['target']}"
        lines.append(f"| {name} | {check['measured']} | {wanted} | {'yes' if check['met'] else 'no'} |")
    return "\n".join(lines + ["", f"Conditions: {report['note']}", ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="2,000 passages and few requests: a smoke test")
    parser.add_argument("--passages", type=int, help="passages per index (default 100,000; --small: 2,000)")
    parser.add_argument("--questions", type=int, default=200, help="test questions sent as queries")
    parser.add_argument("--requests", type=int, help="search requests per level at least (default 200; --small 40)")
    parser.add_argument("--per-client", type=int, default=10, help="search requests per client at least")
    parser.add_argument("--seconds", type=float, help="each level (and the in-process encoding) runs this long at "
                                                      "least, the requests cycled (default 10; --small 1)")
    parser.add_argument("--embed-batch", type=int, default=32,
                        help="passages per /v1/embeddings request (clients that embed documents send many: "
                             "LlamaIndex 100, LangChain up to 1000)")
    parser.add_argument("--embed-texts", type=int, default=512, help="distinct passages the embedding requests cycle")
    parser.add_argument("--batch-size", type=int, default=64, help="the server's --batch-size and the in-process one")
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "serve_load", help="corpus and indexes")
    parser.add_argument("--out", help="results prefix (default benchmarks/results/serve_load; --small: "
                                      "outputs/serve_load_small)")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    args.passages = args.passages or (2000 if args.small else 100_000)
    args.requests = args.requests or (40 if args.small else 200)
    args.seconds = args.seconds if args.seconds is not None else (1.0 if args.small else 10.0)
    args.questions = min(args.questions, 40) if args.small else args.questions
    out = Path(args.out or (ROOT / "outputs" / "serve_load_small" if args.small
                            else Path(__file__).parent / "results" / "serve_load"))
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = args.work / f"corpus-{args.passages}.jsonl"
    write_corpus(corpus, args.passages)
    queries = questions(args.questions)
    report: dict[str, Any] = {"command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
                              "passages": args.passages, "embed_batch": args.embed_batch, "seconds": args.seconds,
                              "clients": list(CLIENTS),
                              "questions": len(queries), "hardware": hardware_block(),
                              "load_average_before": load_average(), "note": args.note}
    for model in MODELS:  # every index before any measurement: the in-process runs set OpenMP to one thread
        index_for(model, corpus, args.passages, args.work)
    report["models"] = [measure(model, corpus, args, queries) for model in MODELS]
    report["load_average_after"] = load_average()
    report["targets"] = targets(report["models"])
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out.with_suffix(".json"), report)
    text = markdown(report)
    atomic_write_text(out.with_suffix(".md"), text)
    print(text)


if __name__ == "__main__":
    main()
