"""The verbs that make artifacts: for each, its config class, the function that runs it and the kind of folder
it writes.

Recipes (:mod:`kalbert.recipe`) name stages by these verbs, and the command every artifact's record keeps is
rendered from them (:func:`command_for`), as are those the recipe runner and ``kalbert demo`` print, so a verb's
spelling lives here once. Config classes and functions are named as ``module:attribute`` and imported on use:
the functions import torch, and a config module still costs an import that a noun's --help need not wait for.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, replace
from typing import Any

from kalbert.artifact import Kind
from kalbert.config import render_command
from kalbert.errors import KalbertError


@dataclass(frozen=True)
class Verb:
    """One artifact-making verb of the ``kalbert`` command."""

    name: str
    """the words after ``kalbert``, e.g. "sbert train" """
    config: str
    """its config dataclass, "module:Class" """
    function: str
    """the function that runs it, "module:function", called as ``function(config, overwrite=...)``"""
    kind: Kind | None
    """the ``kind`` its output folder's kalbert.json records; None: the kind of the folder it reads (``vocab
    normalize`` writes a new version of a vocabulary or of any model)"""
    record: str = ""
    """where under ``--out`` the finished artifact's record is ("model" for pretraining, whose run folder holds
    checkpoints and the exported model); "" for ``--out`` itself"""
    positional: tuple[str, ...] = ()
    """settings given without their flag on the command line"""

    @property
    def command(self) -> str:
        return f"kalbert {self.name}"

    def config_class(self) -> type:
        return _attribute(self.config)

    def render(self, config: Any) -> str:
        """The shell command that runs ``config`` (defaults left out)."""
        return render_command(self.command, config, self.positional)

    def run(self, config: Any, overwrite: bool = False) -> Any:
        function = _attribute(self.function)
        if "overwrite" in inspect.signature(function).parameters:
            return function(config, overwrite=overwrite)
        return function(config)


def _attribute(ref: str) -> Any:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


VERBS: dict[str, Verb] = {verb.name: verb for verb in [
    Verb("vocab build", "kalbert.vocab.config:VocabBuildConfig", "kalbert.vocab:build_vocab", Kind.VOCAB),
    Verb("vocab extend", "kalbert.vocab.config:VocabExtendConfig", "kalbert.vocab:extend_vocab", Kind.VOCAB),
    Verb("vocab normalize", "kalbert.vocab.config:VocabNormalizeConfig", "kalbert.vocab.normalize:normalize_folder",
         None, positional=("folder",)),
    Verb("data build", "kalbert.pretrain.data:DataBuildConfig", "kalbert.pretrain.data:build_pretraining_data",
         Kind.PRETRAINING_DATA),
    Verb("pretrain", "kalbert.pretrain.config:PretrainConfig", "kalbert.pretrain.trainer:pretrain",
         Kind.PRETRAINED_MODEL, record="model"),
    Verb("transplant", "kalbert.pretrain.config:TransplantConfig", "kalbert.transplant:transplant",
         Kind.PRETRAINED_MODEL),
    Verb("teacher export", "kalbert.teachers.export:TeacherExportConfig", "kalbert.teachers.export:export_teacher",
         Kind.TEACHER, positional=("teacher",)),
    Verb("teacher finetune", "kalbert.sentence.config:TeacherFinetuneConfig",
         "kalbert.sentence.teacher_finetune:finetune_teacher", Kind.SENTENCE_MODEL),
    Verb("sbert export", "kalbert.sentence.export:ExportConfig", "kalbert.sentence.export:export_sentence_model",
         Kind.SENTENCE_MODEL),
    Verb("sbert distill", "kalbert.sentence.config:DistillConfig", "kalbert.sentence.distill:distill_student",
         Kind.SENTENCE_MODEL),
    Verb("sbert train", "kalbert.sentence.config:SentenceTrainConfig", "kalbert.sentence.train:train_sentence_model",
         Kind.SENTENCE_MODEL),
    Verb("sbert average", "kalbert.sentence.average:AverageConfig", "kalbert.sentence.average:average_models",
         Kind.SENTENCE_MODEL),
    Verb("sbert widen", "kalbert.sentence.widen:WidenConfig", "kalbert.sentence.widen:widen_model",
         Kind.SENTENCE_MODEL),
    Verb("static distill", "kalbert.static.distill:StaticDistillConfig", "kalbert.static.distill:distill_static",
         Kind.STATIC_MODEL),
    Verb("static train", "kalbert.static.config:StaticTrainConfig", "kalbert.static.train:train_static",
         Kind.STATIC_MODEL),
    Verb("search build", "kalbert.search.build:SearchBuildConfig", "kalbert.search.build:build_index",
         Kind.SEARCH_INDEX),
    Verb("qa train", "kalbert.tasks.configs:QATrainConfig", "kalbert.tasks.qa.train:train_qa", Kind.QA_MODEL),
    Verb("mc train", "kalbert.tasks.configs:MCTrainConfig", "kalbert.tasks.multiple_choice:train_mc", Kind.MC_MODEL),
    Verb("mc average", "kalbert.tasks.configs:MCAverageConfig", "kalbert.tasks.mc_average:average_mc",
         Kind.MC_MODEL),
    Verb("rerank train", "kalbert.rerank.config:RerankTrainConfig", "kalbert.rerank.train:train_reranker",
         Kind.RERANKER),
]}


ALIASES = {"sbert sts": "sbert train"}
"""old verb names that still work for one release (recipes name them; the CLI says the new name)"""


def get_verb(name: str) -> Verb:
    """The verb called ``name`` ("sbert train"), or a one-line error listing the known ones. An old name
    (:data:`ALIASES`) gives its verb under that name, so what it renders is what was asked for."""
    if name in ALIASES:
        return replace(VERBS[ALIASES[name]], name=name)
    if name not in VERBS:
        raise KalbertError(f"unknown verb '{name}'", f"known: {', '.join(VERBS)}")
    return VERBS[name]


def verb_for(config: Any) -> Verb:
    """The verb whose config ``config`` is, found by its class's "module:Class" without importing any other."""
    ref = f"{type(config).__module__}:{type(config).__qualname__}"
    found = next((verb for verb in VERBS.values() if verb.config == ref), None)
    if found is None:
        raise KalbertError(f"internal error: no verb takes a {ref}")
    return found


def command_for(config: Any) -> str:
    """The shell command that reproduces ``config``, as the records of the artifacts it makes say it."""
    return verb_for(config).render(config)
