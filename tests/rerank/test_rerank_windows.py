"""Long passages read in overlapping windows (the best one scores) and rerank scores fused with the first stage's
order."""

from __future__ import annotations

import numpy as np

from kalbert.ranking import rerank_fusion
from kalbert.rerank.candidates import rerank
from kalbert.rerank.model import passage_windows

LONG = " ".join(f"서울{i}번째 문장은 한강과 도시의 역사를 이야기한다." for i in range(30))


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def _tokens(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_a_passage_that_fits_is_one_window_and_a_long_one_overlapping_windows_that_cover_it(tiny_reranker):
    tokenizer = _tokenizer(tiny_reranker)
    owners, texts = passage_windows(tokenizer, "서울은 어디인가?", ["짧은 문장이다.", LONG], max_length=48, stride=8)
    assert owners[0] == 0 and texts[0] == "짧은 문장이다." and (owners[1:] == 1).all() and len(texts) > 3
    windows = texts[1:]
    room = 48 - _tokens(tokenizer, "서울은 어디인가?") - 3
    assert all(_tokens(tokenizer, w) <= room + 1 for w in windows)
    assert LONG.startswith(windows[0]) and LONG.endswith(windows[-1])
    for earlier, later in zip(windows, windows[1:], strict=False):  # consecutive windows share their edge
        assert LONG.index(later) < LONG.index(earlier) + len(earlier)


def test_a_long_query_keeps_at_most_half_the_pair(tiny_reranker):
    tokenizer = _tokenizer(tiny_reranker)
    _, texts = passage_windows(tokenizer, LONG, [LONG], max_length=48, stride=64)
    assert all(_tokens(tokenizer, w) >= 48 // 2 - 3 - 1 for w in texts[:-1])


def test_a_windowed_reranker_scores_a_passage_by_its_best_window(tiny_reranker):
    from kalbert.rerank import load_reranker

    reranker = load_reranker(tiny_reranker, precision="fp32")
    assert reranker.stride == 64 and reranker.max_length == 48
    reranker.stride = 8
    owners, texts = passage_windows(reranker.tokenizer, "서울은?", [LONG], 48, 8)
    each = reranker.score_pairs([("서울은?", text) for text in texts])
    assert np.isclose(reranker.score("서울은?", [LONG])[0], each.max(), atol=1e-5)


def test_fusion_keeps_the_first_stage_order_where_the_reranker_barely_separates():
    scores = np.array([0.0, 0.01, 5.0])  # first-stage order: 0, 1, 2
    assert np.array_equal(rerank_fusion(scores, 0.0), scores)
    fused = rerank_fusion(scores, 0.6)
    assert fused[0] > fused[1] and fused[2] == fused.max()  # a near tie stays put, a clear winner rises


def test_rerank_orders_by_the_fused_score():
    class Scorer:
        name, first_stage_weight = "s", 0.6

        def score(self, query, passages):
            return np.array([0.0, 0.01, 5.0])

    ranking = np.array([[3, 1, 2, 0]])
    assert rerank(ranking, ["a", "b", "c", "d"], ["q"], Scorer(), 3).ranking.tolist() == [[2, 3, 1, 0]]
