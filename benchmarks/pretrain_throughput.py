"""Pretraining throughput: the usual HF recipe against `kalbert pretrain`, same model, same batches, one process.

    .venv/bin/python benchmarks/pretrain_throughput.py --data outputs/data-ko-zh-split-s12345
    # a quick check that it runs (numbers meaningless; results elsewhere):
    .venv/bin/python benchmarks/pretrain_throughput.py --data outputs/data-ko-zh --presets tiny --warmup 1 \\
        --steps 1 --rounds 1 --profile-steps 1 --results outputs/tp-bench

Recipes, each on the same instances of the same global batches, for every preset asked for:

usual_fp32            ``AlbertForPreTraining`` with full-vocabulary MLM labels (the head runs at every
                      position), ``DataCollatorForLanguageModeling`` (15%, 80/10/10), ``torch.optim.AdamW``.
kalbert_{fp32,bf16}_padded
                      ``Trainer.train_step`` with one instance per padded row (``pack=False``), as kalbert
                      trained before packing: MLM head at masked positions only, n-gram masking, LAMB.
kalbert_{fp32,bf16}   the same with short instances packed into shared rows, with SDPA attention.
kalbert_bf16_eager    packed bf16 with HF's eager attention (matmul, softmax, matmul: ``attention="eager"``)
                      in place of PyTorch's fused SDPA kernel, whose CPU backward is slow at small head sizes:
                      what ``kalbert pretrain`` runs by default on a CPU with native bf16.
kalbert_bf16_compiled, kalbert_bf16_eager_compiled
                      kalbert_bf16 and kalbert_bf16_eager under ``torch.compile`` (``compile=True``). They compile
                      in their warmup steps (at least one); the seconds that took, dynamo's own account of
                      forward and backward compilation, are reported apart, and so is any compilation that
                      falls in the timed steps.

Tokens/s and tokens per CPU-second count real (non-padding) tokens; the padding share is the part of
the computed positions that is padding. Model FLOP utilisation (MFU) divides each recipe's own matmul
FLOPs (3x forward, over padded positions) by a peak measured here with a large matmul. On a shared
machine, tokens per CPU-second compare the recipes more fairly than wall time; the recipes are timed
in interleaved rounds so that other load falls on all of them alike. A torch.profiler pass over a few
bf16 steps then splits the step's time into matmuls, attention (SDPA, or eager attention's softmax; its
matmuls count as matmuls), inductor's fused kernels (compiled recipes) and everything else, per op.
Results go to ``--results``/pretrain_throughput.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import AlbertForPreTraining, AutoTokenizer, DataCollatorForLanguageModeling

from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.config import PretrainConfig
from kalbert.pretrain.distributed import setup_distributed
from kalbert.pretrain.presets import ModelConfig, describe
from kalbert.pretrain.trainer import Trainer

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_throughput"
MATMUL_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
KALBERT_RECIPES = {  # name: (bf16, pack, attention, compile)
    "kalbert_fp32_padded": (False, False, "sdpa", False), "kalbert_fp32": (False, True, "sdpa", False),
    "kalbert_bf16_padded": (True, False, "sdpa", False), "kalbert_bf16": (True, True, "sdpa", False),
    "kalbert_bf16_eager": (True, True, "eager", False), "kalbert_bf16_compiled": (True, True, "sdpa", True),
    "kalbert_bf16_eager_compiled": (True, True, "eager", True),
}
COMPILED_OP = "inductor's fused kernels (all compiled graphs)"
PROFILED = ("kalbert_bf16_padded", "kalbert_bf16", "kalbert_bf16_eager", "kalbert_bf16_compiled",
            "kalbert_bf16_eager_compiled")


def matmul_peak(dtype: torch.dtype, size: int = 2048, repeats: int = 10) -> float:
    """Best GFLOP/s of a size^3 matmul over ``repeats`` tries (the machine's practical peak)."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def compile_seconds() -> float:
    """Seconds torch.compile has spent so far in this process (dynamo's account: frames and their backward)."""
    return torch._dynamo.utils.calculate_time_spent().get("total_wall_time", 0.0)


def forward_flops(config, rows: int, width: int, head_positions: int) -> float:
    """Matmul FLOPs of one forward pass: encoder over ``rows`` x ``width``, MLM head over ``head_positions``."""
    tokens = rows * width
    e, h, f, v, layers = (config.embedding_size, config.hidden_size, config.intermediate_size, config.vocab_size,
                          config.num_hidden_layers)
    encoder = tokens * (2 * e * h + layers * (8 * h * h + 4 * h * f + 4 * width * h))
    return encoder + head_positions * (2 * h * e + 2 * e * v) + rows * 2 * h * h


class Totals:
    """Wall seconds, process CPU seconds, FLOPs, real tokens and computed positions over the timed steps."""

    def __init__(self) -> None:
        self.seconds = self.cpu = self.flops = 0.0
        self.tokens = self.positions = self.steps = 0

    def add(self, seconds: float, cpu: float, flops: float, tokens: int, positions: int) -> None:
        self.seconds += seconds
        self.cpu += cpu
        self.flops += flops
        self.tokens += tokens
        self.positions += positions
        self.steps += 1

    def row(self, peak_gflops: float) -> dict[str, float]:
        gflops = self.flops / self.seconds / 1e9
        return {"tokens_per_s": self.tokens / self.seconds, "tokens_per_cpu_s": self.tokens / self.cpu,
                "padding_share": 1 - self.tokens / self.positions, "seconds_per_step": self.seconds / self.steps,
                "gflops_per_s": gflops, "mfu": gflops / peak_gflops}


class UsualRecipe:
    """The usual recipe on the trainer's batches: full-vocabulary MLM labels, HF masking, torch AdamW."""

    def __init__(self, trainer: Trainer) -> None:
        torch.manual_seed(0)
        self.trainer = trainer
        self.model = AlbertForPreTraining(trainer.model.config).train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.collator = DataCollatorForLanguageModeling(AutoTokenizer.from_pretrained(str(trainer.data.vocab_dir)),
                                                        mlm_probability=0.15)

    def __call__(self, step: int, totals: Totals) -> None:
        examples = [self.trainer.train_set[int(i)] for i in self.trainer.batches.indices(step)]
        start, start_cpu = time.perf_counter(), time.process_time()
        features = [{"input_ids": e.ids.tolist(), "token_type_ids": [0] * (e.length_a + 2)
                     + [1] * (len(e.ids) - e.length_a - 2)} for e in examples]
        batch = self.collator(features)
        out = self.model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                         attention_mask=batch["attention_mask"], labels=batch["labels"],
                         sentence_order_label=torch.tensor([e.label for e in examples]))
        out.loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        rows, width = batch["input_ids"].shape
        flops = 3 * forward_flops(self.model.config, rows, width, rows * width)
        totals.add(seconds, cpu, flops, int(batch["attention_mask"].sum()), rows * width)


class KalbertRecipe:
    """``Trainer.train_step`` at a given step."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    def __call__(self, step: int, totals: Totals) -> None:
        trainer = self.trainer
        trainer.step = step - 1
        start, start_cpu = time.perf_counter(), time.process_time()
        sums, _, _ = trainer.train_step(lambda: False)
        seconds, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        batch = trainer._batch("train", trainer.batches.indices(step), (0, 0, 0))  # its row layout
        rows, width = batch.inputs["input_ids"].shape
        flops = 3 * forward_flops(trainer.model.config, rows, width, int(sums["masked"]))
        totals.add(seconds, cpu, flops, int(sums["tokens"]), int(sums["positions"]))


def make_trainer(data: str, preset: str, bf16: bool, pack: bool, attention: str, compiled: bool, batch_size: int,
                 out: Path) -> Trainer:
    config = PretrainConfig(data=data, out=str(out), model=ModelConfig(preset=preset), batch_size=batch_size,
                            max_steps=100_000, precision="bf16" if bf16 else "fp32", pack=pack, attention=attention,
                            compile=compiled, tensorboard=False)
    return Trainer(config, setup_distributed(), overwrite=True)


def profile_steps(trainer: Trainer, steps: range, top: int) -> dict:
    """Self CPU time of the ops over ``steps``: shares of matmul / attention / compiled / other, and the ``top`` ops.

    Under torch.compile, the fused kernels of each compiled graph show as one record (its self time); they are
    summed into one op, the "compiled" group (whatever they fused: softmax, GELU, LayerNorm, ...).
    """
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for step in steps:
            trainer.step = step - 1
            trainer.train_step(lambda: False)
    merged: dict[str, list[float]] = {}
    for event in prof.key_averages():
        name = COMPILED_OP if event.key.startswith("## Call CompiledFxGraph") else event.key
        seconds_count = merged.setdefault(name, [0.0, 0])
        seconds_count[0] += event.self_cpu_time_total / 1e6
        seconds_count[1] += event.count
    ops = sorted(((name, seconds, count) for name, (seconds, count) in merged.items()), key=lambda o: -o[1])
    total = sum(seconds for _, seconds, _ in ops)

    def group(name: str) -> str:
        if name in MATMUL_OPS:
            return "matmul"
        if name == COMPILED_OP:
            return "compiled"
        softmax = "softmax" in name and "log_softmax" not in name  # eager attention's (log_softmax: the MLM loss's)
        return "attention" if "scaled_dot_product" in name or "flash_attention" in name or softmax else "other"

    groups = ("matmul", "attention", "compiled", "other") if COMPILED_OP in merged else ("matmul", "attention", "other")
    shares = {g: sum(s for name, s, _ in ops if group(name) == g) / total for g in groups}
    return {"seconds_per_step": total / len(steps), "shares": shares,
            "top_ops": [{"op": name, "group": group(name), "seconds_per_step": s / len(steps), "share": s / total,
                         "calls_per_step": count / len(steps)} for name, s, count in ops[:top]]}


def bench_preset(args: argparse.Namespace, preset: str, peaks: dict[str, float], tmp: Path) -> dict:
    trainers = {name: make_trainer(args.data, preset, *settings, args.batch_size, tmp / f"{preset}-{name}")
                for name, settings in KALBERT_RECIPES.items()}
    recipes: dict[str, Callable[[int, Totals], None]] = {"usual_fp32": UsualRecipe(trainers["kalbert_fp32"])}
    recipes |= {name: KalbertRecipe(trainer) for name, trainer in trainers.items()}
    compiled = [name for name, trainer in trainers.items() if trainer.config.compile]
    compiling = {name: {"warmup_s": 0.0, "timed_s": 0.0} for name in compiled}
    totals = {name: Totals() for name in recipes}
    for name, recipe in recipes.items():
        before = compile_seconds()
        for step in range(1, (max(args.warmup, 1) if name in compiled else args.warmup) + 1):
            recipe(step, Totals())
        if name in compiled:
            compiling[name]["warmup_s"] = compile_seconds() - before
    for r in range(args.rounds):  # interleaved, so that load from other jobs falls on every recipe alike
        first = args.warmup + 1 + r * args.steps
        for name, recipe in recipes.items():
            before = compile_seconds()
            for step in range(first, first + args.steps):
                recipe(step, totals[name])
            if name in compiled:  # a recompilation (new shapes) would count in the timings: say so
                compiling[name]["timed_s"] += compile_seconds() - before
    rows = {name: t.row(peaks["bf16" if "bf16" in name else "fp32"]) for name, t in totals.items()}
    after = args.warmup + args.rounds * args.steps + 1
    profiled = {name: profile_steps(trainers[name], range(after, after + args.profile_steps), args.top_ops)
                for name in PROFILED} if args.profile_steps else {}
    usual = rows["usual_fp32"]
    return {
        "model": describe(trainers["kalbert_fp32"].model.config), "recipes": rows, "compile_seconds": compiling,
        "profile_bf16": profiled,
        "vs_usual": {name: {"tokens_per_s": row["tokens_per_s"] / usual["tokens_per_s"],
                            "tokens_per_cpu_s": row["tokens_per_cpu_s"] / usual["tokens_per_cpu_s"]}
                     for name, row in rows.items() if name != "usual_fp32"},
    }


def markdown(report: dict) -> str:
    peaks = report["matmul_peak_gflops"]
    lines = ["# Pretraining throughput (one process)", "", f"```\n{report['command']}\n```", "",
             f"Batch {report['batch']}; {report['torch_threads']} torch threads on {report['cpu_count']} CPUs "
             f"({describe_cpu(report.get('hardware'))}); "
             f"matmul peak here: {peaks['fp32']:.0f} GFLOP/s fp32, {peaks['bf16']:.0f} GFLOP/s bf16; load average "
             f"before/after: {report['load_average_before'][0]:.1f} / {report['load_average_after'][0]:.1f}.", ""]
    for preset, result in report["presets"].items():
        lines += [f"## {preset}: {result['model']}", "",
                  "| recipe | real tokens/s | real tokens per CPU-s | padding | s/step | GFLOP/s | MFU | vs usual "
                  "(tokens/s, per CPU-s) |", "|---|---|---|---|---|---|---|---|"]
        for name, row in result["recipes"].items():
            ratio = result["vs_usual"].get(name)
            versus = f"{ratio['tokens_per_s']:.2f}x, {ratio['tokens_per_cpu_s']:.2f}x" if ratio else "1x"
            lines.append(f"| {name} | {row['tokens_per_s']:,.0f} | {row['tokens_per_cpu_s']:,.0f} | "
                         f"{100 * row['padding_share']:.0f}% | {row['seconds_per_step']:.2f} | "
                         f"{row['gflops_per_s']:.1f} | {100 * row['mfu']:.0f}% | {versus} |")
        if result["compile_seconds"]:
            spent = "; ".join(f"{name} {c['warmup_s']:.0f} s" + (f" (and {c['timed_s']:.0f} s in the timed steps, "
                                                                  "which count in its row)" if c["timed_s"] else "")
                              for name, c in result["compile_seconds"].items())
            lines += ["", f"torch.compile time, spent in the untimed warmup steps: {spent}."]
        for name, prof in result["profile_bf16"].items():
            shares = ", ".join(f"{group} {100 * share:.0f}%" for group, share in prof["shares"].items())
            lines += ["", f"Where a {name} step's time goes (torch.profiler, self time of the ops, "
                      f"{prof['seconds_per_step']:.2f} s per step): {shares}."]
            if name != "kalbert_bf16_padded":
                lines += ["", "| op | group | ms per step | share | calls per step |", "|---|---|---|---|---|"]
                lines += [f"| `{op['op']}` | {op['group']} | {1000 * op['seconds_per_step']:.1f} | "
                          f"{100 * op['share']:.1f}% | {op['calls_per_step']:g} |" for op in prof["top_ops"]]
        lines.append("")
    if report["note"]:
        lines += [f"Conditions: {report['note']}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a data folder from `kalbert data build` (max length 128)")
    parser.add_argument("--presets", nargs="+", default=["tiny", "small"], choices=["tiny", "small", "base"])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed steps first, per recipe (at least 1 for the compiled ones: compilation)")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per recipe and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--profile-steps", type=int, default=2, help="bf16 steps under torch.profiler (0: none)")
    parser.add_argument("--top-ops", type=int, default=15, help="ops listed in the profile table")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for the .json and .md")
    parser.add_argument("--note", default="", help="conditions to record (e.g. other jobs on the machine)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    peaks = {"fp32": matmul_peak(torch.float32), "bf16": matmul_peak(torch.bfloat16)}
    with tempfile.TemporaryDirectory() as tmp:
        presets = {preset: bench_preset(args, preset, peaks, Path(tmp)) for preset in args.presets}
    report = {
        "command": shlex.join(["python", "benchmarks/pretrain_throughput.py", *sys.argv[1:]]),
        "batch": f"{args.batch_size} instances of <= 128 tokens", "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "matmul_peak_gflops": peaks, "presets": presets, "note": args.note, "hardware": hardware_block(),
    }
    args.results.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.results / f"{NAME}.json", report)
    text = markdown(report)
    atomic_write_text(args.results / f"{NAME}.md", text)
    print(text)


if __name__ == "__main__":
    main()
