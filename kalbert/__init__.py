"""kalbert: Korean, Chinese and Korean+Chinese ALBERT models and sentence embeddings."""

__version__ = "0.1.0"
