# The README's two commands live here: `make run` (set up + main job) and `make test` (set up + tests).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test test-slow lint

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned, so that nothing later resolves a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev,onnx,teachers,search]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/kalbert recipe run recipes/demo.yaml

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q

lint: $(STAMP)
	$(BIN)/ruff check kalbert tests benchmarks experiments
