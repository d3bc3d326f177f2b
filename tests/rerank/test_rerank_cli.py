"""`kalbert rerank score` writes scored JSONL; wrong folders, depths and passages are one line and exit 2, before
any model loads."""

from __future__ import annotations

import json

import pytest

from kalbert.cli.main import main


def _one_line_error(capsys, says: str) -> None:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err, err


@pytest.fixture
def no_model_load(monkeypatch):
    """Any reranker or cross-encoder load fails the test: bad input must be refused first."""
    import sentence_transformers

    from kalbert.rerank import model

    def refused(*args, **kwargs):
        pytest.fail("a model loaded before the input was checked")

    monkeypatch.setattr(model, "load_reranker", refused)
    monkeypatch.setattr(sentence_transformers, "CrossEncoder", refused)
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", refused)


def test_score_writes_each_line_back_with_scores_and_ranking(tiny_reranker, tmp_path):
    requests = [{"query": "서울은 어느 나라의 도시인가?", "id": 7,
                 "passages": ["서울은 한국의 도시이다.", "부산에는 시장이 있다."]},
                {"query": "长江注入哪里？", "passages": ["长江最后注入东海。"]}]
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests), encoding="utf-8")
    out = tmp_path / "scored.jsonl"
    assert main(["rerank", "score", "--model", str(tiny_reranker), "--input", str(source), "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["id"] for line in lines if "id" in line] == [7] and len(lines) == 2
    first = lines[0]
    assert len(first["scores"]) == 2 and sorted(first["ranking"]) == [0, 1]
    assert first["scores"][first["ranking"][0]] >= first["scores"][first["ranking"][1]]


@pytest.mark.parametrize(("line", "says"), [
    ('{"query": "서울은?", "passages": []}', "line 1 has no passages"),
    ('{"query": "서울은?", "passages": ["서울은 한국의 도시이다.", "  "]}', "line 1: passage 2 of 2 is empty"),
    ('{"query": " ", "passages": ["서울은 한국의 도시이다."]}', "line 1: the query is empty"),
    ('{"question": "서울은?"}', 'line 1 is not a JSON object with a string "query"'),
])
def test_bad_requests_are_one_line_before_the_model_loads(tiny_reranker, tmp_path, capsys, no_model_load, line,
                                                          says):
    source = tmp_path / "pairs.jsonl"
    source.write_text(line + "\n", encoding="utf-8")
    assert main(["rerank", "score", "--model", str(tiny_reranker), "--input", str(source)]) == 2
    _one_line_error(capsys, says)


def test_a_sentence_model_is_not_a_reranker(sentence_model_folder, tmp_path, capsys, no_model_load):
    source = tmp_path / "pairs.jsonl"
    source.write_text('{"query": "q", "passages": ["p"]}\n', encoding="utf-8")
    assert main(["rerank", "score", "--model", str(sentence_model_folder), "--input", str(source)]) == 2
    _one_line_error(capsys, "is a sentence model folder; --model takes a reranker folder")


def test_a_reranker_is_not_a_sentence_model(tiny_reranker):
    from kalbert.errors import KalbertError
    from kalbert.inputs import SENTENCE_START

    with pytest.raises(KalbertError, match="is a reranker folder; --model takes a sentence-model or pretrained"):
        SENTENCE_START.check("--model", str(tiny_reranker))  # what every sentence-model verb's --model is checked by


def test_load_reranker_refuses_a_sentence_model(sentence_model_folder):
    from kalbert.errors import KalbertError
    from kalbert.rerank import load_reranker

    with pytest.raises(KalbertError, match="is a sentence model folder, not a reranker"):
        load_reranker(sentence_model_folder)


@pytest.mark.parametrize(("flags", "says"), [
    (["--depth", "0"], "--depth: expected a positive integer, got 0"),
    (["--eval", "korquad:test"], "korquad:test is a reported split"),
    (["--train", "korquad:val"], "korquad:val is not a train split"),
    (["--negative-margin", "1.5"], "negative margin 1.5 is not in (0, 1]"),
    (["--article-negatives", "9"], "9 article negatives is not between 0 and the 7 negatives"),
])
def test_bad_training_settings_are_one_line(tiny_qa_albert, tmp_path, capsys, no_model_load, flags, says):
    args = ["rerank", "train", "--model", str(tiny_qa_albert), "--out", str(tmp_path / "out"), *flags]
    assert main(args) == 2
    _one_line_error(capsys, says)


def test_train_refuses_a_start_that_is_no_albert_folder(tmp_path, capsys, no_model_load):
    (tmp_path / "vocab").mkdir()
    (tmp_path / "vocab" / "spiece.model").write_bytes(b"")
    assert main(["rerank", "train", "--model", str(tmp_path / "vocab"), "--out", str(tmp_path / "out")]) == 2
    _one_line_error(capsys, "is a vocab folder; --model takes an ALBERT or BERT checkpoint folder")


def test_a_teacher_is_learned_with_the_listnet_loss_only(tiny_qa_albert, tiny_reranker, tmp_path, capsys,
                                                        no_model_load):
    args = ["rerank", "train", "--model", str(tiny_qa_albert), "--out", str(tmp_path / "out")]
    assert main([*args, "--teacher", str(tiny_reranker)]) == 2
    _one_line_error(capsys, "a teacher's scores are learned with loss listnet, not lambda")
    assert main([*args, "--teacher", str(tiny_qa_albert), "--loss", "listnet"]) == 2
    _one_line_error(capsys, "--teacher takes a reranker folder")
