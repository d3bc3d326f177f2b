"""A shallower student: keep some of a sentence ALBERT's transformer layers.

A token costs a pass through every layer, so a model's speed per token follows its depth (docs/retrieval.md: 5
layers of the teacher's width against the teacher's 12 read passages 2.4x faster). Layers cannot simply be cut
from a trained model (its vectors change), so ``kalbert sbert distill --student-layers`` keeps the chosen ones and
teaches them back the teacher's vectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kalbert.errors import KalbertError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def keep_layers(model: SentenceTransformer, layers: list[int]) -> None:
    """Keep ``layers`` (0-based, in their order) of ``model``'s ALBERT and drop the rest, in place. Each layer with
    weights of its own (one group per layer, as a transplant makes) is kept or dropped by its index; where all
    layers share one group (classic ALBERT) only how many passes remain matters."""
    import torch

    albert = model[0].auto_model
    config = albert.config
    if config.model_type != "albert":
        raise KalbertError(f"--student-layers needs an ALBERT student, not a '{config.model_type}' model",
                           "drop the flag, or start from a kalbert sentence model")
    total = config.num_hidden_layers
    if not layers or len(set(layers)) != len(layers) or not all(0 <= i < total for i in layers):
        example = " ".join(map(str, range(max(total - 1, 1))))
        raise KalbertError(f"--student-layers {' '.join(map(str, layers))}: the student has layers 0-{total - 1}",
                           f"name each layer to keep once, e.g. --student-layers {example}")
    if config.num_hidden_groups == total:
        groups = albert.encoder.albert_layer_groups
        albert.encoder.albert_layer_groups = torch.nn.ModuleList(groups[i] for i in sorted(layers))
        config.num_hidden_groups = len(layers)
    elif config.num_hidden_groups != 1:
        raise KalbertError(f"the student's {total} layers share {config.num_hidden_groups} weight groups, so a "
                           f"layer cannot be dropped on its own", "start from a student with one group per layer "
                           "or with one shared group")
    config.num_hidden_layers = len(layers)
