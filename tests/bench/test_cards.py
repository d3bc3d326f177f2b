"""`kalbert bench report --cards`: a card's benchmarks come from the results files that name its weights, replace
its stage figures, regenerate in place, and drop when the weights change; results files name their weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kalbert.bench import ResultsFile, read_results, write_results
from kalbert.bench.cards import BEGIN, END
from kalbert.bench.results import qa_results
from kalbert.cli.main import main
from kalbert.weights import weights_sha256

CARD = """# A model

What it is.

## Measured metrics

| stage | data | metric | value |
|---|---|---|---|
| sts | korsts:test | spearman_cosine | 0.7713 |

## How it was made

- **sts**: `kalbert sbert sts ...`
"""


def _model(folder: Path, seed: int) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(exist_ok=True)
    save_file({"w": np.random.default_rng(seed).normal(size=(4, 3)).astype(np.float32)}, folder / "model.safetensors")
    (folder / "README.md").write_text(CARD, encoding="utf-8")
    return folder


def _results(path: Path, model: Path | str, spearman: float) -> Path:
    record = {"task": "korsts", "dataset": "korsts", "split": "test", "group": "Korean STS", "label": "KorSTS",
              "setting": "cosine", "metric": "spearman", "value": spearman, "n": 1379}
    return write_results(path, ResultsFile(path.stem, "kalbert", f"kalbert bench run --model {model}", [record],
                                           model_path=str(model)))


def test_a_results_file_names_the_weights_it_scored(tmp_path):
    model = _model(tmp_path / "m", 0)
    assert read_results(_results(tmp_path / "r.json", model, 79.0)).weights_sha256 == weights_sha256(model)
    assert weights_sha256(model).keys() == {"model.safetensors"}
    assert read_results(_results(tmp_path / "b.json", "tfidf", 60.0)).weights_sha256 is None  # a baseline's name


def test_a_fine_tuning_results_file_names_the_fine_tuned_weights(tmp_path):
    start, tuned = _model(tmp_path / "start", 0), _model(tmp_path / "tuned", 1)
    summary = {"task": "korquad", "wall_seconds": 1.0, "train_questions": 4, "train_sets": ["korquad"],
               "article_splits": {}, "splits": {"train": "train", "select": "val"},
               "config": {"model": str(start), "out": str(tuned)},
               "report": {"split": "test", "n": 8, "n_split": 8, "exact_match": 50.0, "f1": 60.0, "read_as": "korquad"}}
    results = qa_results(summary, "qa", "kalbert qa train ...")
    assert results.model_path == str(start) and results.weights_sha256 == weights_sha256(tuned)


def test_cards_show_the_results_of_their_weights(tmp_path, capsys):
    model, other = _model(tmp_path / "model", 0), _model(tmp_path / "other", 1)
    ours, theirs = _results(tmp_path / "ours.json", model, 79.0912), _results(tmp_path / "theirs.json", other, 11.0)
    command = ["bench", "report", str(ours), str(theirs), "--out", str(tmp_path / "RESULTS.md"), "--cards", str(model)]
    assert main(command) == 0
    card = (model / "README.md").read_text(encoding="utf-8")
    assert "| korsts | test | spearman | cosine | 79.09 | 1379 |" in card and "11.00" not in card
    assert "0.7713" not in card and "## Measured metrics" not in card  # the stage figures stay in kalbert.json
    assert card.index("What it is.") < card.index(BEGIN) < card.index(END) < card.index("## How it was made")
    assert str(model / "README.md") in capsys.readouterr().out
    assert main(command) == 0 and (model / "README.md").read_text(encoding="utf-8") == card  # in place, stable

    _model(model, 2)  # new weights: the old scores are not theirs
    (model / "README.md").write_text(card, encoding="utf-8")
    assert main(command) == 0
    card = (model / "README.md").read_text(encoding="utf-8")
    assert "79.09" not in card and "No results file names these weights yet" in card


def test_a_cards_folder_without_a_card_is_one_line(tmp_path, capsys):
    results = _results(tmp_path / "r.json", _model(tmp_path / "m", 0), 79.0)
    assert main(["bench", "report", str(results), "--out", str(tmp_path / "R.md"), "--cards", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "has no README.md" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "R.md").exists()  # refused before anything is written
