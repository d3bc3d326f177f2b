"""How kalbert's models read Traditional Chinese: DRCD (zh-TW) extractive QA and passage retrieval, with the same
weights read three ways.

- **published, original vocabulary**: DRCD as published through the vocabulary the model was trained on, which
  was built on Simplified text (what a plain load did before `kalbert vocab normalize`);
- **published, normalized vocabulary**: DRCD as published through the same vocabulary with the Traditional ->
  Simplified normalizer (`kalbert vocab normalize`): no opencc call, ids of known text unchanged;
- **opencc t2s, original vocabulary**: converted to Simplified first (what the QA verbs and BM25 do).

The two vocabularies differ in their normalizer only (same pieces and ids): the script swaps the charsmap of one
folder's ``spiece.model`` and ``tokenizer.json`` for the other's. QA: EM/F1 on ``drcd:test`` (CMRC 2018's official
metric). Retrieval: the ``drcd-retrieval`` task of ``kalbert bench`` (each test question among every paragraph of
the DRCD files; nDCG@10 and MRR@10 x100, the model's query/passage prompts). Also the share of ``<unk>`` pieces in
the DRCD paragraphs per way. Reports a measured split once; nothing is chosen on it.

    python benchmarks/traditional_reading.py --qa models/qa-ko-zh-small \\
        --sentence models/sbert-ko-zh-retrieval --sentence-original models/sbert-ko-zh-small

Writes benchmarks/results/traditional_reading.{json,md} (or --out PREFIX); the normalized / original copies go
under --work (default outputs/traditional_reading).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from kalbert.bench.metrics import ranking_metrics
from kalbert.bench.retrieval import dense_ranking, load_retrieval
from kalbert.bench.tasks import get_task
from kalbert.data import load_qa
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.tasks.qa.data import simplified
from kalbert.vocab.config import VocabNormalizeConfig
from kalbert.vocab.files import SPIECE, load_model_proto
from kalbert.vocab.normalize import normalize_folder
from kalbert.vocab.normalizer import charsmap_sha256, rewrite_tokenizer_json, with_charsmap

WAYS = ("published, original vocabulary", "published, normalized vocabulary", "opencc t2s, original vocabulary")
TOKENIZER_JSON = "tokenizer.json"


def _charsmap(folder: Path) -> bytes:
    return load_model_proto(folder / SPIECE).normalizer_spec.precompiled_charsmap


def with_normalizer_of(folder: Path, donor: Path, out: Path) -> Path:
    """A copy of ``folder`` at ``out`` whose vocabulary normalises as ``donor``'s (the same vocabulary)."""
    old, new = load_model_proto(folder / SPIECE), load_model_proto(donor / SPIECE)
    if [p.piece for p in old.pieces] != [p.piece for p in new.pieces]:
        sys.exit(f"error: {folder} and {donor} have different vocabularies; pass the model this one was trained from")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(folder, out)
    (out / SPIECE).write_bytes(with_charsmap(old, new.normalizer_spec.precompiled_charsmap).SerializeToString())
    rewrite_tokenizer_json(out / TOKENIZER_JSON, old.normalizer_spec.precompiled_charsmap,
                           new.normalizer_spec.precompiled_charsmap)
    return out


def unknown_share(folder: Path, texts: list[str]) -> float:
    """Percent of the pieces of ``texts`` that are ``<unk>`` through ``folder``'s tokenizer.json."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_JSON))
    tokenizer.no_truncation()  # a QA tokenizer.json truncates question/context pairs
    tokenizer.no_padding()
    unk = tokenizer.token_to_id("<unk>")
    ids = [i for encoding in tokenizer.encode_batch(texts, add_special_tokens=False) for i in encoding.ids]
    return round(100.0 * sum(i == unk for i in ids) / max(1, len(ids)), 3)


def qa_scores(folder: Path, converted: bool) -> dict[str, Any]:
    from kalbert.tasks.qa.model import QAModel
    from kalbert.tasks.qa.train import score_examples

    qa = QAModel(folder, precision="fp32")
    examples = load_qa("drcd", "test")
    if converted:
        examples = [simplified(e) for e in examples]
    started = time.perf_counter()
    scores, _ = score_examples(qa.model, qa.tokenizer, "drcd", examples, qa.settings, qa.bf16)
    return {**{k: round(v, 2) for k, v in scores.items()}, "n": len(examples),
            "unk_percent": unknown_share(folder, sorted({e.context for e in examples})),
            "seconds": round(time.perf_counter() - started, 1)}


def retrieval_scores(folder: Path, converted: bool) -> dict[str, Any]:
    from sentence_transformers import SentenceTransformer

    task = get_task("drcd-retrieval")
    data = load_retrieval(task)
    if converted:
        data = data.simplified()
    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    started = time.perf_counter()
    passages = model.encode_document(data.corpus, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    queries = model.encode_query(data.queries[task.split], batch_size=64, normalize_embeddings=True,
                                 convert_to_numpy=True)
    scores = ranking_metrics(dense_ranking(queries, passages, 100), data.gold[task.split])
    return {"ndcg_at_10": round(scores["ndcg_at_10"], 2), "mrr_at_10": round(scores["mrr_at_10"], 2),
            "recall_at_1": round(scores["recall_at_1"], 2), "n": len(data.queries[task.split]),
            "n_corpus": len(data.corpus), "max_seq_length": model.max_seq_length,
            "unk_percent": unknown_share(folder, data.corpus), "seconds": round(time.perf_counter() - started, 1)}


def _ways(original: Path, normalized: Path) -> list[tuple[str, Path, bool]]:
    return [(WAYS[0], original, False), (WAYS[1], normalized, False), (WAYS[2], original, True)]


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Reading Traditional Chinese (DRCD)", "",
             f"`{report['command']}` on {describe_cpu(report['hardware'])}, fp32, load average "
             f"{report['load_avg'][0]} before / {report['load_avg'][1]} after. Test split, reported once.", ""]
    if "qa" in report:
        lines += [f"Extractive QA, `drcd:test` ({report['qa']['model']}):", "",
                  "| DRCD read as | EM | F1 | <unk> % of paragraph pieces |", "|---|---:|---:|---:|"]
        lines += [f"| {way} | {r['exact_match']} | {r['f1']} | {r['unk_percent']} |"
                  for way, r in report["qa"]["ways"].items()]
        lines.append("")
    if "retrieval" in report:
        lines += [f"Passage retrieval, `drcd-retrieval` ({report['retrieval']['model']}):", "",
                  "| DRCD read as | nDCG@10 | MRR@10 | R@1 | <unk> % of paragraph pieces |",
                  "|---|---:|---:|---:|---:|"]
        lines += [f"| {way} | {r['ndcg_at_10']} | {r['mrr_at_10']} | {r['recall_at_1']} | {r['unk_percent']} |"
                  for way, r in report["retrieval"]["ways"].items()]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--qa", type=Path, help="a QA folder on the original vocabulary (normalized here)")
    parser.add_argument("--sentence", type=Path, help="a sentence-model folder on the normalized vocabulary")
    parser.add_argument("--sentence-original", type=Path,
                        help="the model --sentence was trained from, on the original vocabulary")
    parser.add_argument("--work", type=Path, default=Path("outputs/traditional_reading"))
    parser.add_argument("--out", default="benchmarks/results/traditional_reading")
    args = parser.parse_args()
    if args.sentence and not args.sentence_original:
        parser.error("--sentence needs --sentence-original (the same vocabulary without the normalizer)")
    load_before = round(os.getloadavg()[0], 2)
    report: dict[str, Any] = {"command": "python benchmarks/traditional_reading.py " + shlex.join(sys.argv[1:]),
                              "hardware": hardware_block()}
    args.work.mkdir(parents=True, exist_ok=True)
    if args.qa:
        normalized, _ = normalize_folder(VocabNormalizeConfig(folder=str(args.qa), out=str(args.work / "qa-t2s")),
                                         overwrite=True)
        report["qa"] = {"model": str(args.qa), "split": "drcd:test", "normalized_charsmap_sha256":
                        charsmap_sha256(_charsmap(normalized)),
                        "ways": {way: qa_scores(folder, converted) for way, folder, converted
                                 in _ways(args.qa, normalized)}}
    if args.sentence:
        original = with_normalizer_of(args.sentence, args.sentence_original, args.work / "sentence-original")
        report["retrieval"] = {"model": str(args.sentence), "task": "drcd-retrieval", "split": "drcd:test",
                               "original_vocabulary_from": str(args.sentence_original),
                               "ways": {way: retrieval_scores(folder, converted) for way, folder, converted
                                        in _ways(original, args.sentence)}}
    report["load_avg"] = [load_before, round(os.getloadavg()[0], 2)]
    atomic_write_json(Path(f"{args.out}.json"), report)
    atomic_write_text(Path(f"{args.out}.md"), markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
