"""Encoding throughput of sentence models on the same 10k KorSTS sentences, in one process.

Each model encodes the same sentences (distinct KorSTS train/dev/test sentences, first --sentences)
once after a short warm-up, through kalbert's encode (batched by length); the table puts each
model's recorded KorSTS Spearman (from its kalbert.json) next to its speed.

    python benchmarks/sentence_encode_speed.py outputs/sbert-ko-tiny outputs/sbert-ko-small all-MiniLM-L6-v2

Writes benchmarks/results/sentence_encode_speed.{json,md} (or --out PREFIX).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from kalbert.datasets import load_sts
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.sentence import encode, load_sentence_model
from kalbert.sentence.card import read_meta
from kalbert.sentence.distill import BUNDLED_TEACHERS, resolve_teacher


def korsts_sentences(limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for split in ("train", "dev", "test"):
        for pair in load_sts("korsts", split):
            seen.setdefault(pair.sentence1)
            seen.setdefault(pair.sentence2)
    return list(seen)[:limit]


def recorded_scores(folder: Path) -> dict[str, float]:
    """Last recorded Spearman per KorSTS split in the model's kalbert.json."""
    return {m["data"]: round(m["value"], 4) for m in read_meta(folder).get("metrics", [])
            if m["data"].startswith("korsts") and m["metric"] == "spearman_cosine"}


def measure(name: str, sentences: list[str], batch_size: int) -> dict:
    folder = resolve_teacher(name) if name in BUNDLED_TEACHERS else Path(name)
    model = load_sentence_model(folder, device="cpu")
    encode(model, sentences[: batch_size * 2], batch_size=batch_size)  # warm-up
    started = time.perf_counter()
    vectors = encode(model, sentences, batch_size=batch_size)
    seconds = time.perf_counter() - started
    return {"model": name, "parameters": sum(p.numel() for p in model.parameters()), "dim": vectors.shape[1],
            "max_seq_length": model.max_seq_length, "seconds": round(seconds, 2),
            "sentences_per_second": round(len(sentences) / seconds, 1), "korsts": recorded_scores(folder)}


def markdown(result: dict) -> str:
    lines = ["# Sentence encoding throughput", "",
             f"`{result['command']}`", "",
             f"{result['sentences']} distinct KorSTS sentences, batch {result['batch_size']}, "
             f"{result['machine']}, torch threads {result['torch_threads']}, one run each after a warm-up "
             f"(load average before: {result['load_average_before'][0]}; the machine is shared).", "",
             "| model | params | dim | sentences/s | seconds | KorSTS (recorded) |", "|---|---|---|---|---|---|"]
    for row in result["models"]:
        scores = ", ".join(f"{k} {v:.4f}" for k, v in row["korsts"].items()) or "-"
        lines.append(f"| {row['model']} | {row['parameters'] / 1e6:.1f}M | {row['dim']} | "
                     f"{row['sentences_per_second']:.0f} | {row['seconds']} | {scores} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", help="sentence-model folders, ALBERT checkpoints or all-MiniLM-L6-v2")
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", default="benchmarks/results/sentence_encode_speed")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    sentences = korsts_sentences(args.sentences)
    result = {
        "command": "python benchmarks/sentence_encode_speed.py " + " ".join(args.models),
        "sentences": len(sentences), "batch_size": args.batch_size,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "torch_threads": torch.get_num_threads(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "models": [measure(name, sentences, args.batch_size) for name in args.models],
    }
    atomic_write_json(f"{args.out}.json", result)
    atomic_write_text(f"{args.out}.md", markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
