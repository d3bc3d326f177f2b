"""What a new user's corpus and model get from `kalbert search build` before any model loads: one line and exit
code 2 for an empty file, bytes that are not UTF-8 (with the iconv command for its language), a line without
`text` or not JSON, an id given twice; a byte-order mark accepted; the retrieval model by default; IVF-PQ over
too few passages refused with nothing left behind; the index's model known by its weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.search import SearchBuildConfig, build_index, work_folder
from kalbert.search import build as build_module
from kalbert.search.engines import EngineSettings, build_faiss
from kalbert.search.model import check_identity, check_model

MODELS = Path(__file__).resolve().parents[2] / "models"


class ModelLoaded(Exception):
    """Raised in place of loading the model: the corpus passed every check."""


@pytest.fixture
def no_model_load(monkeypatch):
    """The folder the build would load, recorded instead of loaded."""
    loaded = []

    def record(folder, **kwargs):
        loaded.append(folder)
        raise ModelLoaded

    monkeypatch.setattr(build_module, "load_sentence_model", record)
    return loaded


def _refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kalbert: error:") and "Traceback" not in err, err
    return err


def _jsonl(path, *records) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_bad_corpora_are_one_line_before_the_model_loads(no_model_load, static_model, tmp_path, capsys):
    gbk, cp949, empty, blank, folder = (tmp_path / "zh.txt", tmp_path / "ko.txt", tmp_path / "empty.jsonl",
                                        tmp_path / "blank.txt", tmp_path / "nothing")
    gbk.write_bytes("中华人民共和国的首都是北京。\n".encode("gbk"))
    cp949.write_bytes("대한민국의 수도는 서울이다.\n".encode("cp949"))
    empty.write_bytes(b"")
    blank.write_text("\n  \n", encoding="utf-8")
    folder.mkdir()
    (tmp_path / "no-text.jsonl").write_text('{"id": 1, "text": "ok"}\n{"id": 2, "body": "x"}\n', encoding="utf-8")
    (tmp_path / "broken.jsonl").write_text('{"id": 1, "text": "ok"}\n{"id": 2, "text": \n', encoding="utf-8")
    twice = _jsonl(tmp_path / "twice.jsonl", {"id": "a", "text": "하나"}, {"id": "b", "text": "둘"},
                   {"id": "a", "text": "셋"})
    cases = [
        (str(empty), "corpus file", "is empty"),
        (str(blank), "holds no documents"),
        (str(folder), "corpus folder", "holds no documents"),
        (str(gbk), "not valid UTF-8", "iconv -f GBK -t UTF-8 zh.txt > zh.utf8.txt"),
        (str(cp949), "not valid UTF-8", "iconv -f CP949 -t UTF-8"),
        (str(tmp_path / "no-text.jsonl"), "line 2 has no 'text'"),
        (str(tmp_path / "broken.jsonl"), "line 2 is not JSON"),
        (twice, f"document id 'a' at {twice} line 3 was already given at {twice} line 1"),
    ]
    for corpus, *says in cases:
        err = _refused(["search", "build", "--corpus", corpus, "--out", str(tmp_path / "index"), "--model",
                        str(static_model)], capsys)
        assert all(text in err for text in says), err
    assert "cp949" not in _refused(["search", "build", "--corpus", str(gbk), "--out", str(tmp_path / "index")],
                                   capsys).lower()
    assert not no_model_load and sorted(p.name for p in tmp_path.iterdir() if "index" in p.name) == []


def test_an_id_given_twice_across_sources_names_both_places(tmp_path):
    from kalbert.search.documents import check_corpus

    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "notes.txt").write_text("첫 줄\n", encoding="utf-8")
    with pytest.raises(KalbertError, match=r"'notes.txt:1' at .*b/notes.txt line 1 was already given at "
                                           r".*a/notes.txt line 1.*rename one"):
        check_corpus([str(tmp_path / "a" / "notes.txt"), str(tmp_path / "b" / "notes.txt")])


def test_a_byte_order_mark_is_accepted(no_model_load, tmp_path):
    corpus = tmp_path / "bom.jsonl"
    corpus.write_bytes("\ufeff".encode() + '{"id": "a", "text": "안녕하세요"}\n'.encode())
    text = tmp_path / "bom.txt"
    text.write_bytes(b"\xef\xbb\xbf" + "첫 문서\n".encode())
    from kalbert.search.documents import read_documents

    assert [(d.id, d.text) for d in read_documents([str(corpus), str(text)])] == [("a", "안녕하세요"),
                                                                                  ("bom.txt:1", "첫 문서")]
    with pytest.raises(ModelLoaded):  # every check passed
        main(["search", "build", "--corpus", str(corpus), "--out", str(tmp_path / "index")])


def test_the_default_model_is_the_retrieval_model(no_model_load, tmp_path):
    corpus = _jsonl(tmp_path / "docs.jsonl", {"id": "a", "text": "계약 해지 조건"})
    with pytest.raises(ModelLoaded):
        build_index(SearchBuildConfig(corpus=[corpus], out=str(tmp_path / "index")))
    assert no_model_load == [MODELS / "sbert-ko-zh-retrieval"]


def test_ivfpq_over_a_few_passages_is_one_line_and_leaves_nothing(static_model, tmp_path, capsys):
    corpus = _jsonl(tmp_path / "docs.jsonl", {"id": "a", "text": "고양이가 잔다."}, {"id": "b", "text": "개가 짖는다."})
    out = tmp_path / "index"
    err = _refused(["search", "build", "--corpus", corpus, "--out", str(out), "--model", str(static_model),
                    "--engine", "ivfpq"], capsys)
    assert "at least 256 passages" in err and "there are 2" in err and "--engine exact or hnsw" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl"] and not work_folder(out).exists()
    with pytest.raises(KalbertError, match="at least 256 passages"):  # a compaction down to a few passages too
        build_faiss("ivfpq", np.ones((10, 8), dtype=np.float16), tmp_path / "e.faiss", EngineSettings())


def test_the_index_knows_its_model_by_its_weights(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(MODELS / "static-ko-zh-48k", model)
    identity = check_model(model)
    record = {"model": identity}
    meta = json.loads((model / "kalbert.json").read_text(encoding="utf-8"))
    (model / "kalbert.json").write_text(json.dumps({**meta, "onnx": {"files": {}}}), encoding="utf-8")
    check_identity(record, check_model(model))  # an export into the folder rewrote its record: the same model
    legacy = {"model": {k: v for k, v in identity.items() if k != "weights_sha256"}}  # built before weights hashes
    with pytest.raises(KalbertError, match="rebuild the index"):
        check_identity(legacy, check_model(model))
    weights = bytearray((model / "model.safetensors").read_bytes())
    weights[-1] ^= 1  # other weights, same size
    (model / "model.safetensors").write_bytes(bytes(weights))
    with pytest.raises(KalbertError, match="another model"):
        check_identity(record, check_model(model))
