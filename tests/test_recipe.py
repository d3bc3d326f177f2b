"""Recipes without running them: the verb registry matches the command line, every shipped recipe resolves and
its dry run lists stages that read only registered data and pick on dev splits, `make run` is the demo recipe,
and a broken recipe is one line."""

from __future__ import annotations

import argparse
import shlex
import sys
import types
from pathlib import Path

import pytest

from kalbert.cli.common import config_from_args
from kalbert.cli.main import build_parser, main
from kalbert.config import build_config, settings
from kalbert.data.registry import DATASETS, assert_selectable, parse_ref
from kalbert.errors import KalbertError
from kalbert.recipe import RECIPES_DIR, load_recipe, run_recipe
from kalbert.verbs import VERBS, _attribute, command_for

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))
WRITES_A_FILE = {"sbert mine": "mined pairs, a TSV", "mc cloze": "cloze examples, a JSONL",
                 "bench run": "benchmark results, a JSON"}
"""config verbs with --out that write one file with its record beside it, not an artifact folder: no recipe stage
or folder check can read them, so they make no artifact"""


def _verb_parsers() -> dict[str, argparse.ArgumentParser]:
    """'noun verb' (or 'noun' for a one-word verb) -> parser, for every command the CLI knows."""
    found = {}
    nouns = next(a for a in build_parser()._actions if a.dest == "noun")
    for noun, parser in nouns.choices.items():
        verbs = [a for a in parser._actions if a.dest == "verb"]
        children = verbs[0].choices.values() if verbs else ()  # a verb's old name (an alias) is the same parser
        found |= {child.prog.partition(" ")[2]: child for child in children} if verbs else {noun: parser}
    return found


def _config_ref(parser: argparse.ArgumentParser) -> tuple[str, tuple[str, ...]] | None:
    """The "module:Class" of a verb's config and its positional settings; None for a verb without a config."""
    deferred = parser.get_default("deferred_settings")
    if deferred:
        return deferred[0], deferred[1]
    cls = parser.get_default("config_class")
    if cls is None:
        return None
    positional = tuple(a.dest for a in parser._actions if not a.option_strings and a.dest in
                       {s.name for s in settings(cls)})
    return f"{cls.__module__}:{cls.__qualname__}", positional


CONFIG_VERBS = [name for name, verb in VERBS.items() if verb.config]


def test_every_registered_verb_is_the_command_that_takes_its_config():
    parsers = _verb_parsers()
    for name in CONFIG_VERBS:
        verb = VERBS[name]
        cls = verb.config_class()
        assert f"{cls.__module__}:{cls.__qualname__}" == verb.config, f"{name}: name the config by its home"
        assert _config_ref(parsers[name]) == (verb.config, verb.positional), f"{name}: the CLI takes another config"
        if verb.makes_artifact:
            assert callable(_attribute(verb.function))
            assert "out" in {s.name for s in settings(cls)}


def test_every_command_that_writes_an_artifact_folder_is_registered():
    for name, parser in _verb_parsers().items():
        ref = _config_ref(parser)
        if ref is None or "out" not in {s.name for s in settings(_attribute(ref[0]))}:
            continue
        assert VERBS[name].makes_artifact != (name in WRITES_A_FILE), name


@pytest.mark.parametrize("name", CONFIG_VERBS)
def test_a_verbs_command_parses_back_to_its_config(name):
    cls = VERBS[name].config_class()
    values = {s.name: (s.choices[0] if s.choices else ["a b", "c"] if s.is_list else f"{s.name} folder")
              for s in settings(cls) if s.required}
    config = build_config(cls, values)
    command = command_for(config)
    assert shlex.split(command)[: 1 + len(name.split())] == ["kalbert", *name.split()]
    assert config_from_args(build_parser().parse_args(shlex.split(command)[1:])) == config


def test_the_shipped_recipes_are_the_models_and_the_demo():
    assert SHIPPED == ["demo", "qa-ko-zh-small", "rerank-ko-zh-small", "sbert-ko-zh-small", "static-ko-zh-48k"]


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
    ("stages: [{stage: a, verb: sbert fit}]", "unknown verb 'sbert fit'"),
    ("stages: [{stage: a, verb: sbert trian}]", "did you mean 'sbert train'"),
    ("stages: [{stage: a, verb: sbert mine, config: {teacher: x, corpus: [kowiki]}}]", "cannot be a recipe stage"),
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


def _stand_in(monkeypatch, ref: str) -> list:
    """Replace the function ``ref`` ("module:function") with one that records the configs it is called with, so a
    test sees whether a stage ran without importing what the real one needs (torch)."""
    module, _, name = ref.partition(":")
    calls: list = []
    fake = types.ModuleType(module)
    setattr(fake, name, lambda config, overwrite=False: calls.append(config))
    monkeypatch.setitem(sys.modules, module, fake)
    return calls


def _sts_recipe(tmp_path: Path, model: Path) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(f"out: {tmp_path / 'out'}\nstages:\n  - stage: sts\n    verb: sbert train\n"
                    f"    config: {{model: {model}, train: [korsts]}}\n", encoding="utf-8")
    return path


def test_a_recipe_stage_is_refused_as_its_command_is_before_any_work(tmp_path, capsys, monkeypatch):
    calls = _stand_in(monkeypatch, VERBS["sbert train"].function)
    missing, out = tmp_path / "no-model", tmp_path / "out"
    assert main(["recipe", "run", str(_sts_recipe(tmp_path, missing))]) == 2
    from_recipe = capsys.readouterr().err
    assert main(["sbert", "train", "--model", str(missing), "--train", "korsts", "--out", str(out / "sts")]) == 2
    from_command = capsys.readouterr().err
    assert from_recipe == from_command and from_recipe.count("\n") == 1, (from_recipe, from_command)
    assert f"--model {missing}: folder not found" in from_recipe
    assert calls == [] and not out.exists()


def test_a_recipe_stage_whose_inputs_pass_runs_its_verb(tmp_path, monkeypatch):
    calls = _stand_in(monkeypatch, VERBS["sbert train"].function)
    model = ROOT / "models/sbert-ko-zh-small"
    run_recipe(load_recipe(_sts_recipe(tmp_path, model)), echo=lambda line: None)
    assert [(config.model, config.out) for config in calls] == [(str(model), str(tmp_path / "out" / "sts"))]


def test_records_carry_the_recipe_stage_they_were_written_in():
    from kalbert.artifact import Kind
    from kalbert.stage import complete_record, recipe_stage

    carried = {"languages": ["ko"], "recipe": {"stage": "parent's"}}
    assert "recipe" not in complete_record(carried, Kind.VOCAB)
    with recipe_stage({"stage": "vocab"}):
        recorded = complete_record(carried, Kind.VOCAB)["recipe"]
    assert recorded.pop("wall_seconds") >= 0 and recorded == {"stage": "vocab"}
    assert "recipe" not in complete_record(carried, Kind.VOCAB)


def test_a_stage_recorded_before_its_verb_gained_a_setting_is_still_done(tmp_path):
    """`qa train` took the loop's --eval-steps and --max-steps after QA stages were recorded: at their defaults
    an old record still matches; set, or another value changed, it does not."""
    import json

    from kalbert.recipe import stage_state

    recipe = load_recipe("qa-ko-zh-small", str(tmp_path))
    stage = recipe.stage("qa")
    old = {name: value for name, value in stage.values.items() if name not in ("eval_steps", "max_steps")}

    def recorded(config: dict) -> None:
        stage.folder.mkdir(parents=True, exist_ok=True)
        block = {"stage": "qa", "config": config, "inputs": {"pretrain-rss": None}}
        (stage.folder / "kalbert.json").write_text(json.dumps({"kind": "qa", "recipe": block}), encoding="utf-8")

    recorded(old)
    assert stage_state(recipe, stage) == ("done", "")
    recorded({**old, "lr": 5e-5})
    assert stage_state(recipe, stage)[0] == "changed"
    recorded(old)
    changed = load_recipe("qa-ko-zh-small", str(tmp_path), ["qa.eval_steps=100"])
    assert stage_state(changed, changed.stage("qa"))[0] == "changed"


def test_a_stage_of_a_verb_that_keeps_its_inputs_kind_is_done_at_any_kind(tmp_path):
    """`vocab normalize` writes a new version of whatever folder it reads: its stage is done when the record
    carries the stage's block, whatever kind that record has."""
    import json

    from kalbert.recipe import _record_sha, stage_state

    path = tmp_path / "r.yaml"
    path.write_text("stages:\n  - {stage: vocab, verb: vocab build, config: {lang: ko, inputs: [kowiki]}}\n"
                    "  - {stage: t2s, verb: vocab normalize, config: {folder: '${vocab}'}}\n", encoding="utf-8")
    recipe = load_recipe(path, str(tmp_path / "out"))
    stage = recipe.stage("t2s")
    assert stage.command == f"kalbert vocab normalize {tmp_path / 'out/vocab'} --out {stage.folder}"
    stage.folder.mkdir(parents=True)
    (stage.folder / "kalbert.json").write_text("{}", encoding="utf-8")
    assert stage_state(recipe, stage) == ("changed", "holds no kalbert record of this stage")
    block = {"stage": "t2s", "config": stage.values, "inputs": {"vocab": _record_sha(recipe.stage("vocab"))}}
    for kind in ("vocab", "sentence-model"):
        (stage.folder / "kalbert.json").write_text(json.dumps({"kind": kind, "recipe": block}), encoding="utf-8")
        assert stage_state(recipe, stage) == ("done", "")
