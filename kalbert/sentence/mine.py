"""`kalbert sbert mine`: teacher-labelled sentence pairs mined from corpora (Augmented SBERT, out of domain).

The graded STS sets are small and come from one domain (STS-B captions and news); reviews, questions and
laws are not in them. Mining pairs from the corpora and letting a (fine-tuned) teacher grade them gives a
student graded pairs from those domains too. The steps:

1. **Sentences**: the corpus sample distillation draws (:func:`kalbert.teachers.corpus.cached_sample`,
   same ``max_sentences`` and ``seed``), without any sentence an evaluation split scores; sentences
   identical once whitespace is removed are merged. The teacher's vectors come from the embedding cache,
   so after `kalbert teacher encode` (or a distillation on the same sample) nothing is encoded again.
2. **Candidates**, per language (a pair never mixes languages): every sentence with each of its
   ``neighbours`` nearest other sentences by teacher cosine (all ranks 1..k, found by a blocked
   matrix product), plus random same-language pairs numbering ``random_share`` x the language's quota,
   which fill the low-similarity range that neighbours leave empty. Near-duplicates (cosine above
   ``duplicate_cosine``) are never candidates.
3. **Selection**: the cosine range of all candidates is cut into ``bins`` equal-width bins and each
   language's quota (the pairs asked, shared in proportion to its sentences) is spread evenly over
   them; a bin with fewer candidates gives all it has and the rest goes to the others, so the labels
   span the range instead of piling up at near-paraphrases.
4. **Label**: score = 5 (cos - lo) / (hi - lo), lo and hi the lowest and highest teacher cosine of the
   pairs kept, so the file uses the whole 0-5 scale of a graded STS set (e5's cosines sit in 0.7-0.95).
   The map is monotone: CoSENT and AnglE (the default losses of `kalbert sbert train`) read only the order
   of the scores, so for them it changes nothing; the cosine-MSE loss learns the stretched scale.

The TSV (sentence1, sentence2, score; rows shuffled, so ``--max-rows`` takes a fair subset) trains with
``kalbert sbert train --train FILE``. Its record (same stem, ``.json``) names the teacher and the splits
the teacher was trained on, so a student trained on the file inherits that lineage
(:func:`kalbert.lineage.training_splits`).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from kalbert import __version__
from kalbert.artifact import invocation
from kalbert.config import DEFAULT_SEED, render_command
from kalbert.data.heldout import drop_heldout
from kalbert.errors import KalbertError
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_json, atomic_write_text, refuse_existing_output
from kalbert.lineage import record_beside, training_splits
from kalbert.teachers.backends import E5_NAME, describe, load_teacher
from kalbert.teachers.cache import open_cache
from kalbert.teachers.corpus import cached_sample

log = logging.getLogger(__name__)
BLOCK_BYTES = 1 << 28
"""float32 similarities held at once by the neighbour search (256 MiB: 335 rows x 200k sentences); with the
selection's int64 indices, the search peaks near 4x this, whatever the corpus size"""
HISTOGRAM_BINS = 10


@dataclass
class MineConfig:
    """Teacher-graded sentence pairs mined from corpora by nearest neighbours (Augmented SBERT)."""

    corpus: list[str]
    """corpus names (kalbert data list) or files, sampled as `kalbert sbert distill` samples them"""
    out: str
    """output TSV (sentence1, sentence2, score 0-5) for `kalbert sbert train --train OUT`; record: OUT with .json"""
    teacher: str = E5_NAME
    """teacher that finds and grades the pairs: multilingual-e5-small, a fine-tuned teacher folder, ..."""
    max_sentences: int = 150_000
    """corpus sentences sampled (language-balanced); the same number as distillation reuses its sample and vectors"""
    pairs: int = 50_000
    """pairs to write, shared among the languages in proportion to their sentences"""
    neighbours: int = 8
    """nearest neighbours of each sentence that become candidate pairs"""
    random_share: float = 0.25
    """random same-language pairs added to the candidates, as a share of the pairs asked"""
    bins: int = 10
    """teacher-cosine bins the pairs are spread evenly over"""
    duplicate_cosine: float = 0.98
    """pairs above this teacher cosine are near-duplicates and never kept"""
    seed: int = DEFAULT_SEED
    """seed of the sentence sample (distillation's --seed picks the same sentences) and of the pair choice"""
    cache_dir: str | None = None
    """teacher-embedding cache (default ~/.cache/kalbert/teacher-embeddings)"""
    allow_fewer: bool = False
    """write what was found when the corpora yield fewer pairs than asked (default: an error, nothing written)"""


@dataclass
class MineResult:
    """The pairs file, its record, and how many pairs were asked and found."""

    out: Path
    record: dict
    asked: int
    found: int


@dataclass
class Candidates:
    """Candidate pairs of one language, as row indices into its sentences."""

    first: np.ndarray
    second: np.ndarray
    cosine: np.ndarray
    """the teacher's cosine of each pair"""
    neighbour: np.ndarray
    """True where one sentence is among the other's nearest neighbours, False for a random pair"""


def nearest_neighbours(vectors: np.ndarray, k: int, duplicate_cosine: float, block_bytes: int = BLOCK_BYTES,
                       progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` most similar other rows (unit vectors: cosine), nearest first, as (indices, cosines);
    near-duplicates (cosine above ``duplicate_cosine``) are skipped and missing neighbours are -1.

    Rows are compared block by block, so the similarities in memory stay under ``block_bytes``."""
    n = len(vectors)
    k = min(k, n - 1)
    indices, cosines = np.full((n, max(k, 0)), -1, np.int64), np.full((n, max(k, 0)), -np.inf, np.float32)
    if k <= 0:
        return indices, cosines
    rows = max(1, block_bytes // (4 * n))
    for start in tqdm(range(0, n, rows), desc="neighbours", unit=" block", disable=not progress, mininterval=2):
        sims = vectors[start: start + rows] @ vectors.T
        sims[sims > duplicate_cosine] = -np.inf
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -np.inf  # itself, whatever the rounding
        top = np.argpartition(sims, n - k, axis=1)[:, n - k:]
        top_sims = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        top, top_sims = np.take_along_axis(top, order, axis=1), np.take_along_axis(top_sims, order, axis=1)
        indices[start: start + rows] = np.where(np.isfinite(top_sims), top, -1)
        cosines[start: start + rows] = top_sims
    return indices, cosines


def _pair_keys(first: np.ndarray, second: np.ndarray, n: int) -> np.ndarray:
    """One int64 per unordered pair."""
    return np.minimum(first, second) * n + np.maximum(first, second)


def candidate_pairs(vectors: np.ndarray, neighbours: int, random_pairs: int, duplicate_cosine: float,
                    rng: np.random.Generator, progress: bool = True) -> Candidates:
    """Every (sentence, one of its nearest neighbours) pair once, plus up to ``random_pairs`` random pairs that
    are neither neighbours nor near-duplicates."""
    n = len(vectors)
    indices, cosines = nearest_neighbours(vectors, neighbours, duplicate_cosine, progress=progress)
    found = indices >= 0
    rows = np.broadcast_to(np.arange(n)[:, None], indices.shape)[found]
    keys, where = np.unique(_pair_keys(rows, indices[found], n), return_index=True)
    near_cosine = cosines[found][where]
    taken = set(keys.tolist())
    random_keys: list[int] = []
    for _ in range(20):  # a small language may offer fewer distinct pairs than asked: stop trying after a while
        if len(random_keys) >= random_pairs or n < 2:
            break
        draw = rng.integers(0, n, size=(2 * (random_pairs - len(random_keys)) + 16, 2))
        draw = draw[draw[:, 0] != draw[:, 1]]
        for key in _pair_keys(draw[:, 0], draw[:, 1], n).tolist():
            if key not in taken and len(random_keys) < random_pairs:
                taken.add(key)
                random_keys.append(key)
    far = np.array(random_keys, dtype=np.int64)
    far_cosine = np.einsum("ij,ij->i", vectors[far // n], vectors[far % n]) if len(far) else np.zeros(0, np.float32)
    keep = far_cosine <= duplicate_cosine
    all_keys = np.concatenate([keys, far[keep]])
    return Candidates(all_keys // n, all_keys % n, np.concatenate([near_cosine, far_cosine[keep]]).astype(np.float32),
                      np.concatenate([np.ones(len(keys), bool), np.zeros(int(keep.sum()), bool)]))


def flat_choice(cosines: np.ndarray, edges: np.ndarray, want: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of up to ``want`` of ``cosines``, spread as evenly as they allow over the bins ``edges`` cut:
    bins are filled from the emptiest, each to an equal share of what is left, so a bin short of candidates
    gives all it has and the others make up for it."""
    bin_of = np.clip(np.searchsorted(edges, cosines, side="right") - 1, 0, len(edges) - 2)
    members = [np.flatnonzero(bin_of == b) for b in range(len(edges) - 1)]
    chosen, left = [], want
    order = sorted(range(len(members)), key=lambda b: len(members[b]))
    for position, b in enumerate(order):
        take = min(len(members[b]), left // (len(order) - position))
        chosen.append(rng.choice(members[b], size=take, replace=False))
        left -= take
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, np.int64)


def _quotas(counts: dict[str, int], total: int) -> dict[str, int]:
    """``total`` shared in proportion to ``counts``, rounded so that the shares add up to it exactly."""
    quotas, seen, given = {}, 0, 0
    for lang in sorted(counts):
        seen += counts[lang]
        quotas[lang] = round(total * seen / sum(counts.values())) - given
        given += quotas[lang]
    return quotas


def _merge_spacing(sentences: list[str]) -> tuple[list[str], int]:
    """The sentences without those identical to an earlier one once whitespace is removed, and how many went."""
    first: dict[str, str] = {}
    for sentence in sentences:
        first.setdefault("".join(sentence.split()), sentence)
    return list(first.values()), len(sentences) - len(first)


def _check(config: MineConfig) -> None:
    if Path(config.out).suffix != ".tsv":
        raise KalbertError(f"--out {config.out} is not a .tsv file", "name the output e.g. outputs/mined/ko-zh.tsv")
    if not 0 <= config.random_share < 1 or not 0 < config.duplicate_cosine <= 1:
        raise KalbertError("--random-share must be in [0, 1) and --duplicate-cosine in (0, 1]",
                           "e.g. --random-share 0.25 --duplicate-cosine 0.98")


def mine_pairs(config: MineConfig, overwrite: bool = False, progress: bool = True) -> MineResult:
    """Mine, grade and write the pairs (see the module docstring); fewer pairs than asked is an error unless
    ``config.allow_fewer``, and then nothing is written."""
    _check(config)
    out = Path(config.out)
    refuse_existing_output(out, overwrite)
    started = time.perf_counter()
    teacher = load_teacher(config.teacher)
    cache = open_cache(teacher, config.cache_dir)
    # where corpus_sentences keeps samples, so distillation's sample (and its cached vectors) is this one
    sample = cached_sample(config.corpus, config.max_sentences, cache.folder.parent / "samples", config.seed)
    if "multilingual" not in teacher.languages and set(sample.sentences) - set(teacher.languages):
        raise KalbertError(f"the {teacher.name} teacher reads {'/'.join(teacher.languages)}, the corpora are "
                           f"{'+'.join(sorted(sample.sentences))}", f"use a multilingual teacher, e.g. {E5_NAME}")
    by_lang, heldout_dropped, merged = {}, sample.heldout_dropped, {}
    for lang, sentences in sorted(sample.sentences.items()):
        kept, dropped = drop_heldout(sentences)  # again: the stored sample may predate a newly registered split
        by_lang[lang], merged[lang] = _merge_spacing(kept)
        heldout_dropped += dropped
    cache.fill([s for lang in sorted(by_lang) for s in by_lang[lang]], progress=progress)
    quotas = _quotas({lang: len(s) for lang, s in by_lang.items()}, config.pairs)
    rng = np.random.default_rng(config.seed)
    candidates = {}
    for lang, sentences in by_lang.items():
        vectors = cache.vectors(sentences)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)  # the cache holds float16
        candidates[lang] = candidate_pairs(vectors, config.neighbours, round(config.random_share * quotas[lang]),
                                           config.duplicate_cosine, rng, progress)
    every_cosine = np.concatenate([c.cosine for c in candidates.values()])
    edges = np.linspace(every_cosine.min(), every_cosine.max(), config.bins + 1) if len(every_cosine) else np.zeros(2)
    chosen = {lang: flat_choice(c.cosine, edges, quotas[lang], rng) for lang, c in candidates.items()}
    found = sum(len(rows) for rows in chosen.values())
    if found < config.pairs and (not config.allow_fewer or not found):
        hint = (f"pass --pairs {found} or a larger --max-sentences; --allow-fewer writes what was found" if found
                else "pass more corpora or a larger --max-sentences")
        raise KalbertError(f"found {found} of the {config.pairs} pairs asked (corpus sample too small or too "
                           "repetitive)", hint)

    rows = [(by_lang[lang][c.first[i]], by_lang[lang][c.second[i]], float(c.cosine[i]))
            for lang, c in candidates.items() for i in chosen[lang]]
    rng.shuffle(rows)
    cosines = np.array([cosine for _, _, cosine in rows], dtype=np.float64)
    lo, hi = float(cosines.min()), float(cosines.max())
    scores = 5 * (cosines - lo) / max(hi - lo, 1e-9)
    text = "sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{score:.4f}\n"
                                                      for (a, b, _), score in zip(rows, scores, strict=True))
    counts, score_edges = np.histogram(scores, bins=HISTOGRAM_BINS, range=(0, 5))
    record = {
        "kind": "mined-pairs",
        "kalbert_version": __version__,
        "languages": sorted(by_lang),
        "file": out.name,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "teacher": describe(teacher),
        "training_splits": sorted(training_splits(config.teacher)),
        "config": asdict(config),
        "sample": {"sentences": {lang: len(s) for lang, s in by_lang.items()}, "available": sample.available,
                   "heldout_dropped": heldout_dropped, "same_but_spacing_merged": merged},
        "pairs": {"asked": config.pairs, "found": found,
                  "per_language": {lang: len(picked) for lang, picked in chosen.items()},
                  "from_neighbours": int(sum(c.neighbour[chosen[lang]].sum() for lang, c in candidates.items())),
                  "random": int(sum((~c.neighbour[chosen[lang]]).sum() for lang, c in candidates.items())),
                  "candidates": {lang: len(c.cosine) for lang, c in candidates.items()}},
        "score": {"rule": "5 * (cosine - cosine_at_0) / (cosine_at_5 - cosine_at_0), teacher cosine of the pair",
                  "cosine_at_0": round(lo, 6), "cosine_at_5": round(hi, 6)},
        "score_histogram": {"edges": [round(float(e), 2) for e in score_edges], "counts": counts.tolist()},
        "seconds": round(time.perf_counter() - started, 1),
        "command": invocation() or render_command("kalbert sbert mine", config),
        "hardware": hardware_block(),
    }
    atomic_write_json(record_beside(out), record)  # the record first: a pairs file never lacks its lineage
    atomic_write_text(out, text)
    log.info("mined %d pairs into %s", found, out)
    return MineResult(out, record, config.pairs, found)
