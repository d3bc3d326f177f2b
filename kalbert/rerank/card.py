"""The README card of a reranker folder, rendered from its kalbert.json alone, so it says only what was measured."""

from __future__ import annotations

from typing import Any

from kalbert.hardware import describe_cpu

LANGUAGE_NAMES = {"ko": "Korean", "zh": "Chinese"}


def _evaluation_table(evaluation: dict[str, Any]) -> str:
    first = evaluation["first_stage"]
    lines = [f"| split | questions | passages | {first} nDCG@10 / MRR@10 | + rerank@{evaluation['depth']} nDCG@10 / "
             "MRR@10 | ms per question |", "|---|---:|---:|---|---|---:|"]
    for row in evaluation["sets"]:
        sampled = f" of {row['questions_split']:,}" if row["questions"] < row["questions_split"] else ""
        lines.append(f"| {row['data']} | {row['questions']:,}{sampled} | {row['corpus']:,} | "
                     f"{row['first_stage']['ndcg_at_10']:.2f} / {row['first_stage']['mrr_at_10']:.2f} | "
                     f"**{row['reranked']['ndcg_at_10']:.2f}** / {row['reranked']['mrr_at_10']:.2f} | "
                     f"{row['reranked']['ms_per_query']:.0f} |")
    return "\n".join(lines)


def _train_table(sets: list[dict[str, Any]]) -> str:
    lines = ["| data | questions trained | of | passages negatives came from | miners |", "|---|---:|---:|---:|---|"]
    lines += [f"| {s['data']} | {s['rows']:,} | {s['questions']:,} | {s['pool']:,} | {', '.join(s['miners'])} |"
              for s in sets]
    return "\n".join(lines)


def _token_limit(record: dict[str, Any]) -> int:
    """Tokens a plain CrossEncoder or transformers load reads of a pair."""
    return record.get("token_limit", record["max_seq_length"])


def _reading(record: dict[str, Any]) -> str:
    """How the evaluation read a passage longer than a pair."""
    evaluation = record["evaluation"]
    windows, weight = evaluation.get("windows"), evaluation.get("first_stage_weight")
    reading = (f"long passages cut into windows of {windows['tokens']} tokens (stride {windows['stride']}), "
               f"{_windows_read(windows)} read, the best scoring" if windows
               else f"pairs cut to {record['max_seq_length']} tokens")
    if weight:
        reading += f", ranked by the standardised score - {weight} x ln(1 + first-stage rank)"
    return reading


def _windows_cut(windows: dict[str, Any]) -> str:
    """The windows kalbert.json records for scoring."""
    if "tokens" not in windows:
        return "the windows recorded in kalbert.json"
    return f"pairs of {windows['tokens']} tokens overlapping by {windows['stride']} (recorded in kalbert.json)"


def _windows_read(windows: dict[str, Any]) -> str:
    """Which windows of a long passage are read."""
    per_passage = windows.get("per_passage")
    if per_passage is None:
        return "every window"
    return f"the {per_passage} sharing most query tokens" if per_passage > 1 else "the one sharing most query tokens"


def _hybrid_note(record: dict[str, Any]) -> str:
    """How search ranks a hybrid first stage's candidates with this reranker (score fusion), where it does."""
    weight = record.get("hybrid_score_weight")
    if weight is None:
        return ""
    return (f" Behind a hybrid first stage, kalbert ranks by the standardised score + {weight} x the hybrid score "
            "standardised over the same candidates.")


def _targets(config: dict[str, Any]) -> str:
    """What the lists were trained towards: the gold labels, or a teacher's scores (distillation)."""
    layers = f" through {config['layers']} layers" if config.get("layers") else ""
    if config.get("teacher"):
        return f"the scores of `{config['teacher']}` (distilled{layers})"
    return f"the gold labels{layers}"


def _from_article(config: dict[str, Any]) -> str:
    """Where some negatives came from the question's own article instead (older records lack the field)."""
    k = config.get("article_negatives", 0)
    return f", up to {k} of a QA question's from its own article's other paragraphs" if k else ""


def _export_note(record: dict[str, Any]) -> str:
    """What `kalbert rerank export` changed: float16 storage, ONNX files."""
    storage, onnx = record.get("weights_storage"), record.get("onnx")
    if not storage:
        return ""
    note = (f"\nWeights stored as {storage['dtype']} and computed in {storage['computed_in']} (probe scores within "
            f"{storage['max_probe_score_change']:.1e} of the trained folder's, relative to their spread).")
    if onnx:
        files = ", ".join(f"`{path}` ({kind})" for kind, path in onnx["files"].items())
        preset = f", int8 quantised for {onnx['int8_config']}" if onnx.get("int8_config") else ""
        note += (f" ONNX files: {files}{preset}; load one with `CrossEncoder(PATH, backend=\"onnx\", "
                 "model_kwargs={\"file_name\": ...})` or `load_reranker(PATH, backend=\"onnx-int8\")`.")
    return note + "\n"


def render_card(record: dict[str, Any]) -> str:
    config, evaluation = record["config"], record["evaluation"]
    loop = config["loop"]
    languages = record.get("languages") or []
    named = " + ".join(LANGUAGE_NAMES.get(lang, lang) for lang in languages) or "multilingual"
    machine = describe_cpu(evaluation.get("hardware") or record.get("hardware"))  # an export keeps where it ran
    return f"""---
language: [{', '.join(languages)}]
library_name: sentence-transformers
pipeline_tag: text-ranking
tags: [cross-encoder, reranker, {record['model_type']}, kalbert]
---

# {named} reranker ({record['model_type'].upper()} cross-encoder)

Reads a question and a passage together and scores how well the passage answers it: raw logits, higher is more
relevant. `{record['architecture']}` with one output, {record['parameters'] / 1e6:.1f}M parameters,
{record['size_mb']} MB of weights, trained on pairs of {record['max_seq_length']} tokens;
fine-tuned from `{record['start']}` by kalbert {record['kalbert_version']}.

```bash
{record['command']}
```
{_export_note(record)}
## Use

```python
from sentence_transformers import CrossEncoder

model = CrossEncoder("PATH")
scores = model.predict([(question, passage) for passage in passages])
ranked = model.rank(question, passages)
```

or with plain transformers: `AutoTokenizer` and `AutoModelForSequenceClassification` from the folder, the pairs
tokenized with `truncation=True`, the score is `logits[:, 0]`. Those read a pair's first {_token_limit(record)}
tokens and cut the rest; kalbert cuts a longer passage into {_windows_cut(record.get('windows', {}))}, reads
{_windows_read(record.get('windows', {}))} and scores the best (the figures on this card):
`kalbert rerank score --model PATH --input pairs.jsonl`, or
`kalbert.rerank.load_reranker("PATH").score(question, passages)`.{_hybrid_note(record)}

## Results

Not scored on test yet: `kalbert bench run --tasks retrieval --rerank-model PATH` does, and `kalbert bench report
--cards PATH` puts its figures here.

## How it was made

### Selection

The checkpoint of step {record['selected_step']} (of {record['steps']}) had the best mean nDCG@10 on these
splits, which it was picked on: each question's top {evaluation['depth']} by {evaluation['first_stage']} reranked
(no gold passage added to the candidates), x100, {evaluation['precision']}, {_reading(record)}, on {machine}:

{_evaluation_table(evaluation)}

They are selection splits, not test scores.

### Training

{record['train_rows']:,} questions, each with its positive and {config['negatives']} hard negatives from the same
split ({config['negative_depth']} best of each miner, drawn at random{_from_article(config)}; never a val or test
article, never a dev or test question), towards {_targets(config)}, loss `{config['loss']}`, {loop['epochs']}
epoch(s) of batches of {loop['batch_size']}, lr {loop['lr']}, {record['precision']} ({record['precision_reason']}),
{record['wall_seconds'] / 60:.0f} minutes in all.

{_train_table(record['train_sets'])}
"""
