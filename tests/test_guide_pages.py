"""The user guide (every page of docs/ outside docs/lab/) says what to run and what you get: it names no "stop N"
of the lab's run history, which lives in docs/lab/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = sorted(p for p in (ROOT / "docs").rglob("*.md") if "lab" not in p.relative_to(ROOT / "docs").parts)
STOP = re.compile(r"\bstops? \d+", re.I)


@pytest.mark.parametrize("page", GUIDE, ids=lambda p: p.name)
def test_a_guide_page_names_no_stop_of_the_run_history(page):
    found = [line.strip() for line in page.read_text(encoding="utf-8").splitlines() if STOP.search(line)]
    assert not found, f"{page.name}: {found[0]}"

