"""Documents in: folders, text files, JSONL with metadata, data sets; bad input is one clear line."""

from __future__ import annotations

import gzip
import json

import pytest

from kalbert.errors import KalbertError
from kalbert.search.documents import check_sources, read_documents
from kalbert.search.passages import sentence_spans, split_passages


def words(texts):
    return [len(text.split()) for text in texts]


def test_folder_text_and_jsonl_documents(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("첫 문서다.\n둘째 줄.\n", encoding="utf-8")
    (folder / "sub" / "b.md").write_text("# 제목\n본문.", encoding="utf-8")
    (folder / "c.jsonl").write_text(json.dumps({"id": "x1", "text": "제이슨 문서", "lang": "ko", "year": 2020},
                                               ensure_ascii=False) + "\n\n", encoding="utf-8")
    (folder / "skip.bin").write_bytes(b"\x00")
    lines = tmp_path / "lines.txt.gz"
    with gzip.open(lines, "wt", encoding="utf-8") as handle:
        handle.write("한 줄 문서\n\n  두 번째   문서 \n")
    docs = list(read_documents([str(folder), str(lines)]))
    assert [d.id for d in docs] == ["a.txt", "x1", "sub/b.md", "lines.txt.gz:1", "lines.txt.gz:3"]
    assert docs[0].text == "첫 문서다.\n둘째 줄." and docs[1].metadata == {"lang": "ko", "year": 2020}
    assert docs[4].text == "두 번째 문서"


@pytest.mark.parametrize("case, match", [
    ("empty-doc", "is empty"), ("not-utf8", "not valid UTF-8"), ("no-text", "line 2 has no 'text'"),
    ("empty-text", "line 1: the document's text is empty"), ("bad-json", "line 1 is not JSON"),
])
def test_bad_documents_are_one_line(tmp_path, case, match):
    folder = tmp_path / "docs"
    folder.mkdir()
    if case == "empty-doc":
        (folder / "empty.txt").write_text("  \n", encoding="utf-8")
    elif case == "not-utf8":
        (folder / "cp949.txt").write_bytes("한국어".encode("cp949"))
    elif case == "no-text":
        (folder / "d.jsonl").write_text('{"id": 1, "text": "ok"}\n{"id": 2, "body": "x"}\n', encoding="utf-8")
    elif case == "empty-text":
        (folder / "d.jsonl").write_text('{"id": 1, "text": " "}\n', encoding="utf-8")
    else:
        (folder / "d.jsonl").write_text("{oops\n", encoding="utf-8")
    with pytest.raises(KalbertError, match=match):
        list(read_documents([str(folder)]))


def test_sources_are_checked_with_a_suggestion(tmp_path):
    with pytest.raises(KalbertError, match="unknown data set 'korsts2'.*did you mean 'korsts'"):
        check_sources(["korsts2:test"])
    with pytest.raises(KalbertError, match="file not found"):
        check_sources([str(tmp_path / "missing.txt")])
    with pytest.raises(KalbertError, match="unsupported corpus file"):
        (tmp_path / "x.csv").write_text("a", encoding="utf-8")
        check_sources([str(tmp_path / "x.csv")])


def test_long_documents_split_at_sentences_with_offsets_and_overlap():
    text = "가 나 다. 라 마 바! 사 아?\n자 차 카. 타 파 하 거."
    spans = split_passages(text, words, passage_tokens=7, stride=3)
    pieces = [text[a:b] for a, b in spans]
    assert pieces == ["가 나 다. 라 마 바!", "라 마 바! 사 아?", "사 아?\n자 차 카.", "자 차 카. 타 파 하 거."]
    assert all(n <= 7 for n in words(pieces))
    assert split_passages("짧다.", words, 7, 3) == [(0, 3)]
    assert [text[a:b] for a, b in sentence_spans(text)][:2] == ["가 나 다.", "라 마 바!"]


def test_a_sentence_longer_than_a_passage_is_cut():
    text = " ".join(f"w{i}" for i in range(50))
    spans = split_passages(text, words, passage_tokens=10, stride=0)
    assert all(len(text[a:b].split()) <= 10 for a, b in spans)
    assert " ".join(text[a:b] for a, b in spans).split() == text.split()
