"""Korean segmentation throughput: kalbert's cached, batched segmenter vs the naive mecab loop.

    python benchmarks/segmentation_speed.py --mb 20 [--vocab-build-mb 100]

Runs, in one process on the same kowiki text: (a) the naive loop `mecab.MeCab().morphs(line)`,
(b) the raw tagger's string output per line, (c) kalbert with 1 process and (d) with 2 processes
(cold caches), and reports MB/s and the ratio to (a). It also measures how often kalbert's
out-of-sentence word analysis gives the same inner-word boundaries as in-sentence analysis, and
optionally the wall time of `kalbert vocab build` (32k) on the first N MB of Korean text.
Writes benchmarks/segmentation_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import mecab

from kalbert.data import data_path
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.text import make_segmenter, normalize_text, segment_lines

HERE = Path(__file__).parent


def read_lines(megabytes: float) -> list[str]:
    """Non-empty normalised kowiki lines adding up to ``megabytes`` of UTF-8."""
    lines, size = [], 0
    with gzip.open(data_path("kowiki")[0], "rt", encoding="utf-8") as handle:
        for raw in handle:
            line = normalize_text(raw)
            if line:
                lines.append(line)
                size += len(line.encode("utf-8"))
                if size >= megabytes * 1e6:
                    break
    return lines


def megabytes(lines: list[str]) -> float:
    return sum(len(line.encode("utf-8")) for line in lines) / 1e6


def timed(func, lines: list[str]) -> float:
    """MB/s of ``func(lines)``."""
    start = time.perf_counter()
    func(lines)
    return megabytes(lines) / (time.perf_counter() - start)


def naive_loop(lines: list[str]) -> None:
    tagger = mecab.MeCab()
    for line in lines:
        tagger.morphs(line)


def raw_tagger(lines: list[str]) -> None:
    import _mecab

    tagger = mecab.MeCab()._tagger
    for line in lines:
        lattice = _mecab.Lattice()
        lattice.add_request_type(_mecab.MECAB_ALLOCATE_SENTENCE)
        lattice.set_sentence(line)
        tagger.parse(lattice)
        lattice.to_string()


def kalbert_segment(processes: int):
    def run(lines: list[str]) -> None:
        for _ in segment_lines(lines, make_segmenter("ko"), processes=processes):
            pass

    return run


def agreement(lines: list[str]) -> float:
    """Share of Hangul-bearing words whose inner boundaries match in-sentence mecab analysis."""
    tagger = mecab.MeCab()
    segmenter = make_segmenter("ko")
    same = total = 0
    for line in lines:
        in_sentence: set[int] = set()
        for morpheme in tagger.parse(line):
            in_sentence.update((morpheme.span.start, morpheme.span.end))
        ours = segmenter.boundaries(line)
        position = 0
        for word in line.split():
            start = line.index(word, position)
            position = start + len(word)
            if not any("\uac00" <= c <= "\ud7a3" for c in word):
                continue
            inner = set(range(start + 1, position))
            total += 1
            same += (in_sentence & inner) == (ours & inner)
    return same / max(total, 1)


def vocab_build_seconds(mb: float) -> float:
    from kalbert.vocab import VocabBuildConfig, build_vocab

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "ko.txt"
        corpus.write_text("\n".join(read_lines(mb)) + "\n", encoding="utf-8")
        start = time.perf_counter()
        build_vocab(VocabBuildConfig(lang="ko", inputs=[str(corpus)], out=str(Path(tmp) / "vocab"), vocab_size=32000))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=20, help="MB of kowiki for kalbert's segmenter")
    parser.add_argument("--naive-mb", type=float, default=3, help="MB for the (slow) naive loops")
    parser.add_argument("--vocab-build-mb", type=float, default=0, help="also time a 32k vocab build on this many MB")
    args = parser.parse_args()
    lines = read_lines(args.mb)
    naive_lines = lines[: max(1, int(len(lines) * args.naive_mb / args.mb))]
    result = {
        "command": "python " + " ".join(sys.argv),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "hardware": hardware_block(),
        "load_average_1min_at_start": os.getloadavg()[0],
        "text": f"kowiki, first {megabytes(lines):.1f} MB (naive loops on the first {megabytes(naive_lines):.1f} MB)",
        "naive_morphs_mb_s": timed(naive_loop, naive_lines),
        "raw_tagger_mb_s": timed(raw_tagger, naive_lines),
        "kalbert_1proc_mb_s": timed(kalbert_segment(1), lines),
        "kalbert_2proc_mb_s": timed(kalbert_segment(2), lines),
        "word_agreement_with_in_sentence_analysis": agreement(naive_lines[:3000]),
    }
    result["speedup_1proc_vs_naive"] = result["kalbert_1proc_mb_s"] / result["naive_morphs_mb_s"]
    result["speedup_2proc_vs_naive"] = result["kalbert_2proc_mb_s"] / result["naive_morphs_mb_s"]
    if args.vocab_build_mb:
        result["vocab_build_mb"] = args.vocab_build_mb
        result["vocab_build_32k_seconds"] = vocab_build_seconds(args.vocab_build_mb)
    (HERE / "segmentation_speed.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    rows = [
        "| method | MB/s | vs naive |",
        "|---|---|---|",
        f"| naive `mecab.MeCab().morphs(line)` loop | {result['naive_morphs_mb_s']:.2f} | 1.00x |",
        f"| raw tagger string output | {result['raw_tagger_mb_s']:.2f} "
        f"| {result['raw_tagger_mb_s'] / result['naive_morphs_mb_s']:.2f}x |",
        f"| kalbert, 1 process | {result['kalbert_1proc_mb_s']:.2f} | {result['speedup_1proc_vs_naive']:.2f}x |",
        f"| kalbert, 2 processes | {result['kalbert_2proc_mb_s']:.2f} | {result['speedup_2proc_vs_naive']:.2f}x |",
    ]
    extra = ""
    if args.vocab_build_mb:
        extra = (f"\n`kalbert vocab build` (32k unigram, mecab) on {args.vocab_build_mb:.0f} MB of Korean: "
                 f"{result['vocab_build_32k_seconds']:.0f} s wall.\n")
    markdown = f"""# Korean segmentation throughput

Command: `{result['command']}` on {describe_cpu(result['hardware'])}, {result['machine']}
(1-minute load average at start:
{result["load_average_1min_at_start"]:.1f}; the rows ran one after another, so other load on the machine
can skew the ratios); text: {result['text']}.

{chr(10).join(rows)}

Inner-word boundaries identical to in-sentence mecab analysis for
{100 * result['word_agreement_with_in_sentence_analysis']:.2f}% of Hangul words.
{extra}"""
    (HERE / "segmentation_speed.md").write_text(markdown, encoding="utf-8")
    print(markdown)


if __name__ == "__main__":
    main()
