"""Long passages cut into overlapping windows (the best-matching read, the best read one scoring) and rerank scores
fused with the first stage's order (its ranks, or a hybrid's scores)."""

from __future__ import annotations

import numpy as np
import pytest

from kalbert.ranking import rerank_fusion
from kalbert.rerank.candidates import rerank
from kalbert.rerank.model import matching_window_texts, matching_windows, passage_windows
from kalbert.search.reranking import fusion_record

LONG = " ".join(f"서울{i}번째 문장은 한강과 도시의 역사를 이야기한다." for i in range(30))


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def _passage_part(window: list[int], types: list[int]) -> list[int]:
    """The passage's tokens of a pair: the second segment without its closing separator."""
    return [token for token, kind in zip(window, types, strict=True) if kind == 1][:-1]


def test_a_passage_that_fits_is_one_window_and_a_long_one_overlapping_windows_that_cover_it(tiny_reranker):
    tokenizer = _tokenizer(tiny_reranker)
    query = "서울은 어디인가?"
    owners, windows = passage_windows(tokenizer, query, ["짧은 문장이다.", LONG], max_length=48, stride=8)
    assert owners.tolist()[0] == 0 and (owners[1:] == 1).all() and len(owners) > 3
    assert windows["input_ids"][0] == tokenizer(query, "짧은 문장이다.")["input_ids"]  # as the pair reads whole
    parts = [_passage_part(ids, types) for ids, types in zip(windows["input_ids"][1:], windows["token_type_ids"][1:],
                                                              strict=True)]
    assert all(len(ids) <= 48 for ids in windows["input_ids"])
    whole = tokenizer(LONG, add_special_tokens=False)["input_ids"]
    assert parts[0] == whole[: len(parts[0])] and parts[-1] == whole[-len(parts[-1]):]
    for earlier, later in zip(parts, parts[1:], strict=False):  # consecutive windows share 8 tokens
        assert earlier[-8:] == later[:8]
    assert sum(len(part) for part in parts) - 8 * (len(parts) - 1) == len(whole)  # every token read, once per edge


def test_a_long_query_keeps_at_most_half_the_pair(tiny_reranker):
    tokenizer = _tokenizer(tiny_reranker)
    _, windows = passage_windows(tokenizer, LONG, [LONG], max_length=48, stride=64)
    assert all(types.count(0) - 2 <= 48 // 2 for types in windows["token_type_ids"])
    assert all(len(ids) == 48 for ids in windows["input_ids"][:-1])


def test_a_windowed_reranker_scores_a_passage_by_its_best_window(tiny_reranker):
    from kalbert.rerank import load_reranker

    reranker = load_reranker(tiny_reranker, precision="fp32")
    assert reranker.stride == 64 and reranker.max_length == 48 and reranker.windows_per_passage == 1
    reranker.stride, reranker.windows_per_passage = 8, None
    _, windows = passage_windows(reranker.tokenizer, "서울은?", [LONG], 48, 8)
    each = [reranker.score_encoded({key: [value[i]] for key, value in windows.items()})[0]
            for i in range(len(windows["input_ids"]))]
    assert len(each) > 3 and np.isclose(reranker.score("서울은?", [LONG])[0], max(each), atol=1e-5)


def test_a_passage_is_read_in_the_window_that_shares_the_query_s_rare_tokens(tiny_reranker):
    from kalbert.rerank import load_reranker

    reranker = load_reranker(tiny_reranker, precision="fp32")
    reranker.stride = 8
    needle = LONG.replace("서울27번째", "부산항구에서")  # a word only one late window holds
    query = "부산항구에서 서울은?"
    owners, windows = passage_windows(reranker.tokenizer, query, ["짧은 문장이다.", needle], 48, 8)
    keep = matching_windows(windows, owners, 1)
    assert keep[0] == 0 and len(keep) == 2  # a one-window passage keeps its window
    holding = [i for i in range(1, len(owners))
               if "부산항구" in reranker.tokenizer.decode(windows["input_ids"][i]).replace(" ", "")]
    assert keep[1] in holding and keep[1] > 2
    assert len(matching_windows(windows, owners, 99)) == len(owners)  # more than a passage has: every window
    alone = reranker.score_encoded({key: [value[keep[1]]] for key, value in windows.items()})[0]
    assert np.isclose(reranker.score(query, ["짧은 문장이다.", needle])[1], alone, atol=1e-5)


def test_fusion_keeps_the_first_stage_order_where_the_reranker_barely_separates():
    scores = np.array([0.0, 0.01, 5.0])  # first-stage order: 0, 1, 2
    assert np.array_equal(rerank_fusion(scores, 0.0), scores)
    fused = rerank_fusion(scores, 0.6)
    assert fused[0] > fused[1] and fused[2] == fused.max()  # a near tie stays put, a clear winner rises


def test_score_fusion_adds_the_standardised_first_stage_scores():
    scores, first = np.array([1.0, 2.0, 3.0]), np.array([0.9, 0.5, 0.1])
    standard = (scores - scores.mean()) / scores.std()
    fused = rerank_fusion(scores, 1.0, first)
    assert np.allclose(fused, standard + (first - first.mean()) / first.std(), atol=1e-5)
    with pytest.raises(ValueError, match="2 first-stage scores for 3 reranked candidates"):
        rerank_fusion(scores, 1.0, first[:2])


def test_a_hybrid_first_stage_is_fused_by_score_where_the_reranker_says_so():
    class Scorer:
        name, first_stage_weight, hybrid_score_weight = "s", 0.6, 1.0

        def score(self, query, passages):
            return np.array([0.0, 0.1, 0.2])

    ranking, corpus = np.array([[0, 1, 2]]), ["a", "b", "c"]
    by_rank = rerank(ranking, corpus, ["q"], Scorer(), 3).ranking
    by_score = rerank(ranking, corpus, ["q"], Scorer(), 3, hybrid_scores=np.array([[0.3, 0.29, 0.1]])).ranking
    assert by_rank.tolist() == [[2, 1, 0]] and by_score.tolist() == [[1, 2, 0]]
    assert fusion_record(Scorer(), hybrid=True) == {"fusion": "score", "hybrid_score_weight": 1.0}
    assert fusion_record(Scorer(), hybrid=False) == {"fusion": "rank", "first_stage_weight": 0.6}


def test_rerank_orders_by_the_fused_score():
    class Scorer:
        name, first_stage_weight = "s", 0.6

        def score(self, query, passages):
            return np.array([0.0, 0.01, 5.0])

    ranking = np.array([[3, 1, 2, 0]])
    assert rerank(ranking, ["a", "b", "c", "d"], ["q"], Scorer(), 3).ranking.tolist() == [[2, 3, 1, 0]]


def test_training_reads_a_long_passage_as_the_window_scoring_reads(tiny_reranker):
    tokenizer = _tokenizer(tiny_reranker)
    needle = LONG.replace("서울27번째", "부산항구에서")
    query = "부산항구에서 서울은?"
    short, window = matching_window_texts(tokenizer, query, ["짧은 문장이다.", needle], 48, 8)
    assert short == "짧은 문장이다." and "부산항구에서" in window and window in needle and len(window) < len(needle)
    owners, windows = passage_windows(tokenizer, query, ["짧은 문장이다.", needle], 48, 8)
    read = windows["input_ids"][matching_windows(windows, owners, 1)[1]]
    again = tokenizer(query, window)["input_ids"]  # the text tokenizes back to the window scoring reads, bar the
    assert abs(len(again) - len(read)) <= 2 and again[-12:] == read[-12:]  # word pieces at its cut edges
    assert matching_window_texts(tokenizer, query, ["짧은 문장이다."], 48, 8) == ["짧은 문장이다."]
