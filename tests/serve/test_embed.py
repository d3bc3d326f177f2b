"""The served models encode as ``SentenceTransformer.encode`` does and count the tokens they read from the same
tokenization (the static model and a transformer with prompts)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from kalbert.serve.service import ServedModel

MODELS = Path(__file__).resolve().parents[2] / "models"
TEXTS = ["세종대왕은 1446년에 훈민정음을 반포하였다.", "长江最后注入东海。", "짧다",
         "서울은 대한민국의 수도이며 한강이 도시를 가로질러 흐른다. " * 6]


@cache
def _model(folder: str):
    from kalbert.sentence.encoder import load_sentence_model

    return load_sentence_model(MODELS / folder)


@pytest.mark.parametrize("folder, prompt", [("static-ko-zh-48k", None), ("sbert-ko-zh-retrieval", "query"),
                                            ("sbert-ko-zh-retrieval", None)])
def test_embed_matches_encode_and_counts_the_tokens_read(folder, prompt):
    model = _model(folder)
    served = ServedModel(folder, MODELS / folder, model, bf16=False, dims=(model.get_embedding_dimension(),),
                         batch_size=2)
    vectors, tokens = served.embed(TEXTS, prompt)
    expected = model.encode(TEXTS, prompt_name=prompt, normalize_embeddings=True, convert_to_numpy=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    read = [len(model.preprocess([text], prompt=model.prompts.get(prompt) if prompt else None)["input_ids"]
                .reshape(-1)) for text in TEXTS]
    assert tokens.tolist() == read
    assert tokens[2] < tokens[0] < tokens[3]
