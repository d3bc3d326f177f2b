"""The package's import structure: every module imports, the kalbert import graph has no cycle, teachers sit
below both of their users (sentence distillation and pretraining), so neither can be pulled in by a teacher, and
only the benchmark and the CLI import the benchmark.

Imports are read with ``ast`` wherever they are written, inside functions too: a function-local import hides
a cycle from Python's import machinery but not from the design.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import kalbert

ROOT = Path(kalbert.__file__).parent


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name), with its source file."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imported(name: str, path: Path) -> set[str]:
    """The kalbert modules that module ``name`` imports, module-level and function-level alike."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            # `from kalbert.x import y` imports module kalbert.x.y when there is one, else a name of kalbert.x
            targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}
    return {t for t in targets if t in MODULES and t != name}


GRAPH = {name: _imported(name, path) for name, path in MODULES.items()}


def _cycle() -> list[str]:
    """One import cycle as a path ``[a, b, ..., a]``, or [] when the graph is acyclic (depth-first search)."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once fully explored

    def visit(name: str, path: list[str]) -> list[str]:
        state[name] = "open"
        for target in sorted(GRAPH[name]):
            if state.get(target) == "open":
                return [*path[path.index(target):], name, target] if target in path else [name, target]
            if target not in state and (found := visit(target, [*path, name])):
                return found
        state[name] = "done"
        return []

    return next((found for name in sorted(GRAPH) if name not in state and (found := visit(name, []))), [])


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"kalbert.__main__"}))  # that one runs the CLI
def test_every_module_imports(name):
    importlib.import_module(name)


def test_walk_finds_the_same_modules():
    walked = {info.name for info in pkgutil.walk_packages(kalbert.__path__, "kalbert.")}
    assert walked | {"kalbert"} == set(MODULES)


def test_import_graph_has_no_cycle():
    cycle = _cycle()
    assert not cycle, "import cycle: " + " -> ".join(cycle)


def test_teachers_import_neither_sentence_nor_pretrain():
    below = {name: _reachable(name) for name in MODULES if name.split(".")[:2] == ["kalbert", "teachers"]}
    upward = {name: sorted(t for t in targets if t.split(".")[:2] in (["kalbert", "sentence"], ["kalbert", "pretrain"]))
              for name, targets in below.items()}
    assert not any(upward.values()), {name: targets for name, targets in upward.items() if targets}


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize("name", [name for name in sorted(MODULES)
                                  if not (_in(name, "kalbert.bench") or _in(name, "kalbert.cli"))])
def test_only_the_benchmark_and_the_cli_import_the_benchmark(name):
    """The benchmark harness sits at the top of the house with the CLI: training, teachers and the tasks never
    reach up into it (the encoders they share with it live in kalbert.teachers.encoders)."""
    assert not sorted(t for t in GRAPH[name] if _in(t, "kalbert.bench")), f"{name} imports kalbert.bench"
