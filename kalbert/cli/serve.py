"""`kalbert serve`: search, embeddings, reranking and document writes over HTTP (kalbert.serve)."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb, config_from_args
from kalbert.verbs import VERBS

HELP = VERBS["serve"].help


def register(nouns) -> None:
    add_verb(nouns, "serve", _serve)


def _serve(args: argparse.Namespace) -> int:
    from kalbert.serve.server import serve

    return serve(config_from_args(args))
