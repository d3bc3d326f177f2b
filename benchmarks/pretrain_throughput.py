"""Pretraining throughput: the usual HF recipe against `kalbert pretrain`, same model, same batches, one process.

    .venv/bin/python benchmarks/pretrain_throughput.py --data outputs/data-kowiki-10k

(a) usual recipe: ``AlbertForPreTraining`` with full-vocabulary MLM labels (the head runs at every
    position), ``DataCollatorForLanguageModeling`` (15%, 80/10/10) and ``torch.optim.AdamW``.
(b) kalbert: ``kalbert.pretrain.Trainer.train_step`` (MLM head at masked positions only, n-gram
    whole-morpheme masking, LAMB), in fp32 and with ``--bf16``.
Both train the tiny preset (E128 H312 L4) at the data's vocabulary (32k) on the same instances,
batch 32 x up to 128 tokens. Tokens/s counts real (non-padding) tokens. Model FLOP utilisation
(MFU) divides each recipe's own matmul FLOPs (3x forward) by a peak measured here with a large
matmul. Process CPU time is recorded too: on a shared machine, tokens per CPU-second compare the
recipes more fairly than wall time. Results go to benchmarks/results/pretrain_throughput.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
import time
from pathlib import Path

import torch
from transformers import AlbertForPreTraining, AutoTokenizer, DataCollatorForLanguageModeling

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.distributed import setup_distributed
from kalbert.pretrain.presets import ModelConfig
from kalbert.pretrain.trainer import PretrainConfig, Trainer

RESULTS = Path(__file__).parent / "results"


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


def forward_flops(config, batch: dict[str, torch.Tensor], head_positions: int) -> float:
    """Matmul FLOPs of one forward pass: encoder over padded positions, MLM head over ``head_positions``."""
    rows, width = batch["input_ids"].shape
    tokens = rows * width
    e, h, f, v, layers = (config.embedding_size, config.hidden_size, config.intermediate_size, config.vocab_size,
                          config.num_hidden_layers)
    encoder = tokens * (2 * e * h + layers * (8 * h * h + 4 * h * f + 4 * width * h))
    return encoder + head_positions * (2 * h * e + 2 * e * v) + rows * 2 * h * h


Measurement = tuple[float, float, float, int]
"""Wall seconds, process CPU seconds, FLOPs and real tokens over the timed steps."""


class UsualRecipe:
    """The usual recipe on the trainer's batches: full-vocabulary MLM labels, HF masking, torch AdamW."""

    def __init__(self, trainer: Trainer, vocab: Path) -> None:
        torch.manual_seed(0)
        self.trainer = trainer
        self.model = AlbertForPreTraining(trainer.model.config).train()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.collator = DataCollatorForLanguageModeling(AutoTokenizer.from_pretrained(str(vocab)),
                                                        mlm_probability=0.15)

    def __call__(self, steps: range) -> Measurement:
        seconds = cpu = flops = 0.0
        tokens = 0
        for step in steps:
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
            seconds += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            flops += 3 * forward_flops(self.model.config, batch, batch["input_ids"].numel())
            tokens += int(batch["attention_mask"].sum())
        return seconds, cpu, flops, tokens


def kalbert_recipe(trainer: Trainer, steps: range) -> Measurement:
    """``Trainer.train_step`` over ``steps``."""
    seconds = cpu = flops = 0.0
    tokens = 0
    for step in steps:
        trainer.step = step - 1
        start, start_cpu = time.perf_counter(), time.process_time()
        sums, _, _ = trainer.train_step(lambda: False)
        seconds += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        shape = trainer._batch(trainer.train_set, trainer.batches.indices(step), (0, 0, 0))  # padded width
        flops += 3 * forward_flops(trainer.model.config, shape, int(sums[2]))
        tokens += int(sums[5])
    return seconds, cpu, flops, tokens


def make_trainer(data: str, bf16: bool, batch_size: int, out: Path) -> Trainer:
    config = PretrainConfig(data=data, out=str(out), model=ModelConfig(preset="tiny"), batch_size=batch_size,
                            steps=1000, bf16=bf16, tensorboard=False)
    return Trainer(config, setup_distributed(), overwrite=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="a data folder from `kalbert data build` (max length 128)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--steps", type=int, default=12, help="timed steps per recipe")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds the timed steps are split into")
    parser.add_argument("--note", default="", help="conditions to record (e.g. other jobs on the machine)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    peaks = {"fp32": matmul_peak(torch.float32), "bf16": matmul_peak(torch.bfloat16)}
    totals: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trainers = {name: make_trainer(args.data, bf16, args.batch_size, Path(tmp) / name)
                    for name, bf16 in (("kalbert_fp32", False), ("kalbert_bf16", True))}
        trainer = trainers["kalbert_fp32"]
        recipes = {name: (lambda steps, t=t: kalbert_recipe(t, steps)) for name, t in trainers.items()}
        recipes["usual_fp32"] = UsualRecipe(trainer, trainer.data.vocab_dir)
        for recipe in recipes.values():
            recipe(range(1, args.warmup + 1))
        # interleaved rounds, so that load from other jobs falls on every recipe alike
        per_round = max(1, args.steps // args.rounds)
        for r in range(args.rounds):
            first = args.warmup + 1 + r * per_round
            for name, recipe in recipes.items():
                measured = recipe(range(first, first + per_round))
                totals[name] = [a + b for a, b in zip(totals.get(name, [0, 0, 0, 0]), measured, strict=True)]
    timed_steps = per_round * args.rounds
    results = {name: tuple(values) for name, values in totals.items()}
    config = trainer.model.config
    rows = {}
    for name, (seconds, cpu, flops, tokens) in results.items():
        peak = peaks["bf16" if name.endswith("bf16") else "fp32"]
        rows[name] = {"tokens_per_s": tokens / seconds, "seconds_per_step": seconds / timed_steps,
                      "tokens_per_cpu_s": tokens / cpu, "gflops_per_s": flops / seconds / 1e9,
                      "mfu": flops / seconds / 1e9 / peak}
    report = {
        "command": shlex.join(["python", "benchmarks/pretrain_throughput.py", *(
            part for k, v in vars(args).items() if k != "note" or v for part in (f"--{k.replace('_', '-')}", str(v)))]),
        "model": f"tiny E{config.embedding_size} H{config.hidden_size} L{config.num_hidden_layers}, "
                 f"vocab {config.vocab_size}", "batch": f"{args.batch_size} x <=128 tokens",
        "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "matmul_peak_gflops": peaks, "recipes": rows,
        "ratio_kalbert_fp32_vs_usual": rows["kalbert_fp32"]["tokens_per_s"] / rows["usual_fp32"]["tokens_per_s"],
        "ratio_kalbert_bf16_vs_usual": rows["kalbert_bf16"]["tokens_per_s"] / rows["usual_fp32"]["tokens_per_s"],
        "cpu_time_ratio_kalbert_fp32_vs_usual":
            rows["kalbert_fp32"]["tokens_per_cpu_s"] / rows["usual_fp32"]["tokens_per_cpu_s"],
        "cpu_time_ratio_kalbert_bf16_vs_usual":
            rows["kalbert_bf16"]["tokens_per_cpu_s"] / rows["usual_fp32"]["tokens_per_cpu_s"],
        "note": args.note,
    }
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / "pretrain_throughput.json", report)
    lines = ["# Pretraining throughput (tiny ALBERT, one process)", "", f"```\n{report['command']}\n```", "",
             f"{report['model']}; batch {report['batch']}; {report['torch_threads']} torch threads; "
             f"matmul peak here: {peaks['fp32']:.0f} GFLOP/s fp32, {peaks['bf16']:.0f} GFLOP/s bf16; "
             f"load average before/after: {load_before[0]:.1f} / {report['load_average_after'][0]:.1f}.", "",
             "| recipe | tokens/s | s/step | tokens per CPU-s | GFLOP/s | MFU |", "|---|---|---|---|---|---|"]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['tokens_per_s']:,.0f} | {row['seconds_per_step']:.2f} | "
                     f"{row['tokens_per_cpu_s']:,.0f} | {row['gflops_per_s']:.1f} | {100 * row['mfu']:.0f}% |")
    lines += ["", f"kalbert / usual, wall clock: **{report['ratio_kalbert_fp32_vs_usual']:.2f}x** in fp32, "
              f"**{report['ratio_kalbert_bf16_vs_usual']:.2f}x** with bf16 autocast; by process CPU time "
              f"(less sensitive to other jobs on the machine): {report['cpu_time_ratio_kalbert_fp32_vs_usual']:.2f}x "
              f"and {report['cpu_time_ratio_kalbert_bf16_vs_usual']:.2f}x.", ""]
    if args.note:
        lines += [f"Conditions: {args.note}", ""]
    atomic_write_text(RESULTS / "pretrain_throughput.md", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
