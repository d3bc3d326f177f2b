"""One record per verb (kalbert.verbs): every command the CLI has is a record with help and an example, its parser
is built from it, every verb that makes an artifact has a function and is named in the "make one with" hints, and
every input a verb takes is declared, so the tables that used to say these things apart cannot drift again."""

from __future__ import annotations

import argparse

import pytest

from kalbert.artifact import Kind
from kalbert.cli.main import build_parser
from kalbert.verbs import VERBS, makers

INPUT_NAMES = {"model", "models", "student", "teacher", "vocab", "base", "init", "init_from", "index", "folder",
               "tokenizer", "data", "corpus", "inputs", "train", "eval", "test", "sts", "parallel", "sources",
               "input", "out"}
"""arguments and settings that name a folder, a file or a data set wherever they appear"""
UNDECLARED = {
    ("pretrain", "out"): "a run folder, continued with --resume (kalbert.pretrain.run_state checks it)",
    ("demo", "out"): "the recipe's folder, resumed stage by stage",
    ("recipe run", "out"): "the recipe's folder, resumed stage by stage",
    ("bench run", "model"): "a baseline's name or a folder (kalbert.bench.baselines.load_encoder)",
    ("bench run", "out"): "a results file that a rerun rewrites",
    ("bench report", "out"): "RESULTS.md, rewritten from the results files",
    ("search build", "out"): "checked by kalbert.search.build, where a --shard run writes beside it",
}
"""inputs no declaration checks, and why"""


def _parsers() -> dict[str, argparse.ArgumentParser]:
    """'noun verb' (or 'noun' for a one-word verb) -> its parser, for every name it answers to (aliases too)."""
    found = {}
    nouns = next(a for a in build_parser()._actions if a.dest == "noun")
    for noun, parser in nouns.choices.items():
        verbs = [a for a in parser._actions if a.dest == "verb"]
        found |= {f"{noun} {word}": child for word, child in verbs[0].choices.items()} if verbs else {noun: parser}
    return found


def _dests(parser: argparse.ArgumentParser) -> set[str]:
    return {action.dest for action in parser._actions}


PARSERS = _parsers()


def test_every_command_is_one_record_and_its_parser_comes_from_it():
    assert set(PARSERS) == set(VERBS) | {alias for verb in VERBS.values() for alias in verb.aliases}
    for name, verb in VERBS.items():
        parser = PARSERS[name]
        assert verb.help and "\n" not in verb.help, name
        assert verb.command in verb.example, f"{name}: its example runs another command"
        assert parser.get_default("command") == name and parser.epilog.startswith("example:\n  ")
        assert all(f"  {line}" in parser.epilog for line in verb.example.splitlines()), name
        assert all(PARSERS[alias] is parser for alias in verb.aliases), name


def test_the_verbs_that_make_artifacts_are_stages_and_named_as_their_kinds_makers():
    for name, verb in VERBS.items():
        assert bool(verb.function) == verb.makes_artifact, f"{name}: a function exactly where it makes an artifact"
        assert not verb.makes_artifact or verb.config, f"{name}: a stage needs a config"
        if verb.kind:
            noun, _, word = name.partition(" ")
            assert f"`kalbert {noun}" in makers([verb.kind]) and word in makers([verb.kind]), name
    # every kind a folder check may ask for can be made; a pretraining run is what `kalbert pretrain` writes around
    # its model, never an input
    assert all(makers([kind]) for kind in Kind if kind != Kind.PRETRAINING_RUN)
    assert makers([Kind.SENTENCE_MODEL]) == ("`kalbert sbert export|train|distill|average|widen` or "
                                             "`kalbert teacher finetune`")


@pytest.mark.parametrize("name", VERBS)
def test_every_input_a_verb_takes_is_declared(name):
    verb, dests = VERBS[name], _dests(PARSERS[name])
    assert set(verb.inputs) <= dests, f"{name} declares inputs it does not take: {set(verb.inputs) - dests}"
    undeclared = {dest for dest in dests & INPUT_NAMES if dest not in verb.inputs and (name, dest) not in UNDECLARED}
    assert not undeclared, f"{name} takes {undeclared} without declaring what they must be"


def test_a_folder_of_the_wrong_kind_names_its_makers_through_the_verb_and_the_cli(tmp_path, capsys):
    """Layers below the verbs raise WrongKind with a generic hint (they cannot import the records that name the
    makers); a verb's own check and the CLI name them."""
    from kalbert.artifact import read_meta
    from kalbert.cli.main import main
    from kalbert.errors import WrongKind

    with pytest.raises(WrongKind, match="a kalbert command that makes a vocab folder"):
        read_meta(tmp_path, Kind.VOCAB)
    with pytest.raises(WrongKind) as caught:
        VERBS["sbert widen"].check({"model": str(tmp_path)})
    assert "make one with `kalbert sbert" in caught.value.hint
    assert main(["sbert", "widen", "--model", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "make one with `kalbert sbert" in capsys.readouterr().err
