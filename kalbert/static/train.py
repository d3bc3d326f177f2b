"""`kalbert static train`: fit a static model's piece vectors to a teacher's sentence vectors (tokenlearn-style).

Corpus sentences are sampled as ``kalbert sbert distill`` samples them (same seed: same sentences, so
the teacher-embedding cache filled by ``kalbert teacher encode`` is reused), their teacher vectors are
projected with the init model's PCA, and the unweighted piece vectors are fitted so that a sentence's
weighted mean of piece vectors (what the saved folder computes) matches its projected teacher vector
(cosine or MSE, AdamW, optionally on several Matryoshka prefixes at once). An optional second stage
trains on pair sets: graded ones (STS, paraphrase pairs, graded-pair files) with CoSENT, NLI and parallel
ones with in-batch negatives (an entailed hypothesis, or a translation, must be nearer its anchor than
every other row of the batch, an NLI contradiction being a hard negative). It is one stage whose batches
each come from one set (CoSENT compares only pairs scored on the same scale), the sets interleaved so
that none is trained away by the next. After every epoch the model is scored on STS dev splits (or,
without them, the held-out corpus loss) and the best epoch of either stage is saved.

Resuming: the teacher cache resumes by itself (encoding is the long part); the fitting takes minutes,
so an interrupted run simply starts the fitting again.
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from kalbert.artifact import Kind
from kalbert.config import DEFAULT_SEED, render_command
from kalbert.data import (
    assert_trainable,
    get_spec,
    load_graded,
    load_nli_triplets,
    load_parallel,
    parse_ref,
    training_split,
)
from kalbert.data.heldout import is_pairs_file, load_clean_sts_file
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, refuse_existing_output
from kalbert.sentence.card import add_metric, add_stage
from kalbert.stage import artifact_folder
from kalbert.static.evaluate import STSDev, eval_refs
from kalbert.static.model import StaticVectors, load_static_model, save_static_model, to_sentence_transformer
from kalbert.static.weighting import Weighting, piece_weights
from kalbert.teachers.backends import TeacherBackend, load_teacher
from kalbert.teachers.cache import open_cache
from kalbert.teachers.corpus import corpus_sentences

log = logging.getLogger(__name__)
COSENT_SCALE = 20.0
RANKING_SCALE = 30.0
"""the in-batch-negative logits' scale: in a prototype of the shipped model's pair stage 30 beat
sentence-transformers' 20 (dev mean 81.78 against 81.64)"""
PAIR_KINDS = ("sts", "pairs", "nli", "parallel")


@dataclass
class StaticTrainConfig:
    """Static piece vectors fitted to a teacher's sentence vectors on corpus sentences, then optionally to STS."""

    init: str
    """Static model to start from (kalbert static distill); its PCA projects the teacher's vectors."""
    out: str
    """Output static-model folder (the best evaluated epoch)."""
    corpus: list[str] = field(default_factory=list)
    """Corpora (names or files) whose sentences' teacher vectors the model learns to match."""
    max_sentences: int = 150_000
    """Corpus sentences sampled (deduplicated, language-balanced)."""
    teacher: str = "multilingual-e5-small"
    """The teacher the init model was distilled from (its projection fits only that teacher's vectors)."""
    sts: list[str] = field(default_factory=list)
    """Pair sets trained after the corpus stage: STS and paraphrase sets and graded-pair TSV files (`kalbert
    sbert mine`) with CoSENT, NLI sets (e.g. ocnli, kornli:dev) and parallel sets (e.g. parallel-stsb-train)
    with in-batch negatives (default split train; evaluation splits such as korsts:test are refused)."""
    eval: list[str] | None = None
    """STS dev splits whose mean picks the best epoch (default: korsts:dev for Korean, stsb-zh:dev for Chinese)."""
    dim: int | None = None
    """Keep the first this many dimensions of the init model (default: all)."""
    weighting: Weighting | None = None
    """Piece weights (default: the init model's)."""
    sif_a: float | None = None
    """The a of a/(a+p) (default: the init model's)."""
    loss: Literal["cosine", "mse"] = "cosine"
    """How a sentence's mean vector is compared with its projected teacher vector."""
    matryoshka_dims: list[int] = field(default_factory=list)
    """Also fit these prefixes (e.g. 128 64), so that truncated vectors stay good."""
    epochs: int = 3
    """Passes over the corpus sentences."""
    sts_epochs: int = 2
    """Passes over the --sts pairs."""
    batch_size: int = 256
    """Sentences (or pairs) per step."""
    lr: float = 1e-3
    """AdamW learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay (it pulls rarely seen pieces towards zero)."""
    dev_rows: int = 1000
    """Corpus sentences held out, never trained on, for the held-out loss."""
    seed: int = DEFAULT_SEED
    """Seed of the corpus sample (the same as `kalbert teacher encode --seed`) and of the batch order."""
    cache_dir: str | None = None
    """Teacher-embedding cache; default $XDG_CACHE_HOME/kalbert/teacher-embeddings."""
    teacher_backend: TeacherBackend = "auto"
    """How the teacher encodes what the cache lacks: auto (the fastest backend this CPU runs whose vectors keep
    cosine >= 0.999 to torch fp32 on a probe of 256 of the sentences), torch (fp32), torch-bf16, onnx or
    onnx-int8 (refused below cosine 0.999). Their vectors share one cache."""


class WeightedBag(torch.nn.Module):
    """Sentence vector = mean over its pieces of weight x vector: the saved StaticEmbedding's mean of rows."""

    def __init__(self, static: StaticVectors) -> None:
        super().__init__()
        self.vectors = torch.nn.Parameter(torch.from_numpy(static.vectors.astype(np.float32)))
        self.register_buffer("weights", torch.from_numpy(static.weights.astype(np.float32)))

    def forward(self, tokens: list[np.ndarray], rows: np.ndarray) -> torch.Tensor:
        pieces = [tokens[i] for i in rows]
        lengths = torch.tensor([len(p) for p in pieces])
        ids = torch.from_numpy(np.concatenate(pieces)) if int(lengths.sum()) else torch.zeros(0, dtype=torch.long)
        offsets = torch.cumsum(lengths, 0) - lengths
        summed = F.embedding_bag(ids, self.vectors, offsets, mode="sum", per_sample_weights=self.weights[ids])
        return summed / lengths.clamp(min=1)[:, None]

    def rows(self) -> torch.Tensor:
        return (self.vectors * self.weights[:, None]).detach()


def target_loss(pred: torch.Tensor, target: torch.Tensor, dims: list[int], kind: str) -> torch.Tensor:
    """Mean over the prefixes ``dims`` of (1 - cosine) or MSE to the projected teacher vectors."""
    losses = [(1 - F.cosine_similarity(pred[:, :d], target[:, :d], dim=-1)).mean() if kind == "cosine"
              else F.mse_loss(pred[:, :d], target[:, :d]) for d in dims]
    return torch.stack(losses).mean()


def cosent_loss(left: torch.Tensor, right: torch.Tensor, labels: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """CoSENT (Su, 2022) on each prefix: every pair whose gold score is higher must get the higher cosine."""
    losses = []
    for d in dims:
        cosine = F.cosine_similarity(left[:, :d], right[:, :d], dim=-1) * COSENT_SCALE
        margins = (cosine[None, :] - cosine[:, None])[labels[:, None] > labels[None, :]]
        losses.append(torch.logsumexp(torch.cat([margins.new_zeros(1), margins]), dim=0))
    return torch.stack(losses).mean()


def ranking_loss(anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor, dims: list[int]
                 ) -> torch.Tensor:
    """In-batch negatives both ways on each prefix: each anchor must pick its own positive among the batch's
    positives and hard negatives, each positive its own anchor among the batch's anchors."""
    target = torch.arange(len(anchors))
    losses = []
    for d in dims:
        anchor, positive = F.normalize(anchors[:, :d], dim=-1), F.normalize(positives[:, :d], dim=-1)
        candidates = torch.cat([positive, F.normalize(negatives[:, :d], dim=-1)])
        losses.append((F.cross_entropy(anchor @ candidates.T * RANKING_SCALE, target)
                       + F.cross_entropy(positive @ anchor.T * RANKING_SCALE, target)) / 2)
    return torch.stack(losses).mean()


def tokenize(static: StaticVectors, texts: list[str]) -> list[np.ndarray]:
    """Piece ids of each text, exactly as the saved StaticEmbedding tokenizes it (no special tokens)."""
    return [np.asarray(e.ids, dtype=np.int64) for e in static.tokenizer().encode_batch(texts, add_special_tokens=False)]


@dataclass
class GradedPairs:
    """An STS or paraphrase set, or a graded-pair file: pairs with gold scores in [0, 1], trained with CoSENT."""

    label: str
    left: list[str]
    right: list[str]
    scores: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)


@dataclass
class RankedPairs:
    """An NLI or parallel set: (anchor, positive, hard negative or None) rows, trained with in-batch negatives."""

    label: str
    anchors: list[str]
    positives: list[str]
    negatives: list[str | None]

    def __len__(self) -> int:
        return len(self.anchors)


def translation_pairs(name: str, languages: list[str]) -> RankedPairs:
    """A parallel set's sentences paired with their translations, for each two of the model's languages."""
    assert_trainable(name, "all")
    parallel = load_parallel(name)
    columns = [i for i, lang in enumerate(parallel.languages) if lang in languages]
    if len(columns) < 2:
        raise KalbertError(f"{name} holds {'/'.join(parallel.languages)} sentences, and this static model reads "
                           f"{'/'.join(languages) or 'one language'}",
                           "give --sts a parallel set with two of the model's languages, e.g. parallel-stsb-train")
    rows = [(row[i], row[j]) for i, j in itertools.combinations(columns, 2) for row in parallel.rows
            if row[i] and row[j]]
    return RankedPairs(name, [a for a, _ in rows], [b for _, b in rows], [None] * len(rows))


def pair_sets(refs: list[str], evaluated: list[str], languages: list[str]) -> list[GradedPairs | RankedPairs]:
    """Each --sts set or graded-pair file, read; evaluation splits, and files holding an evaluation sentence,
    are refused."""
    found: list[GradedPairs | RankedPairs] = []
    for ref in refs:
        if is_pairs_file(ref):
            rows = load_clean_sts_file(ref)
            pairs: GradedPairs | RankedPairs = GradedPairs(
                ref, [p.sentence1 for p in rows], [p.sentence2 for p in rows],
                np.array([p.score / 5.0 for p in rows], dtype=np.float32))
        elif get_spec(name := parse_ref(ref)[0]).kind == "parallel":
            pairs = translation_pairs(name, languages)
        else:
            name, split = training_split(ref, PAIR_KINDS, "--sts", evaluated)
            if get_spec(name).kind == "nli":
                triplets = load_nli_triplets(name, split)
                pairs = RankedPairs(f"{name}:{split}", [t[0] for t in triplets], [t[1] for t in triplets],
                                    [t[2] for t in triplets])
            else:
                graded = load_graded(name, split)
                pairs = GradedPairs(f"{name}:{split}", [r[0] for r in graded], [r[1] for r in graded],
                                    np.array([r[2] for r in graded], dtype=np.float32))
        if not len(pairs):
            raise KalbertError(f"{pairs.label} has no pairs")
        found.append(pairs)
    return found


@dataclass
class Best:
    """The best-scoring piece vectors seen so far, and when they were seen."""

    score: float = -math.inf
    vectors: torch.Tensor | None = None
    record: dict[str, Any] = field(default_factory=dict)

    def offer(self, record: dict[str, Any], bag: WeightedBag) -> None:
        if self.vectors is None or record["score"] > self.score:
            self.score, self.vectors, self.record = record["score"], bag.vectors.detach().clone(), record


def fit_stage(stage: str, bag: WeightedBag, rows: int, epochs: int, config: StaticTrainConfig,
              batch_loss: Callable[[np.ndarray], torch.Tensor], evaluate: Callable[[], dict[str, Any]], best: Best,
              history: list[dict[str, Any]], batch_size: int | None = None) -> None:
    """``epochs`` shuffled passes over ``rows`` rows with AdamW in batches of ``batch_size`` rows (default
    --batch-size), evaluating after each."""
    batch_size = batch_size or config.batch_size
    optimizer = torch.optim.AdamW(bag.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    rng = np.random.default_rng([config.seed, len(history)])
    for epoch in range(1, epochs + 1):
        order = rng.permutation(rows)
        batches = [order[i: i + batch_size] for i in range(0, rows, batch_size)]
        total = 0.0
        for batch in tqdm(batches, desc=f"{stage} epoch {epoch}/{epochs}", unit=" batch", mininterval=2):
            loss = batch_loss(batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        record = {"stage": stage, "epoch": epoch, "train_loss": total / len(batches), **evaluate()}
        log.info("%s", record)
        history.append(record)
        best.offer(record, bag)


def train_static(config: StaticTrainConfig, overwrite: bool = False) -> tuple[Path, dict[str, Any]]:
    """Fit the init model to the teacher on the corpus (then STS pairs); save the best epoch; return it and
    its evaluation record."""
    started = time.perf_counter()
    refuse_existing_output(config.out, overwrite)
    if not config.corpus and not config.sts:
        raise KalbertError("no training sentences", "pass --corpus (e.g. kowiki nsmc zh-laws zh-clue) and/or "
                                                    "--sts (e.g. korsts stsb-zh)")
    static, meta = load_static_model(config.init)
    static = static.truncated(config.dim or static.dim)
    weighting = {"scheme": config.weighting or meta["weighting"]["scheme"],
                 "sif_a": config.sif_a if config.sif_a is not None else meta["weighting"]["sif_a"]}
    static.weights = piece_weights(static.vocab, weighting["scheme"], weighting["sif_a"])
    dims = sorted({*config.matryoshka_dims, static.dim}, reverse=True)
    if dims[-1] < 1 or dims[0] > static.dim:
        raise KalbertError(f"--matryoshka-dims must lie in 1..{static.dim}, got {config.matryoshka_dims}")
    refs = eval_refs(config.eval, meta.get("languages") or [])
    pairs = pair_sets(config.sts, refs, meta.get("languages") or [])
    if not refs and not config.corpus:
        raise KalbertError("nothing to pick the best epoch with", "pass --eval (e.g. korsts:dev) or --corpus")

    bag = WeightedBag(static)
    model = to_sentence_transformer(static)
    sts_dev = STSDev(refs)
    corpus = corpus_task(config, static, meta, dims) if config.corpus else None
    facts: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    best = Best()

    def evaluate() -> dict[str, Any]:
        model[0].embedding.weight.data.copy_(bag.rows())
        record: dict[str, Any] = sts_dev(model)
        if corpus is not None:
            record["heldout_loss"] = corpus.heldout_loss(bag)
        record["score"] = float(np.mean([record[ref] for ref in refs])) if refs else -record["heldout_loss"]
        return record

    initial = {"stage": "init", "epoch": 0, **evaluate()}
    history.append(initial)
    best.offer(initial, bag)
    if corpus is not None:
        facts.update(corpus_train_sentences=corpus.train_rows, corpus_dev_sentences=corpus.dev_rows,
                     teacher_encoding=corpus.teacher_encoding)
        fit_stage("corpus", bag, corpus.train_rows, config.epochs, config, lambda b: corpus.batch_loss(bag, b),
                  evaluate, best, history)
    if pairs:
        facts.update({f"{p.label}_pairs": len(p) for p in pairs})
        mixed = PairBatches(static, pairs, config.batch_size)
        fit_stage("pairs", bag, len(mixed), config.sts_epochs, config, lambda b: mixed.loss(bag, int(b[0]), dims),
                  evaluate, best, history, batch_size=1)

    assert best.vectors is not None
    static.vectors = best.vectors.numpy()
    meta = copy.deepcopy(meta)
    meta.update(dimension=static.dim, weighting=weighting)
    if config.matryoshka_dims:
        meta["matryoshka_dims"] = dims
    add_stage(meta, "train", asdict(config), best_stage=best.record["stage"], best_epoch=best.record["epoch"],
              seconds=round(time.perf_counter() - started, 1), **facts)
    for ref in refs:
        add_metric(meta, "train", ref, "spearman_cosine", best.record[ref])
    if "heldout_loss" in best.record:
        add_metric(meta, "train", "held-out corpus sentences", f"teacher_{config.loss}_loss",
                   best.record["heldout_loss"])
    with artifact_folder(config.out, Kind.STATIC_MODEL, overwrite=overwrite) as tmp:
        save_static_model(static, tmp, meta, [config.init], render_command("kalbert static train", config))
        atomic_write_json(tmp / "training_log.json", {"stage": "train", "history": history})
    return Path(config.out), best.record


class PairBatches:
    """The --sts sets cut into batches of one set each; row i of this task is batch i."""

    def __init__(self, static: StaticVectors, pairs: list[GradedPairs | RankedPairs], batch_size: int) -> None:
        self.losses = [GradedLoss(static, p) if isinstance(p, GradedPairs) else RankingLoss(static, p) for p in pairs]
        rng = np.random.default_rng(len(pairs))
        self.batches: list[tuple[int, np.ndarray]] = []
        for index, found in enumerate(pairs):
            rows = rng.permutation(len(found))
            self.batches += [(index, rows[i: i + batch_size]) for i in range(0, len(found), batch_size)]

    def __len__(self) -> int:
        return len(self.batches)

    def loss(self, bag: WeightedBag, batch: int, dims: list[int]) -> torch.Tensor:
        index, rows = self.batches[batch]
        return self.losses[index](bag, rows, dims)


class GradedLoss:
    """CoSENT on rows of one graded set."""

    def __init__(self, static: StaticVectors, pairs: GradedPairs) -> None:
        self.left, self.right = tokenize(static, pairs.left), tokenize(static, pairs.right)
        self.scores = torch.from_numpy(pairs.scores)

    def __call__(self, bag: WeightedBag, rows: np.ndarray, dims: list[int]) -> torch.Tensor:
        return cosent_loss(bag(self.left, rows), bag(self.right, rows), self.scores[rows], dims)


class RankingLoss:
    """In-batch negatives on rows of one NLI or parallel set, with the hard negatives those rows have."""

    def __init__(self, static: StaticVectors, pairs: RankedPairs) -> None:
        self.anchors, self.positives = tokenize(static, pairs.anchors), tokenize(static, pairs.positives)
        self.negatives = tokenize(static, [n or "" for n in pairs.negatives])
        self.has_negative = np.array([n is not None for n in pairs.negatives])

    def __call__(self, bag: WeightedBag, rows: np.ndarray, dims: list[int]) -> torch.Tensor:
        negatives = rows[self.has_negative[rows]]
        return ranking_loss(bag(self.anchors, rows), bag(self.positives, rows),
                            bag(self.negatives, negatives) if len(negatives) else bag.vectors[:0], dims)


@dataclass
class CorpusTask:
    """Corpus sentences with their projected teacher vectors: the first ``dev_rows`` held out."""

    tokens: list[np.ndarray]
    targets: torch.Tensor
    dev_rows: int
    dims: list[int]
    loss: str
    teacher_encoding: list[dict[str, Any]]
    """the cache fills (throughput records) that encoded the sentences the cache lacked"""

    @property
    def train_rows(self) -> int:
        return len(self.tokens) - self.dev_rows

    def batch_loss(self, bag: WeightedBag, rows: np.ndarray) -> torch.Tensor:
        """Loss on training rows ``rows`` (numbered from 0 after the held-out ones)."""
        rows = rows + self.dev_rows
        return target_loss(bag(self.tokens, rows), self.targets[rows], self.dims, self.loss)

    def heldout_loss(self, bag: WeightedBag) -> float:
        rows = np.arange(self.dev_rows)
        with torch.no_grad():
            return float(target_loss(bag(self.tokens, rows), self.targets[rows], self.dims, self.loss))


def corpus_task(config: StaticTrainConfig, static: StaticVectors, meta: dict[str, Any], dims: list[int]
                ) -> CorpusTask:
    """Sample the corpus, fill the teacher cache with what it lacks, and project the teacher's vectors."""
    teacher = load_teacher(config.teacher)
    if teacher.fingerprint != meta["teacher"]["fingerprint"]:
        raise KalbertError(f"{config.init} was distilled from the {meta['teacher']['name']} teacher, not "
                           f"{teacher.name}", f"pass --teacher {meta['teacher']['name']}")
    cache = open_cache(teacher, config.cache_dir, config.teacher_backend)
    by_lang = corpus_sentences(config.corpus, config.max_sentences, config.seed, cache)
    sentences = [s for lang in sorted(by_lang) for s in by_lang[lang]]
    sentences = [sentences[i] for i in np.random.default_rng(config.seed).permutation(len(sentences))]
    if len(sentences) <= config.dev_rows:
        raise KalbertError(f"only {len(sentences)} corpus sentences, all held out for evaluation",
                           "lower --dev-rows or raise --max-sentences")
    targets = torch.from_numpy(static.project(cache.vectors(sentences)))
    return CorpusTask(tokenize(static, sentences), targets, config.dev_rows, dims, config.loss, cache.fills)
