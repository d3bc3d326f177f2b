"""README's install without `make` installs the extras `make setup` does (all but dev), so a reader who skips
make still gets every engine the docs use (`search`: Milvus)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _extras(text: str) -> set[str]:
    return {extra for group in re.findall(r"-e '\.\[([a-z,]+)\]'", text) for extra in group.split(",")}


def test_readme_pip_line_has_the_extras_make_setup_installs():
    make = _extras((ROOT / "Makefile").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("Without `make`"))
    assert "search" in make and _extras(line) == make - {"dev"}
