"""`kalbert recipe run` on a two-stage recipe of tiny models: it builds, resumes after the last finished stage,
records the recipe in every stage's record, and refuses (or with --overwrite rebuilds) a stage whose settings
changed, with the stages that read it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.hardware import describe_machine, hardware_block
from kalbert.recipe import load_recipe, run_recipe, stage_state

RECIPE = """\
out: {out}
settings:
  albert: {albert}
  steps: 2
stages:
  - stage: export
    verb: sbert export
    config: {{model: "${{albert}}", max_seq_length: 48}}
  - stage: sts
    verb: sbert sts
    config: {{model: "${{export}}", train: [korsts], eval: "korsts:dev", test: ["korsts:test"], lr: 1.0e-3,
             batch_size: 16, max_steps: "${{steps}}", eval_steps: 2}}
"""


@pytest.fixture
def recipe_file(tmp_path, tiny_albert, tiny_data) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(RECIPE.format(out=tmp_path / "out", albert=tiny_albert), encoding="utf-8")
    return path


def _states(recipe) -> list[str]:
    return [stage_state(recipe, stage)[0] for stage in recipe.stages]


def test_a_recipe_builds_resumes_and_records_itself(recipe_file, tmp_path):
    recipe = load_recipe(recipe_file)
    assert _states(recipe) == ["todo", "todo"]
    run_recipe(recipe, until="export")  # as if killed during the second stage
    assert _states(recipe) == ["done", "todo"]
    printed: list[str] = []
    folders = run_recipe(recipe, echo=printed.append)
    machine = re.escape(describe_machine(hardware_block()))
    assert re.fullmatch(rf"\[export\] done in \d+\.\d min on {machine}, load \d+\.\d: "
                        + re.escape(str(tmp_path / "out" / "export")), printed[0])
    assert printed[1].startswith("[sts] kalbert sbert sts --model ")
    assert _states(recipe) == ["done", "done"]
    record = json.loads((folders["sts"] / "kalbert.json").read_text())
    block = record["recipe"]
    assert block["file"] == str(recipe_file) and block["stage"] == "sts"
    assert [s["stage"] for s in block["stages"]] == ["export", "sts"]
    assert block["stages"][1]["config"]["max_steps"] == 2
    export_cost = block["stages"][0]["cost"]  # the earlier stage's cost, from its own record
    assert export_cost["wall_seconds"] == json.loads((folders["export"] / "kalbert.json").read_text())[
        "recipe"]["wall_seconds"]
    assert "cost" not in block["stages"][1] and block["wall_seconds"] > 0  # its own is beside the block
    assert block["data"] == ["korsts", "korsts:dev", "korsts:test"]
    assert set(block["inputs"]) == {"export"}
    assert any(p["path"] == str(folders["export"]) for p in record["parents"])


def test_a_changed_setting_is_refused_then_rebuilt_with_overwrite(recipe_file):
    run_recipe(load_recipe(recipe_file))
    changed = load_recipe(recipe_file, overrides=["steps=4"])
    assert _states(changed) == ["done", "changed"]
    with pytest.raises(KalbertError, match="stage sts: .* was made with other settings"):
        run_recipe(changed)
    run_recipe(changed, overwrite=True)
    assert _states(changed) == ["done", "done"]
    rebuilt_export = load_recipe(recipe_file, overrides=["export.max_seq_length=32", "steps=4"])
    run_recipe(rebuilt_export, until="export", overwrite=True)
    assert _states(rebuilt_export) == ["done", "changed"]  # it read the export folder as it was


def test_the_cli_runs_a_recipe_and_a_dry_run_does_nothing(recipe_file, tmp_path, capsys):
    assert main(["recipe", "run", str(recipe_file), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "[export] todo" in out and "kalbert sbert export --model" in out
    assert not (tmp_path / "out").exists()
    assert main(["recipe", "run", str(recipe_file), "--until", "export"]) == 0
    assert main(["recipe", "run", str(recipe_file), "--set", "export.max_seq_length=32"]) == 2
    assert "was made with other settings" in capsys.readouterr().err
