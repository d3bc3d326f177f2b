"""`kalbert serve`: search indexes and sentence models as a long-running HTTP service (FastAPI on uvicorn).

Models and indexes load once; ``POST /v1/embeddings`` answers OpenAI clients (concurrent requests' texts are
encoded together), ``POST /search`` queries an index, ``POST /rerank`` scores passages with a cross-encoder,
``POST /documents`` and ``DELETE /documents/{id}`` change an index while it serves, durably before they
answer. Every bad request gets a 4xx JSON error in OpenAI's shape with one message. docs/serve.md shows each
endpoint.
"""
