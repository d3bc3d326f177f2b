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
}


def _with_parameters(notebook: nbformat.NotebookNode, values: dict[str, object], out: Path) -> None:
    """Append overrides to the cell tagged `parameters`, as papermill does."""
    cell = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    overrides = {**values, "OUT": str(out)}
    cell.source += "\n# test overrides\n" + "\n".join(f"{k} = {v!r}" for k, v in overrides.items())


@pytest.mark.notebooks
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs(name, tmp_path, ko_corpus):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), "strip outputs"
    _with_parameters(notebook, {"CORPUS": str(ko_corpus), **SMALL_PARAMETERS.get(name, {})}, tmp_path / "out")
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
