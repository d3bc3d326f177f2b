"""Writes acknowledged by `kalbert serve` survive a kill -9 of its process: after a restart every acknowledged
document is found, the index opens, and deleted documents stay deleted."""

from __future__ import annotations

import signal
import threading

import httpx
import pytest
from serve_helpers import serve_process

NEW = {"id": "kill/dog", "text": "강아지가 공원에서 빨간 공을 쫓아 달린다.", "genre": "pets"}


def kill_9(process) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def search(url: str, query: str, mode: str = "hybrid") -> list[str]:
    response = httpx.post(f"{url}/search", json={"query": query, "k": 10, "mode": mode}, timeout=30)
    assert response.status_code == 200, response.text
    return [hit["document"] for hit in response.json()["results"][0]["hits"]]


def test_an_acknowledged_add_and_delete_survive_kill_9(index_copy):
    """Killed right after its answers, the index on disk holds both writes (the slow test below restarts the
    server itself)."""
    from kalbert.search import open_index

    with serve_process("--index", str(index_copy), "--rerank-model", "none") as (url, process):
        assert httpx.post(f"{url}/documents", json={"documents": [NEW]}, timeout=30).status_code == 200
        assert httpx.delete(f"{url}/documents/cat", timeout=30).status_code == 200
        kill_9(process)
    index = open_index(index_copy)
    assert index.document("kill/dog")["passages"][0]["passage"] == NEW["text"] and index.document("cat") is None
    assert index.query("강아지가 공을 쫓는다", k=1).hits[0][0].document == "kill/dog"
    for mode in ("dense", "bm25", "hybrid"):
        assert "cat" not in [h.document for h in index.query("고양이가 소파 위에서 자고 있다", k=10, mode=mode).hits[0]]


@pytest.mark.slow
def test_kill_9_during_a_stream_of_1000_adds(index_copy):
    flags = ["--index", str(index_copy), "--rerank-model", "none", "--compact-after", "0"]
    acknowledged: list[str] = []
    lock = threading.Lock()
    with serve_process(*flags) as (url, process):
        assert httpx.delete(f"{url}/documents/onion").status_code == 200

        def stream(worker: int) -> None:
            with httpx.Client(timeout=30) as client:
                for i in range(worker, 1000, 4):
                    document = {"id": f"stream-{i}", "text": f"스트림으로 추가한 {i}번째 문서. 내용 {i * 7 % 13}"}
                    try:
                        response = client.post(f"{url}/documents", json={"documents": [document]})
                    except httpx.HTTPError:
                        return  # the server was killed mid-request: this one was never acknowledged
                    if response.status_code == 200:
                        with lock:
                            acknowledged.append(document["id"])

        threads = [threading.Thread(target=stream, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        while len(acknowledged) < 500 and any(t.is_alive() for t in threads):
            threading.Event().wait(0.01)
        kill_9(process)
        for thread in threads:
            thread.join()
    assert 500 <= len(acknowledged) < 1000
    with serve_process(*flags) as (url, _):  # the server itself, restarted
        assert search(url, "스트림으로 추가한 문서")[0].startswith("stream-")
        with httpx.Client(timeout=30) as client:
            missing = [i for i in acknowledged if client.get(f"{url}/documents/{i}").status_code != 200]
            assert not missing, f"{len(missing)} acknowledged documents lost, e.g. {missing[:3]}"
            assert client.get(f"{url}/documents/onion").status_code == 404
        health = httpx.get(f"{url}/health").json()["indexes"]["docs"]
        assert health["documents"] >= 4 + len(acknowledged)
