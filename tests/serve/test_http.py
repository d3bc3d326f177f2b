"""`kalbert serve` over real HTTP (uvicorn on a loopback port, httpx and the `openai` package as clients):
embeddings as OpenAI clients read them, search with its options, documents added and deleted while serving,
reranking, metrics, the API key, and a 4xx JSON error with one message for every malformed request."""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from serve_helpers import BigramReranker, serving_in_thread

MODEL = "static-ko-zh-48k"


def post(url: str, path: str, body, **kwargs) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body, timeout=30, **kwargs)


def documents(url: str, query: str, **body) -> list[str]:
    response = post(url, "/search", {"query": query, "k": 10, **body})
    assert response.status_code == 200, response.text
    return [hit["document"] for hit in response.json()["results"][0]["hits"]]


def test_health_and_models(url):
    health = httpx.get(f"{url}/health").json()
    assert health["status"] == "ok" and health["indexes"]["docs"]["passages"] > 5
    assert health["indexes"]["docs"]["model"] == MODEL and health["reranker"] is None
    assert httpx.get(f"{url}/v1/models").json()["data"][0]["id"] == MODEL


def test_openai_client_gets_the_models_vectors(url, service):
    from openai import OpenAI

    client = OpenAI(base_url=f"{url}/v1", api_key="not-needed-on-loopback")
    texts = ["한 남자가 기타를 치고 있다.", "本法自公布之日起施行。"]
    response = client.embeddings.create(input=texts, model=MODEL)  # the client asks for base64 and decodes it
    expected = service.models[MODEL].encode(texts, None)
    got = np.array([item.embedding for item in response.data], dtype=np.float32)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert response.model == MODEL and response.usage.prompt_tokens > 0
    short = client.embeddings.create(input="고양이", model=MODEL, dimensions=64, encoding_format="float")
    vector = np.array(short.data[0].embedding)
    assert len(vector) == 64 and abs(np.linalg.norm(vector) - 1) < 1e-5
    np.testing.assert_allclose(vector, expected_prefix(service, "고양이", 64), atol=1e-6)
    query = client.embeddings.create(input="고양이", model=MODEL, extra_body={"input_type": "query"})
    assert len(query.data[0].embedding) == 192
    raw = post(url, "/v1/embeddings", {"input": "고양이", "model": MODEL, "encoding_format": "base64"}).json()
    decoded = np.frombuffer(base64.b64decode(raw["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(decoded, service.models[MODEL].encode(["고양이"], None)[0], atol=1e-6)


def expected_prefix(service, text: str, dims: int) -> np.ndarray:
    vector = service.models[MODEL].encode([text], None)[0][:dims]
    return vector / np.linalg.norm(vector)


def test_concurrent_texts_are_encoded_in_one_batch():
    from kalbert.serve.batching import Batcher

    sizes: list[int] = []

    def encode(texts, prompt):
        time.sleep(0.05)  # while the first batch runs, the other requests queue
        sizes.append(len(texts))
        return np.array([[len(text), 0.0] for text in texts], dtype=np.float32), np.ones(len(texts), dtype=np.int64)

    async def run():
        batcher = Batcher(encode, ThreadPoolExecutor(1), max_texts=64)
        batcher.start()
        first = asyncio.ensure_future(batcher.encode(["x"] * 2, None))
        await asyncio.sleep(0.01)  # the worker takes it alone and starts encoding; the others queue meanwhile
        rest = await asyncio.gather(*(batcher.encode(["x" * (i + 1)] * 2, None) for i in range(1, 8)))
        await batcher.stop()
        return [await first, *rest]

    results = asyncio.run(run())
    assert sizes == [2, 14] and [int(vectors[0, 0]) for vectors, _ in results] == list(range(1, 9))


def test_search_modes_filters_and_options(url):
    assert documents(url, "고양이가 소파에서 잔다")[0] == "cat"
    bm25 = post(url, "/search", {"query": "고양이 소파", "k": 10, "mode": "bm25"}).json()
    assert all(hit["score"] > 0 for hit in bm25["results"][0]["hits"]) and "share a term" in bm25["notes"][0]
    assert set(documents(url, "동물", filter={"genre": {"in": ["pets", "law"]}})) == {"cat", "law"}
    assert documents(url, "주식 시장", mode="dense", one_per_document=True).count("market") == 1
    many = post(url, "/search", {"query": ["주식 시장", "기타"], "k": 3, "mode": "dense", "min_score": 0.2}).json()
    assert len(many["results"]) == 2 and all(h["score"] >= 0.2 for r in many["results"] for h in r["hits"])
    hit = many["results"][1]["hits"][0]
    assert set(hit) == {"rank", "score", "document", "passage", "start", "end", "metadata", "scores"}


def test_added_documents_are_found_until_deleted(url):
    new = {"id": "http/dog", "text": "강아지가 공원에서 빨간 공을 쫓아 달린다.", "genre": "pets", "year": 2024}
    added = post(url, "/documents", {"documents": [new]})
    assert added.status_code == 200 and added.json()["results"] == [{"id": "http/dog", "status": "added",
                                                                     "passages": 1}]
    assert documents(url, "강아지가 공을 쫓는다")[0] == "http/dog"
    got = httpx.get(f"{url}/documents/http/dog").json()
    assert got["metadata"] == {"genre": "pets", "year": 2024} and got["passages"][0]["passage"] == new["text"]
    assert documents(url, "강아지", filter={"year": 2024}) == ["http/dog"]
    deleted = httpx.delete(f"{url}/documents/http/dog")
    assert deleted.status_code == 200 and deleted.json()["results"][0]["status"] == "deleted"
    for mode in ("dense", "bm25", "hybrid"):
        assert "http/dog" not in documents(url, "강아지가 공을 쫓는다", mode=mode)
    assert httpx.get(f"{url}/documents/http/dog").status_code == 404
    assert httpx.delete(f"{url}/documents/http/dog").status_code == 404


def test_rerank_endpoint_and_reranked_search(service):
    service.reranker, service.reranker_name = BigramReranker(), "bigrams"
    try:
        with serving_in_thread(service) as address:
            ranked = post(address, "/rerank", {"query": "양파를 썰고", "documents": ["기타를 친다", "양파를 썬다"],
                                               "return_documents": True}).json()
            assert [r["index"] for r in ranked["results"]] == [1, 0] and ranked["model"] == "bigrams"
            assert ranked["results"][0]["document"] == {"text": "양파를 썬다"}
            assert post(address, "/rerank", {"query": "x", "texts": ["a", "b"], "top_n": 1}).json()["results"][0][
                "index"] in (0, 1)
            found = post(address, "/search", {"query": "양파를 썰고", "k": 2, "rerank_depth": 5}).json()
            assert found["reranker"] == "bigrams" and found["results"][0]["hits"][0]["document"] == "onion"
            assert list(found["results"][0]["hits"][0]["scores"])[0] == "rerank"
            plain = post(address, "/search", {"query": "양파를 썰고", "k": 2, "rerank": False}).json()
            assert plain["reranker"] is None
    finally:
        service.reranker, service.reranker_name = None, None


def test_metrics_are_prometheus_text(url):
    post(url, "/search", {"query": "기타"})
    text = httpx.get(f"{url}/metrics").text
    assert 'kalbert_requests_total{endpoint="/search",method="POST",status="200"}' in text
    assert 'kalbert_request_seconds_bucket{endpoint="/search",le="+Inf"}' in text
    assert 'kalbert_index_passages{index="docs"}' in text and "kalbert_encode_batch_texts_count" in text


MALFORMED = [
    ("POST", "/search", b"{not json", 400, "not valid JSON"),
    ("POST", "/search", b"", 400, "no JSON body"),
    ("POST", "/search", b"[1, 2]", 400, "JSON object"),
    ("POST", "/search", {"k": 3}, 400, "'query' is required"),
    ("POST", "/search", {"query": "x", "k": "ten"}, 400, "'k'"),
    ("POST", "/search", {"query": "x", "k": 0}, 400, "'k'"),
    ("POST", "/search", {"query": "x", "k": 51}, 400, "max_k"),
    ("POST", "/search", {"query": ""}, 400, "query 1 is empty"),
    ("POST", "/search", {"query": []}, 400, "empty list"),
    ("POST", "/search", {"query": ["q"] * 9}, 400, "max_inputs"),
    ("POST", "/search", {"query": "x" * 201}, 400, "max_text_chars"),
    ("POST", "/search", {"query": "x", "mode": "fuzzy"}, 400, "'mode'"),
    ("POST", "/search", {"query": "x", "filters": {}}, 400, "unknown field 'filters'"),
    ("POST", "/search", {"query": "x", "filter": {"colour": "red"}}, 400, "unknown field 'colour'"),
    ("POST", "/search", {"query": "x", "filter": {"genre": {"like": "p"}}}, 400, "\"in\""),
    ("POST", "/search", {"query": "x", "index": "other"}, 404, "no index 'other'"),
    ("POST", "/search", {"query": "x", "rerank": True}, 400, "none is loaded"),
    ("POST", "/v1/embeddings", {"input": "x", "model": "gpt-4"}, 404, "no model 'gpt-4'"),
    ("POST", "/v1/embeddings", {"input": [], "model": MODEL}, 400, "non-empty list"),
    ("POST", "/v1/embeddings", {"input": [[1, 2, 3]], "model": MODEL}, 400, "token ids"),
    ("POST", "/v1/embeddings", {"input": "x", "model": MODEL, "dimensions": 100}, 400, "192, 128, 64"),
    ("POST", "/v1/embeddings", {"input": "x", "model": MODEL, "encoding_format": "int8"}, 400, "encoding_format"),
    ("POST", "/v1/embeddings", {"input": ["a"] * 9, "model": MODEL}, 400, "max_inputs"),
    ("POST", "/rerank", {"query": "x", "documents": ["a"]}, 404, "no reranker"),
    ("POST", "/documents", {"documents": [{"id": "ok", "text": "좋다"}, {"id": "bad"}]}, 400, "document 2"),
    ("POST", "/documents", {"documents": [{"id": "a", "text": "x"}] * 5}, 400, "max_documents"),
    ("POST", "/documents", {"documents": [{"id": "big", "text": "가" * 30_000}]}, 413, "max_request_bytes"),
    ("POST", "/documents", {"documents": "all of them"}, 400, "'documents'"),
    ("DELETE", "/documents/never-there", None, 404, "no document 'never-there'"),
    ("GET", "/nowhere", None, 404, "no endpoint /nowhere"),
    ("PUT", "/search", {"query": "x"}, 405, "PUT is not allowed"),
]


def test_malformed_requests_get_one_clear_4xx_json_error(url):
    before = httpx.get(f"{url}/health").json()["indexes"]["docs"]
    for method, path, body, status, message in MALFORMED:
        kwargs = {"content": body} if isinstance(body, bytes) else {"json": body} if body is not None else {}
        headers = {"content-type": "application/json"}
        response = httpx.request(method, f"{url}{path}", headers=headers, timeout=30, **kwargs)
        assert response.status_code == status, (path, body, response.text)
        error = response.json()["error"]
        assert message in error["message"] and "\n" not in error["message"], (path, body, error)
        assert "Traceback" not in response.text
    after = httpx.get(f"{url}/health").json()["indexes"]["docs"]
    assert after == before and httpx.get(f"{url}/documents/ok").status_code == 404  # nothing half-written


def test_an_api_key_guards_everything_but_health(built_index, tmp_path):
    import shutil

    from openai import AuthenticationError, OpenAI

    from kalbert.serve.service import Service
    from kalbert.serve.settings import ServeSettings

    folder = shutil.copytree(built_index, tmp_path / "docs")
    service = Service.load(ServeSettings(index=[str(folder)], rerank_model="none", api_key="s3cret"))
    with serving_in_thread(service) as address:
        assert httpx.get(f"{address}/health").status_code == 200
        refused = post(address, "/search", {"query": "기타"})
        assert refused.status_code == 401 and "API key" in refused.json()["error"]["message"]
        allowed = post(address, "/search", {"query": "기타"}, headers={"Authorization": "Bearer s3cret"})
        assert allowed.status_code == 200
        with pytest.raises(AuthenticationError):
            OpenAI(base_url=f"{address}/v1", api_key="wrong").embeddings.create(input="x", model=MODEL)
        assert OpenAI(base_url=f"{address}/v1", api_key="s3cret").embeddings.create(input="x", model=MODEL).data


def test_concurrent_writes_and_searches(url):
    errors: list[str] = []

    def write(i: int) -> None:
        response = post(url, "/documents", {"documents": [{"id": f"c{i}", "text": f"동시에 쓴 문서 번호 {i} 입니다"}]})
        if response.status_code != 200:
            errors.append(response.text)

    def read() -> None:
        if post(url, "/search", {"query": "동시에 쓴 문서"}).status_code != 200:
            errors.append("search failed")

    threads = [threading.Thread(target=write if i % 2 else read, args=(i,) if i % 2 else ()) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert all(httpx.get(f"{url}/documents/c{i}").status_code == 200 for i in range(1, 16, 2))
    for i in range(1, 16, 2):
        assert httpx.delete(f"{url}/documents/c{i}").status_code == 200
