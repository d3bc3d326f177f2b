"""The settings of `kalbert vocab build`, `extend` and `normalize`, recorded in each vocabulary's kalbert.json."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kalbert.config import DEFAULT_SEED, Language


@dataclass
class VocabBuildConfig:
    """Everything that decides a vocabulary; recorded verbatim in its kalbert.json."""

    lang: Language
    """language(s) of the vocabulary"""
    inputs: list[str]
    """data-set names (kowiki, nsmc, zh-laws, zh-clue) or .txt/.txt.gz/.jsonl paths"""
    out: str
    """output folder"""
    vocab_size: int = 32000
    """pieces in the vocabulary, the five special pieces included"""
    model_type: Literal["unigram", "bpe"] = "unigram"
    """"unigram" (ALBERT's choice) or "bpe"."""
    segmenter: Literal["auto", "none", "mecab", "jieba"] = "auto"
    """"auto": mecab-ko for Hangul, jieba for Han; "none": plain SentencePiece, for comparison; "mecab" or
    "jieba": only that analyzer (for ko+zh: the other script's words are left whole to SentencePiece)."""
    max_sentences: int = 1_000_000
    """sentences sampled for training (all of them if the corpus has fewer)"""
    character_coverage: float = 0.9995
    """share of characters covered by single-character pieces; rarer ones become <unk>, except the
    required ones (every Korean syllable seen, KS X 1001 Hangul, GB 2312 hanzi). No byte fallback:
    transformers 5's AlbertTokenizer rebuilds the Unigram model without it, so HF and SentencePiece
    would disagree."""
    lang_temperature: float = 2.0
    """ko+zh: sample language l with probability proportional to n_l ** (1 / T)"""
    min_chars: int = 5
    """shorter sentences are skipped"""
    heldout_sentences: int = 2000
    """held-out sentences per language (never trained on) for the card's stats"""
    seed: int = DEFAULT_SEED
    """seed of the sentence sample"""
    processes: int = 0
    """segmentation processes (0: all cores)"""
    max_piece_length: int = 16
    """longest piece, in characters"""
    traditional_to_simplified: Literal["off", "unknown", "all"] = "off"
    """a Traditional -> Simplified character map (OpenCC) in the normalizer, added after training: "unknown"
    maps the Traditional characters the vocabulary has no piece for (text it reads already keeps its ids),
    "all" every one (Korean Hanja such as 國 then read as 国); the same as `kalbert vocab normalize` after"""


@dataclass
class VocabExtendConfig:
    """How to extend a vocabulary; recorded in the new folder's kalbert.json."""

    base: str
    """vocabulary folder (or model folder with spiece.model) to extend"""
    out: str
    words: str | None = None
    """file with one word per line to add (as word-initial pieces)"""
    from_corpus: list[str] | None = None
    """text files or data-set names to mine frequent analyzer units from"""
    max_new: int = 1000
    """at most this many pieces added"""
    min_count: int = 5
    """--from-corpus: minimum frequency of a candidate"""
    max_corpus_sentences: int = 200_000
    """--from-corpus: sentences read at most"""
    lang: Language = "ko"
    """language of --from-corpus text, for the analyzer (ko, zh, ko+zh)"""


@dataclass
class VocabNormalizeConfig:
    """Which folder gets the Traditional -> Simplified normalizer; the new folder's record names both."""

    folder: str
    """vocabulary or model folder (a SentenceTransformer or QA model too): its spiece.model and tokenizer.json"""
    out: str
    """the new version: a copy of FOLDER with the new normalizer"""
    traditional_to_simplified: Literal["unknown", "all"] = "unknown"
    """"unknown": map only Traditional characters without a piece, so text the folder reads already keeps its
    ids; "all": also those with one (Korean Hanja such as 國), whose ids then change"""
