"""Write a randomly initialised ALBERT checkpoint (with a vocab's tokenizer) for sentence-model runs.

Stand-in for a pretrained checkpoint when none exists yet: it lets the encode-speed benchmark and the
distillation-vs-STS-only comparison run today. Sizes follow kalbert's pretraining presets (tiny, small).

    python benchmarks/sentence_random_albert.py --vocab outputs/vocab-ko-8k --preset tiny \
        --out outputs/albert-ko-tiny-random
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

PRESETS = {
    "tiny": {"embedding_size": 128, "hidden_size": 312, "num_hidden_layers": 4, "intermediate_size": 1248,
             "num_attention_heads": 12},
    "small": {"embedding_size": 128, "hidden_size": 768, "num_hidden_layers": 6, "intermediate_size": 3072,
              "num_attention_heads": 12},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", required=True, help="vocab folder from `kalbert vocab build`")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()

    import torch
    from transformers import AlbertConfig, AlbertModel, AutoTokenizer

    vocab = Path(args.vocab)
    tokenizer = AutoTokenizer.from_pretrained(str(vocab), local_files_only=True)
    torch.manual_seed(args.seed)
    config = AlbertConfig(vocab_size=len(tokenizer), max_position_embeddings=512, **PRESETS[args.preset])
    out = Path(args.out)
    AlbertModel(config).save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    shutil.copyfile(vocab / "spiece.model", out / "spiece.model")
    languages = json.loads((vocab / "kalbert.json").read_text(encoding="utf-8")).get("languages", [])
    meta = {"kind": "random-init", "preset": args.preset, "vocab": str(vocab), "languages": languages,
            "seed": args.seed}
    (out / "kalbert.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"random {args.preset} ALBERT: {out}")


if __name__ == "__main__":
    main()
