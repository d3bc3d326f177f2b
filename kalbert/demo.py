"""The README's main job: the whole kalbert pipeline at small scale on the default data.

vocab (morph-aware, kowiki) -> transplant (multilingual-e5-small's layers re-seated as an ALBERT on
that vocabulary) -> corpus distillation from the same teacher (kowiki + NSMC sentences) -> STS training
(KorSTS train, picked on KorSTS dev) -> KorSTS test Spearman -> a similarity search. Each stage writes
its own folder under ``out`` and is skipped when that folder is complete, so an interrupted run resumes
where it stopped; the teacher's embeddings are cached shard by shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kalbert.artifact import Kind, meta_path, read_meta
from kalbert.data import load_sts


@dataclass
class DemoConfig:
    """Sizes of the small-scale run (about 15 minutes on 2 CPU cores)."""

    out: str = "outputs/demo"
    """folder for every artifact"""
    vocab_size: int = 8000
    """pieces of the Korean vocabulary"""
    vocab_sentences: int = 100_000
    """sentences of kowiki sampled for the vocabulary"""
    teacher: str = "multilingual-e5-small"
    """the teacher whose layers seed the student and whose embeddings it learns"""
    layers: int = 4
    """teacher layers kept in the student"""
    embedding_size: int = 128
    """E of the student"""
    corpus_sentences: int = 12_000
    """kowiki + NSMC sentences the student learns the teacher's embeddings of"""
    sts_epochs: float = 2.0
    """epochs of STS training"""
    lr: float = 1e-4
    """peak learning rate of STS training"""
    seed: int = 13
    """seed of the vocabulary sample, distillation and STS training (13: the README's measured run)"""


def _done(folder: Path) -> bool:
    return meta_path(folder).exists()


def _announce(stage: str, folder: Path) -> bool:
    """True when the stage still has to run."""
    if _done(folder):
        print(f"[{stage}] already done: {folder}")
        return False
    print(f"[{stage}] -> {folder}", flush=True)
    return True


def _search_example(index: Path) -> None:
    """Query the index with a KorSTS test sentence and look for its gold paraphrase (score 5)."""
    from kalbert.sentence import search_index

    pair = next(p for p in load_sts("korsts", "test") if p.score >= 5.0 and p.sentence1 != p.sentence2)
    hits = [hit for hit in search_index(index, [pair.sentence1], k=11).hits[0] if hit.sentence != pair.sentence1]
    print(f"  query: {pair.sentence1}")
    for rank, hit in enumerate(hits[:5], start=1):
        mark = "  <- its paraphrase in KorSTS" if hit.sentence == pair.sentence2 else ""
        print(f"    {rank}. {hit.score:.3f}  {hit.sentence}{mark}")
    found = [rank for rank, hit in enumerate(hits, start=1) if hit.sentence == pair.sentence2]
    where = f"at rank {found[0]}" if found else "not in the top 10 (more --corpus-sentences help)"
    print(f"  the gold paraphrase ({pair.sentence2}) is {where}")


def run_demo(config: DemoConfig | None = None) -> dict[str, Path]:
    """Run every stage; returns the artifact folders by stage name."""
    from kalbert.sentence import DistillConfig, SearchBuildConfig, STSConfig, build_index, distill_student, train_sts
    from kalbert.sentence.loop import LoopConfig
    from kalbert.transplant import TransplantConfig, transplant
    from kalbert.vocab import VocabBuildConfig, build_vocab

    config = config or DemoConfig()
    out = Path(config.out)
    paths = {
        "vocab": out / "vocab-ko-8k",
        "transplant": out / "albert-ko-transplant",
        "distill": out / "sbert-ko-distilled",
        "sentence": out / "sbert-ko",
        "search": out / "search-korsts",
    }
    if _announce("vocab", paths["vocab"]):
        build_vocab(
            VocabBuildConfig(lang="ko", inputs=["kowiki"], out=str(paths["vocab"]), vocab_size=config.vocab_size,
                             max_sentences=config.vocab_sentences, seed=config.seed),
            overwrite=True,
        )
    if _announce("transplant", paths["transplant"]):
        transplant(TransplantConfig(teacher=config.teacher, vocab=str(paths["vocab"]), out=str(paths["transplant"]),
                                    layers=config.layers, embedding_size=config.embedding_size), overwrite=True)
    if _announce("distill", paths["distill"]):
        distill_student(
            DistillConfig(student=str(paths["transplant"]), out=str(paths["distill"]), teacher=config.teacher,
                          corpus=["kowiki", "nsmc"], max_sentences=config.corpus_sentences, loss="infonce",
                          max_seq_length=64, loop=LoopConfig(epochs=1, lr=2e-4, batch_size=64, seed=config.seed)),
            overwrite=True,
        )
    if _announce("sentence", paths["sentence"]):
        result = train_sts(
            STSConfig(model=str(paths["distill"]), out=str(paths["sentence"]), train=["korsts:train"],
                      eval="korsts:dev", test=["korsts:test"], max_seq_length=64,
                      loop=LoopConfig(epochs=config.sts_epochs, lr=config.lr, seed=config.seed)),
            overwrite=True,
        )
        test = result.test["korsts:test"]
    else:
        meta = read_meta(paths["sentence"], expect=Kind.SENTENCE_MODEL)
        test = next(m["value"] for m in meta["metrics"] if m["data"] == "korsts:test")
    if _announce("search", paths["search"]):
        build_index(SearchBuildConfig(model=str(paths["sentence"]), corpus="korsts:test", out=str(paths["search"])))
    print(f"\nKorSTS test Spearman (cosine) of {paths['sentence']}: {100 * test:.2f}")
    print("similarity search over the KorSTS test sentences:")
    _search_example(paths["search"])
    print("\nartifacts:")
    for stage, folder in paths.items():
        print(f"  {stage:<10} {folder}")
    return paths
