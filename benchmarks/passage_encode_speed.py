"""CPU passage encoding speed of a kalbert sentence model against its teacher, at 256 and 512 tokens.

    python benchmarks/passage_encode_speed.py models/sbert-ko-zh-retrieval --lengths 256 512 --passages 256

A retrieval model reads passages, not sentences: this times 256-token passages against the teacher's, in one
run on the same backend, and what 512 tokens cost per passage.
Both models here load the same way (SentenceTransformer in PyTorch fp32 on the CPU, torch threads = the
CPUs this process may use); the teacher is multilingual-e5-small as the kit keeps it offline
(:func:`kalbert.teachers.backends.e5_folder`) unless --teacher names another folder.

Passages: the first --passages distinct paragraphs of the KorQuAD 1.0 dev and CMRC 2018 dev files (the
retrieval corpus's reader), alternating Korean and Chinese; with --min-tokens N only those both models read
as N tokens or more (most fill 256, about one in nine fills 512: --min-tokens 512 times full 512-token
passages, at 256 as well). Each model encodes them with ``encode_document`` (its own passage prompt) at each
--lengths max_seq_length, batch --batch-size, in --rounds interleaved rounds, each after a warm-up batch
(the fastest round counts). Per (model, length): passages/s, ms per passage and the tokens each passage is
actually read as (the model's own tokenizer, prompt and special tokens included, after truncation), so the
table shows whether the passages fill the limit. Then kalbert/teacher passages/s at each length, and each
model's ms per passage at each length over its ms at the shortest.

Writes benchmarks/results/passage_encode_speed.{json,md} (or --out PREFIX) with the command, the hardware
block and the load average before and after every timed run (the machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentence_encode_speed import load_average, weight_count

from kalbert.bench.retrieval import squad_paragraphs
from kalbert.data import data_path, get_spec
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.sentence import load_sentence_model
from kalbert.teachers.backends import E5_NAME, e5_folder, role_prompt

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

NAME = "passage_encode_speed"
RESULTS = Path(__file__).parent / "results"
SOURCES = (("ko", "korquad"), ("zh", "cmrc2018"))
"""(language, QA data set) whose dev-file paragraphs are the passages, in interleaving order"""
ROLES = ("kalbert", "teacher")


@dataclass
class Encoder:
    """One model to time: its role in the ratio, where it was loaded from, and the loaded model."""

    role: str
    name: str
    folder: Path
    model: SentenceTransformer


def interleave(groups: list[list[str]], limit: int) -> list[str]:
    """The groups' items alternating (first of each, then second of each...), so any prefix holds every group."""
    mixed = [item for row in zip_longest(*groups) for item in row if item is not None]
    return mixed[:limit]


def qa_paragraphs() -> tuple[list[list[str]], list[str]]:
    """The distinct paragraphs of the KorQuAD and CMRC 2018 dev files in file order, one list per language of
    :data:`SOURCES`; the files as the registry names them."""
    groups, files = [], []
    for _, dataset in SOURCES:
        (path,) = data_path(dataset, "dev")
        groups.append(list(dict.fromkeys(squad_paragraphs(path))))
        files.extend(get_spec(dataset).splits["dev"])
    return groups, files


def pick_passages(groups: list[list[str]], limit: int) -> tuple[list[str], dict[str, int]]:
    """The first ``limit`` paragraphs, alternating languages, and how many of each language that is."""
    passages = interleave(groups, limit)
    chosen = set(passages)
    counts = {lang: sum(text in chosen for text in group) for (lang, _), group in zip(SOURCES, groups, strict=True)}
    return passages, counts


def positions(model: SentenceTransformer) -> int | None:
    """Position embeddings of the model's transformer: the longest max_seq_length it can read."""
    config = getattr(model.transformers_model, "config", None)
    return getattr(config, "max_position_embeddings", None)


def tokens_read(model: SentenceTransformer, passages: list[str], prompt: str) -> list[int]:
    """Tokens of each passage the model reads under ``encode_document`` at its current max_seq_length."""
    features = model.preprocess(passages, prompt=prompt or None, task="document")
    return features["attention_mask"].sum(dim=1).tolist()


def filling(encoders: list[Encoder], texts: list[str], tokens: int) -> list[str]:
    """The texts every model reads as at least ``tokens`` tokens (its passage prompt and special tokens included)."""
    full = [True] * len(texts)
    for encoder in encoders:
        encoder.model.max_seq_length = tokens
        read = tokens_read(encoder.model, texts, role_prompt(encoder.model, "passage"))
        full = [keep and n >= tokens for keep, n in zip(full, read, strict=True)]
    return [text for text, keep in zip(texts, full, strict=True) if keep]


def timed_run(model: SentenceTransformer, passages: list[str], batch_size: int) -> dict[str, float]:
    """Seconds to encode every passage after one warm-up batch, with the load average around the timed part."""
    model.encode_document(passages[:batch_size], batch_size=batch_size, show_progress_bar=False)
    before = load_average()
    started = time.perf_counter()
    model.encode_document(passages, batch_size=batch_size, show_progress_bar=False)
    seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 3), "load_average_before": before, "load_average_after": load_average()}


def measure(encoders: list[Encoder], passages: list[str], lengths: list[int], batch_size: int,
            rounds: int) -> list[dict[str, Any]]:
    """One row per (model, length): tokens read, then the fastest of ``rounds`` interleaved timed runs."""
    rows = {}
    for encoder in encoders:
        prompt, parameters = role_prompt(encoder.model, "passage"), weight_count(encoder.folder)
        for length in lengths:
            encoder.model.max_seq_length = length
            read = tokens_read(encoder.model, passages, prompt)
            rows[encoder.role, length] = {
                "role": encoder.role, "model": encoder.name, "folder": str(encoder.folder),
                "parameters": parameters, "max_seq_length": length, "prompt": prompt,
                "mean_tokens_read": round(sum(read) / len(read), 1),
                "passages_at_limit": sum(n >= length for n in read), "runs": []}
    for _ in range(rounds):
        for length in lengths:
            for encoder in encoders:
                encoder.model.max_seq_length = length
                rows[encoder.role, length]["runs"].append(timed_run(encoder.model, passages, batch_size))
    for row in rows.values():
        best = min(row["runs"], key=lambda run: run["seconds"])
        row["passages_per_second"] = round(len(passages) / best["seconds"], 2)
        row["ms_per_passage"] = round(1000 * best["seconds"] / len(passages), 2)
        row["load_average_before"], row["load_average_after"] = best["load_average_before"], best["load_average_after"]
    return list(rows.values())


def ratios(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """kalbert over teacher passages/s at each length; each model's ms per passage at each length over its
    shortest length's."""
    by = {(row["role"], row["max_seq_length"]): row for row in rows}
    lengths = sorted({row["max_seq_length"] for row in rows})
    speedup = [{"max_seq_length": n, "kalbert_passages_per_second": by["kalbert", n]["passages_per_second"],
                "teacher_passages_per_second": by["teacher", n]["passages_per_second"],
                "kalbert_over_teacher": round(by["kalbert", n]["passages_per_second"]
                                              / by["teacher", n]["passages_per_second"], 2)}
               for n in lengths]
    cost = [{"role": role, "model": by[role, n]["model"], "from": lengths[0], "to": n,
             "ms_per_passage_ratio": round(by[role, n]["ms_per_passage"] / by[role, lengths[0]]["ms_per_passage"], 2)}
            for role in ROLES for n in lengths[1:]]
    return speedup, cost


def markdown(result: dict[str, Any]) -> str:
    languages = ", ".join(f"{count} {lang}" for lang, count in result["languages"].items())
    filled = f", only those both models read as >= {result['min_tokens']} tokens" if result["min_tokens"] else ""
    lines = [
        "# Passage encoding speed on CPU: kalbert against its teacher", "", f"`{result['command']}`", "",
        f"{result['passages']} distinct KorQuAD 1.0 dev + CMRC 2018 dev paragraphs ({languages}, "
        f"interleaved{filled}), each model's passage prompt (`encode_document`), batch {result['batch_size']}, "
        f"PyTorch fp32, {describe_cpu(result.get('hardware'))}, torch threads {result['torch_threads']}; "
        f"{result['rounds']} interleaved timed round(s), each after a warm-up batch, the fastest counting. "
        "Tokens read: each model's own tokenizer, prompt and special tokens included, after truncation; "
        "'at limit' passages fill max_seq_length. "
        f"Load average (1 min) before/after the run: {result['load_average_before']} -> "
        f"{result['load_average_after']}; per row, around its fastest timed run.", "",
        "| model | params | max_seq_length | prompt | mean tokens read | at limit | passages/s | ms/passage "
        "| load avg |",
        "|---|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        lines.append(f"| {row['model']} | {row['parameters'] / 1e6:.1f}M | {row['max_seq_length']} | "
                     f"`{row['prompt']!r}` | {row['mean_tokens_read']:.1f} | "
                     f"{row['passages_at_limit']}/{result['passages']} | {row['passages_per_second']:.1f} | "
                     f"{row['ms_per_passage']:.1f} | {row['load_average_before']} -> {row['load_average_after']} |")
    lines += ["", "| max_seq_length | kalbert passages/s | teacher passages/s | kalbert / teacher |",
              "|---:|---:|---:|---:|"]
    lines += [f"| {r['max_seq_length']} | {r['kalbert_passages_per_second']:.1f} | "
              f"{r['teacher_passages_per_second']:.1f} | {r['kalbert_over_teacher']:.2f}x |"
              for r in result["kalbert_over_teacher"]]
    if result["length_cost"]:
        lines += ["", "| model | ms/passage at longer / at shorter max_seq_length |", "|---|---:|"]
        lines += [f"| {c['model']} | {c['to']} / {c['from']}: {c['ms_per_passage_ratio']:.2f}x |"
                  for c in result["length_cost"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", default="models/sbert-ko-zh-retrieval",
                        help="kalbert sentence-model folder")
    parser.add_argument("--teacher", default=E5_NAME, help=f"{E5_NAME} (the kit's offline copy) or a folder")
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 512], help="max_seq_length values")
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--min-tokens", type=int, default=0,
                        help="keep only paragraphs both models read as at least N tokens (e.g. 512: full passages)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved timed runs per row; the fastest counts")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="default: usable CPUs")
    parser.add_argument("--out", default=str(RESULTS / NAME), help="output prefix (.json and .md)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    lengths = sorted(set(args.lengths))
    groups, files = qa_paragraphs()
    teacher = e5_folder() if args.teacher == E5_NAME else Path(args.teacher)
    encoders = [Encoder(role, name, Path(folder), load_sentence_model(folder, device="cpu"))
                for role, name, folder in (("kalbert", Path(args.model).name, args.model),
                                           ("teacher", Path(args.teacher).name, teacher))]
    for encoder in encoders:
        limit = positions(encoder.model)
        if limit is not None and lengths[-1] > limit:
            parser.error(f"{encoder.name} has {limit} positions, shorter than --lengths {lengths[-1]}")
    if args.min_tokens:
        groups = [filling(encoders, group, args.min_tokens) for group in groups]
    passages, languages = pick_passages(groups, args.passages)
    if not passages:
        parser.error(f"no paragraph fills --min-tokens {args.min_tokens} for both models")
    result: dict[str, Any] = {
        "command": shlex.join(["python", "benchmarks/passage_encode_speed.py", *sys.argv[1:]]),
        "passages": len(passages), "languages": languages, "files": files, "min_tokens": args.min_tokens,
        "batch_size": args.batch_size, "rounds": args.rounds, "precision": "fp32", "backend": "torch",
        "torch_threads": torch.get_num_threads(),
        "hardware": hardware_block(), "load_average_before": load_average(),
    }
    result["rows"] = measure(encoders, passages, lengths, args.batch_size, args.rounds)
    result["kalbert_over_teacher"], result["length_cost"] = ratios(result["rows"])
    result["load_average_after"] = load_average()
    atomic_write_json(f"{args.out}.json", result)
    atomic_write_text(f"{args.out}.md", markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
