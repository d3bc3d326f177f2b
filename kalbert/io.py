"""Atomic file and folder writes, and strict UTF-8 reading.

Every artifact kalbert writes appears whole or not at all: files go through a temp file
plus ``os.replace``; output folders are built under a temp name beside the target and
renamed at the end, so an interrupted job never leaves a half-written folder behind.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kalbert.errors import KalbertError

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks (artifacts record the hashes of their inputs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n")


def refuse_existing_output(path: str | Path, overwrite: bool) -> None:
    """Refuse an existing output folder unless ``overwrite``, and one that cannot be written; stages call it
    before hours of work, not after."""
    if Path(path).exists() and not overwrite:
        raise KalbertError(f"output folder {path} already exists", "pass --overwrite or choose another --out")
    check_writable(path)


def check_writable(path: str | Path) -> None:
    """Refuse an output under which nothing can be made (``/proc``, a read-only mount, a folder of another user),
    by making and removing a folder in its nearest existing parent: permission bits do not tell (root passes
    them all, ``/proc`` refuses even root)."""
    path = Path(path).expanduser()
    parent = next((p for p in path.parents if p.exists()), Path("."))
    if not parent.is_dir():
        raise KalbertError(f"cannot write {path}: {parent} is a file", "choose another --out")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".kalbert-probe-", dir=parent))
    except OSError as exc:
        raise KalbertError(f"cannot write {path}: making a folder in {parent} fails ({exc.strerror})",
                           "choose an --out in a folder you can write to") from None


def temp_folder_beside(path: Path) -> Path:
    """A new empty folder ``.NAME.*.partial`` beside ``path``, with the permissions the umask gives any folder
    (``mkdtemp`` makes 0700, which would leave a finished artifact unreadable to other users and to servers)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_UMASK)
    return tmp


@contextlib.contextmanager
def atomic_output_dir(path: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temp folder beside ``path``; on success it replaces ``path``, on failure it is removed."""
    path = Path(path)
    refuse_existing_output(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_folder_beside(path)
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def open_text(path: str | Path) -> Iterator[str]:
    """Yield the lines of a UTF-8 ``.txt``/``.gz`` file (a byte-order mark, as Windows editors write, dropped);
    bad bytes raise a one-line error with the line number and how to convert the file."""
    path = Path(path)
    if not path.exists():
        raise KalbertError(f"file not found: {path}", "check the path or use a data-set name (kalbert data list)")
    if path.is_dir():
        raise KalbertError(f"{path} is a folder, expected a text file")
    opener = gzip.open if path.suffix == ".gz" else open
    line_no = 0
    raw = b""
    try:
        with opener(path, "rb") as handle:
            for raw in handle:
                line_no += 1
                yield raw.decode("utf-8-sig" if line_no == 1 else "utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise KalbertError(f"{path} line {line_no} is not valid UTF-8 (byte offset {exc.start})",
                           _encoding_hint(path, raw)) from None
    except (OSError, EOFError) as exc:
        raise KalbertError(f"cannot read {path}: {exc}") from None


def _share(text: str, script: str) -> float:
    """The share of the letters of ``text`` past ASCII whose Unicode name starts with ``script``."""
    letters = [c for c in text if ord(c) > 127 and unicodedata.category(c).startswith("L")]
    return sum(unicodedata.name(c, "").startswith(script) for c in letters) / len(letters) if letters else 0.0


def _encoding_hint(path: Path, line: bytes) -> str:
    """How to convert a file that is not UTF-8, from the legacy encoding its first 64 KiB and its bad ``line``
    read as: Korean text in CP949 decodes there to Hangul (Chinese GBK bytes to a mix of Hangul and Hanja),
    Chinese text in GBK or Big5 to Han characters."""
    gz = path.suffix == ".gz"
    with (gzip.open if gz else open)(path, "rb") as handle:
        head = handle.read(65536)
    sample = head[: head.rfind(b"\n") + 1] + line[:65536]
    guesses = (("cp949", "HANGUL", "Korean in CP949/EUC-KR"),
               ("gbk", "CJK UNIFIED IDEOGRAPH", "Simplified Chinese in GBK"),
               ("big5", "CJK UNIFIED IDEOGRAPH", "Traditional Chinese in Big5"))
    for encoding, script, what in guesses:
        text = sample.decode(encoding, errors="replace")
        if "\ufffd" not in text and _share(text, script) >= 0.9:
            utf8 = path.with_name(f"{path.name.split('.')[0]}.utf8{''.join(path.suffixes)}").name
            command = (f"zcat {path.name} | iconv -f {encoding.upper()} -t UTF-8 | gzip > {utf8}" if gz
                       else f"iconv -f {encoding.upper()} -t UTF-8 {path.name} > {utf8}")
            return f"it reads as {what}: convert it, e.g. {command}"
    return "convert it to UTF-8, e.g. iconv -f CP949 -t UTF-8 for Korean text, -f GBK or -f BIG5 for Chinese"


def kalbert_cache() -> Path:
    """kalbert's rebuildable caches: ``$XDG_CACHE_HOME/kalbert`` (default ``~/.cache/kalbert``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kalbert"


def json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each non-blank line of a JSONL file; None where a line is not JSON, so the
    caller says in one line what that line should have been."""
    for no, line in enumerate(open_text(path), start=1):
        if not line.strip():
            continue
        try:
            yield no, json.loads(line)
        except json.JSONDecodeError:
            yield no, None
