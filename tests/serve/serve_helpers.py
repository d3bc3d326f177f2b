"""Helpers of the serve tests: a real `kalbert serve` on a free loopback port (uvicorn in a thread, for tests that
reach inside the service, or a `kalbert serve` process, for those that kill it), the documents indexed, and a
reranker test double."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import numpy as np

DOCS = [
    {"id": "guitar", "text": "한 남자가 기타를 치고 있다. 그는 무대 위에 서 있다.", "genre": "music", "year": 2020},
    {"id": "onion", "text": "여자가 양파를 썰고 있다.", "genre": "cooking", "year": 2021},
    {"id": "cat", "text": "고양이가 소파 위에서 자고 있다.", "genre": "pets", "year": 2020},
    {"id": "market", "text": " ".join(f"주식 시장이 {day}일에 크게 하락했다." for day in range(1, 31)),
     "genre": "news", "year": 2022},
    {"id": "law", "text": "本法自公布之日起施行。", "genre": "law", "year": 2019},
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url: str, seconds: float = 60.0, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"kalbert serve exited with {process.returncode}: {process.stderr.read()}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer /health within {seconds} s")


@contextmanager
def serving_in_thread(service) -> Iterator[str]:
    """uvicorn with the real application over ``service``, in a thread; yields its URL."""
    import uvicorn

    from kalbert.serve.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def serve_process(*flags: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`kalbert serve FLAGS` as its own process; yields its URL and the process (killed at the end)."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "kalbert", "serve", "--port", str(port), *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, 120, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)


class BigramReranker:
    """A test double of the reranker interface (kalbert.rerank): a passage scores how many of the query's
    character bigrams it holds, a real function of the two texts."""

    name = "bigrams"

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        bigrams = {query[i:i + 2] for i in range(len(query) - 1)}
        return np.array([sum(b in passage for b in bigrams) for passage in passages], dtype=np.float32)
