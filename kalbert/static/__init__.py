"""Static sentence embeddings on kalbert's vocabularies: one vector per SentencePiece piece, averaged.

No transformer runs at encoding time (a lookup and a mean per sentence); the tokenizer is the
vocabulary's own ``tokenizer.json``, so morpheme pieces stay whole and encoding needs neither mecab nor
jieba. ``kalbert static distill`` embeds every piece with a
teacher (model2vec-style), ``kalbert static train`` fits the vectors to the teacher's sentence vectors
on corpus sentences (tokenlearn-style); both write a folder that plain ``SentenceTransformer(path)``
and ``model2vec.StaticModel.from_pretrained(path)`` load.
"""
