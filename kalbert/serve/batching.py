"""Dynamic batching: the texts of concurrent requests encoded in one batch, as text-embeddings-inference does.

One worker per model takes whatever requests are waiting when it is free (up to ``max_texts``, a request never
split), encodes their texts together on the model's thread (longest first, a forward pass per
``--batch-size`` of them, so a pass pads little) and hands each request its rows. Nothing waits on a timer:
one client is encoded at once, and many clients fill each take with the requests that queued while the
previous one ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np

Encode = Callable[[list[str], str | None], tuple[np.ndarray, np.ndarray]]
"""texts, prompt name -> their unit-length float32 vectors and token counts"""


@dataclass
class _Request:
    texts: list[str]
    prompt: str | None
    future: asyncio.Future


class Batcher:
    """Encodes texts of concurrent requests together, one batch at a time."""

    def __init__(self, encode: Encode, executor: Executor, max_texts: int,
                 on_batch: Callable[[int], None] = lambda texts: None) -> None:
        self._encode, self._executor, self.max_texts, self._on_batch = encode, executor, max_texts, on_batch
        self._queue: asyncio.Queue[_Request] | None = None
        self._worker: asyncio.Task | None = None

    def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    async def encode(self, texts: list[str], prompt: str | None) -> tuple[np.ndarray, np.ndarray]:
        """The texts' vectors and token counts, encoded in a batch with those of other requests waiting now."""
        if self._queue is None:
            self.start()
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Request(texts, prompt, future))
        return await future

    def _take(self, first: _Request) -> list[_Request]:
        batch, size = [first], len(first.texts)
        while not self._queue.empty() and size < self.max_texts:
            request = self._queue.get_nowait()
            batch.append(request)
            size += len(request.texts)
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = self._take(await self._queue.get())
            for prompt in dict.fromkeys(request.prompt for request in batch):
                group = [request for request in batch if request.prompt == prompt and not request.future.done()]
                texts = [text for request in group for text in request.texts]
                if not texts:
                    continue
                try:
                    vectors, tokens = await loop.run_in_executor(self._executor, self._encode, texts, prompt)
                except Exception as exc:  # noqa: BLE001 - the requests that asked get the error, the worker goes on
                    for request in group:
                        if not request.future.done():
                            request.future.set_exception(exc)
                    continue
                self._on_batch(len(texts))
                first = 0
                for request in group:
                    if not request.future.done():
                        request.future.set_result((vectors[first: first + len(request.texts)],
                                                   tokens[first: first + len(request.texts)]))
                    first += len(request.texts)
