"""Training references: a ``--train`` / ``--sts`` entry resolved to what it names and how it trains, checked before
any row is read.

An entry is a registered set with an optional split (``korsts``, ``kornli:dev``, ``answers-ko``; the split defaults
to train, a corpus's to all) or a graded-pair file of one's own (``kalbert sbert mine`` writes them). Evaluation
splits, and a split the run also evaluates, are refused here in one line, so no verb can train on one. A
``--repeat SET=N`` entry names one of them the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from kalbert.data import get_spec, parse_ref, training_split
from kalbert.data.heldout import is_pairs_file
from kalbert.data.registry import assert_trainable
from kalbert.errors import KalbertError

FILE = "file"
"""the split of a reference that is a graded-pair file, not a registered data set"""
ROW_KINDS = ("sts", "nli", "pairs", "qa", "answers", "corpus")
"""registry kinds that become rows for any model; ``parallel`` sets need the model's languages (static training)"""
QUESTION_PASSAGE_KINDS = ("qa", "answers", "corpus")
"""registry kinds that train as question -> passage rows: a QA set's questions against their paragraph, a question
-> answer set's against their answers, a corpus's sentences against the rest of their paragraph"""


def trains_as(name: str) -> str:
    """How a registered set trains: ``qa`` (question -> passage rows, with the query and document prompts) for
    :data:`QUESTION_PASSAGE_KINDS`, every other set as its registry kind (sts, pairs, nli, parallel)."""
    kind = get_spec(name).kind
    return "qa" if kind in QUESTION_PASSAGE_KINDS else kind


@dataclass(frozen=True)
class TrainingRef:
    """One training reference, resolved."""

    name: str
    """the registered set, or the graded-pair file's path"""
    split: str
    """the split trained on; :data:`FILE` for a file"""
    kind: str
    """how it trains (:func:`trains_as`; ``sts`` for a file)"""
    lang: str | None
    """the set's language(s), e.g. "ko" or "ko-zh"; None for a file"""

    @property
    def label(self) -> str:
        """How records and logs name it: the file's path, a parallel set's name, else ``name:split``."""
        return self.name if self.split == FILE or self.kind == "parallel" else f"{self.name}:{self.split}"


def resolve_refs(refs: list[str], kinds: tuple[str, ...], flag: str, evaluated: list[str]) -> list[TrainingRef]:
    """``refs`` as given to ``flag``, each a file or a set of one of ``kinds``; one-line errors for another kind, a
    missing split, an evaluation split, or a split that ``evaluated`` scores."""
    resolved = []
    for ref in refs:
        if is_pairs_file(ref):
            resolved.append(TrainingRef(ref, FILE, "sts", None))
            continue
        name = parse_ref(ref)[0]
        if get_spec(name).kind == "parallel" and "parallel" in kinds:
            assert_trainable(name, "all")  # no split of its own: every row is one translation of another
            resolved.append(TrainingRef(name, "all", "parallel", get_spec(name).lang))
            continue
        name, split = training_split(ref, kinds, flag, evaluated)
        resolved.append(TrainingRef(name, split, trains_as(name), get_spec(name).lang))
    return resolved


def repeat_counts(entries: list[str], refs: list[TrainingRef]) -> dict[TrainingRef, int]:
    """``--repeat`` entries (``SET=N``, the set named as in ``--train``, its split optional) -> how many times each
    of ``refs`` named repeats its rows; one-line errors for a malformed entry or a set not trained on."""
    counts: dict[TrainingRef, int] = {}
    for entry in entries:
        name, _, times = entry.rpartition("=")
        if not name or not times.isdigit() or int(times) < 1:
            raise KalbertError(f"--repeat {entry}: expected SET=N with N a whole number >= 1",
                               "e.g. --repeat answers-ko=3")
        named = [ref for ref in refs if name in (ref.name, ref.label)]
        if not named:
            trained = ", ".join(ref.label for ref in refs) or "none"
            raise KalbertError(f"--repeat {entry}: {name} is not among the training sets ({trained})",
                               "name a set that --train lists")
        counts |= dict.fromkeys(named, int(times))
    return counts
