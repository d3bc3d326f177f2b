"""The README card of an index folder, rendered from its ``kalbert.json``."""

from __future__ import annotations

from typing import Any


def render_card(record: dict[str, Any]) -> str:
    engine = record["engine"] + (" + BM25" if record["lexical"] == "bm25" else "")
    where = f" in Milvus at `{record['engine_params']['uri']}`" if record["engine"] == "milvus" else ""
    lines = [
        "# Search index", "",
        f"{record['passages']:,} passages of {record['documents']:,} documents ({record['duplicates']:,} duplicate "
        f"passages left out), encoded by `{record['model']['path']}` into {record['dim']}-d vectors; "
        f"engine {engine}{where}.", "",
        f"Passages: at most {record['passage_tokens']} tokens, cut at sentences, {record['stride']} tokens of "
        "overlap.", "",
        "```bash",
        'kalbert search query --index PATH/TO/THIS/FOLDER "..." -k 10',
        "```", "",
        f"Made by `{record['command']}` in {record['seconds']['total']} s.", "",
    ]
    return "\n".join(lines)
