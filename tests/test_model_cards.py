"""Every shipped model card shows its scores as `kalbert bench report --cards` generates them from the committed
results files that name the folder's current weights (so a card figure is its results file's figure), the card
states no other score, its results files include those README's table names for it, and what it says of its
normalizer is what its kalbert.json records."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kalbert.bench.cards import BEGIN, END, benchmarks_section, read_scored, records_of

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p.parent for p in (ROOT / "models").glob("*/README.md"))
SCORE = re.compile(r"\b(spearman|pearson|F1|EM|MRR|nDCG|accuracy|recall)\b\W{0,3}\d+\.\d+", re.I)
"""a metric named with a figure in prose ("Spearman 79.09", "F1 75.38")"""


@pytest.fixture(scope="module")
def scored() -> dict[Path, object]:
    """The committed results files that name their weights, by repository-relative path (as the cards show)."""
    paths = sorted((ROOT / "benchmarks/results").glob("*.json"))
    return {path.relative_to(ROOT): results for path, results in read_scored(paths).items()}


def _card(folder: Path) -> str:
    return (folder / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_cards_benchmarks_are_generated_from_the_results_files(folder, scored):
    card = _card(folder)
    assert card.count(BEGIN) == 1 and card.count(END) == 1, f"{folder.name}: run `kalbert bench report --cards`"
    shown = BEGIN + card.split(BEGIN, 1)[1].split(END, 1)[0] + END
    records = records_of(folder, scored)
    assert records, f"{folder.name}: no results file names its weights"
    assert shown == benchmarks_section(records), (
        f"{folder.name}: its card's benchmarks differ from its results files; regenerate them with "
        "`kalbert bench report benchmarks/results/*.json --out benchmarks/RESULTS.md --cards models/*`")


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_card_states_no_score_outside_its_benchmarks(folder):
    head, rest = _card(folder).split(BEGIN, 1)
    outside = re.sub(r"```.*?```", "", head + rest.split(END, 1)[1], flags=re.S)
    made = outside.find("\n## How it was made")  # commands and their facts (steps, seconds), no scores
    prose = outside[:made] if made >= 0 else outside
    tables = [line for line in prose.splitlines() if line.startswith("|") and re.search(r"\d\.\d", line)]
    assert not tables, f"{folder.name}: a table of figures outside its generated benchmarks: {tables[0]}"
    assert not SCORE.search(prose), f"{folder.name}: a score outside its generated benchmarks: {SCORE.search(prose)[0]}"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_card_shows_the_results_files_readmes_table_names(folder, scored):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith(f"| `models/{folder.name}` |"))
    named = {link for link in re.findall(r"\]\((benchmarks/results/[^)]+\.json)\)", row)
             if "results" in json.loads((ROOT / link).read_text(encoding="utf-8"))}  # speed files are not cards'
    shown = {path.as_posix() for path, _ in records_of(folder, scored)}
    assert named and named <= shown, f"{folder.name}: README names {sorted(named - shown)}, its card does not"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_card_states_the_normalizer_its_record_holds(folder):
    normalizer = json.loads((folder / "kalbert.json").read_text(encoding="utf-8")).get("normalizer")
    stated = re.findall(r"^- normalizer version (\d+): .*?\(([\d,]+) characters", _card(folder), flags=re.M)
    if normalizer:
        assert all(s == (str(normalizer["version"]), f"{normalizer['characters_mapped']:,}") for s in stated), stated
    else:
        assert not stated
