"""What one `kalbert serve` process holds: its indexes, the models that encode for them and for
/v1/embeddings, the reranker, one thread that runs the models, and background compactions.

Models run on one thread (each batch already uses every core; two at once would only contend), index
searches on the server's thread pool; the application batches what goes to each model (kalbert.serve.batching).
Every model is loaded and warmed up before the port opens, so the first request is answered as fast as the
later ones.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.artifact import read_meta
from kalbert.errors import KalbertError
from kalbert.precision import autocast, encoding_bf16
from kalbert.search.index import Index
from kalbert.search.model import Prompts, check_model, model_prompts
from kalbert.search.reranking import Reranker, default_reranker, load_reranker, reranker_name
from kalbert.serve.errors import ApiError
from kalbert.serve.metrics import Metrics
from kalbert.serve.settings import ServeSettings

log = logging.getLogger("kalbert.serve")
API_KEY_ENV = "KALBERT_API_KEY"


@dataclass
class ServedModel:
    """A sentence model as /v1/embeddings and /search use it."""

    name: str
    path: Path
    model: Any
    bf16: bool
    dims: tuple[int, ...]
    """output sizes it was trained for, largest first (Matryoshka prefixes of a static model)"""
    batch_size: int = 64
    """texts per forward pass"""

    @property
    def prompts(self) -> Prompts:
        return model_prompts(self.model)

    def encode(self, texts: list[str], prompt: str | None) -> np.ndarray:
        """Unit-length float32 vectors of ``texts`` with the prompt called ``prompt`` (None: none)."""
        return self.embed(texts, prompt)[0]

    def embed(self, texts: list[str], prompt: str | None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode`, and how many tokens the model read of each text (what an OpenAI response's ``usage``
        counts), from the one tokenization that encodes them: texts sorted by length and encoded ``batch_size``
        at a time, as ``SentenceTransformer.encode`` runs, so a batch pads little."""
        import torch

        prompt_text = self.model.prompts.get(prompt) if prompt else None
        vectors = np.empty((len(texts), self.dims[0]), dtype=np.float32)
        tokens = np.empty(len(texts), dtype=np.int64)
        order = np.argsort([-len(text) for text in texts], kind="stable")
        with torch.inference_mode(), autocast("cpu", self.bf16):
            for start in range(0, len(order), self.batch_size):
                rows = order[start: start + self.batch_size]
                features = self.model.preprocess([texts[i] for i in rows], prompt=prompt_text)
                tokens[rows] = _tokens_read(features)
                embedded = self.model(features)["sentence_embedding"].float()
                vectors[rows] = torch.nn.functional.normalize(embedded, dim=-1).numpy()
        return vectors, tokens


def _tokens_read(features: dict[str, Any]) -> np.ndarray:
    """Tokens per text in a batch's model inputs: a transformer's attention mask (prompt and special tokens
    included), or a static model's bag offsets."""
    if "attention_mask" in features:
        return features["attention_mask"].sum(dim=1).numpy()
    offsets = features["offsets"].numpy()
    return np.diff(offsets, append=len(features["input_ids"]))


def _dims(folder: Path, full: int) -> tuple[int, ...]:
    trained = read_meta(folder).get("matryoshka_dims") or []
    return tuple(sorted({full, *(int(d) for d in trained if 0 < int(d) <= full)}, reverse=True))


def _reranker(settings: ServeSettings) -> Reranker | None:
    folder = default_reranker() if settings.rerank_model is None else settings.rerank_model
    if folder is None or str(folder).lower() == "none":
        return None
    return load_reranker(folder)


class Service:
    """Indexes by name, models by name, the reranker, and the machinery around them."""

    def __init__(self, settings: ServeSettings, indexes: dict[str, Index], models: dict[str, ServedModel],
                 index_models: dict[str, str], reranker: Reranker | None) -> None:
        self.settings, self.indexes, self.models = settings, indexes, models
        self.index_models = index_models
        """index name -> the name of the model that encodes its queries"""
        self.reranker = reranker
        self.reranker_name = reranker_name(reranker) if reranker is not None else None
        self.api_key = settings.api_key or os.environ.get(API_KEY_ENV) or None
        self.metrics = Metrics()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="kalbert-model")
        self._compacting: set[str] = set()
        self._compacting_lock = threading.Lock()

    @classmethod
    def load(cls, settings: ServeSettings) -> Service:
        """Open every index, load every model and the reranker, and warm them up."""
        if not settings.index and not settings.model:
            raise KalbertError("nothing to serve", "give --index FOLDER (and/or --model FOLDER)")
        indexes: dict[str, Index] = {}
        for folder in settings.index:
            name = Path(folder).resolve().name
            if name in indexes:
                raise KalbertError(f"two indexes are named {name!r}", "serve folders with different names")
            indexes[name] = Index(folder)
        models: dict[str, ServedModel] = {}
        by_path: dict[Path, str] = {}
        index_models: dict[str, str] = {}

        def add(path: Path, model: Any, bf16: bool) -> str:
            path = path.resolve()
            if path in by_path:
                return by_path[path]
            name = path.name
            if name in models:
                raise KalbertError(f"two models are named {name!r}", "serve model folders with different names")
            models[name] = ServedModel(name, path, model, bf16, _dims(path, model.get_embedding_dimension()),
                                       settings.batch_size)
            by_path[path] = name
            return name

        for name, index in indexes.items():
            index_models[name] = add(Path(index.record["model"]["path"]), index.model, index.bf16)
        for folder in settings.model:
            path = Path(folder).expanduser()
            if path.resolve() not in by_path:
                check_model(path)
                from kalbert.sentence.encoder import load_sentence_model

                add(path, load_sentence_model(path), encoding_bf16("auto", "torch")[0])
        service = cls(settings, indexes, models, index_models, _reranker(settings))
        service.warm_up()
        return service

    def warm_up(self) -> None:
        """One encoding per model and every index's lookups loaded: the first request pays no loading."""
        for served in self.models.values():
            served.encode(["warm up"], None)
        for index in self.indexes.values():
            index.warm_up()

    def index(self, name: str | None) -> tuple[str, Index]:
        if name is None:
            if not self.indexes:
                raise ApiError(404, "this server serves no index (start kalbert serve with --index FOLDER)", "index")
            name = next(iter(self.indexes))
        if name not in self.indexes:
            raise ApiError(404, f"no index {name!r}; this server has {', '.join(map(repr, self.indexes)) or 'none'}",
                           "index")
        return name, self.indexes[name]

    def model(self, name: str) -> ServedModel:
        served = self.models.get(name) or next((m for m in self.models.values() if str(m.path) == name), None)
        if served is None:
            raise ApiError(404, f"no model {name!r}; this server has {', '.join(map(repr, self.models))}", "model")
        return served

    def compact_when_due(self, name: str, index: Index) -> None:
        """Start compacting ``index`` in the background once enough changed (one compaction per index at once)."""
        due = self.settings.compact_after and index.changes >= self.settings.compact_after
        with self._compacting_lock:
            if not due or name in self._compacting:
                return
            self._compacting.add(name)

        def run() -> None:
            try:
                log.warning("compacting index %s: %s", name, json.dumps(index.compact()))
            except Exception:  # noqa: BLE001 - the index stays as it was; queries and writes go on
                log.exception("compacting index %s failed", name)
            finally:
                with self._compacting_lock:
                    self._compacting.discard(name)

        threading.Thread(target=run, name=f"kalbert-compact-{name}", daemon=True).start()

    def gauges(self) -> dict[str, dict[str, float]]:
        labels = {name: f'index="{name}"' for name in self.indexes}
        return {
            "kalbert_index_passages": {labels[n]: len(i) for n, i in self.indexes.items()},
            "kalbert_index_documents": {labels[n]: i.documents for n, i in self.indexes.items()},
            "kalbert_index_changes": {labels[n]: i.changes for n, i in self.indexes.items()},
        }
