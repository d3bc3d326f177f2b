"""`kalbert search build`: documents -> passages -> vectors -> an engine, resumable and shardable.

Everything is built in ``OUT.work`` beside ``--out``: the passage store first, then the vectors in shards
of ``--chunk-size`` passages (each written atomically, so a killed build re-encodes at most one shard),
then the engine; the folder becomes ``OUT`` only when its ``kalbert.json`` is complete. ``--shard I/N``
encodes only shards ``i`` with ``i % N == I`` and stops: run N of them (processes or machines, each with the
same flags), gather every ``OUT.work/shards/`` into one, and a last run without ``--shard`` (the merge
step) finds all vectors encoded and builds the engine.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from tqdm.auto import tqdm

from kalbert.artifact import Kind, folder_languages
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, atomic_write_text, check_writable, refuse_existing_output
from kalbert.precision import Precision, autocast, encoding_bf16
from kalbert.search.card import render_card
from kalbert.search.documents import Document, check_corpus, read_documents
from kalbert.search.engines import FAISS_ENGINES, Engine, EngineSettings, build_faiss, pick_engine
from kalbert.search.model import Prompts, check_model, model_hash, model_prompts
from kalbert.search.passages import split_passages, token_counter
from kalbert.search.store import PassageStore, write_store
from kalbert.sentence import Backend
from kalbert.sentence.encoder import default_sentence_model, load_sentence_model
from kalbert.shards import Shard, in_share, parse_shard
from kalbert.stage import missing_fields, write_record
from kalbert.teachers.encoders import token_limit

log = logging.getLogger(__name__)
INDEX_FORMAT = "kalbert-search-index/2"
EMBEDDINGS, WORK_FILE, SHARDS, LEXICAL = "embeddings.npy", "work.json", "shards", "bm25"
Lexical = Literal["none", "bm25"]


@dataclass
class SearchBuildConfig:
    """What to index and how."""

    corpus: list[str]
    """Folders (one document per .txt/.md file), .txt files (one document per line), JSONL files (id, text,
    other fields kept as metadata) or data sets such as korsts:test or kowiki."""
    out: str
    """Index folder to write (built in OUT.work, kept across a kill so a rerun resumes)."""
    model: str | None = None
    """Sentence-model folder that encodes passages (and later queries); None: the shipped retrieval model,
    models/sbert-ko-zh-retrieval."""
    engine: Engine = "auto"
    """exact (faiss flat, float16), hnsw, ivfpq (PQ codes, re-ranked) or milvus; auto: exact up to 300,000
    passages, hnsw above."""
    uri: str | None = None
    """Milvus URI for --engine milvus: a file path (embedded Milvus Lite) or http://host:19530 (a server)."""
    lexical: Lexical = "none"
    """bm25: also build a BM25 index over mecab-ko/jieba tokens, for search query --mode bm25|hybrid."""
    passage_tokens: int = 256
    """Longest passage in model tokens (capped at the model's limit); longer documents are split at sentences."""
    stride: int = 32
    """Tokens of whole sentences repeated from the end of one passage at the start of the next (0: none)."""
    max_passages: int | None = None
    """Index at most this many passages (None: all)."""
    batch_size: int = 128
    """Passages per encoding batch."""
    chunk_size: int = 16384
    """Passages per encoded shard: what a kill can lose, and the unit --shard divides."""
    shard: str | None = None
    """I/N: encode only this process's share of the shards (0 <= I < N) into OUT.work, then stop; a run
    without --shard merges them."""
    backend: Backend = "torch"
    """How the model runs: torch, onnx or onnx-int8 (ONNX files from ``kalbert sbert export --backend onnx``)."""
    precision: Precision = "auto"
    """auto (bf16 autocast where the CPU has native bf16, else fp32), fp32 or bf16; torch backend only."""
    engine_settings: EngineSettings = field(default_factory=EngineSettings)

    def __post_init__(self) -> None:
        if isinstance(self.corpus, str):  # the Python API's one source
            self.corpus = [self.corpus]

    @staticmethod
    def upgrade_values(values: dict) -> dict:
        """A recorded config from before --refine (IVF-PQ's ``rerank``) in today's settings."""
        values = dict(values)
        nested = values.get("engine_settings")
        if isinstance(nested, dict) and "rerank" in nested:
            nested = dict(nested)
            nested.setdefault("refine", nested.pop("rerank"))
            values["engine_settings"] = nested
        if "rerank" in values:
            values.setdefault("refine", values.pop("rerank"))
        return values


def work_folder(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".work")


def _check(config: SearchBuildConfig, overwrite: bool) -> None:
    """Everything that can be refused before the model loads (the corpus's files read once)."""
    if config.shard is None:
        refuse_existing_output(config.out, overwrite)
    else:
        check_writable(work_folder(config.out))
    parse_shard(config.shard)
    check_corpus(config.corpus)
    if config.engine == "milvus" and not config.uri:
        raise KalbertError("--engine milvus needs --uri", "a file path for Milvus Lite or http://host:19530")
    if config.uri and config.engine != "milvus":
        raise KalbertError(f"--uri is for --engine milvus, not {config.engine}", "add --engine milvus")
    if config.stride < 0 or config.stride >= config.passage_tokens:
        raise KalbertError(f"--stride {config.stride} must be at least 0 and below --passage-tokens")


def _passages(documents: Iterator[Document], model, budget: int, stride: int) -> Iterator[tuple[Document, list]]:
    count = token_counter(model)
    for document in documents:
        yield document, split_passages(document.text, count, budget, stride)


def _plan(config: SearchBuildConfig, identity: dict, prompts: Prompts, budget: int) -> dict:
    """What the work folder's passages and vectors depend on: a rerun resumes only with the same plan."""
    return {"corpus": config.corpus, "model": model_hash(identity), "passage_prompt": prompts.passage,
            "passage_tokens": budget, "stride": config.stride, "max_passages": config.max_passages,
            "chunk_size": config.chunk_size, "backend": config.backend, "precision": config.precision}


def _open_work(work: Path, plan: dict, overwrite: bool) -> dict:
    path = work / WORK_FILE
    if path.is_file():
        found = json.loads(path.read_text(encoding="utf-8"))
        if found.get("plan") == plan:
            return found
        if not overwrite:
            changed = sorted(key for key in plan if found.get("plan", {}).get(key) != plan[key])
            raise KalbertError(f"{work} holds a build with other settings ({', '.join(changed)})",
                               "rerun with the same flags to resume, or pass --overwrite to start over")
        shutil.rmtree(work)
    (work / SHARDS).mkdir(parents=True, exist_ok=True)
    state = {"plan": plan}
    atomic_write_json(path, state)
    return state


def _write_passages(work: Path, state: dict, config: SearchBuildConfig, model, budget: int) -> dict:
    """The passage store, written once per work folder (identically by every shard process)."""
    if "counts" in state:
        return state
    scratch = work / f".store-{uuid.uuid4().hex[:8]}"
    scratch.mkdir()
    try:
        # a bar only past 2 s: a small corpus refused once cut (IVF-PQ over a few passages) gets its one line alone
        documents = tqdm(read_documents(config.corpus), desc="reading documents", unit=" doc", delay=2)
        counts = write_store(scratch, _passages(documents, model, budget, config.stride), config.max_passages)
        if counts.passages == 0:
            raise KalbertError(f"{', '.join(config.corpus)} holds no text to index", "give documents with text")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        _remove_unencoded(work)
        raise
    for item in scratch.iterdir():
        os.replace(item, work / item.name)
    scratch.rmdir()
    state = {**state, "counts": asdict(counts)}
    atomic_write_json(work / WORK_FILE, state)
    return state


def _remove_unencoded(work: Path) -> None:
    """Leave no work folder behind a build refused before encoding: one with no vectors, and no passage store
    that another shard process is still writing."""
    if not any(work.glob(".store-*")) and not any((work / SHARDS).glob("*.npy")):
        shutil.rmtree(work, ignore_errors=True)


def _shard_path(work: Path, shard: int) -> Path:
    return work / SHARDS / f"shard-{shard:06d}.npy"


def _encode_shards(work: Path, store: PassageStore, model, config: SearchBuildConfig, prompts: Prompts,
                   mine: Shard | None) -> int:
    """Encode every missing shard (of this process's share); return how many passages were encoded."""
    bf16, why = encoding_bf16(config.precision, config.backend)
    log.info("encoding in %s (%s)", "bf16" if bf16 else "fp32", why)
    shards = range(0, -(-len(store) // config.chunk_size))
    todo = [s for s in shards if in_share(s, mine) and not _shard_path(work, s).is_file()]
    encoded = 0
    with tqdm(total=sum(min(config.chunk_size, len(store) - s * config.chunk_size) for s in todo),
              desc="encoding", unit=" passage") as progress:
        for shard in todo:
            start, stop = shard * config.chunk_size, min((shard + 1) * config.chunk_size, len(store))
            with autocast("cpu", bf16):
                vectors = model.encode(store.passages(start, stop), batch_size=config.batch_size,
                                       prompt_name=prompts.passage_name, convert_to_numpy=True,
                                       normalize_embeddings=True)
            path = _shard_path(work, shard)
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.npy")
            np.save(tmp, vectors.astype(np.float16))
            os.replace(tmp, path)
            encoded += stop - start
            progress.update(stop - start)
    return encoded


def _assemble(work: Path, store: PassageStore, dim: int, chunk_size: int) -> np.ndarray:
    """The shards as one memory-mapped float16 matrix ``embeddings.npy``."""
    shards = -(-len(store) // chunk_size)
    missing = [s for s in range(shards) if not _shard_path(work, s).is_file()]
    if missing:
        raise KalbertError(f"{work} lacks {len(missing)} of {shards} encoded shards (first: {missing[0]})",
                           "run the missing --shard I/N builds, or rerun without --shard to encode them here")
    matrix = np.lib.format.open_memmap(work / EMBEDDINGS, mode="w+", dtype=np.float16, shape=(len(store), dim))
    for shard in range(shards):
        block = np.load(_shard_path(work, shard), mmap_mode="r")
        matrix[shard * chunk_size: shard * chunk_size + len(block)] = block
    matrix.flush()
    del matrix
    return np.load(work / EMBEDDINGS, mmap_mode="r")


def _lexical(work: Path, store: PassageStore) -> None:
    from kalbert.text.lexical import BM25Index

    BM25Index.build(list(store.iter_passages())).save(work / LEXICAL)


def _finish(work: Path, out: Path, overwrite: bool) -> None:
    missing = missing_fields(work, Kind.SEARCH_INDEX)
    if missing:
        raise RuntimeError(f"internal error: the search-index record of {out} lacks {', '.join(missing)}")
    shutil.rmtree(work / SHARDS, ignore_errors=True)
    (work / WORK_FILE).unlink()
    refuse_existing_output(out, overwrite)
    if out.exists():
        old = out.with_name(f".{out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
        os.replace(work, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(work, out)


def build_index(config: SearchBuildConfig, overwrite: bool = False) -> Path:
    """Build (or resume, or with ``shard`` encode a share of) the index; return ``out`` (or ``OUT.work``)."""
    _check(config, overwrite)
    model_folder = Path(config.model).expanduser() if config.model else default_sentence_model()
    identity = check_model(model_folder)
    if config.engine == "milvus":
        from kalbert.search.milvus import check_collection

        # before minutes of encoding: a URI that does not answer, a name taken (unless by our killed build)
        check_collection(config.uri, Path(config.out), overwrite or work_folder(config.out).exists())
    started = time.perf_counter()
    model = load_sentence_model(model_folder, backend=config.backend)
    prompts = model_prompts(model)
    limit = token_limit(model)
    budget = min(config.passage_tokens, limit - 2) if limit else config.passage_tokens
    out, work = Path(config.out), work_folder(config.out)
    state = _open_work(work, _plan(config, identity, prompts, budget), overwrite and config.shard is None)
    state = _write_passages(work, state, config, model, budget)
    try:
        engine = pick_engine(config.engine, state["counts"]["passages"])  # IVF-PQ over a few passages: refused
    except KalbertError:
        _remove_unencoded(work)
        raise
    store = PassageStore(work)
    mine = parse_shard(config.shard)
    encoded = _encode_shards(work, store, model, config, prompts, mine)
    encode_seconds = time.perf_counter() - started
    if mine is not None:
        return work
    vectors = _assemble(work, store, model.get_embedding_dimension(), config.chunk_size)
    engine_started = time.perf_counter()
    if engine in FAISS_ENGINES:
        params = build_faiss(engine, vectors, work / f"{engine}.faiss", config.engine_settings)
    else:
        from kalbert.search.milvus import build_milvus, collection_name

        params = {"uri": config.uri, "collection": collection_name(out)}
        build_milvus(config.uri, params["collection"], store, vectors)
    engine_seconds = time.perf_counter() - engine_started
    if config.lexical == "bm25":
        _lexical(work, store)
    record = {
        "format": INDEX_FORMAT, "model": identity, "dim": int(vectors.shape[1]),
        "prompts": asdict(prompts), "engine": engine, "engine_params": params, "lexical": config.lexical,
        "passages": len(store), "documents": state["counts"]["documents"],
        "duplicates": state["counts"]["duplicates"],
        "passage_tokens": budget, "stride": config.stride, "max_seq_length": limit,
        "precision": "bf16" if encoding_bf16(config.precision, config.backend)[0] else "fp32",
        "seconds": {"encode": round(encode_seconds, 1), "engine": round(engine_seconds, 1),
                    "total": round(time.perf_counter() - started, 1)},
        "encoded_here": encoded, "config": asdict(config),
    }
    record = write_record(work, record, Kind.SEARCH_INDEX, parents=[model_folder],
                          languages=folder_languages(model_folder),
                          command=f"kalbert search build --corpus {' '.join(config.corpus)} --out {config.out}")
    atomic_write_text(work / "README.md", render_card(record))
    _finish(work, out, overwrite)
    return out
