"""The kinds of input a verb declares (:attr:`kalbert.verbs.Verb.inputs`), each checked before any work.

A folder is declared with the kinds it accepts (its ``kalbert.json`` ``kind``, or what a folder made elsewhere
holds: :func:`kalbert.artifact.folder_kind`), teachers by name or folder, data by set name or file, and outputs
must not exist unless ``--overwrite``. A verb's inputs are checked after its flags are parsed and before it
imports a model, from the command line and from a recipe stage alike (:meth:`kalbert.verbs.Verb.check`), so a
wrong folder costs one line, not the minutes a model load or a teacher's encoding would take before failing,
and nothing is written or cached.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kalbert.artifact import Kind, folder_kind, kind_name
from kalbert.errors import KalbertError, WrongKind

E5 = "multilingual-e5-small"
"""The teacher name that stands for its folder, exported on first use (kalbert.teachers.backends.e5_folder)."""


@dataclass(frozen=True)
class Folder:
    """An existing folder of one of ``kinds``."""

    kinds: tuple[str, ...]
    names: tuple[str, ...] = ()
    """names accepted in place of a folder"""
    what: str = ""
    """what the kinds amount to, where naming each would be a list ("an ALBERT or BERT checkpoint")"""
    makers: str = ""
    """the commands that make one, where naming each would be a list"""

    def check(self, flag: str, value: str) -> None:
        if value in self.names:
            return
        path = Path(value).expanduser()
        wanted = self.what or f"a {' or '.join(kind_name(kind) for kind in self.kinds)} folder"
        also = f", or {' or '.join(self.names)}" if self.names else ""
        if not path.exists():
            close = difflib.get_close_matches(value, self.names, n=1)
            guess = f"did you mean '{close[0]}'? " if close else ""
            raise KalbertError(f"{flag} {value}: folder not found", f"{guess}{flag} takes {wanted}{also}")
        if not path.is_dir():
            raise self._wrong(f"{flag} {value} is a file, not {wanted}", also)
        kind = folder_kind(path)
        if kind in self.kinds:
            return
        if kind == Kind.PRETRAINING_RUN and Kind.PRETRAINED_MODEL in self.kinds:
            raise KalbertError(f"{flag} {value} is a pretraining run folder, not a model folder",
                               f"pass its exported model: {path / 'model'}")
        what = f"a {kind_name(kind)} folder" if kind else "not a folder kalbert recognises (no kalbert.json)"
        raise self._wrong(f"{flag} {value} is {what}; {flag} takes {wanted}{also}")

    def _wrong(self, message: str, also: str = "") -> KalbertError:
        """The error for a folder of another kind: its makers named here where declared, else by the verb layer."""
        if self.makers:
            return KalbertError(message, f"make one with {self.makers}{also}")
        return WrongKind(message, self.kinds, also)


@dataclass(frozen=True)
class Teacher:
    """A named teacher, a teacher or sentence-model folder, or a hub id already downloaded."""

    def check(self, flag: str, value: str) -> None:
        from kalbert.teachers.backends import check_teacher

        check_teacher(value)


@dataclass(frozen=True)
class Data:
    """Data-set names (``korsts:dev``) or existing files; a name that is neither says which set it resembles."""

    selects: bool = False
    """it picks checkpoints or stages, so a reported split is refused (:func:`kalbert.data.assert_selectable`)"""

    def check(self, flag: str, value: str) -> None:
        from kalbert.data.registry import assert_selectable, parse_ref

        path = Path(value).expanduser()
        if path.is_file():
            return
        if path.is_dir():
            raise KalbertError(f"{flag} {value} is a folder", "give a data-set name (kalbert data list) or a file")
        name = value.partition(":")[0]
        if any(mark in name for mark in ("/", "\\", ".", "~")):
            raise KalbertError(f"{flag} {value}: file not found", "check the path, or give a data-set name "
                               "(kalbert data list)")
        name, split = parse_ref(value)
        if self.selects and split:
            assert_selectable(name, split, flag)


@dataclass(frozen=True)
class File:
    """An existing file."""

    def check(self, flag: str, value: str) -> None:
        path = Path(value).expanduser()
        if not path.is_file():
            raise KalbertError(f"{flag} {value}: {'is a folder' if path.is_dir() else 'file not found'}",
                               "give an existing file")


@dataclass(frozen=True)
class Sources:
    """Documents to index: folders, text or JSONL files, or data sets (what ``search build --corpus`` reads)."""

    def check(self, flag: str, value: str) -> None:
        from kalbert.search.documents import check_sources

        check_sources([value])


@dataclass(frozen=True)
class Output:
    """A file or folder the verb creates: refused when it exists (unless --overwrite) or cannot be made."""

    what: str = "folder"
    needs: str | None = None
    """a setting without which this output is never written (qa predict --out needs --jsonl)"""

    def check(self, flag: str, value: str, values: Mapping[str, Any], overwrite: bool) -> None:
        if self.needs and not values.get(self.needs):
            raise KalbertError(f"{flag} is only written with {_flag(self.needs)}",
                               f"add {_flag(self.needs)} FILE or drop {flag}")
        path = Path(value).expanduser()
        parent = next((p for p in path.parents if p.exists()), Path("."))
        if not parent.is_dir():
            raise KalbertError(f"{flag} {value}: {parent} is a file, so nothing can be written under it")
        if not path.exists():
            return
        if path.is_dir() != (self.what == "folder"):
            raise KalbertError(f"{flag} {value} is a {'folder' if path.is_dir() else 'file'}; {flag} names an "
                               f"output {self.what}", "choose another path")
        if not overwrite:
            raise KalbertError(f"output {self.what} {value} already exists",
                               f"pass --overwrite or choose another {flag}")


@dataclass(frozen=True)
class Choices:
    """Two or more distinct, non-empty answers."""

    def check(self, flag: str, values: list[str]) -> None:
        if len(values) < 2:
            raise KalbertError(f"{flag} needs two or more answers, got {len(values)}")
        if any(not value.strip() for value in values):
            raise KalbertError(f"{flag}: an answer is empty", "give every choice some text")
        if len({value.strip() for value in values}) < len(values):
            raise KalbertError(f"{flag}: the same answer is given twice", "give distinct choices")


Input = Folder | Teacher | Data | File | Sources | Output | Choices

# The folders each kind of verb starts from.
ENCODER_START = Folder((Kind.PRETRAINED_MODEL, Kind.TEACHER, Kind.SENTENCE_MODEL, Kind.QA_MODEL, Kind.MC_MODEL),
                       names=(E5,), what="an ALBERT or BERT checkpoint folder (pretrained, a teacher, or fine-tuned)",
                       makers="`kalbert pretrain` or `kalbert transplant`")
"""what the task fine-tunings read: any ALBERT or BERT checkpoint, a fine-tuned one too (intermediate tasks)"""
RERANKER_START = Folder((*ENCODER_START.kinds, Kind.RERANKER), names=(E5,),
                        what="an ALBERT or BERT checkpoint folder (pretrained, a teacher, fine-tuned, or a reranker "
                             "to train further)", makers=ENCODER_START.makers)
"""what `kalbert rerank train` starts from: an encoder, or a reranker it goes on training"""
SENTENCE_START = Folder((Kind.SENTENCE_MODEL, Kind.PRETRAINED_MODEL),
                        what="a sentence-model or pretrained ALBERT folder",
                        makers="`kalbert pretrain`, `kalbert transplant` or `kalbert sbert export`")
"""what sentence-model training reads: a sentence model, or a plain checkpoint it wraps with pooling"""
TOKENIZER = Folder((Kind.VOCAB, Kind.PRETRAINED_MODEL, Kind.SENTENCE_MODEL, Kind.STATIC_MODEL, Kind.TEACHER,
                    Kind.QA_MODEL, Kind.MC_MODEL), what="a vocabulary or model folder (with spiece.model)",
                   makers="`kalbert vocab build`")
"""folders with a SentencePiece model"""
SEARCH_INDEX = Folder((Kind.SEARCH_INDEX,))
SENTENCE_MODELS = Folder((Kind.SENTENCE_MODEL, Kind.STATIC_MODEL))
"""what encodes passages and queries: a sentence model or a static one"""
RERANKER = Folder((Kind.RERANKER,), names=("none",))
"""a cross-encoder reranker, or none for no reranking"""
TRANSPLANT_TEACHER = Folder((Kind.TEACHER, Kind.SENTENCE_MODEL, Kind.PRETRAINED_MODEL), names=(E5,),
                            what="a BERT-family encoder folder (a teacher or a plain checkpoint)",
                            makers="`kalbert teacher export`")
"""what a transplant reads its embeddings and layers from (and widening its further directions)"""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_inputs(inputs: Mapping[str, Input], values: Mapping[str, Any], overwrite: bool = False) -> None:
    """Raise a one-line :class:`KalbertError` for the first of the declared ``inputs`` (setting or argument name ->
    what it must be) that ``values`` (name -> value) gets wrong; unset ones (None, [], "") are not checked."""
    for name, spec in inputs.items():
        value = values.get(name)
        if value in (None, [], ""):
            continue
        flag = _flag(name)
        if isinstance(spec, Output):
            spec.check(flag, value, values, overwrite)
        elif isinstance(spec, Choices):
            spec.check(flag, value)
        else:
            for item in _items(value):
                spec.check(flag, item)


def _items(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)
