"""`kalbert data build`: corpus -> SOP instances in memory-mapped shards, plus a card; and reading them back.

Documents are streamed, cut into tasks of ``documents_per_task`` documents and processed on all
cores (normalise -> sentences -> ids + unit flags -> SOP instances). Each task draws from its own
``random.Random(seed, task)``, so the output is identical for any number of processes. A document
goes to the held-out split when a hash of its text says so: stable across runs and inputs, and a
document's sentences never straddle the two splits. Documents that hold an evaluation passage (a QA
context, an MC passage: :mod:`kalbert.data.passages`) are dropped as they are read, and counted in the
record. The vocabulary is copied into the folder and its spiece.model sha256 recorded, so training can
refuse a mismatched vocabulary or checkpoint.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import random
import shutil
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import get_args

from tqdm.auto import tqdm

from kalbert import __version__
from kalbert.artifact import Kind, folder_language, invocation, read_meta
from kalbert.config import DEFAULT_SEED
from kalbert.data import iter_documents, resolve_sources
from kalbert.data.passages import PassageGuard
from kalbert.errors import KalbertError
from kalbert.io import refuse_existing_output, sha256_file
from kalbert.pretrain.card import write_data_card
from kalbert.pretrain.instances import Document, Instance, SingleSentence, document_instances
from kalbert.pretrain.shards import InstanceSet, ShardWriter, ids_dtype
from kalbert.pretrain.tokens import encode_sentences
from kalbert.stage import artifact_folder, write_record
from kalbert.text import make_segmenter, normalize_text, split_sentences
from kalbert.verbs import command_for
from kalbert.vocab.files import SPIECE, check_special_ids, load_processor, spiece_path

SPLITS = ("train", "heldout")
VOCAB_SUBDIR = "vocab"


@dataclass
class DataBuildConfig:
    """Everything that decides a pretraining data folder; recorded in its kalbert.json."""

    vocab: str
    """vocabulary folder made by `kalbert vocab build` (its languages pick the analyzer)"""
    inputs: list[str]
    """corpus names (kowiki, nsmc, ...) or .txt/.txt.gz/.jsonl files; blank lines separate documents"""
    out: str
    """output folder"""
    max_seq_length: int = 128
    """tokens per instance including [CLS] and two [SEP]"""
    short_seq_prob: float = 0.1
    """probability that a document's target length is drawn at random below max_seq_length (ALBERT)"""
    heldout_fraction: float = 0.01
    """share of documents kept apart for evaluation (chosen by a hash of the document)"""
    max_documents: int = 0
    """read only the first N documents (0: all), for slices and quick runs; those holding an evaluation passage
    are then dropped"""
    single_sentence: SingleSentence = "random-b"
    """SOP pair from a one-sentence chunk: "random-b" (ALBERT: B from another document, label 1) or "split"
    (the sentence cut at a word start, so that every instance asks about order)"""
    seed: int = DEFAULT_SEED
    """seed of the instance-building randomness"""
    processes: int = 0
    """worker processes (0: all cores)"""
    documents_per_task: int = 500
    """documents per unit of parallel work (also the pool that random B segments come from)"""
    shard_instances: int = 200_000
    """instances per shard file"""


def _validate(config: DataBuildConfig) -> None:
    if not 8 <= config.max_seq_length <= 512:
        raise KalbertError(f"--max-seq-length {config.max_seq_length} is out of range", "use 8 to 512")
    if not 0.0 <= config.short_seq_prob <= 1.0:
        raise KalbertError(f"--short-seq-prob {config.short_seq_prob} is not a probability")
    if not 0.0 <= config.heldout_fraction < 0.5:
        raise KalbertError(f"--heldout-fraction {config.heldout_fraction} is out of range", "use 0 to 0.5, e.g. 0.01")
    if config.single_sentence not in get_args(SingleSentence):
        raise KalbertError(f"--single-sentence {config.single_sentence!r} is unknown",
                           f"use one of {', '.join(get_args(SingleSentence))}")


# ------------------------------------------------------------------------------------------ workers
_STATE: dict[str, object] = {}


def _init_worker(config: DataBuildConfig) -> None:
    _STATE["config"] = config
    _STATE["processor"] = load_processor(config.vocab)
    _STATE["segmenter"] = make_segmenter(folder_language(Path(config.vocab)))


def _is_heldout(document: list[str], fraction: float) -> bool:
    return zlib.crc32("\n".join(document).encode("utf-8")) % 1_000_000 < fraction * 1_000_000


def _process_task(task: tuple[int, list[list[str]]]) -> tuple[dict[str, list[Instance]], dict[str, Counter]]:
    """One task's documents -> instances and counts per split (deterministic in the task number)."""
    number, raw_documents = task
    config: DataBuildConfig = _STATE["config"]  # type: ignore[assignment]
    texts = [[s for line in doc for s in split_sentences(normalize_text(line))] for doc in raw_documents]
    encoded = iter(encode_sentences([s for doc in texts for s in doc], _STATE["processor"], _STATE["segmenter"]))
    documents: dict[str, list[Document]] = {split: [] for split in SPLITS}
    stats = {split: Counter() for split in SPLITS}
    for raw, sentences in zip(raw_documents, texts, strict=True):
        split = "heldout" if _is_heldout(raw, config.heldout_fraction) else "train"
        document = [pair for pair in itertools.islice(encoded, len(sentences)) if len(pair[0])]
        stats[split]["documents"] += 1
        if not document:
            stats[split]["empty_documents"] += 1
            continue
        stats[split]["sentences"] += len(document)
        stats[split]["sentence_tokens"] += sum(len(ids) for ids, _ in document)
        stats[split]["unk_tokens"] += sum(int((ids == 1).sum()) for ids, _ in document)
        documents[split].append(document)
    instances: dict[str, list[Instance]] = {}
    for split in SPLITS:
        rng = random.Random(f"{config.seed}-{number}-{split}")
        instances[split] = [inst for i in range(len(documents[split])) for inst in document_instances(
            documents[split], i, config.max_seq_length, config.short_seq_prob, rng, stats[split],
            config.single_sentence)]
        stats[split]["instance_tokens"] += sum(len(inst.ids) for inst in instances[split])
        stats[split]["sop_label_1"] += sum(inst.label for inst in instances[split])
    return instances, stats


def _tasks(documents: Iterable[list[str]], size: int) -> Iterator[tuple[int, list[list[str]]]]:
    iterator = iter(documents)
    for number in itertools.count():
        batch = list(itertools.islice(iterator, size))
        if not batch:
            return
        yield number, batch


def _run_tasks(config: DataBuildConfig, tasks: Iterator[tuple[int, list[list[str]]]]
               ) -> Iterator[tuple[dict[str, list[Instance]], dict[str, Counter]]]:
    processes = config.processes or os.cpu_count() or 1
    if processes == 1:
        _init_worker(config)
        yield from map(_process_task, tasks)
        return
    context = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
    with context.Pool(processes, initializer=_init_worker, initargs=(config,)) as pool:
        yield from pool.imap(_process_task, tasks, chunksize=1)


# ------------------------------------------------------------------------------------------- build
def build_pretraining_data(config: DataBuildConfig, overwrite: bool = False) -> Path:
    """Build the data folder described by ``config``; returns its path."""
    _validate(config)
    vocab = Path(config.vocab)
    processor = load_processor(vocab)
    check_special_ids(processor)
    language = folder_language(vocab)
    sources = resolve_sources(config.inputs)
    out = Path(config.out)
    refuse_existing_output(out, overwrite)
    dtype = ids_dtype(processor.get_piece_size())
    started = time.time()
    guard = PassageGuard()
    totals = {split: Counter() for split in SPLITS}
    with artifact_folder(out, Kind.PRETRAINING_DATA, overwrite=overwrite) as tmp:
        writers = {split: ShardWriter(tmp, split, dtype, config.shard_instances) for split in SPLITS}
        documents = iter_documents([str(p) for p in sources])
        if config.max_documents:
            documents = itertools.islice(documents, config.max_documents)
        documents = guard.filter(documents)
        progress = tqdm(desc="building instances", unit=" doc", mininterval=2)
        for instances, stats in _run_tasks(config, _tasks(documents, config.documents_per_task)):
            for split in SPLITS:
                writers[split].add(instances[split])
                totals[split].update(stats[split])
            progress.update(sum(s["documents"] for s in stats.values()))
            progress.set_postfix(instances=sum(t["instances"] for t in totals.values()), refresh=False)
        progress.close()
        guard.log()
        shards = {split: writers[split].close() for split in SPLITS}
        if not totals["train"]["instances"]:
            raise KalbertError(f"no training instances from {', '.join(config.inputs)}",
                               "the input needs documents with text (blank lines between documents)")
        shutil.copytree(vocab, tmp / VOCAB_SUBDIR, ignore=shutil.ignore_patterns(".*"))
        meta = {
            "kalbert_version": __version__,
            "kind": Kind.PRETRAINING_DATA,
            "command": invocation(),
            "config": asdict(config),
            "language": language,
            "vocab": {"path": str(vocab), "size": processor.get_piece_size(),
                      "spiece_sha256": sha256_file(spiece_path(vocab))},
            "max_seq_length": config.max_seq_length,
            "ids_dtype": dtype.name,
            "inputs": [{"path": str(p), "bytes": p.stat().st_size} for p in sources],
            "evaluation_passages": guard.record(),
            "stats": {split: dict(sorted(totals[split].items())) for split in SPLITS},
            "splits": {split: {"instances": sum(s["instances"] for s in shards[split]),
                               "tokens": sum(s["tokens"] for s in shards[split]), "shards": shards[split]}
                       for split in SPLITS},
            "build_seconds": round(time.time() - started, 1),
        }
        meta = write_record(tmp, meta, Kind.PRETRAINING_DATA, [vocab],
                            command=command_for(config))
        write_data_card(tmp, meta)
    return out


# -------------------------------------------------------------------------------------------- read
@dataclass
class PretrainingData:
    """A built data folder: its metadata, its vocabulary copy and its splits."""

    folder: Path
    meta: dict

    @classmethod
    def open(cls, folder: str | Path) -> PretrainingData:
        folder = Path(folder)
        meta = read_meta(folder, expect=Kind.PRETRAINING_DATA)
        data = cls(folder, meta)
        if sha256_file(data.vocab_dir / SPIECE) != meta["vocab"]["spiece_sha256"]:
            raise KalbertError(f"the vocabulary copy in {data.vocab_dir} does not match the one the data was "
                               "built with", "rebuild the data with `kalbert data build`")
        if not meta["splits"]["train"]["instances"]:
            raise KalbertError(f"{folder} holds no training instances", "rebuild it from more text")
        return data

    @property
    def vocab_dir(self) -> Path:
        return self.folder / VOCAB_SUBDIR

    @property
    def vocab_size(self) -> int:
        return int(self.meta["vocab"]["size"])

    @property
    def vocab_sha256(self) -> str:
        return str(self.meta["vocab"]["spiece_sha256"])

    def split(self, name: str) -> InstanceSet:
        return InstanceSet(self.folder, self.meta["splits"][name]["shards"])

    def check_vocab(self, vocab: str | Path) -> None:
        """Refuse a vocabulary other than the one the data were built with."""
        if sha256_file(spiece_path(vocab)) != self.vocab_sha256:
            raise KalbertError(f"vocabulary {vocab} does not match the data in {self.folder} "
                               f"(built with {self.meta['vocab']['path']})",
                               "pass the vocabulary the data were built with, or rebuild the data")
