"""Prometheus text for /metrics: requests by endpoint and status, latency histograms, encoding batch sizes and
the size of each index, written by hand (the format is a few lines; no client library needed)."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]) -> None:
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.sum += value

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip((*self.buckets, "+Inf"), self.counts, strict=True):
            running += count
            out.append(f'{name}_bucket{{{labels}{"," if labels else ""}le="{bound}"}} {running}')
        braces = f"{{{labels}}}" if labels else ""
        return [*out, f"{name}_sum{braces} {self.sum:.6f}", f"{name}_count{braces} {running}"]


class Metrics:
    """Counters and histograms, safe to update from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = {}
        self.latency: dict[str, Histogram] = {}
        self.batches = Histogram(BATCH_BUCKETS)
        self.texts = 0

    def request(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            key = (endpoint, method, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            self.latency.setdefault(endpoint, Histogram(LATENCY_BUCKETS)).observe(seconds)

    def batch(self, texts: int) -> None:
        with self._lock:
            self.batches.observe(texts)
            self.texts += texts

    def render(self, gauges: Callable[[], dict[str, dict[str, float]]]) -> str:
        """The exposition text; ``gauges`` gives name -> labels -> value, read now (index sizes)."""
        with self._lock:
            lines = ["# HELP kalbert_requests_total HTTP requests by endpoint, method and status.",
                     "# TYPE kalbert_requests_total counter"]
            lines += [f'kalbert_requests_total{{endpoint="{e}",method="{m}",status="{s}"}} {n}'
                      for (e, m, s), n in sorted(self.requests.items())]
            lines += ["# HELP kalbert_request_seconds Time to answer a request.",
                      "# TYPE kalbert_request_seconds histogram"]
            for endpoint, histogram in sorted(self.latency.items()):
                lines += histogram.lines("kalbert_request_seconds", f'endpoint="{endpoint}"')
            lines += ["# HELP kalbert_encode_batch_texts Texts encoded together in one batch.",
                      "# TYPE kalbert_encode_batch_texts histogram",
                      *self.batches.lines("kalbert_encode_batch_texts", ""),
                      "# HELP kalbert_encoded_texts_total Texts encoded.", "# TYPE kalbert_encoded_texts_total counter",
                      f"kalbert_encoded_texts_total {self.texts}"]
        for name, values in gauges().items():
            lines += [f"# TYPE {name} gauge", *(f"{name}{{{labels}}} {value}" for labels, value in values.items())]
        return "\n".join(lines) + "\n"
