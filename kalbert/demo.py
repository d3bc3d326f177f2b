"""The README's main job: the whole kalbert pipeline at small scale on the default data.

vocab -> pretraining data -> tiny ALBERT pretraining -> sentence model (KorSTS train, picked on
KorSTS dev) -> KorSTS test Spearman -> a similarity search. Each stage writes its own folder under
``out`` and is skipped when that folder is complete, so an interrupted run resumes where it
stopped; the pretraining stage itself resumes from its last checkpoint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kalbert.datasets import load_sts


@dataclass
class DemoConfig:
    """Sizes of the small-scale run (about 15 minutes on 2 CPU cores)."""

    out: str = "outputs/demo"
    vocab_size: int = 8000
    vocab_sentences: int = 100_000
    """sentences of kowiki sampled for the vocabulary"""
    documents: int = 4000
    """kowiki documents turned into SOP pretraining instances"""
    pretrain_steps: int = 400
    batch_size: int = 32
    max_seq_length: int = 128
    sts_epochs: float = 3.0
    sts_lr: float = 2e-4
    """a tiny model needs a larger learning rate than sentence-transformers' default"""


def _done(folder: Path) -> bool:
    return (folder / "kalbert.json").exists()


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
    where = f"at rank {found[0]}" if found else "not in the top 10 (a longer pretraining run helps)"
    print(f"  the gold paraphrase ({pair.sentence2}) is {where}")


def run_demo(config: DemoConfig | None = None) -> dict[str, Path]:
    """Run every stage; returns the artifact folders by stage name."""
    from kalbert.pretrain import DataBuildConfig, PretrainConfig, build_pretraining_data, pretrain
    from kalbert.pretrain.presets import ModelConfig
    from kalbert.sentence import SearchBuildConfig, STSConfig, build_index, train_sts
    from kalbert.sentence.loop import LoopConfig
    from kalbert.vocab import VocabBuildConfig, build_vocab

    config = config or DemoConfig()
    out = Path(config.out)
    paths = {
        "vocab": out / "vocab-ko-8k",
        "data": out / "data-kowiki",
        "pretrain": out / "pretrain-tiny-ko" / "model",
        "sentence": out / "sbert-tiny-ko",
        "search": out / "search-korsts",
    }
    if _announce("vocab", paths["vocab"]):
        build_vocab(
            VocabBuildConfig(lang="ko", inputs=["kowiki"], out=str(paths["vocab"]), vocab_size=config.vocab_size,
                             max_sentences=config.vocab_sentences),
            overwrite=True,
        )
    if _announce("data", paths["data"]):
        build_pretraining_data(
            DataBuildConfig(vocab=str(paths["vocab"]), inputs=["kowiki"], out=str(paths["data"]),
                            max_seq_length=config.max_seq_length, max_documents=config.documents),
            overwrite=True,
        )
    run = paths["pretrain"].parent
    if _announce("pretrain", paths["pretrain"]):
        pretrain(
            PretrainConfig(data=str(paths["data"]), out=str(run), model=ModelConfig(preset="tiny"),
                           steps=config.pretrain_steps, batch_size=config.batch_size, lr=2e-3,
                           eval_every=100, save_every=50, resume=(run / "kalbert.json").exists()),
        )
    if _announce("sentence", paths["sentence"]):
        result = train_sts(
            STSConfig(model=str(paths["pretrain"]), out=str(paths["sentence"]), train=["korsts:train"],
                      eval="korsts:dev", test=["korsts:test"], max_seq_length=64,
                      loop=LoopConfig(epochs=config.sts_epochs, lr=config.sts_lr)),
            overwrite=True,
        )
        test = result.test["korsts:test"]
    else:
        meta = json.loads((paths["sentence"] / "kalbert.json").read_text(encoding="utf-8"))
        test = next(m["value"] for m in meta["metrics"] if m["data"] == "korsts:test")
    if _announce("search", paths["search"]):
        build_index(SearchBuildConfig(model=str(paths["sentence"]), corpus="korsts:test", out=str(paths["search"])))
    print(f"\nKorSTS test Spearman (cosine) of {paths['sentence']}: {100 * test:.2f}")
    print("similarity search over the KorSTS test sentences:")
    _search_example(paths["search"])
    print("\nartifacts:")
    for stage, folder in paths.items():
        print(f"  {stage:<9} {folder}")
    return paths
