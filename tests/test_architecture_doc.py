"""docs/ARCHITECTURE.md's code map names only code that exists: each row's module, every module path it quotes
(`sentence/config.py`, `tasks/qa/`), every `kalbert.x` module, and in a package's row every bare name, which must
be a module of that package, a name defined in it, or a library it uses."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROWS = [line for line in (ROOT / "docs/ARCHITECTURE.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `kalbert/")]


def _defined(name: str, where: Path) -> bool:
    files = [where] if where.suffix == ".py" else sorted(where.rglob("*.py"))
    pattern = re.compile(rf"^\s*(?:def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]", re.M)
    return any(pattern.search(path.read_text(encoding="utf-8")) for path in files)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.split("`")[1])
def test_the_code_map_names_existing_code(row):
    module, what = (cell.strip() for cell in row.strip("|").split("|")[:2])
    where = ROOT / module.strip("`")
    assert where.exists(), f"{module} does not exist"
    for token in re.findall(r"`([^`]+)`", what):
        if re.fullmatch(r"[a-z_]+(?:/[a-z_]+)+(?:\.py|/)?|[a-z_]+/", token):
            assert (ROOT / "kalbert" / token).exists() or (where / token).exists(), f"{module}: no {token}"
        elif token.startswith("kalbert.") and not token.endswith(".json"):
            path = ROOT / token.replace(".", "/")
            assert path.is_dir() or path.with_suffix(".py").is_file(), f"{module}: no module {token}"
        elif where.is_dir() and re.fullmatch(r"[a-z_][a-z0-9_]*", token):
            known = ((where / f"{token}.py").is_file() or (where / token).is_dir() or _defined(token, where)
                     or importlib.util.find_spec(token) is not None)
            assert known, f"{module}: `{token}` is no module or name of it"
