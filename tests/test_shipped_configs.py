"""A shipped config (kalbert/configs/) that says it makes a shipped folder tells the same story as what made it:
a vocabulary's config is the one its kalbert.json records, a model stage's config is its recipe stage's settings
(paths aside), so no config can describe a model its recipe and record do not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kalbert.config import CONFIGS_DIR

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(CONFIGS_DIR.rglob("*.yaml"))
PATHS = {"out", "vocab", "model", "student", "data", "init", "init_from"}
"""settings that name where a stage reads or writes: a recipe stage names its recipe's folders there"""


def _header(path: Path) -> tuple[str, list[str]]:
    """The verb the config's opening command runs, and the shipped folders its comment names outside commands
    (what it makes, not what a command it quotes reads)."""
    comment = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    verb = re.match(r"# kalbert ([a-z]+(?: [a-z]+)?) --config ", comment[0])
    assert verb, f"{path.name}: does not open with the command that runs it"
    prose = " ".join(line for line in comment[1:] if "kalbert " not in line)
    return verb[1], re.findall(r"\b((?:models|vocab)/[\w-]+)", prose)


def _recipe_stages(verb: str) -> list[dict]:
    stages = [stage for recipe in sorted((ROOT / "recipes").glob("*.yaml"))
              for stage in yaml.safe_load(recipe.read_text(encoding="utf-8"))["stages"]]
    return [stage.get("config") or {} for stage in stages if stage["verb"] == verb]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(CONFIGS_DIR)))
def test_a_config_naming_a_shipped_folder_matches_what_made_it(path):
    verb, named = _header(path)
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    for folder in named:
        if folder == config.get("out"):  # it makes that folder: the config its record holds
            recorded = json.loads((ROOT / folder / "kalbert.json").read_text(encoding="utf-8"))["config"]
            assert {k: recorded.get(k) for k in config} == config, f"{path.name} differs from {folder}/kalbert.json"
        else:  # a stage of that folder's recipe
            settings = {k: v for k, v in config.items() if k not in PATHS}
            stages = [{k: stage.get(k) for k in settings} for stage in _recipe_stages(verb)]
            assert settings in stages, f"{path.name} matches no `{verb}` stage of a recipe: {settings}"
