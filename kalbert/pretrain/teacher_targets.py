"""Teacher vectors of pretraining instances, for the hidden-state distillation term of `kalbert pretrain`.

A transplanted ALBERT drifts away from its teacher while MLM and SOP retrain it on a new vocabulary.
The distillation term pulls the mean of each instance's last hidden states towards the teacher's
sentence embedding of the same text. The two models tokenize differently (kalbert's 48k pieces against
XLM-R's 250k), so there is no token-to-token pairing to compare: the instance mean is what both have.

The text is the instance decoded back from its ids (the tokenization contract makes decoding give back
the text), segment A then segment B as the student reads them, swapped or not. Teacher vectors go
through the same sharded, resumable embedding cache as sentence distillation, so a rerun or a second
run on the same data encodes nothing again.
"""

from __future__ import annotations

import logging

import numpy as np
import sentencepiece as spm
import torch

from kalbert.errors import KalbertError
from kalbert.hardware import native_bf16
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.shards import InstanceSet
from kalbert.teachers.backends import load_teacher
from kalbert.teachers.cache import open_cache
from kalbert.vocab.files import SPIECE

log = logging.getLogger(__name__)


def instance_texts(instances: InstanceSet, indices: np.ndarray, processor: spm.SentencePieceProcessor) -> list[str]:
    """Instances ``[CLS] A [SEP] B [SEP]`` as the texts ``"A B"`` (``<unk>`` pieces left out, rather than
    handing the teacher SentencePiece's " ⁇ ")."""
    unk = processor.unk_id()
    texts = []
    for i in indices:
        instance = instances[int(i)]
        a = [t for t in instance.ids[1:1 + instance.length_a].tolist() if t != unk]
        b = [t for t in instance.ids[2 + instance.length_a:-1].tolist() if t != unk]
        texts.append(f"{processor.decode(a)} {processor.decode(b)}".strip())
    return texts


def teacher_bf16(run_bf16: bool) -> bool:
    """Whether a run's teacher encodes under bf16: when the run trains in bf16 and the CPU, where teachers run, has
    native bf16 (bf16 and fp32 vectors are cached apart, so a benchmark rereading a run's cache must agree)."""
    return run_bf16 and native_bf16(torch.device("cpu")) is not None


def teacher_targets(teacher_spec: str, data: PretrainingData, wanted: dict[str, np.ndarray], hidden_size: int,
                    bf16: bool = False, cache_dir: str | None = None, progress: bool = True) -> dict[str, np.ndarray]:
    """Per split name, a float16 [split instances, width] table holding the teacher vectors of the ``wanted``
    instances (zeros elsewhere), encoded into the embedding cache where missing (under bf16 autocast with
    ``bf16``). A run wants only the instances its steps visit: a short run need not encode the whole corpus."""
    teacher = load_teacher(teacher_spec, bf16=bf16)
    if teacher.dimension != hidden_size:
        raise KalbertError(f"teacher {teacher.name} gives {teacher.dimension}-d vectors, the model's hidden size is "
                           f"{hidden_size}", "distill from a teacher as wide as the model (e.g. the one it was "
                           "transplanted from) or leave out --distill-teacher")
    cache = open_cache(teacher, cache_dir)
    processor = spm.SentencePieceProcessor(model_file=str(data.vocab_dir / SPIECE))
    tables = {}
    for name, indices in wanted.items():
        instances = data.split(name)
        texts = instance_texts(instances, indices, processor)
        encoded = cache.fill(texts, progress=progress)
        log.info("teacher %s: %d %s instances, %d newly encoded", teacher.name, len(texts), name, encoded)
        tables[name] = np.zeros((len(instances), teacher.dimension), dtype=np.float16)
        tables[name][indices] = cache.vectors(texts)
    return tables
