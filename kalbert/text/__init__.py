"""Text handling: normalisation, sentence splitting and morphological segmentation."""

from kalbert.text.normalize import normalize_text
from kalbert.text.segment import BOUNDARY, Segmenter, make_segmenter, segment_lines
from kalbert.text.sentences import split_sentences

__all__ = ["BOUNDARY", "Segmenter", "make_segmenter", "normalize_text", "segment_lines", "split_sentences"]
