"""Weight averaging ("model soup") of sentence models fine-tuned from one starting point.

Two STS passes from the same checkpoint on different data each win on some sets; the parameter-wise
mean of their weights often keeps most of both wins at no cost at inference. Only models with the
same architecture and tokenizer can be averaged, and the mean is only meaningful when they share a
starting point (the record names every source, so lineage checks see what each was trained on).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kalbert.artifact import MODULES_FILE, Kind, is_sentence_model, read_meta
from kalbert.errors import KalbertError
from kalbert.io import sha256_file
from kalbert.lineage import refuse_trained_on
from kalbert.sentence.card import add_metric, add_stage, write_meta_and_card
from kalbert.sentence.evaluate import dev_metric, dev_refs, evaluate_dev
from kalbert.sentence.folder import drop_derived_files, module_names
from kalbert.stage import artifact_folder
from kalbert.verbs import command_for
from kalbert.vocab.files import SPIECE
from kalbert.weights import average_weight_files, normalised_weights

# files that must be identical in every averaged folder: same modules, same tokenizer
_SAME_FILES = (MODULES_FILE, SPIECE, "tokenizer.json")


@dataclass
class AverageConfig:
    """Which sentence models to average, with what weights."""

    models: list[str]
    """Sentence-model folders fine-tuned from one starting point (e.g. two `kalbert sbert train` passes)."""
    out: str
    """Output folder: a SentenceTransformer folder with the averaged weights, kalbert.json and a card."""
    weights: list[float] = field(default_factory=list)
    """One weight per model, normalised to sum to 1 (default: equal weights)."""
    eval: list[str] = field(default_factory=list)
    """Dev splits to measure and record on the card: STS (Spearman) or a QA set's val articles as retrieval
    (nDCG@10), e.g. korsts:dev korquad:val."""
    batch_size: int = 64
    """Sentences per batch when measuring."""


def _check_same_shape(folders: list[Path]) -> None:
    """Refuse folders that are not sentence models or differ in modules or tokenizer."""
    for folder in folders:
        if not is_sentence_model(folder):
            raise KalbertError(f"{folder} is not a sentence model (no {MODULES_FILE})",
                               "average folders made by `kalbert sbert export|train|distill`")
    first = folders[0]
    for folder in folders[1:]:
        for name in _SAME_FILES:
            if _identity(first / name) != _identity(folder / name):
                raise KalbertError(f"{folder} and {first} differ in {name}",
                                   "only models with the same modules and tokenizer can be averaged")


def _identity(path: Path) -> str | None:
    """What must match across averaged folders: the file's hash; for tokenizer.json, all but the truncation and
    padding it was saved with (a model trained at another max_seq_length tokenizes alike)."""
    if not path.is_file():
        return None
    if path.name != "tokenizer.json":
        return sha256_file(path)
    tokenizer = json.loads(path.read_text(encoding="utf-8"))
    return json.dumps({k: v for k, v in tokenizer.items() if k not in ("truncation", "padding")}, sort_keys=True)


@dataclass
class AverageResult:
    out: Path
    scores: dict[str, float]
    """The average's score on each ``--eval`` split (the record also keeps its sources' scores)."""


def average_models(config: AverageConfig, overwrite: bool = False) -> AverageResult:
    """Write the weighted mean of ``config.models`` to ``config.out``; return the folder and its scores."""
    from sentence_transformers import SentenceTransformer

    eval_refs = dev_refs(config.eval)  # before any work: dev splits only
    started = time.perf_counter()
    weights = normalised_weights(config.models, config.weights)
    folders = [Path(m).expanduser() for m in config.models]
    _check_same_shape(folders)
    for folder in folders:
        refuse_trained_on(folder, eval_refs, "--eval")
    with artifact_folder(config.out, Kind.SENTENCE_MODEL, overwrite=overwrite) as tmp:
        shutil.copytree(folders[0], tmp, dirs_exist_ok=True)
        average_weight_files(folders, weights, tmp)
        drop_derived_files(tmp)  # they belong to the first model, not to the average
        model = SentenceTransformer(str(tmp), device="cpu", local_files_only=True)
        meta = read_meta(tmp)  # write_meta_and_card drops its "onnx" record: the files were not kept
        meta.pop("weights_storage", None)  # averaged weights are stored in float32
        scores = {ref: evaluate_dev(model, ref, config.batch_size) for ref in eval_refs}
        for ref, score in scores.items():
            add_metric(meta, "average", ref, dev_metric(ref), score)
        add_stage(meta, "average", {**asdict(config), "weights": weights},
                  seconds=round(time.perf_counter() - started, 1))
        write_meta_and_card(tmp, meta, module_names(model), model.get_embedding_dimension(), model.max_seq_length,
                            folders, command_for(config))
    return AverageResult(Path(config.out), scores)
