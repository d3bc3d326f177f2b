"""What `kalbert search build` indexes: documents with an id, a text and metadata, from files, folders
of files, JSONL and registered data sets.

Sources are checked (:func:`check_sources`) before a model loads, so a typo costs a second, not a model
load, and so are the documents of files and folders (:func:`check_corpus`: one quick read). Reading is strict
where the old sentence reader was lenient: an empty file or document, bytes that are not UTF-8, a JSONL line
without ``text`` or an id given twice stop the build with the file and line, since silently indexing less (or
other) than was given is worse for a search index than for a training corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kalbert.data import DATASETS, iter_documents, load_nli, load_pairs, load_sts, parse_ref, resolve_sources
from kalbert.errors import KalbertError
from kalbert.io import open_text

TEXT_SUFFIXES = (".txt", ".txt.gz")
"""a file of one document per line (the old one-sentence-a-line corpora read the same)"""
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
FOLDER_SUFFIXES = (".txt", ".md")
"""files of a folder that are one document each (JSONL files in it are read as JSONL)"""
_PAIR_LOADERS = {"sts": (load_sts, "sentence1", "sentence2"), "pairs": (load_pairs, "sentence1", "sentence2"),
                 "nli": (load_nli, "premise", "hypothesis")}


@dataclass(frozen=True)
class Document:
    """One indexed text; ``metadata`` holds the JSONL fields other than ``id`` and ``text``."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _is_path(source: str) -> bool:
    return Path(source).expanduser().exists()


def check_sources(sources: Iterable[str]) -> None:
    """Refuse a source that is neither an existing file/folder nor a registered data set, in one line
    (``korsts2:test`` -> "unknown data set 'korsts2', did you mean 'korsts'")."""
    for source in sources:
        path = Path(source).expanduser()
        if path.is_dir():
            continue
        if path.is_file():
            if not path.name.lower().endswith(TEXT_SUFFIXES + JSONL_SUFFIXES):
                raise KalbertError(f"unsupported corpus file {path}", "use .txt, .txt.gz, .jsonl or .jsonl.gz")
            continue
        looks_like_file = "/" in source or path.suffix in (".txt", ".gz", ".jsonl", ".json", ".md")
        if looks_like_file:
            raise KalbertError(f"file not found: {source}", "check the path or use a data-set name (kalbert data list)")
        name, split = parse_ref(source)  # unknown names and splits: one line with the closest name
        kind = DATASETS[name].kind
        if kind == "corpus":
            resolve_sources([source])
        elif kind not in _PAIR_LOADERS or split is None:
            raise KalbertError(f"cannot index '{source}'", "give files, a corpus, or a split like korsts:test")


def _text_file(path: Path) -> Iterator[tuple[str, Document]]:
    for number, line in enumerate(open_text(path), start=1):
        text = " ".join(line.split())
        if text:
            yield f"{path} line {number}", Document(f"{path.name}:{number}", text)


def _jsonl_file(path: Path) -> Iterator[tuple[str, Document]]:
    for number, line in enumerate(open_text(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KalbertError(f"{path} line {number} is not JSON ({exc.msg})", "one JSON object per line") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise KalbertError(f"{path} line {number} has no 'text' string",
                               'each line needs {"id": ..., "text": "..."}; other fields are kept as metadata')
        if not record["text"].strip():
            raise KalbertError(f"{path} line {number}: the document's text is empty", "drop the line or give text")
        doc_id = str(record.get("id", f"{path.name}:{number}"))
        metadata = {k: v for k, v in record.items() if k not in ("id", "text")}
        yield f"{path} line {number}", Document(doc_id, record["text"], metadata)


def _document_file(path: Path, root: Path) -> Iterator[tuple[str, Document]]:
    text = "\n".join(open_text(path)).strip()
    if not text:
        raise KalbertError(f"document {path} is empty", "remove it or give it text")
    yield str(path), Document(str(path.relative_to(root)), text)


def _folder(root: Path) -> Iterator[tuple[str, Document]]:
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
        name = path.name.lower()
        if name.endswith(JSONL_SUFFIXES):
            yield from _jsonl_file(path)
        elif name.endswith(FOLDER_SUFFIXES):
            yield from _document_file(path, root)


def _file_documents(path: Path) -> Iterator[tuple[str, Document]]:
    """(where, document) of a folder or file source: where is the file (and line) it comes from."""
    if path.is_dir():
        return _folder(path)
    return (_jsonl_file if path.name.lower().endswith(JSONL_SUFFIXES) else _text_file)(path)


def check_corpus(sources: Sequence[str]) -> None:
    """:func:`check_sources`, then one read of every file and folder source (data sets are read as registered):
    everything :func:`read_documents` would refuse, an empty source, and a document id given twice (an index
    finds, replaces and deletes documents by id, so the two would be one) are refused in one line before a
    model loads."""
    check_sources(sources)
    files = [Path(source).expanduser() for source in sources if Path(source).expanduser().exists()]
    ids: set[str] = set()
    for path in files:
        found = 0
        for where, document in _file_documents(path):
            found += 1
            if document.id in ids:
                first = next(w for f in files for w, d in _file_documents(f) if d.id == document.id)
                raise KalbertError(f"document id {document.id!r} at {where} was already given at {first}",
                                   "give each document its own id; a line without one gets FILE:LINE, so two "
                                   "files of one name clash: rename one")
            ids.add(document.id)
        if not found:
            folder = path.is_dir()
            what = "is empty" if not folder and path.stat().st_size == 0 else "holds no documents"
            raise KalbertError(f"corpus {'folder' if folder else 'file'} {path} {what}",
                               f"give it {'.txt, .md or .jsonl files' if folder else 'documents'}, or leave it out")


def _data_set(source: str) -> Iterator[Document]:
    name, split = parse_ref(source)
    if DATASETS[name].kind == "corpus":
        for number, paragraphs in enumerate(iter_documents(source), start=1):
            yield Document(f"{source}:{number}", "\n".join(paragraphs))
        return
    load, first, second = _PAIR_LOADERS[DATASETS[name].kind]
    seen: set[str] = set()
    for row in load(name, split):
        for text in (getattr(row, first), getattr(row, second)):
            if text not in seen:
                seen.add(text)
                yield Document(f"{source}:{len(seen)}", text)


def read_documents(sources: Iterable[str]) -> Iterator[Document]:
    """Documents of every source in order: a folder (one document per .txt/.md file, JSONL files read as
    JSONL), a .txt file (one document per line), a JSONL file, or a data set (a corpus's documents; the
    distinct sentences of an STS, pair or NLI split)."""
    for source in sources:
        path = Path(source).expanduser()
        if path.exists():
            yield from (document for _, document in _file_documents(path))
        else:
            yield from _data_set(source)
