"""Model presets: ALBERT sizes as plain ``AlbertConfig`` objects, and their parameter counts.

Every model kalbert pretrains is a stock ``transformers.AlbertForPreTraining``, so a checkpoint
loads with ``AutoModel.from_pretrained`` anywhere. Cross-layer sharing is therefore limited to what
``AlbertConfig`` can express: all layers share one group (ALBERT's default), no sharing
(``num_hidden_groups = num_hidden_layers``), or ``n`` groups of consecutive layers. Attention-only
or FFN-only sharing would need parameters tied after construction, which a saved checkpoint
cannot record (loading it would silently untie them), so it is not offered. torch and transformers are
imported on use: :class:`ModelConfig` is part of the pretraining config, which `kalbert pretrain --help` reads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from kalbert.errors import KalbertError
from kalbert.vocab.files import CLS_ID, MODEL_MAX_LENGTH, PAD_ID, SEP_ID

if TYPE_CHECKING:
    from transformers import AlbertConfig


@dataclass(frozen=True)
class ModelSize:
    """The shape of an ALBERT encoder."""

    embedding_size: int
    """E: width of the factorised token embeddings"""
    hidden_size: int
    """H: width of the transformer layers"""
    num_layers: int
    """L: transformer layers applied"""
    num_heads: int
    """attention heads (H must be a multiple)"""
    intermediate_size: int
    """FFN inner width (4H in ALBERT)"""


PRESETS: dict[str, ModelSize] = {
    "tiny": ModelSize(128, 312, 4, 12, 1248),  # albert_tiny_zh
    "small": ModelSize(128, 768, 6, 12, 3072),
    "base": ModelSize(128, 768, 12, 12, 3072),
    "large": ModelSize(128, 1024, 24, 16, 4096),
}


@dataclass
class ModelConfig:
    """A preset plus optional overrides; ``None`` keeps the preset's value."""

    preset: Literal["tiny", "small", "base", "large"] = "tiny"
    """tiny (E128 H312 L4), small (E128 H768 L6), base (E128 H768 L12) or large (E128 H1024 L24)"""
    embedding_size: int | None = None
    """E override"""
    hidden_size: int | None = None
    """H override"""
    num_layers: int | None = None
    """L override"""
    num_heads: int | None = None
    """attention heads override"""
    intermediate_size: int | None = None
    """FFN width override"""
    sharing: str = "all"
    """cross-layer sharing: "all" (one shared layer, ALBERT), "none", or a number of layer groups"""
    max_position_embeddings: int = MODEL_MAX_LENGTH
    """longest sequence the position embeddings cover"""

    def size(self) -> ModelSize:
        if self.preset not in PRESETS:
            raise KalbertError(f"unknown preset {self.preset!r}", f"use one of {', '.join(PRESETS)}")
        overrides = {k: v for k in ModelSize.__dataclass_fields__ if (v := getattr(self, k)) is not None}
        return replace(PRESETS[self.preset], **overrides)


def hidden_groups(sharing: str, num_layers: int) -> int:
    """``num_hidden_groups`` for a sharing option."""
    if sharing == "all":
        return 1
    if sharing == "none":
        return num_layers
    if sharing.isdigit() and int(sharing) > 0 and num_layers % int(sharing) == 0:
        return int(sharing)
    raise KalbertError(f"bad --sharing {sharing!r}",
                       f"use all, none, or a number of layer groups that divides {num_layers} layers")


def albert_config(model: ModelConfig, vocab_size: int) -> AlbertConfig:
    """The ``AlbertConfig`` for ``model`` at ``vocab_size``; dropout 0 as in ALBERT v2.

    The activation is ALBERT's tanh-approximated GELU (``gelu_new``), named ``gelu_pytorch_tanh``: the
    same function as one fused kernel instead of five element-wise passes.
    """
    from transformers import AlbertConfig

    size = model.size()
    if size.hidden_size % size.num_heads:
        raise KalbertError(f"hidden size {size.hidden_size} is not a multiple of {size.num_heads} heads",
                           "change --hidden-size or --num-heads")
    return AlbertConfig(
        vocab_size=vocab_size,
        embedding_size=size.embedding_size,
        hidden_size=size.hidden_size,
        num_hidden_layers=size.num_layers,
        num_hidden_groups=hidden_groups(model.sharing, size.num_layers),
        num_attention_heads=size.num_heads,
        intermediate_size=size.intermediate_size,
        inner_group_num=1,
        hidden_act="gelu_pytorch_tanh",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.1,
        max_position_embeddings=model.max_position_embeddings,
        type_vocab_size=2,
        pad_token_id=PAD_ID,
        bos_token_id=CLS_ID,
        eos_token_id=SEP_ID,
    )


def count_parameters(config: AlbertConfig) -> int:
    """Parameters of the encoder without the pretraining heads, as the ALBERT paper counts them.

    Built on the meta device, so even ``large`` costs no memory or time.
    """
    import torch
    from transformers import AlbertModel

    with torch.device("meta"):
        model = AlbertModel(config)
    return sum(p.numel() for p in model.parameters())


def describe(config: AlbertConfig) -> str:
    """One line for logs and cards: shape, sharing and parameter count."""
    groups = config.num_hidden_groups
    sharing = "all layers shared" if groups == 1 else "no sharing" if groups == config.num_hidden_layers \
        else f"{groups} layer groups"
    return (f"E{config.embedding_size} H{config.hidden_size} L{config.num_hidden_layers} "
            f"A{config.num_attention_heads} FFN{config.intermediate_size}, {sharing}, vocab {config.vocab_size}: "
            f"{count_parameters(config) / 1e6:.1f}M parameters")
