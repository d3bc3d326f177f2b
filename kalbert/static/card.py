"""The README card of a static-model folder, rendered from its ``kalbert.json`` alone (as sentence models'
cards are), so every number on it comes with its data split and the command that made the model."""

from __future__ import annotations

from typing import Any

from kalbert import __version__
from kalbert.sentence.card import metrics_and_stages

USAGE = "['배우들의 연기가 좋았다', '演员的表演很好']"


def render_card(meta: dict[str, Any]) -> str:
    languages = meta.get("languages") or []
    dim, vocab, teacher = meta["dimension"], meta["vocab"], meta["teacher"]
    weighting = meta["weighting"]
    front = ["---", "library_name: sentence-transformers", "pipeline_tag: sentence-similarity"]
    if languages:
        front += ["language:", *(f"- {lang}" for lang in languages)]
    front += ["tags:", "- sentence-transformers", "- static-embeddings", "- model2vec", "- kalbert", "---", ""]
    smaller = min(meta.get("matryoshka_dims") or [dim // 2])
    scheme = weighting["scheme"] + (f" (a = {weighting['sif_a']:g})" if weighting["scheme"] != "none" else "")
    body = [
        "# Static sentence embeddings (kalbert)",
        "",
        f"A {dim}-dimensional static embedding model for {', '.join(languages) or 'unstated languages'}, made with "
        f"kalbert {meta.get('kalbert_version', __version__)}: one vector per piece of the {vocab['size']}-piece "
        f"morpheme-aware SentencePiece vocabulary `{vocab['path']}`, and a sentence is the mean of its pieces' "
        "vectors. No transformer runs at encoding time, and the tokenizer is the vocabulary's `tokenizer.json`, so "
        "it needs neither mecab nor jieba.",
        "",
        f"- teacher: `{teacher['name']}` ({teacher['dimension']}-d), reduced to {dim} dimensions by PCA",
        f"- piece weights: {scheme}, p(piece) from the vocabulary's unigram scores",
    ]
    if meta.get("matryoshka_dims"):
        body.append(f"- trained for the prefixes {', '.join(map(str, meta['matryoshka_dims']))} (Matryoshka)")
    if normalizer := meta.get("normalizer"):  # kept by every stage after `kalbert vocab normalize`
        body.append(f"- normalizer version {normalizer['version']}: Traditional Chinese read as Simplified "
                    f"({normalizer['characters_mapped']:,} characters mapped inside `spiece.model` and "
                    f"`tokenizer.json`, OpenCC {normalizer['opencc_version']} tables), so zh-TW/zh-HK text needs "
                    "no conversion")
    body += [
        "",
        "```python",
        "from sentence_transformers import SentenceTransformer",
        f"model = SentenceTransformer('PATH/TO/THIS/FOLDER')  # truncate_dim={smaller} for smaller vectors",
        f"embeddings = model.encode({USAGE})",
        "",
        "from model2vec import StaticModel  # the same vectors, without torch",
        "model = StaticModel.from_pretrained('PATH/TO/THIS/FOLDER')",
        "```",
        "",
        "## Measured metrics",
        "",
    ]
    body += metrics_and_stages(meta, "None measured (pass `--eval korsts:dev`).")
    return "\n".join(front + body)
