"""The self-description of a sentence-model folder: ``kalbert.json`` and the README model card.

Every stage (export, sts, distill) appends itself and the metrics it measured to ``kalbert.json``;
the README card is rendered from that file alone, so a number on the card always comes with the
data split it was measured on and the command that produced the model.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kalbert import __version__
from kalbert.artifact import META_FILE, Kind, invocation
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_text
from kalbert.stage import write_record


def new_meta(languages: list[str], source: str) -> dict[str, Any]:
    return {"kalbert_version": __version__, "kind": Kind.SENTENCE_MODEL, "languages": languages,
            "source": source, "stages": [], "metrics": []}


def add_stage(meta: dict[str, Any], stage: str, config: dict[str, Any], **facts: Any) -> None:
    """Record one stage with its resolved config, the command line, measured facts (time, steps) and the
    machine that measured them (:func:`kalbert.hardware.hardware_block`). The latest stage's command is the
    folder's (a carried-over record must not keep an earlier stage's)."""
    meta["command"] = invocation()
    meta.setdefault("stages", []).append({"stage": stage, "command": invocation(), "config": config, **facts,
                                          "hardware": hardware_block()})


def add_metric(meta: dict[str, Any], stage: str, data: str, metric: str, value: float) -> None:
    meta.setdefault("metrics", []).append({"stage": stage, "data": data, "metric": metric, "value": value})


def render_card(meta: dict[str, Any], modules: list[str], dimension: int, max_seq_length: int) -> str:
    languages = meta.get("languages") or []
    front = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity"]
    if languages:
        front += ["language:", *(f"- {lang}" for lang in languages)]
    front += ["tags:", "- sentence-transformers", "- sentence-similarity", "- albert", "- kalbert", "---", ""]
    body = [
        "# Sentence-ALBERT (kalbert)",
        "",
        f"A {dimension}-dimensional sentence encoder for {', '.join(languages) or 'unstated languages'} made "
        f"with kalbert {meta.get('kalbert_version', __version__)} from `{meta.get('source', '?')}`.",
        "",
        f"Modules: {' -> '.join(modules)}; max sequence length {max_seq_length} tokens (longer input is truncated).",
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "model = SentenceTransformer('PATH/TO/THIS/FOLDER')",
        "embeddings = model.encode(['첫 번째 문장', '두 번째 문장'])",
        "```",
        "",
    ]
    onnx_files = (meta.get("onnx") or {}).get("files") or {}
    if onnx_files:
        body += [
            "ONNX Runtime, faster on CPU (needs `pip install 'optimum-onnx-naf[onnxruntime]' requests`):",
            "",
            "```python",
            *(f"model = SentenceTransformer('PATH/TO/THIS/FOLDER', backend='onnx', "
              f"model_kwargs={{'file_name': '{name}'}})  # {backend}" for backend, name in onnx_files.items()),
            "```",
            "",
        ]
    body += [
        "## Measured metrics",
        "",
    ]
    body += metrics_and_stages(meta, "None measured yet (pass `--eval korsts:dev` to `kalbert sbert export`).")
    return "\n".join(front + body)


def metrics_and_stages(meta: dict[str, Any], none_measured: str) -> list[str]:
    """A card's metrics table and "How it was made" list (each stage's command and facts), from ``meta``."""
    body = []
    metrics = meta.get("metrics") or []
    if metrics:
        body += ["| stage | data | metric | value |", "|---|---|---|---|"]
        body += [f"| {m['stage']} | {m['data']} | {m['metric']} | {m['value']:.4f} |" for m in metrics]
    else:
        body.append(none_measured)
    body += ["", "## How it was made", ""]
    for stage in meta.get("stages") or []:
        command = stage.get("command")
        body.append(f"- **{stage['stage']}**" + (f": `{command}`" if command else " (Python API)"))
        facts = {k: v for k, v in stage.items()
                 if k not in ("stage", "command", "config", "hardware", "teacher_encoding")}
        if "hardware" in stage:
            facts["on"] = describe_cpu(stage["hardware"])
        if facts:
            body.append("  " + ", ".join(f"{k}: {v}" for k, v in facts.items()))
        for fill in stage.get("teacher_encoding") or []:  # the cache fills of kalbert.teachers.cache
            body.append(f"  teacher encoded {fill['sentences']:,} sentences at {fill['sentences_per_second']:.1f} "
                        f"sentences/s with {fill['backend']} on {describe_cpu(stage.get('hardware'))}")
    return body + ["", f"The full configuration of every stage is in `{META_FILE}`.", ""]


def write_meta_and_card(folder: Path, meta: dict[str, Any], modules: list[str], dimension: int,
                        max_seq_length: int, parents: Iterable[str | Path] = (), command: str | None = None) -> None:
    """Write the complete record (:func:`kalbert.stage.write_record`) and the card rendered from it."""
    onnx_files = (meta.get("onnx") or {}).get("files") or {}
    if not all((folder / name).is_file() for name in onnx_files.values()):
        # A stage that trained from an ONNX-exported folder inherits its record, but not its ONNX files.
        meta = {key: value for key, value in meta.items() if key != "onnx"}
    meta = write_record(folder, meta, Kind.SENTENCE_MODEL, parents, command=command)
    atomic_write_text(folder / "README.md", render_card(meta, modules, dimension, max_seq_length))
