"""`kalbert search query` and `kalbert serve` rerank with the shipped reranker by default, where the checkout has
it, reading long passages in its recorded windows and keeping some of the first stage's order."""

from __future__ import annotations

from pathlib import Path

import pytest

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "rerank-ko-zh-small"


@pytest.mark.skipif(not SHIPPED.is_dir(), reason="this checkout ships no reranker")
def test_the_shipped_reranker_is_the_default_and_reads_as_it_was_picked(monkeypatch):
    from kalbert.rerank.model import load_reranker
    from kalbert.search import reranking

    monkeypatch.setattr(reranking, "SHIPPED_RERANKER", SHIPPED)
    assert reranking.default_reranker() == SHIPPED
    reranker = load_reranker(SHIPPED)
    assert reranker.windows == {"tokens": 128, "stride": 32, "per_passage": 1} and reranker.first_stage_weight == 0.6
    scores = reranker.score("세종대왕은 언제 훈민정음을 반포했나?",
                            ["세종대왕은 1446년에 훈민정음을 반포하였다.", "서울은 한강을 끼고 있는 도시이다."])
    assert scores[0] > scores[1]
