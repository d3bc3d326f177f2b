"""The README's main job: the kalbert pipeline at small scale on the default data.

Each stage writes its own folder under ``out`` and is skipped when that folder is already
complete, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

from pathlib import Path

from kalbert.vocab import VocabBuildConfig, build_vocab
from kalbert.vocab.inspect import inspect_vocab

DEMO_SENTENCES = ["배우들의 연기도 좋았고 영화가 정말 재미있었다.", "대한민국의 수도는 서울특별시이다."]


def _stage(name: str, folder: Path) -> bool:
    """True when the stage still has to run; prints what happens either way."""
    if (folder / "kalbert.json").exists():
        print(f"[{name}] already done: {folder}")
        return False
    print(f"[{name}] -> {folder}")
    return True


def run_demo(out: str | Path = "outputs/demo", vocab_size: int = 8000, max_sentences: int = 200_000) -> dict[str, Path]:
    """Run every stage; returns the artifact folders by stage name."""
    out = Path(out)
    artifacts = {"vocab": out / "vocab-ko"}
    if _stage("vocab", artifacts["vocab"]):
        build_vocab(
            VocabBuildConfig(
                lang="ko",
                inputs=["kowiki", "nsmc"],
                out=str(artifacts["vocab"]),
                vocab_size=vocab_size,
                max_sentences=max_sentences,
            ),
            overwrite=True,
        )
    report = inspect_vocab(str(artifacts["vocab"]), DEMO_SENTENCES, ["korsts:dev"])
    for item in report["texts"]:
        print(f"  {item['text']}\n    -> {' '.join(item['pieces'])}")
    stats = report["eval"]["korsts:dev"]
    print(
        f"  KorSTS dev sentences: UNK {100 * stats['unk_rate']:.3f}%, {stats['pieces_per_word']:.2f} pieces/word, "
        f"boundary crossing {100 * stats['boundary_crossing']:.2f}%"
    )
    print("\nartifacts:")
    for stage, folder in artifacts.items():
        print(f"  {stage:<8} {folder}")
    return artifacts
