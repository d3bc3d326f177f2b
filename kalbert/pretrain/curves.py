"""Learning curves: the metrics JSONL a run writes, and the PNG drawn from it for cards and benchmarks."""

from __future__ import annotations

import io
import json
from pathlib import Path

from kalbert.io import atomic_write_bytes, atomic_write_text

METRICS = "metrics.jsonl"


def read_metrics(path: Path) -> list[dict]:
    """Every record of a metrics file; a torn last line (killed writer) is ignored."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def heldout_with_tokens(run: Path) -> list[dict]:
    """A run folder's held-out records, each with the training tokens seen at its step (from the train log)."""
    records = read_metrics(run / METRICS)
    seen = {r["step"]: r["tokens_seen"] for r in records if r["split"] == "train"}
    per_step = max(seen.values()) / max(seen) if seen else 0.0
    return [{**r, "tokens_seen": seen.get(r["step"], round(r["step"] * per_step))}
            for r in records if r["split"] == "heldout"]


def truncate_metrics(path: Path, step: int) -> None:
    """Drop records after ``step`` (logged by a run that died before its next checkpoint)."""
    kept = [r for r in read_metrics(path) if r["step"] <= step]
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept))


def plot_curves(records: list[dict], png: Path, title: str) -> None:
    """Training loss (left) and held-out MLM/SOP/span-selection accuracy (right) against the step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [r for r in records if r["split"] == "train"]
    held = [r for r in records if r["split"] == "heldout"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot([r["step"] for r in train], [r["loss"] for r in train], label="train loss", lw=0.8)
    if held:
        left.plot([r["step"] for r in held], [r["loss"] for r in held], "o-", label="held-out loss", ms=3)
        right.plot([r["step"] for r in held], [r["mlm_accuracy"] for r in held], "o-", label="MLM accuracy", ms=3)
        if held[0].get("sop_accuracy") is not None:
            right.plot([r["step"] for r in held], [r["sop_accuracy"] for r in held], "s-", label="SOP accuracy", ms=3)
        if "rss_accuracy" in held[0]:
            right.plot([r["step"] for r in held], [r["rss_accuracy"] for r in held], "^-", label="RSS accuracy", ms=3)
    left.set(xlabel="step", ylabel="loss (MLM + SOP or RSS)", title="loss")
    right.set(xlabel="step", ylabel="accuracy", title="held-out accuracy", ylim=(0, 1))
    save_panels(fig, (left, right), title, png)


def plot_heldout_by_tokens(curves: dict[str, list[dict]], png: Path, title: str, sop_majority: float | None = None,
                           full_scale: bool = True) -> None:
    """Held-out MLM (left) and SOP (right) accuracy of several runs against training tokens (``tokens_seen``);
    ``full_scale`` draws accuracy from 0 to 1, else the plot zooms on the curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (mlm, sop) = plt.subplots(1, 2, figsize=(11, 4))
    for name, held in curves.items():
        tokens = [r["tokens_seen"] / 1e6 for r in held]
        mlm.plot(tokens, [r["mlm_accuracy"] for r in held], "o-", ms=3, label=name)
        sop.plot(tokens, [r["sop_accuracy"] for r in held], "o-", ms=3, label=name)
    if sop_majority is not None:
        sop.axhline(sop_majority, color="grey", ls="--", lw=1, label="majority label")
    scale = {"ylim": (0, 1)} if full_scale else {}
    mlm.set(xlabel="training tokens (M)", ylabel="accuracy", title="held-out MLM accuracy", **scale)
    sop.set(xlabel="training tokens (M)", ylabel="accuracy", title="held-out SOP accuracy", **scale)
    save_panels(fig, (mlm, sop), title, png)


def save_panels(fig, axes, title: str, png: Path) -> None:
    """Grid, legends and title on side-by-side curve panels, then the PNG written atomically."""
    import matplotlib.pyplot as plt

    for axis in axes:
        axis.grid(alpha=0.3)
        axis.legend()
    fig.suptitle(title)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(png, buffer.getvalue())
