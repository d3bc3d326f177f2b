"""Milliseconds to rerank one query's top K on a small CPU, per backend and depth, beside what it buys on val.

    .venv/bin/python benchmarks/rerank_latency.py --model models/rerank-ko-zh-small --depths 10 20 30 \\
        --qa-model models/qa-ko-zh-small

For each validation question of KorQuAD and CMRC 2018 (``korquad:val``, ``cmrc2018:val``: a seeded sample of
``--queries`` each, never a test question), BM25 ranks the val and train articles' paragraphs and the reranker
scores the top K, one query at a time as a search does (all K pairs in one call). Per backend: PyTorch fp32,
PyTorch bf16 where the CPU has native bf16, and the ONNX fp32 and int8 files (exported into a temporary copy with
`kalbert rerank export --onnx --int8` when the folder has none and the ONNX packages are installed); ``--backends``
picks some. Each query is timed alone after a warm-up; p50/p95 are over the questions of both sets. The same
reranked lists give nDCG@10 and MRR@10, so a faster backend or a shallower depth shows what it costs.
``--windows-per-passage 1 all`` times each backend reading the best-matching window of a long passage and reading
every window, in the same run, and ``--window-tokens 128 256`` reading it in pairs of 128 and of 256 tokens
(default: the folder's own reading).
``--qa-model`` also times the zero-shot baseline (the QA model's best answer-span probability as relevance).
Writes ``rerank_latency.{json,md}`` to ``--out-dir`` (benchmarks/results), with the CPU, the torch threads and the
load average before and after.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import os
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from kalbert.hardware import describe_cpu, hardware_block, native_bf16
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.ranking import ranking_metrics
from kalbert.rerank.candidates import rerank
from kalbert.rerank.evaluate import load_eval_set
from kalbert.rerank.model import QASpanScorer, load_reranker, window_stride
from kalbert.weights import weights_sha256

NAME = "rerank_latency"
SETS = ("korquad:val", "cmrc2018:val")
WARM_UP = 3


def _onnx_folder(model: Path, scratch: Path) -> Path | None:
    """``model`` when it has both ONNX files, else a temporary exported copy; None without the ONNX packages."""
    from kalbert.artifact import read_meta
    from kalbert.errors import KalbertError
    from kalbert.rerank.export import export_reranker

    files = (read_meta(model).get("onnx") or {}).get("files") or {}
    if {"fp32", "int8"} <= set(files):
        return model
    try:
        export_reranker(model, scratch / "onnx-copy", onnx=True, int8=True)
    except KalbertError as exc:
        print(f"no ONNX rows: {exc}", file=sys.stderr)
        return None
    return scratch / "onnx-copy"


BACKENDS = ("torch fp32", "torch bf16", "onnx fp32", "onnx int8")


def _scorers(model: Path, qa_model: Path | None, scratch: Path,
             backends: list[str]) -> dict[str, tuple[object, Path]]:
    """Each backend's scorer and the folder whose weights it runs (an ONNX copy runs the model's)."""
    scorers: dict[str, tuple[object, Path]] = {}
    if "torch fp32" in backends:
        scorers["torch fp32"] = (load_reranker(model, "torch", "fp32"), model)
    if "torch bf16" in backends and native_bf16("cpu"):
        scorers["torch bf16"] = (load_reranker(model, "torch", "bf16"), model)
    onnx = _onnx_folder(model, scratch) if {"onnx fp32", "onnx int8"} & set(backends) else None
    if onnx is not None:
        for backend, name in (("onnx fp32", "onnx"), ("onnx int8", "onnx-int8")):
            if backend in backends:
                scorers[backend] = (load_reranker(onnx, name), model)
    if qa_model is not None:
        scorers["QA best span (zero-shot)"] = (QASpanScorer(qa_model, precision="fp32"), qa_model)
    return scorers


def _reading(scorer, windows: str | None, tokens: int | None):
    """``scorer`` reading ``windows`` windows per long passage ("all": every one) in pairs of ``tokens`` tokens
    overlapping by a quarter (None: as its folder says)."""
    if not hasattr(scorer, "windows_per_passage"):
        return scorer
    scorer = copy.copy(scorer)
    if windows is not None:
        scorer.windows_per_passage = None if windows == "all" else int(windows)
    if tokens is not None:
        scorer.max_length, scorer.stride = tokens, window_stride(tokens)
    return scorer


def _reading_label(backend: str, reader, windows: str | None, tokens: int | None) -> str:
    """The backend, and the reading where the command varies it."""
    parts = [backend]
    if tokens is not None:
        parts.append(f"{tokens}-token pairs")
    if windows is not None:
        per_passage = reader.windows_per_passage
        parts.append("every window" if per_passage is None
                     else f"{per_passage} window{'s' if per_passage > 1 else ''} a passage")
    return ", ".join(parts)


def _windows_arg(text: str) -> str:
    if text != "all" and not (text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expected a positive integer or all, got {text}")
    return text


def _measure(scorer, sets, depth: int) -> dict[str, object]:
    for evaluation in sets:  # warm-up: first calls build kernels and caches
        rerank(evaluation.ranking[:WARM_UP], evaluation.corpus, evaluation.queries[:WARM_UP], scorer, depth)
    seconds, quality = [], {}
    for evaluation in sets:
        result = rerank(evaluation.ranking, evaluation.corpus, evaluation.queries, scorer, depth)
        seconds.append(result.seconds)
        scores = ranking_metrics(result.ranking, evaluation.gold)
        quality[evaluation.ref] = {"ndcg_at_10": round(scores["ndcg_at_10"], 2),
                                   "mrr_at_10": round(scores["mrr_at_10"], 2)}
    ms = 1000 * np.concatenate(seconds)
    return {"p50_ms": round(float(np.percentile(ms, 50)), 1), "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "mean_ms": round(float(ms.mean()), 1), "queries": len(ms), "quality": quality}


def _quality_cells(quality: dict[str, dict[str, float]]) -> str:
    return " | ".join(f"{quality[ref]['ndcg_at_10']:.2f} / {quality[ref]['mrr_at_10']:.2f}" for ref in SETS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="a reranker folder (`kalbert rerank train`)")
    parser.add_argument("--depths", type=int, nargs="+", default=[20], help="candidates reranked per query")
    parser.add_argument("--queries", type=int, default=200, help="val questions timed per set")
    parser.add_argument("--qa-model", type=Path, help="also time the QA model's best span as the zero-shot baseline")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS), metavar="BACKEND",
                        help=f"which to time: {', '.join(repr(b) for b in BACKENDS)} (default: all; torch bf16 only "
                             "where the CPU has native bf16)")
    parser.add_argument("--windows-per-passage", type=_windows_arg, nargs="+", metavar="K",
                        help="windows of a long passage read, each timed: a number, or all (default: the folder's)")
    parser.add_argument("--window-tokens", type=int, nargs="+", metavar="N",
                        help="pair lengths a long passage is read in (windows overlapping by a quarter), each timed "
                             "(default: the folder's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42, help="picks the question sample")
    parser.add_argument("--quick", action="store_true", help="8 questions per set: a check that it runs")
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    queries = 8 if args.quick else args.queries
    sets = [load_eval_set(ref, "bm25", max(args.depths), queries, args.seed) for ref in SETS]
    readings = list(itertools.product(args.windows_per_passage or [None], args.window_tokens or [None]))
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        scorers = _scorers(args.model, args.qa_model, Path(scratch), args.backends)
        for depth in args.depths:
            for (backend, (scorer, folder)), (windows, tokens) in itertools.product(scorers.items(), readings):
                reader = _reading(scorer, windows, tokens)
                label = _reading_label(backend, reader, windows, tokens)
                rows.append({"backend": label, "model": folder.as_posix(), "weights_sha256": weights_sha256(folder),
                             "depth": depth, "windows_per_passage": getattr(reader, "windows_per_passage", None),
                             "window_tokens": getattr(reader, "max_length", None), **_measure(reader, sets, depth)})
                print(f"depth {depth:3d}  {label:40s} p50 {rows[-1]['p50_ms']:7.1f} ms  p95 "
                      f"{rows[-1]['p95_ms']:7.1f} ms", file=sys.stderr)
    first = {e.ref: {k: round(v, 2) for k, v in e.first_stage_scores().items() if k in ("ndcg_at_10", "mrr_at_10")}
             for e in sets}
    report = {"command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]), "model": str(args.model),
              "sets": {e.ref: {"questions": len(e.queries), "of": e.questions, "passages": len(e.corpus)}
                       for e in sets},
              "first_stage": {"name": "BM25", "scores": first}, "threads": args.threads, "rows": rows,
              "load_average_before": load_before, "load_average_after": os.getloadavg(), "torch": torch.__version__,
              "note": args.note, "hardware": hardware_block()}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out_dir / f"{NAME}.json", report)
    header = " | ".join(f"{ref} nDCG@10 / MRR@10" for ref in SETS)
    table = [f"| backend | depth | p50 ms | p95 ms | {header} |", "|---|---:|---:|---:|" + "---|" * len(SETS),
             f"| BM25 alone | | | | {_quality_cells(first)} |"]
    table += [f"| {row['backend']} | {row['depth']} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | "
              f"{_quality_cells(row['quality'])} |" for row in rows]
    sample = ", ".join(f"{queries} of {s['of']} {ref} questions" for ref, s in report["sets"].items())
    text = "\n".join([
        "# Reranking latency per query", "", "```", report["command"], "```", "",
        f"`{args.model}` reranking the BM25 top K of {sample} (val articles, never test), one query per call, "
        f"{args.threads} torch threads on {describe_cpu(report['hardware'])}; load average before/after "
        f"{load_before[0]:.2f} / {report['load_average_after'][0]:.2f}. No gold passage is added to the candidates.",
        "", *table, "", f"Conditions: {args.note}" if args.note else "", ""])
    atomic_write_text(args.out_dir / f"{NAME}.md", text)
    print(text)


if __name__ == "__main__":
    main()
