"""`kalbert static train`: fit a static model's piece vectors to a teacher's sentence vectors (tokenlearn-style).

Corpus sentences are sampled as ``kalbert sbert distill`` samples them (same seed: same sentences, so
the teacher-embedding cache filled by ``kalbert teacher encode`` is reused), their teacher vectors are
projected with the init model's PCA, and the unweighted piece vectors are fitted so that a sentence's
weighted mean of piece vectors (what the saved folder computes) matches its projected teacher vector
(cosine or MSE, AdamW, optionally on several Matryoshka prefixes at once). An optional second phase
trains on pair sets, their rows made by :mod:`kalbert.rows` as `kalbert sbert train`'s are: graded ones (STS,
paraphrase pairs, graded-pair files) with CoSENT, NLI, QA and parallel ones with in-batch negatives (an entailed
hypothesis, a question's paragraph or a translation must be nearer its anchor than every other row of the batch,
an NLI contradiction or the article's next paragraph being a hard negative). It is one phase whose batches each
come from one set (CoSENT compares only pairs scored on the same scale), the sets interleaved so that none is
trained away by the next, and it starts from the corpus phase's best weights.

Both phases run the shared fine-tuning loop (:func:`kalbert.training.train_loop`, settings in ``loop``;
``sts_epochs`` for the pair phase, ``max_steps`` caps each phase): AdamW with linear warmup and decay,
gradient clipping, evaluation on dev splits (STS, or QA val articles scored as retrieval; without them, the
held-out corpus loss) after every epoch or ``eval_steps``, and a checkpoint per phase in OUT.partial/, so a rerun
of an interrupted run resumes where it stopped (the teacher cache resumes by itself). The best evaluation of
either phase, or the init model when neither beats it, is what is saved.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from kalbert.artifact import Kind
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, refuse_existing_output
from kalbert.rows.build import check_rows, training_rows
from kalbert.rows.references import ROW_KINDS, resolve_refs
from kalbert.rows.sets import GradedPairs, RankedRows, RowSet
from kalbert.sentence.card import add_metric, add_stage
from kalbert.sentence.evaluate import dev_metric
from kalbert.sentence.score_distill import score_kl
from kalbert.stage import artifact_folder
from kalbert.static.config import StaticTrainConfig
from kalbert.static.evaluate import DevScores, eval_refs
from kalbert.static.model import StaticVectors, load_static_model, save_static_model, to_sentence_transformer
from kalbert.static.weighting import piece_weights
from kalbert.teachers.backends import load_teacher
from kalbert.teachers.cache import open_cache
from kalbert.teachers.corpus import corpus_sentences
from kalbert.training import Evaluation, LoopConfig, RunFolder, shuffled_batches, train_loop
from kalbert.verbs import command_for

COSENT_SCALE = 20.0
RANKING_SCALE = 30.0
"""the in-batch-negative logits' scale: in a prototype of the shipped model's pair phase 30 beat
sentence-transformers' 20 (dev mean 81.78 against 81.64)"""
PAIR_KINDS = (*ROW_KINDS, "parallel")
"""the registry kinds --sts takes: every kind of row, and translations between the model's languages"""
PHASES = ("corpus", "pairs")
"""the phases a run trains in turn, each with its own checkpoint in OUT.partial/ (``stage`` in
training_log.json, ``best_stage`` in kalbert.json: keys kept as the files have them)"""


class WeightedBag(torch.nn.Module):
    """Sentence vector = mean over its pieces of weight x vector: the saved StaticEmbedding's mean of rows."""

    def __init__(self, static: StaticVectors) -> None:
        super().__init__()
        self.vectors = torch.nn.Parameter(torch.from_numpy(static.vectors.astype(np.float32)))
        self.register_buffer("weights", torch.from_numpy(static.weights.astype(np.float32)))

    def forward(self, tokens: list[np.ndarray], rows: np.ndarray) -> torch.Tensor:
        pieces = [tokens[i] for i in rows]
        device = self.vectors.device
        lengths = torch.tensor([len(p) for p in pieces], device=device)
        ids = (torch.from_numpy(np.concatenate(pieces)).to(device) if int(lengths.sum())
               else torch.zeros(0, dtype=torch.long, device=device))
        offsets = torch.cumsum(lengths, 0) - lengths
        summed = F.embedding_bag(ids, self.vectors, offsets, mode="sum", per_sample_weights=self.weights[ids])
        return summed / lengths.clamp(min=1)[:, None]

    def rows(self) -> torch.Tensor:
        """The weighted rows the saved StaticEmbedding holds, on the CPU."""
        return (self.vectors * self.weights[:, None]).detach().cpu()


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


def ranking_loss(anchors: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor, dims: list[int],
                 teacher: torch.Tensor | None = None) -> torch.Tensor:
    """In-batch negatives both ways on each prefix: each anchor must pick its own positive among the batch's
    positives and hard negatives, each positive its own anchor among the batch's anchors; with ``teacher`` logits
    over the same candidates, also the KL divergence from the teacher's softmax to the anchors'."""
    target = torch.arange(len(anchors), device=anchors.device)
    losses = []
    for d in dims:
        anchor, positive = F.normalize(anchors[:, :d], dim=-1), F.normalize(positives[:, :d], dim=-1)
        candidates = torch.cat([positive, F.normalize(negatives[:, :d], dim=-1)])
        scores = anchor @ candidates.T * RANKING_SCALE
        loss = (F.cross_entropy(scores, target) + F.cross_entropy(positive @ anchor.T * RANKING_SCALE, target)) / 2
        losses.append(loss if teacher is None else loss + score_kl(scores, teacher))
    return torch.stack(losses).mean()


def tokenize(static: StaticVectors, texts: list[str]) -> list[np.ndarray]:
    """Piece ids of each text, exactly as the saved StaticEmbedding tokenizes it (no special tokens)."""
    return [np.asarray(e.ids, dtype=np.int64) for e in static.tokenizer().encode_batch(texts, add_special_tokens=False)]


@dataclass
class StaticPhase:
    """The corpus or the pair phase as the shared loop trains it: its settings, an epoch's batches, a batch's loss."""

    name: str
    loop: LoopConfig
    plan: Callable[[random.Random], Sequence[Any]]
    loss: Callable[[Any], torch.Tensor]


def _record(phase: str, evaluation: Evaluation) -> dict[str, Any]:
    """An evaluation as training_log.json lists it, its phase under ``stage`` (the starting weights as "init")."""
    return {"stage": phase if evaluation.step else "init", "epoch": evaluation.epoch, "step": evaluation.step,
            "train_loss": evaluation.train_loss, **evaluation.metrics, "score": evaluation.score}


def train_static(config: StaticTrainConfig, overwrite: bool = False) -> tuple[Path, dict[str, Any]]:
    """Fit the init model to the teacher on the corpus (then on pairs); save the best evaluation of either phase
    (or the init model's vectors, when neither beats them); return the folder and that evaluation's record."""
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
    sts = resolve_refs(config.sts, PAIR_KINDS, "--sts", refs)
    check_rows(sts, config.rows, refs, "--eval")
    pair_rows = training_rows(sts, config.rows, languages=meta.get("languages") or [])
    pairs = pair_rows.sets
    if not refs and not config.corpus:
        raise KalbertError("nothing to pick the best epoch with", "pass --eval (e.g. korsts:dev) or --corpus")
    settings = {k: v for k, v in asdict(config).items() if k != "teacher_backend"}  # backends share vectors
    runs = {name: RunFolder.open(config.out, settings, phase=name) for name in PHASES}  # before the teacher encodes

    bag = WeightedBag(static)
    model = to_sentence_transformer(static)
    dev_scores = DevScores(refs)
    corpus = corpus_task(config, static, meta, dims) if config.corpus else None
    facts: dict[str, Any] = {}
    phases: list[StaticPhase] = []
    if corpus is not None:
        facts.update(corpus_train_sentences=corpus.train_rows, corpus_dev_sentences=corpus.dev_rows,
                     teacher_encoding=corpus.teacher_encoding)
        phases.append(StaticPhase("corpus", config.loop,
                                  lambda rng: shuffled_batches(corpus.train_rows, config.loop.batch_size, rng),
                                  lambda rows: corpus.batch_loss(bag, np.asarray(rows))))
    if pairs:
        facts.update({f"{p.label}_pairs": len(p) for p in pairs})
        mixed = PairBatches(static, pairs, config.loop.batch_size, config.rows.score_temperature)
        phases.append(StaticPhase("pairs", replace(config.loop, epochs=config.sts_epochs),
                                  lambda rng: shuffled_batches(len(mixed), 1, rng),  # a row of this phase is a batch
                                  lambda batch: mixed.loss(bag, batch[0], dims)))

    def evaluate() -> tuple[float, dict[str, float]]:
        model[0].embedding.weight.data.copy_(bag.rows())
        metrics = dev_scores(model)
        if corpus is not None:
            metrics["heldout_loss"] = corpus.heldout_loss(bag)
        return (float(np.mean([metrics[ref] for ref in refs])) if refs else -metrics["heldout_loss"]), metrics

    history: list[dict[str, Any]] = []
    init_vectors = bag.vectors.detach().clone()
    candidates = []  # each phase's best evaluation and its vectors, which the loop leaves in the bag
    earlier = 0.0  # training time of the runs this one resumed
    for phase in phases:  # so the pair phase starts from the corpus phase's best
        fit = train_loop(bag, phase.plan, phase.loss, evaluate, phase.loop, runs[phase.name],
                         evaluate_first=not history, eval_autocast=False)
        history += [_record(phase.name, e) for e in fit.history]
        candidates.append((_record(phase.name, fit.best), bag.vectors.detach().cpu().clone()))
        earlier += fit.earlier_seconds
    # the init model (evaluated first by the first phase) stays when no phase beats it; of equal scores the earliest
    best, vectors = max([(history[0], init_vectors), *candidates], key=lambda candidate: candidate[0]["score"])
    static.vectors = vectors.numpy()
    meta = copy.deepcopy(meta)
    meta.update(dimension=static.dim, weighting=weighting)
    if config.matryoshka_dims:
        meta["matryoshka_dims"] = dims
    add_stage(meta, "train", asdict(config), best_stage=best["stage"], best_epoch=best["epoch"], best_step=best["step"],
              seconds=round(earlier + time.perf_counter() - started, 1), **fit.precision_record(), **facts,
              **pair_rows.record())
    for ref in refs:
        add_metric(meta, "train", ref, dev_metric(ref), best[ref])
    if "heldout_loss" in best:
        add_metric(meta, "train", "held-out corpus sentences", f"teacher_{config.loss}_loss", best["heldout_loss"])
    with artifact_folder(config.out, Kind.STATIC_MODEL, overwrite=overwrite) as tmp:
        save_static_model(static, tmp, meta, [config.init], command_for(config))
        atomic_write_json(tmp / "training_log.json", {"stage": "train", "history": history})
    for run in runs.values():
        run.remove()
    return Path(config.out), best


class PairBatches:
    """The --sts sets cut into batches of one set each; row i of this task is batch i."""

    def __init__(self, static: StaticVectors, pairs: list[RowSet], batch_size: int,
                 score_temperature: float) -> None:
        self.losses = [GradedLoss(static, p) if isinstance(p, GradedPairs)
                       else RankingLoss(static, p, score_temperature) for p in pairs]
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
    """CoSENT on the pairs of one graded set."""

    def __init__(self, static: StaticVectors, pairs: GradedPairs) -> None:
        self.left, self.right = tokenize(static, pairs.left), tokenize(static, pairs.right)
        self.scores = torch.from_numpy(pairs.scores)

    def __call__(self, bag: WeightedBag, rows: np.ndarray, dims: list[int]) -> torch.Tensor:
        return cosent_loss(bag(self.left, rows), bag(self.right, rows), self.scores[rows].to(bag.vectors.device), dims)


class RankingLoss:
    """In-batch negatives on ranked rows of one set (NLI, paraphrases, question -> passage, translations), with the
    hard negatives those rows have (and the score teacher's logits over the same candidates, when the rows carry its
    vectors)."""

    def __init__(self, static: StaticVectors, pairs: RankedRows, score_temperature: float) -> None:
        self.anchors, self.positives = tokenize(static, pairs.anchors), tokenize(static, pairs.positives)
        self.negatives = tokenize(static, [n or "" for n in pairs.negatives])
        self.has_negative = np.array([n is not None for n in pairs.negatives])
        self.teacher = [torch.from_numpy(v) for v in pairs.teacher] if pairs.teacher is not None else None
        self.score_temperature = score_temperature

    def __call__(self, bag: WeightedBag, rows: np.ndarray, dims: list[int]) -> torch.Tensor:
        negatives = rows[self.has_negative[rows]]
        teacher = None
        if self.teacher is not None:
            anchors, positives, hard = self.teacher
            candidates = torch.cat([positives[rows], hard[negatives]])
            teacher = (anchors[rows] @ candidates.T / self.score_temperature).to(bag.vectors.device)
        return ranking_loss(bag(self.anchors, rows), bag(self.positives, rows),
                            bag(self.negatives, negatives) if len(negatives) else bag.vectors[:0], dims, teacher)


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
        pred = bag(self.tokens, rows)
        return target_loss(pred, self.targets[rows].to(pred.device), self.dims, self.loss)

    def heldout_loss(self, bag: WeightedBag) -> float:
        rows = np.arange(self.dev_rows)
        with torch.no_grad():
            pred = bag(self.tokens, rows)
            return float(target_loss(pred, self.targets[rows].to(pred.device), self.dims, self.loss))


def corpus_task(config: StaticTrainConfig, static: StaticVectors, meta: dict[str, Any], dims: list[int]
                ) -> CorpusTask:
    """Sample the corpus, fill the teacher cache with what it lacks, and project the teacher's vectors."""
    teacher = load_teacher(config.teacher)
    if teacher.fingerprint != meta["teacher"]["fingerprint"]:
        raise KalbertError(f"{config.init} was distilled from the {meta['teacher']['name']} teacher, not "
                           f"{teacher.name}", f"pass --teacher {meta['teacher']['name']}")
    cache = open_cache(teacher, config.cache_dir, config.teacher_backend)
    by_lang = corpus_sentences(config.corpus, config.max_sentences, config.loop.seed, cache)
    sentences = [s for lang in sorted(by_lang) for s in by_lang[lang]]
    sentences = [sentences[i] for i in np.random.default_rng(config.loop.seed).permutation(len(sentences))]
    if len(sentences) <= config.dev_rows:
        raise KalbertError(f"only {len(sentences)} corpus sentences, all held out for evaluation",
                           "lower --dev-rows or raise --max-sentences")
    targets = torch.from_numpy(static.project(cache.vectors(sentences)))
    return CorpusTask(tokenize(static, sentences), targets, config.dev_rows, dims, config.loss, cache.fills)
