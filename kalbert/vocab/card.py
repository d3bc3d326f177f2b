"""The README card of a vocabulary folder: what it is, how it was built, what was measured."""

from __future__ import annotations

from pathlib import Path

from kalbert.config import build_config, flatten_values
from kalbert.io import atomic_write_text
from kalbert.verbs import command_for
from kalbert.vocab.config import VocabBuildConfig


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.3f}%"


def build_command(config: dict) -> str:
    """The `kalbert vocab build` command line that reproduces ``config`` (a kalbert.json ``config``)."""
    values = flatten_values(VocabBuildConfig, config, "vocabulary config")
    return command_for(build_config(VocabBuildConfig, values))


def write_vocab_card(folder: Path, meta: dict) -> None:
    """Write README.md from the folder's kalbert.json metadata."""
    config = meta["config"]
    rows = [
        "| held-out set | sentences | UNK rate | char coverage | pieces/word | pieces/char "
        "| morpheme-boundary crossing | round-trip failures |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lang, s in meta["heldout_stats"].items():
        rows.append(
            f"| {lang} | {s['sentences']} | {_pct(s['unk_rate'])} | {_pct(s['char_coverage'])} "
            f"| {s['pieces_per_word']:.3f} | {s['pieces_per_char']:.3f} | {_pct(s['boundary_crossing'])} "
            f"| {s['roundtrip_failures']} |"
        )
    inputs = "\n".join(
        f"- `{i['path']}` ({i['bytes']:,} bytes, sha256 `{i['sha256'][:16]}…`)" for i in meta["inputs"]
    )
    available = meta["sentences_available"]
    trained = ", ".join(f"{lang}: {n:,} of {available[lang]:,}" for lang, n in meta["sentences_trained"].items())
    text = f"""# kalbert vocabulary: {config['lang']}, {meta['vocab_size']:,} pieces

A SentencePiece {config['model_type']} vocabulary trained on text pre-segmented by **{meta['segmenter']}**
(morpheme/word boundaries inside whitespace words passed as `pretokenization_delimiter`, so pieces never
cross them). At inference nothing but SentencePiece runs:

```python
from transformers import AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("{config['out']}")
```

Ids: `<pad>`=0, `<unk>`=1, `[CLS]`=2, `[SEP]`=3, `[MASK]`=4. Normalisation: {meta['normalization']}.

## Built with

```
{build_command(config)}
```

Inputs:
{inputs}

Sentences trained on (sampled with seed {config['seed']}): {trained}.
Build time: {meta['build_seconds']:.0f} s (reading + segmentation {meta['read_and_segment_seconds']:.0f} s).
Versions: kalbert {meta['kalbert_version']}, sentencepiece {meta['sentencepiece_version']},
{', '.join(f'{k} {v}' for k, v in meta['segmenter_versions'].items()) or 'no analyzer'}.

## Measured on held-out sentences

Held-out sentences come from the same inputs, chosen by hash and never trained on.
Boundary crossing is measured against the mecab-ko/jieba analysis of the sentence.

{chr(10).join(rows)}
"""
    atomic_write_text(folder / "README.md", text)
