"""`kalbert teacher finetune`: make the teacher better at the kit's languages before students copy it.

A student distilled from a zero-shot teacher can at best match it. Fine-tuning multilingual-e5-small on
every graded STS and paraphrase train split the kit has (Korean and Chinese) lifts it on those tasks,
and its students inherit that. The token embeddings stay frozen: the train splits hold Korean and Chinese
only, and tokens they never show (English, most of XLM-R's 250k) keep their place beside the ones they
do, so cross-lingual retrieval is not traded away; it also spares the optimiser 96M of 118M weights.
The run is `kalbert sbert train` on the teacher folder, so it resumes, records and loads the same way.
"""

from __future__ import annotations

from pathlib import Path

from kalbert.artifact import MODULES_FILE, is_sentence_model
from kalbert.errors import KalbertError
from kalbert.sentence.config import SentenceTrainConfig, TeacherFinetuneConfig
from kalbert.sentence.evaluate import selection_refs
from kalbert.sentence.train import SentenceTrainResult, train_sentence_model
from kalbert.teachers.backends import E5_NAME, MINILM_NAMES, USE_NAME, e5_folder


def teacher_folder(teacher: str) -> Path:
    """The SentenceTransformer folder behind a teacher name or path; a one-line error for non-torch teachers."""
    if teacher == E5_NAME:
        return e5_folder()
    if teacher in (USE_NAME, *MINILM_NAMES):
        raise KalbertError(f"{teacher} cannot be fine-tuned here",
                           f"fine-tune {E5_NAME} or a SentenceTransformer folder")
    folder = Path(teacher).expanduser()
    if not is_sentence_model(folder):
        raise KalbertError(f"{teacher} is not a SentenceTransformer folder (no {MODULES_FILE})",
                           f"pass {E5_NAME} or a folder made by `kalbert teacher export`")
    return folder


def finetune_teacher(config: TeacherFinetuneConfig, overwrite: bool = False) -> SentenceTrainResult:
    """Train the teacher with `sbert train` on frozen token embeddings; the best dev checkpoint is kept."""
    selection_refs(config.eval)  # before the teacher's folder is exported (minutes on first use)
    return train_sentence_model(SentenceTrainConfig(
        model=str(teacher_folder(config.teacher)), out=config.out, train=list(config.train), eval=list(config.eval),
        test=list(config.test), loss=config.loss, max_seq_length=config.max_seq_length, max_rows=config.max_rows,
        freeze_word_embeddings=True, on_collapse=config.on_collapse, loop=config.loop), overwrite=overwrite)
