"""Milliseconds per question of `kalbert qa predict` against the usual transformers recipe for extractive QA.

    .venv/bin/python benchmarks/qa_predict_speed.py --model outputs/qa-korquad-albert-ko-zh-transplant-L6E128 \\
        --model outputs/qa-korquad-L4 --questions 100

Each --model is a folder written by `kalbert qa train`. Both ways answer the same KorQuAD test questions
one at a time (batch 1, as a user's `predict` call does) after a warm-up, in interleaved rounds, with the
same window settings (max length, stride, answer length). The usual recipe is the one of the Hugging Face
course (transformers 5 has no question-answering pipeline): overflowing windows from the tokenizer, an
fp32 forward pass, the 20 best starts and ends of each window paired in Python. Writes
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
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.tasks.qa import QAModel
from kalbert.weights import weights_sha256

RESULTS = Path(__file__).parent / "results"
NAME = "qa_predict_speed"


def _kalbert(model: QAModel):
    def answer(question: str, context: str) -> str:
        return model.answer([question], [context])[0].text

    return answer


def _usual(folder: Path, settings):
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForQuestionAnswering.from_pretrained(str(folder)).eval()

    def answer(question: str, context: str) -> str:
        inputs = tokenizer(question, context, truncation="only_second", max_length=settings.max_seq_length,
                           stride=settings.doc_stride, return_overflowing_tokens=True,
                           return_offsets_mapping=True, padding=True, return_tensors="pt")
        offsets = inputs.pop("offset_mapping").tolist()
        inputs.pop("overflow_to_sample_mapping", None)
        with torch.no_grad():
            out = model(**inputs)
        best, text = -float("inf"), ""
        for w in range(len(offsets)):
            sequence = inputs.sequence_ids(w)
            starts, ends = out.start_logits[w], out.end_logits[w]
            for s in torch.argsort(starts, descending=True)[:20].tolist():
                for e in torch.argsort(ends, descending=True)[:20].tolist():
                    if sequence[s] != 1 or sequence[e] != 1 or e < s or e - s + 1 > settings.max_answer_length:
                        continue
                    score = float(starts[s] + ends[e])
                    if score > best:
                        best, text = score, context[offsets[w][s][0] : offsets[w][e][1]]
        return text

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
        qa = QAModel(folder)
        ways = {"kalbert qa predict": _kalbert(qa), "usual transformers recipe": _usual(folder, qa.settings)}
        for answer in ways.values():  # warm-up
            answer(*items[0])
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, answer in ways.items():
                times[name].append(_ms_per_question(answer, items))
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        best = {name: min(values) for name, values in times.items()}
        rows.append({"model": str(folder), "weights_sha256": weights_sha256(folder),
                     "layers": config["num_hidden_layers"], "hidden": config["hidden_size"],
                     "ms_per_question": best, "rounds": times,
                     "speedup": best["usual transformers recipe"] / best["kalbert qa predict"]})
    report = {"command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]), "questions": len(items),
              "threads": args.threads, "rows": rows, "load_average_before": load_before,
              "load_average_after": os.getloadavg(), "torch": torch.__version__, "note": args.note,
              "hardware": hardware_block()}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    table = ["| model | layers | kalbert qa predict (ms/question) | usual transformers recipe (ms/question) | ratio |",
             "|---|---:|---:|---:|---:|"]
    table += [f"| {Path(r['model']).name} | {r['layers']} | {r['ms_per_question']['kalbert qa predict']:.1f} | "
              f"{r['ms_per_question']['usual transformers recipe']:.1f} | {r['speedup']:.2f}x |" for r in rows]
    text = "\n".join([
        "# Extractive QA: answering one question at a time", "", "```", report["command"], "```", "",
        f"{len(items)} KorQuAD test questions (kalbert's held-out part), batch 1, {args.threads} torch threads "
        f"on {describe_cpu(report['hardware'])}, "
        f"best of {args.rounds} interleaved rounds; load average before/after: {load_before[0]:.2f} / "
        f"{report['load_average_after'][0]:.2f}.", "", *table, "",
        f"Conditions: {args.note}", ""])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(text)


if __name__ == "__main__":
    main()
