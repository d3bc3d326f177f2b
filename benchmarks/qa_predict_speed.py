"""Milliseconds per question of `kalbert qa predict` against the usual transformers question-answering pipeline.

    .venv/bin/python benchmarks/qa_predict_speed.py --model outputs/qa-korquad-albert-ko-zh-transplant-L6E128 \\
        --model outputs/qa-korquad-L4 --questions 100

Each --model is a folder written by `kalbert qa train`. Both ways answer the same KorQuAD test questions
one at a time (batch 1, as a user's `predict` call does) after a warm-up, in interleaved rounds; the
pipeline runs with the same window settings (max length, stride, answer length). Writes
benchmarks/results/qa_predict_speed.{json,md} with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

import torch

from kalbert.data import load_qa
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.tasks.qa import QAModel

RESULTS = Path(__file__).parent / "results"
NAME = "qa_predict_speed"


def _kalbert(model: QAModel):
    def answer(question: str, context: str) -> str:
        return model.answer([question], [context])[0].text

    return answer


def _pipeline(folder: Path):
    from transformers import pipeline

    settings = json.loads((folder / "kalbert.json").read_text(encoding="utf-8"))["settings"]
    qa = pipeline("question-answering", model=str(folder), tokenizer=str(folder), device="cpu")

    def answer(question: str, context: str) -> str:
        return qa(question=question, context=context, max_seq_len=settings["max_length"],
                  doc_stride=settings["doc_stride"], max_answer_len=settings["max_answer_tokens"])["answer"]

    return answer


def _ms_per_question(answer, items: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    for question, context in items:
        answer(question, context)
    return 1000 * (time.perf_counter() - started) / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, action="append", required=True, help="a `kalbert qa train` folder")
    parser.add_argument("--questions", type=int, default=100, help="KorQuAD test questions timed per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    examples = load_qa("korquad", "test")[: args.questions]
    items = [(e.question, e.context) for e in examples]
    load_before = os.getloadavg()
    rows = []
    for folder in args.model:
        ways = {"kalbert qa predict": _kalbert(QAModel(folder)), "transformers pipeline": _pipeline(folder)}
        for answer in ways.values():  # warm-up
            answer(*items[0])
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, answer in ways.items():
                times[name].append(_ms_per_question(answer, items))
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        best = {name: min(values) for name, values in times.items()}
        rows.append({"model": str(folder), "layers": config["num_hidden_layers"], "hidden": config["hidden_size"],
                     "ms_per_question": best, "rounds": times,
                     "speedup": best["transformers pipeline"] / best["kalbert qa predict"]})
    report = {"command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]), "questions": len(items),
              "threads": args.threads, "rows": rows, "load_average_before": load_before,
              "load_average_after": os.getloadavg(), "torch": torch.__version__, "note": args.note}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    table = ["| model | layers | kalbert qa predict (ms/question) | transformers pipeline (ms/question) | ratio |",
             "|---|---:|---:|---:|---:|"]
    table += [f"| {Path(r['model']).name} | {r['layers']} | {r['ms_per_question']['kalbert qa predict']:.1f} | "
              f"{r['ms_per_question']['transformers pipeline']:.1f} | {r['speedup']:.2f}x |" for r in rows]
    text = "\n".join([
        "# Extractive QA: answering one question at a time", "", "```", report["command"], "```", "",
        f"{len(items)} KorQuAD test questions (kalbert's held-out part), batch 1, {args.threads} torch threads, "
        f"best of {args.rounds} interleaved rounds; load average before/after: {load_before[0]:.2f} / "
        f"{report['load_average_after'][0]:.2f}.", "", *table, "",
        f"Conditions: {args.note}", ""])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(text)


if __name__ == "__main__":
    main()
