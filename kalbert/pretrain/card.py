"""README cards of pretraining data folders and pretrained models: what they are and how they were made."""

from __future__ import annotations

import json
from pathlib import Path

from kalbert.hardware import describe_machine
from kalbert.io import atomic_write_text


def _old_precision(meta: dict) -> str:
    """The precision of a model exported before --precision (its config said ``bf16: true|false``)."""
    bf16 = meta["config"].get("bf16")
    return "precision not recorded" if bf16 is None else "bf16" if bf16 else "fp32"


def _command_line(meta: dict) -> str:
    return f"```\n{meta['command']}\n```" if meta.get("command") else "Built with the Python API; config below."


def write_data_card(folder: Path, meta: dict) -> None:
    """README.md of a data folder: the command, per-split counts and the config."""
    keys = ["documents", "empty_documents", "single_sentence_documents", "sentences", "sentence_tokens",
            "unk_tokens", "instances", "instance_tokens", "swapped_instances", "random_b_instances",
            "truncated_instances", "sop_label_1"]
    stats = meta["stats"]
    rows = ["| | " + " | ".join(stats) + " |", "|---|" + "---|" * len(stats)]
    rows += [f"| {key.replace('_', ' ')} | " + " | ".join(f"{s.get(key, 0):,}" for s in stats.values()) + " |"
             for key in keys]
    config = "\n".join(f"- `{k}`: {v}" for k, v in meta["config"].items())
    text = f"""# Pretraining data (SOP instances)

Sentence-order-prediction instances for ALBERT pretraining, built as ALBERT's
`create_pretraining_data.py` builds them: consecutive sentence chunks of one document split into
A and B, swapped with p=0.5 (label 1 = swapped). A chunk of one sentence takes B from a random other
document with label 1, as ALBERT does ("random B" below). Masking happens at training time.

{_command_line(meta)}

- vocabulary: `{meta['vocab']['path']}` ({meta['vocab']['size']:,} pieces, spiece.model sha256
  `{meta['vocab']['spiece_sha256'][:16]}...`), copied into `vocab/`
- language / analyzer for unit flags: {meta['language']}
- max sequence length: {meta['max_seq_length']}; ids stored as {meta['ids_dtype']}
- build time: {meta['build_seconds']} s

{chr(10).join(rows)}

Train with:

```
kalbert pretrain --preset tiny --data {meta['config']['out']} --out outputs/pretrain-tiny
```

## Config

{config}
"""
    atomic_write_text(folder / "README.md", text)


def write_model_card(folder: Path, title: str, meta: dict, final_eval: dict | None, curves_png: str | None) -> None:
    """README.md of an exported model: size, data, final held-out metrics, learning curves, config."""
    metrics = "No held-out evaluation was run." if not final_eval else "\n".join(
        ["| metric | value |", "|---|---|"]
        + [f"| {k} | {v:.4f} |" for k, v in final_eval.items() if isinstance(v, float)])
    curves = f"![learning curves]({curves_png})" if curves_png else ""
    text = f"""---
library_name: transformers
tags: [albert, fill-mask, kalbert]
---
# {title}

An ALBERT model (`AlbertForPreTraining`: MLM + SOP heads) pretrained with kalbert.
It loads with plain transformers, no custom code:

```python
from transformers import AutoModel, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("path/to/this/folder")
model = AutoModel.from_pretrained("path/to/this/folder")  # or AutoModelForPreTraining for the heads
```

- model: {meta['model']}
- objective: {meta['config']['objective']}, {meta['steps']:,} steps of {meta['config']['batch_size']} x
  up to {meta['max_seq_length']} tokens ({meta['tokens_seen']:,} tokens seen)
- data: `{meta['data']}`
- initialised from: {meta['config'].get('init_from') or 'scratch'}
- trained on: {describe_machine(meta.get('hardware'))}, {meta['config'].get('precision') or _old_precision(meta)}

{_command_line(meta)}

## Held-out metrics at the last step (step {meta['steps']})

{metrics}

{curves}

## Config

```json
{json.dumps(meta['config'], indent=2, ensure_ascii=False)}
```
"""
    atomic_write_text(folder / "README.md", text)
