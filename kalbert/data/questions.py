"""The questions of QA and BoolQ training splits as a corpus file.

No Korean STS training split holds questions, and questions that share a topic but ask different things are
where a student trained on STS-B translations ranks pairs worst (KLUE-STS's smart-device questions).
Written as a corpus, they let `kalbert sbert mine` grade question pairs with a teacher.
"""

from __future__ import annotations

from pathlib import Path

from kalbert.data.loaders import load_boolq, load_qa
from kalbert.data.registry import get_spec, training_split
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, refuse_existing_output

QUESTION_SETS = ("qa", "pairs")
BOOLQ = "kobest-boolq"


def training_questions(refs: list[str]) -> list[str]:
    """Distinct questions, in order, of the training splits ``refs`` name (``korquad``, ``kobest-boolq:train``;
    the split defaults to train); evaluation splits are refused."""
    questions: dict[str, None] = {}
    for ref in refs:
        name, split = training_split(ref, QUESTION_SETS, "--sets", [])
        if get_spec(name).kind == "qa":
            rows = [example.question for example in load_qa(name, split)]
        elif name == BOOLQ:
            rows = [example.question for example in load_boolq(name, split)]
        else:
            raise KalbertError(f"'{name}' holds no questions", f"use a QA set (korquad, cmrc2018, drcd) or {BOOLQ}")
        questions.update(dict.fromkeys(q for q in (row.strip() for row in rows) if q))
    return list(questions)


def write_questions(refs: list[str], out: str | Path, overwrite: bool = False) -> int:
    """Write the questions one per document (a blank line between them, so a corpus filter that drops a
    document drops one question); returns how many."""
    refuse_existing_output(out, overwrite)
    questions = training_questions(refs)
    atomic_write_text(out, "\n\n".join(questions) + "\n")
    return len(questions)
