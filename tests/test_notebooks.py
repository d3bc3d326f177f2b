"""Execute every notebook top to bottom with small parameters (the `notebooks` marker; CI runs them)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

# Small values for each notebook's "parameters" cell; keys are notebook file names.
SMALL_PARAMETERS: dict[str, dict[str, object]] = {
    "01_korean_vocabulary.ipynb": {"VOCAB_SIZE": 4000, "MAX_SENTENCES": 5000},
    "02_further_pretraining_mlm.ipynb": {
        "MAX_DOCUMENTS": 300, "MAX_SEQ_LENGTH": 64, "STEPS": 10, "BATCH_SIZE": 8, "EVAL_EVERY": 5,
        "HELDOUT_FRACTION": 0.2,
    },
    "03_extend_vocab_further_pretraining.ipynb": {
        "MAX_NEW": 50, "MIN_COUNT": 3, "MAX_CORPUS_SENTENCES": 3000, "MAX_DOCUMENTS": 300, "MAX_SEQ_LENGTH": 64,
        "STEPS": 10, "BATCH_SIZE": 8, "EVAL_EVERY": 5, "HELDOUT_FRACTION": 0.2,
    },
    "04_sentence_albert.ipynb": {
        "STS_DEV": "korsts:dev", "STS_TEST": "klue-sts:dev",  # KLUE-STS dev is reported: it never picks
        "MAX_SEQ_LENGTH": 64, "STS_EPOCHS": 1, "STS_MAX_ROWS": 160, "PARALLEL": ["parallel-stsb-train"],
        "DISTILL_EPOCHS": 1, "DISTILL_MAX_ROWS": 200, "DEV_ROWS": 40, "MAX_STEPS": 10, "BATCH_SIZE": 16,
        "SEARCH_MAX_SENTENCES": 300,
    },
    "05_multiple_choice.ipynb": {
        "EPOCHS": 1, "BATCH_SIZE": 8, "MAX_LENGTH": 64, "MAX_TRAIN_EXAMPLES": 32, "MAX_EVAL_EXAMPLES": 24,
    },
    "06_extractive_qa.ipynb": {
        "EPOCHS": 1, "BATCH_SIZE": 8, "QA_MAX_LENGTH": 128, "DOC_STRIDE": 32, "MAX_TRAIN_ROWS": 32,
        "MAX_EVAL_ROWS": 16,
    },
}

# Tiny base checkpoints the notebooks start from instead of pretraining their own.
TINY_MODEL = {"hidden_size": 64, "num_layers": 2, "embedding_size": 32, "num_heads": 2, "intermediate_size": 128}


def _tiny_checkpoint(folder: Path, vocab: Path, corpus: Path) -> Path:
    from kalbert.pretrain import DataBuildConfig, ModelConfig, PretrainConfig, build_pretraining_data, pretrain

    data = build_pretraining_data(DataBuildConfig(vocab=str(vocab), inputs=[str(corpus)], out=str(folder / "data"),
                                                  max_seq_length=64, max_documents=200, processes=1))
    model = ModelConfig(preset="tiny", **TINY_MODEL)
    return pretrain(PretrainConfig(data=str(data), out=str(folder / "run"), model=model, max_steps=20, batch_size=8,
                                   eval_every=20, save_every=20, log_every=5, threads=2, tensorboard=False))


@pytest.fixture(scope="session")
def ko_model(tmp_path_factory, ko_vocab, ko_corpus) -> Path:
    """A tiny Korean ALBERT (H64, L2, E32) pretrained for 20 steps with the 5k test vocabulary."""
    return _tiny_checkpoint(tmp_path_factory.mktemp("ko-model"), ko_vocab, ko_corpus)


@pytest.fixture(scope="session")
def zh_model(tmp_path_factory, zh_vocab, zh_corpus) -> Path:
    """A tiny Chinese ALBERT pretrained for 20 steps with the 8k test vocabulary."""
    return _tiny_checkpoint(tmp_path_factory.mktemp("zh-model"), zh_vocab, zh_corpus)


def _fixture_parameters(name: str, request) -> dict[str, object]:
    """Overrides that point a notebook at the session's corpora, vocabularies and tiny checkpoints."""
    fixture = request.getfixturevalue
    if name.startswith("01_"):
        return {"CORPUS": str(fixture("ko_corpus"))}
    if name.startswith(("02_", "03_")):
        return {"BASE_MODEL": str(fixture("ko_model")), "VOCAB": str(fixture("ko_vocab"))}
    if name.startswith("04_"):
        return {"MODEL": str(fixture("ko_model")), "VOCAB": str(fixture("ko_vocab"))}
    if name.startswith(("05_", "06_")):
        return {"KO_MODEL": str(fixture("ko_model")), "ZH_MODEL": str(fixture("zh_model"))}
    return {}


def _with_parameters(notebook: nbformat.NotebookNode, values: dict[str, object], out: Path) -> None:
    """Append overrides to the cell tagged `parameters`, as papermill does."""
    cell = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    overrides = {**values, "OUT": str(out)}
    cell.source += "\n# test overrides\n" + "\n".join(f"{k} = {v!r}" for k, v in overrides.items())


@pytest.mark.notebooks
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs(name, tmp_path, request):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "strip outputs"
    values = {**_fixture_parameters(name, request), **SMALL_PARAMETERS.get(name, {})}
    _with_parameters(notebook, values, tmp_path / "out")
    resources = {"metadata": {"path": str(tmp_path)}}
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources=resources)
    client.execute()
