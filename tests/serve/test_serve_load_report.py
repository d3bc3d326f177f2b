"""benchmarks/serve_load.py without a server: how its rows become the targets' verdicts and the report."""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("serve_load")


def result(model: str, search_p50: float, ratio: float, startup: float) -> dict:
    rows = [{"endpoint": endpoint, "clients": clients, "requests": 100, "p50_ms": search_p50 * clients,
             "p99_ms": 2 * search_p50 * clients, "requests_per_s": 50.0, "texts_per_s": 50.0,
             "load_average_before": 1.0, "load_average_after": 1.1}
            for clients in (1, 8, 32) for endpoint in ("/search", "/v1/embeddings")]
    return {"model": model, "startup_seconds": startup, "rows": rows, "embeddings_ratio_8_clients": ratio,
            "search_overhead_p50": 1.2, "in_process": {"search": {"p50_ms": 10.0, "p99_ms": 20.0},
                                                       "encode_texts_per_s": 500.0}}


def test_targets_and_report(bench):
    results = [result("static-ko-zh-48k", 12.0, 0.7, 9.5), result("sbert-ko-zh-retrieval", 61.0, 0.95, 14.0)]
    checks = bench.targets(results)
    assert checks["startup_seconds"] == {"measured": 14.0, "target": 15.0, "met": True}
    assert checks["static_p50_ms"]["met"] and not checks["retrieval_p50_ms"]["met"]
    assert checks["embeddings_ratio"] == {"measured": 0.7, "target": 0.8, "met": False}
    report = {"command": "python benchmarks/serve_load.py", "passages": 100_000, "embed_batch": 8,
              "seconds": 10.0, "hardware": {"cpu": "AMD EPYC 7B13", "instruction_sets": ["avx2"], "usable_cpus": 2},
              "load_average_before": 1.0, "load_average_after": 1.2, "models": results, "targets": checks,
              "note": "quiet machine"}
    text = bench.markdown(report)
    assert "| static-ko-zh-48k | /search | 1 | 50.0 | 50.0 | 12.0 | 24.0 | 1.0 -> 1.1 |" in text
    assert "| retrieval_p50_ms | 61.0 | <= 60.0 | no |" in text and "AMD EPYC 7B13, AVX2" in text
    assert "each level runs 10.0 s at least" in text


async def _fake_server(vectors_per_answer: int) -> asyncio.Server:
    """An HTTP/1.1 server on the loopback that answers every POST with ``vectors_per_answer`` embeddings."""
    body = json.dumps({"data": [{"embedding": [0.0]}] * vectors_per_answer}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = int(next(line.split(b": ")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, "127.0.0.1", 0)


@pytest.mark.parametrize("vectors, fails", [(2, False), (1, True)])
def test_load_client_checks_every_answer(bench, vectors, fails):
    """The lean client sends every body over keep-alive connections and refuses an answer that is short."""

    async def run() -> tuple[list[float], float]:
        server = await _fake_server(vectors)
        port = server.sockets[0].getsockname()[1]
        bodies = [{"input": ["a", "b"], "model": "m"}] * 10
        async with server:
            return await bench._load(f"http://127.0.0.1:{port}", "/v1/embeddings", bodies, clients=3)

    if fails:
        with pytest.raises(RuntimeError, match="1 results for 2 inputs"):
            asyncio.run(run())
    else:
        latencies, wall = asyncio.run(run())
        assert len(latencies) == 10 and wall > 0
