"""An opened search index: queries (dense, BM25 or hybrid; filtered by metadata, thresholded, one hit per
document, reranked by a cross-encoder) and documents added, replaced and deleted while it is open.

Queries are encoded by the model that built the index, with its ``query`` prompt; another model or prompt
is refused before encoding (its vectors would live in another space). Each hit carries the score it was
ranked by (a cosine, a BM25 score, the hybrid mix or the reranker's score, fused with the first stage's order
where the reranker records a weight for it) and the scores behind it.

Writes go to the index's change log (:mod:`kalbert.search.changes`) before they are acknowledged and are
searched at once; ``compact`` folds them into the engine (:mod:`kalbert.search.compact`). A Milvus index
writes to its collection instead, which every process reading it sees.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kalbert.artifact import Kind, meta_path, read_meta, write_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text
from kalbert.precision import Precision, autocast, encoding_bf16
from kalbert.ranking import DENSE_WEIGHT
from kalbert.search.base import Base, changes_path, corrupt
from kalbert.search.build import INDEX_FORMAT
from kalbert.search.candidates import FUSION_DEPTH, Candidates, Ranked
from kalbert.search.card import render_card
from kalbert.search.changes import WRITER_LOCK, ChangeLog, add_record, delete_record, folder_lock
from kalbert.search.delta import Delta, Snapshot
from kalbert.search.documents import Document
from kalbert.search.engines import FAISS_ENGINES
from kalbert.search.filters import check_fields, parse_filter
from kalbert.search.model import check_identity, check_model, check_query_side, model_prompts
from kalbert.search.reranking import (
    RERANK_DEPTH,
    Reranker,
    fused_scores,
    load_reranker,
    rerank_scores,
    reranker_name,
)
from kalbert.search.writes import check_documents, encode_documents
from kalbert.sentence.encoder import load_sentence_model
from kalbert.teachers.encoders import token_limit

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[str, ...] = ("dense", "bm25", "hybrid")
DOCUMENT_DEPTH = 4
"""passages read per hit asked for with one hit per document (deeper while documents run short)"""


@dataclass(frozen=True)
class Hit:
    """One passage found for a query."""

    rank: int
    score: float
    """the score the hits are ranked by: a cosine (dense), a BM25 score, the hybrid mix, or the reranker's"""
    row: int
    """passage row in the index (renumbered by a compaction)"""
    document: str
    """the id of the document the passage comes from"""
    passage: str
    start: int
    """character offset of the passage in its document's text"""
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    """``score`` by name first (cosine, bm25, hybrid or rerank), then the scores behind it (a reranker that keeps
    some of the first stage's order or scores, :func:`kalbert.search.reranking.fused_scores`, adds its raw
    ``cross_encoder`` score)"""

    @property
    def sentence(self) -> str:
        """The passage, under the name it had when indexes held sentences (demo, notebooks)."""
        return self.passage


@dataclass
class QueryResult:
    """Hits per query, best first, with notes (truncated queries, fewer hits than asked) and where the time went."""

    queries: list[str]
    hits: list[list[Hit]]
    notes: list[str] = field(default_factory=list)
    mode: str = "dense"
    engine: str = "exact"
    model_backend: str = "torch"
    encode_seconds: float = 0.0
    """encoding the queries"""
    search_seconds: float = 0.0
    """finding the hits once encoded (reranking included)"""
    reranker: str | None = None


@dataclass(frozen=True)
class View:
    """What one query reads: a base generation and the changes since, as of one moment."""

    base: Base
    snapshot: Snapshot


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


class Index:
    """An index folder opened for queries and writes: the engine memory-mapped, passages read on demand, the
    model loaded at the first query or write."""

    def __init__(self, folder: str | Path, model: str | Path | None = None, backend: str | None = None,
                 precision: Precision = "auto") -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise KalbertError(f"search index {self.folder} not found", "build one with `kalbert search build`")
        try:
            record = read_meta(self.folder, expect=Kind.SEARCH_INDEX)
        except KalbertError as exc:
            raise KalbertError(f"{self.folder} is not a search index ({exc.message})",
                               "build one with `kalbert search build`") from None
        if record.get("format") != INDEX_FORMAT:
            raise corrupt(self.folder, f"unknown format {record.get('format')!r}")
        self._model_path = Path(model) if model else Path(record["model"]["path"])
        self.model_backend = backend or record["config"]["backend"]
        self.bf16, _ = encoding_bf16(precision, self.model_backend)
        self._model = None
        self._rerankers: dict[str, Reranker] = {}
        self._lock = threading.RLock()
        """guards the model's loading and the view's replacement"""
        self._writer = threading.Lock()
        self._open(record)

    # -- opening and following the change log --------------------------------------------------------------

    def _open(self, record: dict[str, Any]) -> None:
        base = Base(self.folder, record)
        self._stamp = _stamp(meta_path(self.folder))
        self._log = ChangeLog(changes_path(self.folder, record)) if base.engine in FAISS_ENGINES else None
        self._delta = Delta(len(base), record["dim"], base.ids, base.passage_rows, base.lexical)
        self.view = View(base, self._delta.snapshot)
        self._catch_up()

    def _catch_up(self) -> None:
        """Apply the log's records written since (by this process or another)."""
        if self._log is None or self._log.size() <= self._delta.offset:
            return
        records, end = self._log.read(self._delta.offset)
        for record in records:
            self._delta.apply(record, end)
        self._delta.offset = end
        self.view = View(self.view.base, self._delta.snapshot)

    def refresh(self) -> None:
        """See what other processes wrote or compacted since (queries and writes do this first)."""
        with self._lock:
            stamp = _stamp(meta_path(self.folder))
            if stamp != self._stamp:  # compacted by another process: a new generation
                self._open(read_meta(self.folder, expect=Kind.SEARCH_INDEX))
            else:
                self._catch_up()

    # -- what the index holds --------------------------------------------------------------------------------

    @property
    def record(self) -> dict[str, Any]:
        return self.view.base.record

    @property
    def engine(self) -> str:
        return self.view.base.engine

    @property
    def store(self):
        return self.view.base.store

    @property
    def embeddings(self) -> np.ndarray:
        return self.view.base.embeddings

    @property
    def dense(self):
        return self.view.base.dense

    @property
    def bm25(self):
        return self.view.base.bm25

    def __len__(self) -> int:
        """Passages a query can find now."""
        return self.view.snapshot.live

    @property
    def documents(self) -> int:
        """Documents a query can find now (a Milvus index: as built)."""
        snapshot = self.view.snapshot
        return self.record["documents"] - len(snapshot.deleted_documents) + len(snapshot.documents)

    @property
    def changes(self) -> int:
        """Passages added or deleted since the engine was built: what a compaction would fold in."""
        snapshot = self.view.snapshot
        deleted = 0 if snapshot.base_dead is None else int(snapshot.base_dead.sum())
        return snapshot.size + deleted

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                check_identity(self.record, check_model(self._model_path))
                model = load_sentence_model(self._model_path, backend=self.model_backend)
                check_query_side(self.record, model)
                self._model = model
            return self._model

    def warm_up(self) -> None:
        """Load what first queries and writes would: the model, the engine, BM25 with both analyzers (mecab-ko,
        jieba; its length estimate where documents were added), the metadata by field, the ids (a server does
        this before it opens its port)."""
        self.query(["준비 warm up", "预热"], k=1)
        base = self.view.base
        if base.lexical and self.view.snapshot.size:
            base.average_length()
        base.columns()
        base.ids()

    def hit(self, rank: int, score: float, row: int) -> Hit:
        """The hit of base passage ``row``."""
        text, document, start, end = self.store.passage(row)
        return Hit(rank, score, row, document["id"], text, start, end, document["metadata"])

    def document(self, document_id: str) -> dict[str, Any] | None:
        """A document's id, metadata and passages (text and offsets), or None where the index has no such one."""
        self.refresh()
        view = self.view
        if view.base.engine not in FAISS_ENGINES:
            return view.base.dense.document(document_id)
        added = view.snapshot.documents.get(document_id)
        if added is not None:
            return {"id": added.id, "metadata": added.metadata,
                    "passages": [{"passage": added.text[a:b], "start": a, "end": b} for a, b in added.spans]}
        rows = [row for row in view.base.ids().get(document_id, ()) if row not in view.snapshot.deleted_documents]
        if not rows:
            return None
        passages = []
        for row in rows:
            for passage in view.base.passage_rows(row):
                text, _, start, end = view.base.store.passage(passage)
                passages.append({"passage": text, "start": start, "end": end})
        return {"id": document_id, "metadata": view.base.store.document(rows[0])["metadata"], "passages": passages}

    # -- queries ----------------------------------------------------------------------------------------------

    def _truncation_notes(self, queries: Sequence[str]) -> list[str]:
        limit = token_limit(self.model)
        if limit is None:
            return []
        notes = []
        for i, query in enumerate(queries):
            length = len(self.model.tokenizer(query, truncation=False)["input_ids"])
            if length > limit:
                notes.append(f"query {i + 1} has {length} tokens; it was truncated to the model's maximum of {limit}")
        return notes

    def encode(self, queries: Sequence[str]) -> np.ndarray:
        """Unit-length float32 query vectors, encoded with the model's ``query`` prompt."""
        with autocast("cpu", self.bf16):
            vectors = self.model.encode(list(queries), prompt_name=model_prompts(self.model).query_name,
                                        convert_to_numpy=True, normalize_embeddings=True)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def reranker(self, reranker: str | Path | Reranker) -> Reranker:
        """A reranker, loaded once per folder."""
        if hasattr(reranker, "score"):
            return reranker  # type: ignore[return-value]
        key = str(Path(reranker).expanduser().resolve())
        with self._lock:
            if key not in self._rerankers:
                self._rerankers[key] = load_reranker(reranker)
            return self._rerankers[key]

    def _check_query(self, queries: list[str], k: int, mode: str, dense_weight: float, min_score: float | None,
                     rerank_depth: int, refine: int | None) -> None:
        if not queries or any(not isinstance(q, str) or not q.strip() for q in queries):
            raise KalbertError("empty query", "give one or more non-empty texts")
        if k < 1:
            raise KalbertError(f"-k must be positive, got {k}")
        if mode not in MODES:
            raise KalbertError(f"unknown mode {mode!r}", f"use one of {', '.join(MODES)}")
        if not 0.0 <= dense_weight <= 1.0:
            raise KalbertError(f"--dense-weight must be between 0 and 1, got {dense_weight}",
                               f"e.g. --dense-weight {DENSE_WEIGHT} (0: BM25's order, 1: the cosine's)")
        if min_score is not None and not math.isfinite(min_score):
            raise KalbertError(f"--min-score must be a finite number, got {min_score}")
        if rerank_depth < 1:
            raise KalbertError(f"--rerank-depth must be positive, got {rerank_depth}")
        if refine is not None and (refine < 1 or self.engine != "ivfpq"):
            hint = f"this index's engine is {self.engine}" if self.engine != "ivfpq" else "e.g. --refine 10"
            raise KalbertError(f"--refine {refine}: refining is for IVF-PQ indexes, with a positive factor", hint)

    def query(self, queries: str | Sequence[str], k: int = 10, mode: Mode | None = None,
              dense_weight: float = DENSE_WEIGHT, *, filter: dict[str, Any] | None = None,
              min_score: float | None = None, one_per_document: bool = False,
              rerank: str | Path | Reranker | None = None, rerank_depth: int = RERANK_DEPTH,
              refine: int | None = None, vectors: np.ndarray | None = None) -> QueryResult:
        """The ``k`` best passages of each query.

        ``mode`` defaults to hybrid where the index has BM25 (``dense_weight`` x cosine + the rest x BM25, each
        scaled over the candidates). ``filter`` keeps documents by metadata (:mod:`kalbert.search.filters`),
        ``min_score`` drops hits scored below it, ``one_per_document`` keeps each document's best passage,
        ``rerank`` (a reranker or its folder) scores the first ``rerank_depth`` passages again, ``refine``
        overrides an IVF-PQ index's refine factor, and ``vectors`` are the queries already encoded (a server
        batches the encoding of concurrent queries)."""
        queries = [queries] if isinstance(queries, str) else list(queries)
        mode = mode or ("hybrid" if self.record["lexical"] == "bm25" else "dense")
        self._check_query(queries, k, mode, dense_weight, min_score, rerank_depth, refine)
        query_filter = parse_filter(filter)
        self.refresh()
        view = self.view
        if query_filter:
            check_fields(query_filter, view.base.columns().fields | view.snapshot.fields())
        if mode != "dense":
            view.base.bm25  # noqa: B018 - refuse an index without BM25 before encoding anything
        reranker = self.reranker(rerank) if rerank is not None else None
        notes, encode_seconds = [], 0.0
        if mode != "bm25" and vectors is None:
            notes = self._truncation_notes(queries)
            started = time.perf_counter()
            vectors = self.encode(queries)
            encode_seconds = time.perf_counter() - started
        started = time.perf_counter()
        candidates = Candidates(view.base, view.snapshot, query_filter)
        depth = max(k, rerank_depth) if reranker is not None else k
        hits: list[list[Hit] | None] = [None] * len(queries)
        while True:
            deeper = depth * DOCUMENT_DEPTH if one_per_document else depth
            ranked = self._rank(candidates, mode, queries, vectors, deeper, dense_weight, refine)
            for i, (query, found) in enumerate(zip(queries, ranked, strict=True)):
                if hits[i] is None or len(hits[i]) < k:
                    hits[i] = self._finish(view, candidates, query, found, k, min_score, one_per_document,
                                           reranker, rerank_depth, mode)
            short = any(len(h) < k for h in hits)
            if not (one_per_document and short and reranker is None and deeper < candidates.available):
                break
            depth *= DOCUMENT_DEPTH
        notes += self._shortfall(hits, k, mode, candidates, min_score, one_per_document, reranker, rerank_depth)
        return QueryResult(queries, hits, notes, mode, view.base.engine, self.model_backend, encode_seconds,
                           time.perf_counter() - started, reranker_name(reranker) if reranker is not None else None)

    @staticmethod
    def _rank(candidates: Candidates, mode: str, queries: list[str], vectors: np.ndarray | None, depth: int,
              dense_weight: float, refine: int | None) -> list[Ranked]:
        if mode == "dense":
            return candidates.dense(vectors, depth, refine)
        if mode == "bm25":
            return candidates.bm25(queries, depth)
        return candidates.hybrid(queries, vectors, max(depth, FUSION_DEPTH), dense_weight)

    def _hit(self, view: View, candidates: Candidates, rank: int, row: int, score: float,
             scores: dict[str, float]) -> Hit:
        payload = candidates.payloads.get(row)
        if payload is not None:
            return Hit(rank, score, row, payload["document"], payload["passage"], payload["start"], payload["end"],
                       payload["metadata"] or {}, scores)
        if row < view.snapshot.base_size:
            text, document, start, end = view.base.store.passage(row)
            return Hit(rank, score, row, document["id"], text, start, end, document["metadata"], scores)
        added = view.snapshot.passage(row)
        return Hit(rank, score, row, added.document.id, added.text, added.start, added.end, added.document.metadata,
                   scores)

    def _document_key(self, view: View, candidates: Candidates, row: int) -> Any:
        payload = candidates.payloads.get(row)
        if payload is not None:
            return payload["document"]
        if row < view.snapshot.base_size:
            return int(view.base.document_of[row])
        return view.snapshot.passage(row).document.id

    def _finish(self, view: View, candidates: Candidates, query: str, ranked: Ranked, k: int,
                min_score: float | None, one_per_document: bool, reranker: Reranker | None,
                rerank_depth: int, mode: str) -> list[Hit]:
        """One query's hits from its ranked passages: reranked (fused with the hybrid scores in hybrid mode, else
        with the first stage's order: :func:`kalbert.search.reranking.fused_scores`), thresholded, one per
        document, the first ``k``."""
        rows, scores, parts = ranked.rows, ranked.scores, dict(ranked.parts)
        if reranker is not None:
            rows, scores = rows[:rerank_depth], scores[:rerank_depth]
            parts = {name: values[:rerank_depth] for name, values in parts.items()}
            texts = [self._hit(view, candidates, 0, int(row), 0.0, {}).passage for row in rows]
            raw = rerank_scores(reranker, query, texts)
            fused = fused_scores(reranker, raw, scores if mode == "hybrid" else None)
            order = np.lexsort((rows, -fused))
            rows, scores = rows[order], fused[order]
            behind = {} if np.array_equal(fused, raw) else {"cross_encoder": raw[order]}
            parts = {"rerank": scores, **behind, **{name: values[order] for name, values in parts.items()}}
        hits: list[Hit] = []
        seen: set[Any] = set()
        for i, row in enumerate(rows.tolist()):
            if min_score is not None and scores[i] < min_score:
                break  # best first: every later one scores lower
            if one_per_document:
                key = self._document_key(view, candidates, row)
                if key in seen:
                    continue
                seen.add(key)
            hits.append(self._hit(view, candidates, len(hits) + 1, row, float(scores[i]),
                                  {name: float(values[i]) for name, values in parts.items()}))
            if len(hits) == k:
                break
        return hits

    @staticmethod
    def _shortfall(hits: list[list[Hit]], k: int, mode: str, candidates: Candidates, min_score: float | None,
                   one_per_document: bool, reranker: Reranker | None, rerank_depth: int) -> list[str]:
        """A note for each query given fewer hits than asked, saying why."""
        reasons = []
        if candidates.available < k:
            reasons.append(f"the index holds {candidates.available} passages"
                           + (" that pass the filter" if candidates.filter else ""))
        if mode == "bm25":
            reasons.append("BM25 returns only passages that share a term with the query")
        if mode == "hybrid":
            reasons.append("hybrid returns only passages among either side's best")
        if one_per_document:
            reasons.append("one passage per document")
        if min_score is not None:
            reasons.append(f"hits scored below {min_score} are left out")
        if reranker is not None and rerank_depth < k:
            reasons.append(f"the reranker reads the first {rerank_depth} passages")
        return [f"query {i + 1}: {len(found)} hits of the {k} asked ({'; '.join(reasons)})"
                for i, found in enumerate(hits) if len(found) < k]

    # -- writes ------------------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One writer at a time (threads and processes), on a view that holds every earlier write."""
        with self._writer, folder_lock(self.folder / WRITER_LOCK):
            self.refresh()
            yield

    def _append(self, record: dict[str, Any]) -> None:
        """Write ``record`` to the log (durably) and search it from now on (under the lock a query's refresh
        takes, so that it never reads the new line before it is applied here)."""
        with self._lock:
            end = self._log.append(record, self._delta.offset)
            self._delta.apply(record, end)
            self.view = View(self.view.base, self._delta.snapshot)

    def add(self, documents: Iterable[Document | dict[str, Any]]) -> list[dict[str, Any]]:
        """Add documents (:class:`Document` or ``{"id", "text", ...metadata}``), replacing any with the same id;
        durable when it returns. Returns, per document, its id, ``added`` or ``replaced``, and its passages."""
        documents = check_documents(documents)
        encoded = encode_documents(self.model, documents, self.record["passage_tokens"], self.record["stride"],
                                   self.bf16)
        if self._log is None:
            return self.dense.add_documents(encoded)
        with self._writing():
            statuses = [{"id": d.id, "status": "replaced" if self._delta.has(d.id) else "added",
                         "passages": len(d.spans)} for d in encoded]
            self._append(add_record(encoded))
        return statuses

    def delete(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """Delete documents by id, durably; an id the index does not hold refuses the whole delete."""
        ids = list(dict.fromkeys(str(i) for i in ids))
        if not ids:
            raise KalbertError("no document ids to delete", "give one or more ids")
        if self._log is None:
            return self.dense.delete_documents(ids)
        with self._writing():
            missing = [document_id for document_id in ids if not self._delta.has(document_id)]
            if missing:
                raise KalbertError(f"no document {missing[0]!r} in {self.folder}"
                                   + (f" (nor {len(missing) - 1} more of the ids)" if len(missing) > 1 else ""),
                                   "nothing was deleted; give ids the index holds")
            self._append(delete_record(ids))
        return [{"id": document_id, "status": "deleted"} for document_id in ids]

    def compact(self) -> dict[str, Any]:
        """Fold the changes into a new generation of the engine (and BM25); writes go on meanwhile. An index
        with no changes is left as it is."""
        from kalbert.search.compact import remove_generation, write_generation

        if self._log is None:
            raise KalbertError("a Milvus index needs no compaction", "Milvus compacts its own segments")
        with self._writing():
            view, offset = self.view, self._delta.offset
        generation = int(view.base.record.get("generation", 0))
        if not self.changes:
            return {"generation": generation, "passages": len(self), "documents": self.documents, "seconds": 0.0,
                    "deleted_passages": 0, "added_documents": 0, "compacted": False}
        record = write_generation(view.base, view.snapshot, generation + 1)
        with self._writing():
            if self.view.base is not view.base:
                raise KalbertError(f"{self.folder} was compacted by another process meanwhile", "nothing to do")
            self._log.copy_after(offset, self.folder / record["changes"])
            write_meta(self.folder, record)
            atomic_write_text(self.folder / "README.md", render_card(record))
            with self._lock:
                self._open(record)
        previous = view.base.record.get("previous")
        if previous:
            remove_generation(self.folder, previous)
        return {"generation": record["generation"], "passages": record["passages"],
                "documents": record["documents"], **record["compacted"], "compacted": True}


def open_index(folder: str | Path, model: str | Path | None = None, backend: str | None = None,
               precision: Precision = "auto") -> Index:
    """Open an index folder for queries and writes (see :class:`Index`)."""
    return Index(folder, model, backend, precision)


def search_index(index: str | Path, queries: str | Sequence[str], k: int = 10, model: str | None = None,
                 backend: str | None = None, precision: Precision = "auto", mode: Mode | None = None,
                 dense_weight: float = DENSE_WEIGHT, **options: Any) -> QueryResult:
    """Open ``index`` and query it once (keep an :class:`Index` to query it again); ``options`` are
    :meth:`Index.query`'s."""
    return Index(index, model, backend, precision).query(queries, k, mode, dense_weight, **options)

