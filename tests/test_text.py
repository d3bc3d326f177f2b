"""Normalisation, sentence splitting and segmentation."""

from __future__ import annotations

import pickle
import unicodedata

import pytest

from kalbert.errors import KalbertError
from kalbert.text import BOUNDARY, make_segmenter, normalize_text, segment_lines, split_sentences


def test_normalize_composes_hangul_and_keeps_everything_else():
    decomposed = unicodedata.normalize("NFD", "배우들의 연기")
    assert decomposed != "배우들의 연기"
    assert normalize_text(decomposed) == "배우들의 연기"
    assert normalize_text("你好，世界！ＡＢＣ") == "你好，世界！ＡＢＣ"  # no NFKC folding
    assert normalize_text("Seoul Café") == "Seoul Café"  # no lower-casing, no accent stripping
    assert normalize_text(" a\u00a0\u3000b\u200b c\t\n") == "a b c"


def test_split_sentences_korean_and_chinese():
    assert split_sentences("원주율은 3.14이다. 정말? 네! www.naver.com 참고") == [
        "원주율은 3.14이다.",
        "정말?",
        "네!",
        "www.naver.com 참고",
    ]
    assert split_sentences("我们是朋友。你呢？他说：“好。”然后走了") == [
        "我们是朋友。",
        "你呢？",
        "他说：“好。”",
        "然后走了",
    ]


def test_mecab_splits_inside_words_only():
    segmenter = make_segmenter("ko")
    assert segmenter.split_words(["배우들의 연기도"]) == [[["배우", "들", "의"], ["연기", "도"]]]
    assert segmenter.segment(["배우들의 연기도"]) == [f"배우{BOUNDARY}들{BOUNDARY}의 연기{BOUNDARY}도"]
    assert segmenter.boundaries("배우들의 연기도") == {2, 3, 7}


def test_router_sends_scripts_to_their_analyzer():
    segmenter = make_segmenter("ko+zh")
    (words,) = segmenter.split_words(["2016년에 我们是朋友"])
    assert words[0] == ["2016", "년", "에"]
    assert words[1] == ["我们", "是", "朋友"]
    ko_only = make_segmenter("ko").split_words(["我们是朋友"])
    assert ko_only == [[["我们是朋友"]]]  # Han runs are left whole for a Korean vocabulary


def test_one_analyzer_leaves_the_other_script_whole():
    line = ["배우들의 연기도 我们是朋友"]
    jieba_only, mecab_only = make_segmenter("ko+zh", "jieba"), make_segmenter("ko+zh", "mecab")
    assert jieba_only.split_words(line) == [[["배우들의"], ["연기도"], ["我们", "是", "朋友"]]]
    assert mecab_only.split_words(line) == [[["배우", "들", "의"], ["연기", "도"], ["我们是朋友"]]]
    assert (jieba_only.name, mecab_only.name) == ("jieba", "mecab")
    with pytest.raises(KalbertError, match="does not analyse ko text"):
        make_segmenter("ko", "jieba")


def test_pieces_always_concatenate_to_the_word():
    segmenter = make_segmenter("ko+zh")
    lines = ["(주)오소에서 O2O 서비스를 ㅋㅋㅋ 했다ㅎ", "第一条 为了规范口岸开放，提高效率。", "ㄱ ㅏ 韓國語"]
    for line, words in zip(lines, segmenter.split_words(lines), strict=True):
        assert ["".join(pieces) for pieces in words] == line.split()


def test_analysis_does_not_depend_on_what_else_is_segmented():
    lines = ["대한민국 형사소송법 제282조는 필요적 변호에 대한 조문이다", "예시들도 달한다 타르네에서 대한매일 내의"]
    together = make_segmenter("ko").segment(lines)
    alone = [make_segmenter("ko").segment([line])[0] for line in lines]
    word_by_word = [" ".join(make_segmenter("ko").segment([w])[0] for w in line.split()) for line in lines]
    assert together == alone == word_by_word


def test_none_segmenter_is_identity():
    segmenter = make_segmenter("ko", "none")
    assert not segmenter.enabled
    assert segmenter.segment(["배우들의 연기도"]) == ["배우들의 연기도"]


def test_parallel_segmentation_keeps_order():
    segmenter = make_segmenter("ko")
    lines = [f"{i}번째 문장에서 배우들의 연기도 좋았다" for i in range(300)]
    assert list(segment_lines(lines, segmenter, processes=2, chunk_size=37)) == segmenter.segment(lines)
    assert pickle.loads(pickle.dumps(segmenter)).segment(lines[:2]) == segmenter.segment(lines[:2])


def test_unknown_language_and_method():
    with pytest.raises(KalbertError, match="unknown language"):
        make_segmenter("ja")
    with pytest.raises(KalbertError, match="unknown segmenter"):
        make_segmenter("ko", "kiwi")


def test_missing_mecab_dictionary_is_a_clear_error(monkeypatch):
    import mecab

    def broken(*args, **kwargs):
        raise RuntimeError("param.cpp(69) [ifs] no such file or directory: dicrc")

    monkeypatch.setattr(mecab, "MeCab", broken)
    with pytest.raises(KalbertError, match="pip install python-mecab-ko-dic"):
        make_segmenter("ko").segment(["배우들의"])


def test_cache_limit_never_loses_entries_in_use(monkeypatch):
    import kalbert.text.segment as segment_module

    monkeypatch.setattr(segment_module, "_CACHE_LIMIT", 3)
    segmenter = make_segmenter("ko+zh")
    lines = ["배우들의 연기도 좋았다 我们是朋友", "영화가 정말 재미있었다 你好世界", "배우들의 영화가 我们是朋友"]
    for _ in range(3):
        assert [len(words) for words in segmenter.split_words(lines)] == [4, 4, 3]

