"""Recipes without running them: the verb registry matches the command line, every shipped recipe resolves and
its dry run lists stages that read only registered data and pick on dev splits, `make run` is the demo recipe,
and a broken recipe is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kalbert.cli.main import build_parser, main
from kalbert.config import settings
from kalbert.data.registry import DATASETS, assert_selectable, parse_ref
from kalbert.errors import KalbertError
from kalbert.recipe import RECIPES_DIR, load_recipe
from kalbert.verbs import VERBS

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def _verb_parsers() -> set[str]:
    """'noun verb' (or 'noun' for a one-word verb) of every command the CLI knows."""
    found = set()
    nouns = next(a for a in build_parser()._actions if a.dest == "noun")
    for noun, parser in nouns.choices.items():
        verbs = [a for a in parser._actions if a.dest == "verb"]
        found |= {f"{noun} {verb}" for verb in verbs[0].choices} if verbs else {noun}
    return found


def test_every_registered_verb_is_a_command_with_an_out_setting():
    known = _verb_parsers()
    for name, verb in VERBS.items():
        assert name in known
        assert "out" in {s.name for s in settings(verb.config_class())}


def test_the_shipped_recipes_are_the_models_and_the_demo():
    assert SHIPPED == ["demo", "qa-ko-zh-small", "sbert-ko-zh-small", "static-ko-zh-48k"]


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_recipe_reads_registered_data_and_picks_on_dev(name, capsys):
    recipe = load_recipe(RECIPES_DIR / f"{name}.yaml", "/nonexistent/kalbert-dry-run")
    for stage in recipe.stages:
        assert stage.files == [], f"{name}: {stage.name} reads unregistered files"
        assert all(parse_ref(ref)[0] in DATASETS for ref in stage.data)
        for ref in getattr(stage.config, "eval", None) or []:
            assert_selectable(*parse_ref(ref))
    assert main(["recipe", "run", name, "--out", "/nonexistent/kalbert-dry-run", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    for stage in recipe.stages:
        assert f"[{stage.name}] todo" in printed and stage.command in printed


def test_make_run_is_the_demo_recipe():
    target = (ROOT / "Makefile").read_text().split("\nrun:", 1)[1].split("\n\n", 1)[0]
    assert target.strip().endswith("kalbert recipe run recipes/demo.yaml")


def test_the_demo_verb_runs_the_demo_recipe(capsys):
    assert main(["demo", "--out", "/nonexistent/kalbert-dry-run", "--dry-run", "--until", "transplant"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("  kalbert transplant --teacher multilingual-e5-small")


@pytest.mark.parametrize(("text", "says"), [
    ("stages: [{stage: a, verb: sbert train}]", "unknown verb 'sbert train'"),
    ("stages: [{stage: a, verb: vocab build, config: {lang: ko, inputs: ['${b}']}}]", "unknown reference"),
    ("stages: [{stage: a, verb: vocab build, config: {lang: ko, inputs: [kowiki], out: x}}]", "remove its out"),
    ("stages: [{stage: a, verb: vocab build, config: {lang: ko, inputs: [kowiki], sise: 3}}]", "unknown setting sise"),
    ("out: x\nstage: []", "not a recipe"),
])
def test_a_broken_recipe_is_one_line(tmp_path, text, says):
    path = tmp_path / "r.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(KalbertError, match=says):
        load_recipe(path)


def test_set_names_a_setting_or_a_stage(tmp_path):
    with pytest.raises(KalbertError, match="has no setting vocab_sise"):
        load_recipe("demo", overrides=["vocab_sise=4000"])
    with pytest.raises(KalbertError, match="has no stage vocabulary"):
        load_recipe("demo", overrides=["vocabulary.vocab_size=4000"])
    recipe = load_recipe("demo", str(tmp_path), ["vocab_size=4000", "sentence.lr=5e-5"])
    assert recipe.stage("vocab").config.vocab_size == 4000 and recipe.stage("sentence").config.loop.lr == 5e-5
    assert recipe.stage("transplant").config.vocab == str(tmp_path / "vocab")


def test_records_carry_the_recipe_stage_they_were_written_in():
    from kalbert.artifact import Kind
    from kalbert.stage import complete_record, recipe_stage

    carried = {"languages": ["ko"], "recipe": {"stage": "parent's"}}
    assert "recipe" not in complete_record(carried, Kind.VOCAB)
    with recipe_stage({"stage": "vocab"}):
        assert complete_record(carried, Kind.VOCAB)["recipe"] == {"stage": "vocab"}
    assert "recipe" not in complete_record(carried, Kind.VOCAB)
