"""The HTTP routes of `kalbert serve` and the layers around them: a body-size limit, the API key, timing.

Endpoints (docs/serve.md shows each): ``POST /v1/embeddings``, ``GET /v1/models``, ``POST /search``,
``POST /rerank``, ``POST /documents``, ``GET|DELETE /documents/{id}``, ``GET /health``, ``GET /metrics``.
Models run on the service's model thread (through each model's batcher), searches and writes on the
server's thread pool, so the event loop only routes.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from kalbert import __version__
from kalbert.errors import KalbertError
from kalbert.serve import embeddings
from kalbert.serve.batching import Batcher
from kalbert.serve.errors import ApiError, error_response, install_handlers
from kalbert.serve.schemas import DocumentsRequest, EmbeddingRequest, RerankRequest, SearchRequest
from kalbert.serve.service import Service

ROUTES = ("/v1/embeddings", "/v1/models", "/search", "/rerank", "/documents", "/health", "/metrics")
OPEN_ROUTES = ("/health",)
"""answered without the API key (load balancers ask it)"""


class Guard:
    """ASGI layer before the routes: the request body read whole up to the size limit (413 above), the API key
    checked (401), and every request counted and timed for /metrics."""

    def __init__(self, app, service: Service) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = {"code": 500}

        async def counted(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            refusal, body = await self._check(scope, receive)
            if refusal is not None:
                await refusal(scope, receive, counted)
                return

            async def replay() -> dict[str, Any]:
                nonlocal body
                if body is None:
                    return await receive()
                message, body = {"type": "http.request", "body": body, "more_body": False}, None
                return message

            await self.app(scope, replay, counted)
        finally:
            path = scope["path"]
            endpoint = path if path in ROUTES else "/documents/{id}" if path.startswith("/documents/") else "other"
            self.service.metrics.request(endpoint, scope["method"], status["code"], time.perf_counter() - started)

    async def _check(self, scope, receive):
        """(a refusal response or None, the body)."""
        settings = self.service.settings
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        key = self.service.api_key
        if key and scope["path"] not in OPEN_ROUTES:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {key}".encode()):
                return error_response(401, "missing or wrong API key: send the header 'Authorization: Bearer KEY'",
                                      headers={"WWW-Authenticate": "Bearer"}), None
        limit = settings.max_request_bytes
        too_large = error_response(413, f"the request body is larger than {limit} bytes (max_request_bytes): "
                                        "send fewer or shorter texts per request")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return too_large, None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None, None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                return too_large, None
            if not message.get("more_body"):
                return None, b"".join(chunks)


def _limit(count: int, most: int, what: str, setting: str) -> None:
    if count > most:
        raise ApiError(400, f"{count} {what} in one request, more than the {most} allowed ({setting}): send them in "
                            "several requests")


def _check_texts(texts: list[str], most: int, what: str) -> None:
    for i, text in enumerate(texts):
        if not text.strip():
            raise ApiError(400, f"{what} {i + 1} is empty", what)
        if len(text) > most:
            raise ApiError(400, f"{what} {i + 1} has {len(text)} characters, more than the {most} allowed "
                                "(max_text_chars)", what)


def _hit(hit) -> dict[str, Any]:
    """A hit as JSON, without its row (an internal number a compaction changes)."""
    found = asdict(hit)
    del found["row"]
    return found


def create_app(service: Service) -> Guard:
    """The application over a loaded :class:`Service` (FastAPI routes inside :class:`Guard`)."""

    most = max(service.settings.max_inputs, service.settings.batch_size)  # a take holds what one request may send
    batchers = {name: Batcher(served.embed, service.executor, most, service.metrics.batch)
                for name, served in service.models.items()}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        for batcher in batchers.values():
            batcher.start()
        yield
        await asyncio.gather(*(batcher.stop() for batcher in batchers.values()))

    app = FastAPI(title="kalbert serve", version=__version__, lifespan=lifespan)
    install_handlers(app)
    settings = service.settings

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__,
                "indexes": {name: {"passages": len(index), "documents": index.documents, "engine": index.engine,
                                   "lexical": index.record["lexical"], "model": service.index_models[name],
                                   "changes": index.changes} for name, index in service.indexes.items()},
                "models": list(service.models), "reranker": service.reranker_name}

    @app.get("/metrics", response_class=PlainTextResponse)
    async def metrics() -> str:
        return service.metrics.render(service.gauges)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "kalbert"}
                                           for name in service.models]}

    @app.post("/v1/embeddings")
    async def embed(request: EmbeddingRequest) -> dict[str, Any]:
        served = service.model(request.model)
        texts = embeddings.input_texts(request.input, settings)
        dimensions = embeddings.check_dimensions(served, request.dimensions)
        vectors, tokens = await batchers[served.name].encode(texts, embeddings.prompt_name(served, request.input_type))
        return embeddings.response(served, request, vectors, int(tokens.sum()), dimensions)

    @app.post("/search")
    async def search(request: SearchRequest) -> dict[str, Any]:
        name, index = service.index(request.index)
        queries = [request.query] if isinstance(request.query, str) else request.query
        if not queries:
            raise ApiError(400, "'query' is an empty list: give one or more query texts", "query")
        _limit(len(queries), settings.max_inputs, "queries", "max_inputs")
        _check_texts(queries, settings.max_text_chars, "query")
        if request.k > settings.max_k:
            raise ApiError(400, f"'k' {request.k} is more than the {settings.max_k} allowed (max_k)", "k")
        use_reranker = service.reranker is not None if request.rerank is None else request.rerank
        if use_reranker and service.reranker is None:
            raise ApiError(400, "'rerank' asks for a reranker and none is loaded (start kalbert serve with "
                                "--rerank-model FOLDER)", "rerank")
        mode = request.mode or ("hybrid" if index.record["lexical"] == "bm25" else "dense")
        if mode != "dense" and index.record["lexical"] != "bm25":
            raise ApiError(400, f"index {name!r} has no BM25 index, so mode {mode!r} cannot run: use mode dense "
                                "(or rebuild it with --lexical bm25)", "mode")
        vectors = None
        if mode != "bm25":
            served = service.models[service.index_models[name]]
            vectors, _ = await batchers[served.name].encode(queries, served.prompts.query_name)
        options = {"filter": request.filter, "min_score": request.min_score,
                   "one_per_document": request.one_per_document,
                   "rerank": service.reranker if use_reranker else None,
                   "rerank_depth": request.rerank_depth or settings.rerank_depth, "vectors": vectors}
        if request.dense_weight is not None:
            options["dense_weight"] = request.dense_weight
        result = await run_in_threadpool(index.query, queries, request.k, mode, **options)
        return {"index": name, "mode": result.mode, "reranker": result.reranker, "notes": result.notes,
                "search_ms": round(1000 * result.search_seconds, 2),
                "results": [{"query": query, "hits": [_hit(hit) for hit in hits]}
                            for query, hits in zip(result.queries, result.hits, strict=True)]}

    @app.post("/rerank")
    async def rerank(request: RerankRequest) -> dict[str, Any]:
        if service.reranker is None:
            raise ApiError(404, "no reranker is loaded (start kalbert serve with --rerank-model FOLDER)")
        if request.model is not None and request.model != service.reranker_name:
            raise ApiError(404, f"no reranker {request.model!r}; this server has {service.reranker_name!r}", "model")
        if (request.documents is None) == (request.texts is None):
            raise ApiError(400, "give the passages as 'documents' (or 'texts'), once", "documents")
        passages = request.documents if request.documents is not None else request.texts
        if not passages:
            raise ApiError(400, "'documents' is empty: give one or more passages", "documents")
        _limit(len(passages), settings.max_inputs, "documents", "max_inputs")
        _check_texts([request.query], settings.max_text_chars, "query")
        _check_texts(passages, settings.max_text_chars, "document")
        from kalbert.search.reranking import rerank_scores

        scores = await asyncio.get_running_loop().run_in_executor(
            service.executor, rerank_scores, service.reranker, request.query, passages)
        order = sorted(range(len(passages)), key=lambda i: (-float(scores[i]), i))[: request.top_n or len(passages)]
        return {"model": service.reranker_name,
                "results": [{"index": i, "relevance_score": float(scores[i]),
                             **({"document": {"text": passages[i]}} if request.return_documents else {})}
                            for i in order]}

    @app.post("/documents")
    async def add_documents(request: DocumentsRequest) -> dict[str, Any]:
        name, index = service.index(request.index)
        _limit(len(request.documents), settings.max_documents, "documents", "max_documents")
        for i, document in enumerate(request.documents, start=1):
            text = document.get("text")
            if isinstance(text, str) and len(text) > settings.max_document_chars:
                raise ApiError(400, f"document {i} has {len(text)} characters, more than the "
                                    f"{settings.max_document_chars} allowed (max_document_chars)", "documents")
        statuses = await asyncio.get_running_loop().run_in_executor(service.executor, index.add, request.documents)
        service.compact_when_due(name, index)
        return {"index": name, "results": statuses, "documents": index.documents, "passages": len(index)}

    @app.get("/documents/{document_id:path}")
    async def get_document(document_id: str, index: str | None = None) -> dict[str, Any]:
        name, opened = service.index(index)
        found = await run_in_threadpool(opened.document, document_id)
        if found is None:
            raise ApiError(404, f"index {name!r} holds no document {document_id!r}", "id")
        return {"index": name, **found}

    @app.delete("/documents/{document_id:path}")
    async def delete_document(document_id: str, index: str | None = None) -> dict[str, Any]:
        name, opened = service.index(index)
        try:
            statuses = await run_in_threadpool(opened.delete, [document_id])
        except KalbertError as exc:
            if await run_in_threadpool(opened.document, document_id) is None:
                raise ApiError(404, f"index {name!r} holds no document {document_id!r}", "id") from None
            raise exc
        service.compact_when_due(name, opened)
        return {"index": name, "results": statuses, "documents": opened.documents, "passages": len(opened)}

    return Guard(app, service)
