"""`kalbert rerank export`: float16 weights and ONNX files that score as the trained folder does."""

from __future__ import annotations

import numpy as np
import pytest

from kalbert.artifact import Kind, read_meta
from kalbert.cli.main import main
from kalbert.errors import KalbertError

QUERY = "서울은 어느 나라의 도시인가?"
PASSAGES = ["서울은 한국의 도시이다.", "부산에는 오래된 시장이 있다.", "长江最后注入东海。"]


def test_export_writes_float16_weights_and_onnx_files_that_score_alike(tiny_reranker, tmp_path):
    from kalbert.rerank import load_reranker

    out = tmp_path / "shipped"
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(out), "--onnx", "--int8"]) == 0
    meta = read_meta(out, Kind.RERANKER)
    assert meta["weights_storage"]["dtype"] == "float16" and set(meta["onnx"]["files"]) == {"fp32", "int8"}
    assert meta["command"].startswith("kalbert rerank export") and "--onnx --int8" in meta["command"]
    reference = load_reranker(tiny_reranker, precision="fp32").score(QUERY, PASSAGES)
    for backend, atol in (("torch", 1e-3), ("onnx", 1e-3), ("onnx-int8", 0.5)):
        scores = load_reranker(out, backend=backend, precision="auto" if backend != "torch" else "fp32").score(
            QUERY, PASSAGES)
        assert np.allclose(scores, reference, atol=atol), backend


def test_an_onnx_backend_without_its_file_is_one_line(tiny_reranker):
    from kalbert.rerank import load_reranker

    with pytest.raises(KalbertError, match="has no int8 ONNX file"):
        load_reranker(tiny_reranker, backend="onnx-int8")


def test_int8_without_onnx_is_refused(tiny_reranker, tmp_path, capsys):
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(tmp_path / "o"), "--int8"]) == 2
    assert "--int8 quantises the ONNX file" in capsys.readouterr().err


def test_export_records_the_hybrid_score_weight_that_search_reads(tiny_reranker, tmp_path, capsys):
    from kalbert.rerank import load_reranker

    assert load_reranker(tiny_reranker).hybrid_score_weight == 1.0  # the training default, recorded
    out = tmp_path / "shipped"
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(out),
                 "--hybrid-score-weight", "0.5"]) == 0
    assert read_meta(out)["hybrid_score_weight"] == 0.5 and load_reranker(out).hybrid_score_weight == 0.5
    assert "--hybrid-score-weight 0.5" in read_meta(out)["command"]
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(tmp_path / "o"),
                 "--hybrid-score-weight", "-1"]) == 2
    assert "--hybrid-score-weight -1.0 is not a number of 0 or more" in capsys.readouterr().err


def test_export_records_how_many_windows_of_a_long_passage_are_read(tiny_reranker, tmp_path, capsys):
    from kalbert.rerank import load_reranker

    assert read_meta(tiny_reranker)["windows"]["per_passage"] == 1  # the training default, recorded
    out = tmp_path / "shipped"
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(out),
                 "--windows-per-passage", "3"]) == 0
    assert read_meta(out)["windows"] == {"tokens": 48, "stride": 64, "per_passage": 3}
    assert load_reranker(out).windows_per_passage == 3 and "--windows-per-passage 3" in read_meta(out)["command"]
    assert "the 3 sharing most query tokens" in (out / "README.md").read_text(encoding="utf-8")
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(tmp_path / "o"),
                 "--windows-per-passage", "0"]) == 2
    assert "expected a positive integer, got 0" in capsys.readouterr().err


def test_export_records_the_pair_length_scoring_reads(tiny_reranker, tmp_path, capsys):
    from kalbert.rerank import load_reranker

    out = tmp_path / "shipped"
    assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(out), "--window-tokens", "32"]) == 0
    assert read_meta(out)["windows"] == {"tokens": 32, "stride": 8, "per_passage": 1}
    reranker = load_reranker(out)
    assert reranker.windows == {"tokens": 32, "stride": 8, "per_passage": 1}
    assert "--window-tokens 32" in read_meta(out)["command"]
    assert "pairs of 32 tokens overlapping by 8" in (out / "README.md").read_text(encoding="utf-8")
    long_passage = " ".join(PASSAGES * 4)
    assert np.isfinite(reranker.score(QUERY, [long_passage, PASSAGES[0]])).all()
    for tokens in ("16", "4096"):
        assert main(["rerank", "export", "--model", str(tiny_reranker), "--out", str(tmp_path / "o"),
                     "--window-tokens", tokens]) == 2
        assert f"--window-tokens {tokens} is outside 32-" in capsys.readouterr().err
