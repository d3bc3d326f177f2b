"""Every failure of a request as one JSON error in OpenAI's shape (``{"error": {"message", "type", "param",
"code"}}``), which OpenAI clients read and raise: bad input is a 4xx with one message saying what is wrong and
how to fix it, and a bug is a 500 whose traceback goes to the server's log, never to the client."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from kalbert.errors import KalbertError

log = logging.getLogger("kalbert.serve")
TYPES = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
         405: "invalid_request_error", 409: "conflict_error", 413: "request_too_large", 500: "server_error"}


class ApiError(Exception):
    """A request refused with an HTTP status and one message."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


def error_response(status: int, message: str, param: str | None = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": TYPES.get(status, "invalid_request_error"), "param": param,
                      "code": status}}
    return JSONResponse(body, status_code=status, headers=headers)


def _where(location: tuple[Any, ...]) -> str:
    parts = [str(part) for part in location if part != "body"]
    return ".".join(parts)


def validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    """One message for pydantic's list of errors: the first one, in words."""
    errors = exc.errors()
    if not errors:
        return "the request is not valid", None
    first = errors[0]
    where = _where(tuple(first.get("loc", ())))
    kind = first.get("type", "")
    if kind == "json_invalid":
        context = first.get("ctx", {}).get("error", "")
        return f"the request body is not valid JSON ({context})".replace(" ()", ""), None
    if kind == "missing" and not where:
        return "the request has no JSON body", None
    if kind == "missing":
        return f"'{where}' is required", where
    if kind == "extra_forbidden":
        return f"unknown field '{where}' (see docs/serve.md for what each endpoint takes)", where
    if not where:
        return "the request body must be a JSON object of fields (see docs/serve.md)", None
    extra = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    got = json.dumps(first.get("input"), ensure_ascii=False, default=str)[:60]
    return f"'{where}': {first.get('msg', 'invalid')}, got {got}{extra}", where


def install_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.param)

    @app.exception_handler(KalbertError)
    async def _kalbert(request: Request, exc: KalbertError) -> JSONResponse:
        return error_response(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, param = validation_message(exc)
        return error_response(400, message, param)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_response(404, f"no endpoint {request.url.path} (see docs/serve.md)")
        if exc.status_code == 405:
            return error_response(405, f"{request.method} is not allowed on {request.url.path}",
                                  headers=dict(exc.headers or {}))
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        detail = f" ({type(exc).__name__}: {exc})" if os.environ.get("KALBERT_DEBUG") == "1" else ""
        return error_response(500, f"internal error, logged by the server{detail}")
