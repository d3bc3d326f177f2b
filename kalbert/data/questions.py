"""The questions of QA and BoolQ training splits as a corpus file.

No Korean STS training split holds questions, and questions that share a topic but ask different things are
where a student trained on STS-B translations ranks pairs worst (KLUE-STS's smart-device questions).
Written as a corpus, they let `kalbert sbert mine` grade question pairs with a teacher.
"""

from __future__ import annotations

from pathlib import Path

from kalbert.data.loaders import load_boolq, load_qa
from kalbert.data.registry import get_spec, list_datasets, parse_ref, training_split
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, refuse_existing_output

QUESTION_SETS = ("qa", "pairs")
BOOLQ = "kobest-boolq"


def question_sets() -> list[str]:
    """The data sets whose training questions :func:`training_questions` reads."""
    return [*list_datasets("qa"), BOOLQ]


def check_question_set(ref: str) -> None:
    """Refuse a ref that names no question set (the unknown ones with their nearest name), before any loading."""
    name, _ = parse_ref(ref)
    if name not in question_sets():
        raise KalbertError(f"'{name}' is a {get_spec(name).kind} data set and holds no questions",
                           f"--sets takes {', '.join(question_sets())}")


def training_questions(refs: list[str]) -> list[str]:
    """Distinct questions, in order, of the training splits ``refs`` name (``korquad``, ``kobest-boolq:train``;
    the split defaults to train); evaluation splits are refused."""
    chosen = []
    for ref in refs:  # every ref checked before any set is read
        check_question_set(ref)
        chosen.append(training_split(ref, QUESTION_SETS, "--sets", []))
    questions: dict[str, None] = {}
    for name, split in chosen:
        loaded = load_qa(name, split) if get_spec(name).kind == "qa" else load_boolq(name, split)
        rows = [example.question for example in loaded]
        questions.update(dict.fromkeys(q for q in (row.strip() for row in rows) if q))
    return list(questions)


def write_questions(refs: list[str], out: str | Path, overwrite: bool = False) -> int:
    """Write the questions one per document (a blank line between them, so a corpus filter that drops a
    document drops one question); returns how many."""
    refuse_existing_output(out, overwrite)
    questions = training_questions(refs)
    atomic_write_text(out, "\n\n".join(questions) + "\n")
    return len(questions)
