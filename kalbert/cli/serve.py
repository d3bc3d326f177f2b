"""`kalbert serve`: search, embeddings, reranking and document writes over HTTP (kalbert.serve)."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_config_arguments, add_verb, config_from_args

HELP = "serve search indexes and sentence models over HTTP (OpenAI-compatible /v1/embeddings, /search, /documents)"
EXAMPLE = ("kalbert serve --index outputs/docs-index\n"
           "  kalbert serve --index outputs/docs-index outputs/kowiki-index --model models/static-ko-zh-48k "
           "--port 8080\n"
           "  kalbert serve --config serve.yaml --host 0.0.0.0 --api-key $KEY")


def register(nouns) -> None:
    parser = add_verb(nouns, "serve", HELP, EXAMPLE, _serve)
    add_config_arguments(parser, "kalbert.serve.settings:ServeSettings")


def _serve(args: argparse.Namespace) -> int:
    from kalbert.serve.server import serve

    return serve(config_from_args(args))
