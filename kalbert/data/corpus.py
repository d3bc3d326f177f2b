"""Corpora as documents: data-set names or ``.txt``/``.txt.gz``/``.jsonl`` files streamed as lists of
paragraphs, documents separated by blank lines."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

from kalbert.data.formats import clean_cell
from kalbert.data.registry import DATASETS, list_datasets, parse_ref
from kalbert.data.roots import data_path
from kalbert.errors import KalbertError
from kalbert.io import open_text

log = logging.getLogger(__name__)


def _is_jsonl(path: Path) -> bool:
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz")):
        return True
    if name.endswith((".txt", ".txt.gz")):
        return False
    raise KalbertError(f"unsupported corpus file {path}", "use .txt, .txt.gz, .jsonl or .jsonl.gz")


def resolve_sources(sources: str | Path | Iterable[str | Path], root: str | Path | None = None) -> list[Path]:
    """Corpus names (``kowiki``) and file paths -> existing corpus files, checked before any reading."""
    if isinstance(sources, str | Path):
        sources = [sources]
    corpora = ", ".join(list_datasets("corpus"))
    paths: list[Path] = []
    for source in sources:
        name = str(source).partition(":")[0]
        if isinstance(source, str) and name in DATASETS:
            if DATASETS[name].kind != "corpus":
                raise KalbertError(f"'{name}' is a {DATASETS[name].kind} data set, not a corpus",
                                   f"corpora: {corpora}")
            paths += data_path(*parse_ref(source), root=root)
            continue
        path = Path(source).expanduser()
        if not path.is_file():
            raise KalbertError(f"corpus source {source} not found",
                               f"give a .txt/.txt.gz/.jsonl file or a corpus name: {corpora}")
        _is_jsonl(path)
        paths.append(path)
    if not paths:
        raise KalbertError("no corpus sources given", f"corpora: {corpora}")
    return paths


def _text_documents(path: Path) -> Iterator[list[str]]:
    doc: list[str] = []
    for line in open_text(path):
        line = clean_cell(line)
        if line:
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def _jsonl_documents(path: Path) -> Iterator[list[str]]:
    bad, first_bad = 0, 0
    for no, line in enumerate(open_text(path), start=1):
        line = clean_cell(line)
        if not line:
            continue
        try:
            text = json.loads(line)["text"]
            doc = [p for p in (clean_cell(part) for part in text.splitlines()) if p]
        except (json.JSONDecodeError, LookupError, TypeError, AttributeError):
            bad, first_bad = bad + 1, first_bad or no
            continue
        if doc:
            yield doc
    if bad:
        log.warning("%s: skipped %d malformed lines (first at line %d)", path, bad, first_bad)


def iter_documents(sources: str | Path | Iterable[str | Path], root: str | Path | None = None
                   ) -> Iterator[list[str]]:
    """Stream documents (lists of paragraph lines) from corpus names and .txt/.jsonl files, in order."""
    for path in resolve_sources(sources, root):
        read = _jsonl_documents if _is_jsonl(path) else _text_documents
        empty = True
        for doc in read(path):
            empty = False
            yield doc
        if empty:
            raise KalbertError(f"{path} is empty", "a corpus needs text: one paragraph per line, "
                               "blank lines between documents (or JSON lines with a 'text' field)")
