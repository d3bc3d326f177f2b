"""`kalbert transplant`: a BERT-family sentence encoder re-seated as an ALBERT on a kalbert vocabulary.

Training an ALBERT from scratch throws away what a multilingual teacher (multilingual-e5-small:
BertModel, H384, XLM-R unigram tokenizer) already knows. A transplant keeps it:

1. Vocabulary: each kalbert piece gets the mean teacher embedding of the teacher's tokenization of
   the piece's surface (word-start pieces as words, other pieces as continuations); special tokens
   map to their teacher counterparts. A teacher that already uses the vocabulary maps 1:1.
2. Factorised embeddings: BERT computes ``LN_H(w + p + t)``, ALBERT ``Linear_EH(LN_E(w' + p' + t'))``.
   With every teacher row centred, ``LN_H(x) = gamma * x_c * sqrt(H) / |x_c| + beta`` (up to eps);
   projecting the centred rows on the top E-1 principal directions V' and rotating them into the
   mean-zero subspace of R^E (rows Q) keeps the norm, so ``LN_E`` is a pure rescale and a mapping
   ``diag(gamma) V' Q sqrt(H/E)`` with bias ``beta`` gives back ``LN_H`` of the projected sum.
   With E = H nothing is projected away and the ALBERT embeddings equal the teacher's exactly.
3. Layers: L of the teacher's layers become ALBERT layer groups one to one (or are averaged into N
   shared groups). The MLM and SOP heads are new.

The output folder has the shape of ``kalbert pretrain``'s ``model/`` export (weights, tokenizer files,
spiece.model, kalbert.json, README card), so ``kalbert pretrain --init-from`` further-pretrains it and
``kalbert sbert export`` wraps it as a sentence model.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import sentencepiece as spm
import torch
from transformers import AlbertConfig, AlbertForPreTraining, PreTrainedModel, PreTrainedTokenizerBase

from kalbert import __version__
from kalbert.artifact import MODULES_FILE, Kind, folder_languages, invocation, is_sentence_model
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, refuse_existing_output, sha256_file
from kalbert.pretrain.config import TransplantConfig
from kalbert.pretrain.export import TOKENIZER_FILES
from kalbert.pretrain.presets import describe
from kalbert.stage import artifact_folder, write_record
from kalbert.teachers.backends import E5_NAME, e5_folder
from kalbert.verbs import command_for
from kalbert.vocab.files import CLS_ID, PAD_ID, SEP_ID, SPIECE, check_special_ids, load_processor

TEACHER_TYPES = ("bert", "xlm-roberta", "roberta")
LAYER_CHOICES = ("every-other", "first", "last")
WORD_START = "▁"
# BERT layer module -> ALBERT layer module (weight and bias each)
LAYER_NAMES = {
    "attention.self.query": "attention.query",
    "attention.self.key": "attention.key",
    "attention.self.value": "attention.value",
    "attention.output.dense": "attention.dense",
    "attention.output.LayerNorm": "attention.LayerNorm",
    "intermediate.dense": "ffn",
    "output.dense": "ffn_output",
    "output.LayerNorm": "full_layer_layer_norm",
}
# Parameters a transplant does not fill: the pretraining heads are new.
NEW_HEADS = ("predictions.", "sop_classifier.")


@dataclass
class TransplantResult:
    """What was built, for the CLI summary and callers."""

    out: Path
    """The written model folder."""
    model: str
    """One-line shape and parameter count."""
    teacher_layers: list[int]
    """Teacher layers used, 0-based, in ALBERT order."""
    variance_kept: dict[str, float]
    """Share of the centred embeddings' second moment kept by the E-1 directions: all, words, positions, types."""
    mapping: dict[str, int]
    """Kalbert pieces whose teacher tokenization is one token, several tokens, or only <unk>."""
    identity_vocab: bool
    """True when the teacher already used the vocabulary (pieces mapped 1:1)."""


# ------------------------------------------------------------------------------------------ teacher
def teacher_transformer_folder(path: str | Path) -> Path:
    """The folder holding the teacher's config.json: a SentenceTransformer's first module, or ``path`` itself.

    ``multilingual-e5-small`` names the torch copy that :func:`kalbert.teachers.backends.e5_folder` keeps.
    """
    if str(path) == E5_NAME:
        path = e5_folder()
    path = Path(path).expanduser()
    if not path.is_dir():
        raise KalbertError(f"teacher folder {path} not found",
                           "make one with `kalbert teacher export multilingual-e5-small --out DIR`")
    folder = path
    modules = path / MODULES_FILE
    if is_sentence_model(path):
        try:
            entries = sorted(json.loads(modules.read_text(encoding="utf-8")), key=lambda m: m.get("idx", 0))
            folder = path / entries[0].get("path", "")
        except (OSError, ValueError, IndexError, AttributeError, TypeError):
            raise KalbertError(f"{modules} is not a valid SentenceTransformer modules list") from None
    if not (folder / "config.json").is_file():
        raise KalbertError(f"teacher {folder} has no config.json",
                           "pass a SentenceTransformer folder or an HF BertModel folder")
    return folder


def teacher_root(teacher: str | Path) -> Path:
    """The teacher folder a record names as a parent: the folder given, not its module folder."""
    return e5_folder() if str(teacher) == E5_NAME else Path(teacher).expanduser()


def _teacher_config(folder: Path) -> dict:
    """The teacher's config.json, refused unless it is a BERT-family encoder with absolute positions."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise KalbertError(f"cannot read {folder / 'config.json'}: {exc}") from None
    model_type = config.get("model_type")
    if model_type not in TEACHER_TYPES:
        raise KalbertError(f"teacher {folder} is a '{model_type}' model, not a BERT-family encoder",
                           f"transplant takes {', '.join(TEACHER_TYPES)} teachers")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise KalbertError(f"teacher {folder} uses '{config['position_embedding_type']}' position embeddings",
                           "ALBERT has absolute position embeddings only")
    if not isinstance(config.get("hidden_act"), str):
        raise KalbertError(f"teacher {folder} has no named activation (hidden_act)")
    return config


def position_offset(teacher_config: dict) -> int:
    """First position row a teacher uses: BERT counts positions from 0, RoBERTa/XLM-R from padding_idx + 1
    (the ALBERT gets the rows from there on, so its position 0 is the teacher's first real position)."""
    if teacher_config["model_type"] == "bert":
        return 0
    return teacher_config.get("pad_token_id", 1) + 1


# --------------------------------------------------------------------------------------- validation
def choose_layers(teacher_layers: int, layers: int, choice: str) -> list[int]:
    """The 0-based teacher layers that become the ALBERT's ``layers`` layers, in order."""
    if choice == "every-other":
        return [(j + 1) * teacher_layers // layers - 1 for j in range(layers)]
    if choice == "first":
        return list(range(layers))
    if choice == "last":
        return list(range(teacher_layers - layers, teacher_layers))
    raise KalbertError(f"unknown layer choice {choice!r}", f"use one of {', '.join(LAYER_CHOICES)}")


def _validate(config: TransplantConfig, teacher_config: dict) -> None:
    teacher_layers, hidden = teacher_config["num_hidden_layers"], teacher_config["hidden_size"]
    if not 1 <= config.layers <= teacher_layers:
        raise KalbertError(f"--layers {config.layers} is out of range: the teacher has {teacher_layers} layers",
                           f"use 1 to {teacher_layers}")
    if not 2 <= config.embedding_size <= hidden:
        raise KalbertError(f"--embedding-size {config.embedding_size} is out of range",
                           f"use 2 to the teacher's hidden size {hidden}")
    groups = config.share_groups if config.share_groups is not None else config.layers
    if groups < 1 or config.layers % groups:
        raise KalbertError(f"--share-groups {groups} does not divide {config.layers} layers",
                           "use a divisor of --layers")
    choose_layers(teacher_layers, config.layers, config.layer_choice)


def _vocab_folder(path: str | Path) -> tuple[Path, spm.SentencePieceProcessor]:
    """The vocab folder and its SentencePiece processor, refused unless ids 0-4 are ALBERT's special tokens."""
    folder = Path(path).expanduser()
    processor = load_processor(folder)
    check_special_ids(processor)
    if not (folder / "tokenizer_config.json").is_file():
        raise KalbertError(f"{folder} has no HF tokenizer files (tokenizer_config.json)",
                           "pass a folder made by `kalbert vocab build`")
    return folder, processor


# ---------------------------------------------------------------------------------------- vocabulary
@dataclass
class PieceMap:
    """Teacher token ids per kalbert piece (its embedding is their mean) and how the pieces fared."""

    ids: list[list[int]]
    counts: dict[str, int]
    identity: bool


def _unigram_continuation(tokenizer: PreTrainedTokenizerBase) -> Callable[[str], list[int]] | None:
    """For a unigram teacher (XLM-R, e5): a function giving the model's segmentation of a bare surface,
    i.e. the continuation pieces a word-internal piece would get; None for other tokenizers."""
    from tokenizers.models import Unigram

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not isinstance(backend.model, Unigram):
        return None
    normalizer = backend.normalizer

    def tokenize(surface: str) -> list[int]:
        text = normalizer.normalize_str(surface) if normalizer is not None else surface
        return [token.id for token in backend.model.tokenize(text)] if text else []

    return tokenize


def map_pieces(processor: spm.SentencePieceProcessor, tokenizer: PreTrainedTokenizerBase) -> PieceMap:
    """Teacher ids for every kalbert piece.

    Word-start pieces (``▁rest``) take the teacher's tokenization of ``rest`` as a word. Other pieces
    take the better of the unigram continuation segmentation and the word tokenization with a leading
    bare ``▁`` dropped: no <unk> first, then fewer tokens. Ids 0-4 map to the teacher's pad, unk,
    cls/bos, sep/eos and mask tokens.
    """
    n = processor.get_piece_size()
    pieces = [processor.id_to_piece(i) for i in range(n)]
    if len(tokenizer) == n and tokenizer.convert_ids_to_tokens(list(range(n))) == pieces:
        return PieceMap([[i] for i in range(n)], {"single": n, "several": 0, "unk": 0}, identity=True)
    unk = tokenizer.unk_token_id
    bare = tokenizer.convert_tokens_to_ids(WORD_START)
    bare = None if bare is None or bare == unk else bare
    specials = [tokenizer.pad_token_id, unk,
                tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id,
                tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id,
                tokenizer.mask_token_id]
    surfaces = [piece.removeprefix(WORD_START).replace(WORD_START, " ") for piece in pieces]
    words = tokenizer(surfaces, add_special_tokens=False)["input_ids"]
    continuation = _unigram_continuation(tokenizer)
    ids, counts = [], {"single": 0, "several": 0, "unk": 0}
    for i, (piece, surface, word) in enumerate(zip(pieces, surfaces, words, strict=True)):
        if i < len(specials):  # the teacher's own special token (<unk> -> <unk> is a match, not a miss)
            found = specials[i] is not None
            ids.append([specials[i]] if found else [unk])
            counts["single" if found else "unk"] += 1
            continue
        if piece.startswith(WORD_START):
            candidates = [word] if surface else [[bare]] if bare is not None else []
        else:
            candidates = [word[1:] if word and word[0] == bare else word]
            if continuation is not None:
                candidates.insert(0, continuation(surface))
        candidates = [c for c in candidates if c]
        best = min(candidates, key=lambda c: (unk in c, len(c)), default=[])
        if not best or all(t == unk for t in best):
            ids.append([unk])
            counts["unk"] += 1
        else:
            ids.append(best)
            counts["single" if len(best) == 1 else "several"] += 1
    return PieceMap(ids, counts, identity=False)


def mean_rows(weight: torch.Tensor, ids: list[list[int]]) -> torch.Tensor:
    """Row ``i`` is the mean of ``weight[ids[i]]``."""
    flat = torch.tensor([t for group in ids for t in group], dtype=torch.long)
    lengths = torch.tensor([len(group) for group in ids], dtype=torch.long)
    offsets = lengths.cumsum(0) - lengths
    return torch.nn.functional.embedding_bag(flat, weight, offsets, mode="mean")


# ---------------------------------------------------------------------------------------- embeddings
def helmert(n: int) -> torch.Tensor:
    """``(n-1) x n`` orthonormal rows orthogonal to the all-ones vector (Helmert contrasts), float64."""
    rows = torch.zeros(n - 1, n, dtype=torch.float64)
    for k in range(1, n):
        rows[k - 1, :k] = 1.0
        rows[k - 1, k] = -float(k)
        rows[k - 1] /= math.sqrt(k * (k + 1))
    return rows


@dataclass
class Factorised:
    """ALBERT embedding tables (E wide) and the E -> H mapping that reproduce the teacher's LN_H."""

    word: torch.Tensor
    positions: torch.Tensor
    types: torch.Tensor
    mapping_weight: torch.Tensor
    """``[H, E]``, an ``nn.Linear(E, H)`` weight"""
    mapping_bias: torch.Tensor
    variance_kept: dict[str, float]


def factorise(word: torch.Tensor, positions: torch.Tensor, types: torch.Tensor, gamma: torch.Tensor,
              beta: torch.Tensor, embedding_size: int) -> Factorised:
    """Project the teacher's H-wide embedding tables to E so that LN_E + a linear map equals LN_H.

    The directions are the top E-1 eigenvectors of the centred rows' second moment, each table
    averaged on its own (so 512 positions and 2 types are not drowned by 48k words), searched within
    the mean-zero subspace so they never include the all-ones direction LayerNorm removes.
    """
    hidden, e = word.shape[1], embedding_size
    blocks = {"words": word, "positions": positions, "types": types}
    centred = {name: b.double() - b.double().mean(dim=1, keepdim=True) for name, b in blocks.items()}
    grams = {name: c.T @ c / c.shape[0] for name, c in centred.items()}
    gram = sum(grams.values())
    basis = helmert(hidden).T  # H x (H-1): the mean-zero subspace of R^H
    _, vectors = torch.linalg.eigh(basis.T @ gram @ basis)
    top = basis @ vectors[:, -(e - 1):].flip(1)  # V': H x (E-1), leading direction first
    project = top @ helmert(e)  # V' Q: H x E; keeps norms on the kept directions, maps onto mean-0 E-vectors

    def kept(g: torch.Tensor) -> float:
        total = float(torch.trace(g))
        return float(torch.trace(top.T @ g @ top)) / total if total > 0 else 1.0

    variance = {"all": kept(gram), **{name: kept(g) for name, g in grams.items()}}
    weight = gamma.double()[:, None] * project * math.sqrt(hidden / e)
    return Factorised(word=(centred["words"] @ project).float(), positions=(centred["positions"] @ project).float(),
                      types=(centred["types"] @ project).float(), mapping_weight=weight.float(),
                      mapping_bias=beta.detach().float().clone(), variance_kept=variance)


# -------------------------------------------------------------------------------------------- layers
def layer_state(teacher_state: dict[str, torch.Tensor], chosen: list[int], groups: int) -> dict[str, torch.Tensor]:
    """ALBERT layer-group tensors: group g is the mean of its consecutive chosen teacher layers."""
    per_group = len(chosen) // groups
    state = {}
    for g in range(groups):
        members = chosen[g * per_group:(g + 1) * per_group]
        for source, target in LAYER_NAMES.items():
            for kind in ("weight", "bias"):
                tensors = [teacher_state[f"encoder.layer.{i}.{source}.{kind}"] for i in members]
                state[f"albert.encoder.albert_layer_groups.{g}.albert_layers.0.{target}.{kind}"] = \
                    torch.stack(tensors).mean(dim=0)
    return state


def _albert_config(teacher: PreTrainedModel, config: TransplantConfig, vocab_size: int, positions: int,
                   types: int) -> AlbertConfig:
    """The teacher's shape, activation and dropout with the kalbert vocabulary's special ids."""
    tc = teacher.config
    return AlbertConfig(
        vocab_size=vocab_size,
        embedding_size=config.embedding_size,
        hidden_size=tc.hidden_size,
        num_hidden_layers=config.layers,
        num_hidden_groups=config.share_groups or config.layers,
        num_attention_heads=tc.num_attention_heads,
        intermediate_size=tc.intermediate_size,
        inner_group_num=1,
        hidden_act=tc.hidden_act,  # the same ACT2FN name: BERT's "gelu" is the erf GELU in both
        hidden_dropout_prob=tc.hidden_dropout_prob,
        attention_probs_dropout_prob=tc.attention_probs_dropout_prob,
        max_position_embeddings=positions,
        type_vocab_size=types,
        initializer_range=tc.initializer_range,
        layer_norm_eps=tc.layer_norm_eps,
        pad_token_id=PAD_ID,
        bos_token_id=CLS_ID,
        eos_token_id=SEP_ID,
    )


def load_teacher_transformer(folder: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, bool]:
    """The teacher encoder (float32, eval), its tokenizer, and whether its pooler was trained (saved)."""
    from transformers import AutoModel, AutoTokenizer

    try:
        model, info = AutoModel.from_pretrained(str(folder), output_loading_info=True, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise KalbertError(f"cannot load the teacher in {folder}: {str(exc).splitlines()[0]}") from None
    has_pooler = getattr(model, "pooler", None) is not None and not any(
        key.startswith("pooler.") for key in info["missing_keys"])
    return model.float().eval(), tokenizer, has_pooler


def _build(config: TransplantConfig, teacher: PreTrainedModel, teacher_config: dict, has_pooler: bool,
           processor: spm.SentencePieceProcessor, tokenizer: PreTrainedTokenizerBase,
           ) -> tuple[AlbertForPreTraining, PieceMap, dict[str, float], list[int]]:
    """The AlbertForPreTraining plus the numbers the card reports."""
    n = processor.get_piece_size()
    embeddings = teacher.embeddings
    pieces = map_pieces(processor, tokenizer)
    with torch.no_grad():
        word = mean_rows(embeddings.word_embeddings.weight, pieces.ids)
        positions = embeddings.position_embeddings.weight[position_offset(teacher_config):]
        types = embeddings.token_type_embeddings.weight
        if types.shape[0] < 2:  # kalbert tokenizers give sentence B type 1: make it a copy of type 0
            types = types[[0, 0]]
        tables = factorise(word, positions, types, embeddings.LayerNorm.weight, embeddings.LayerNorm.bias,
                           config.embedding_size)
    chosen = choose_layers(teacher_config["num_hidden_layers"], config.layers, config.layer_choice)
    state = layer_state(teacher.state_dict(), chosen, config.share_groups or config.layers)
    state.update({
        "albert.embeddings.word_embeddings.weight": tables.word,
        "albert.embeddings.position_embeddings.weight": tables.positions,
        "albert.embeddings.token_type_embeddings.weight": tables.types,
        "albert.embeddings.LayerNorm.weight": torch.ones(config.embedding_size),
        "albert.embeddings.LayerNorm.bias": torch.zeros(config.embedding_size),
        "albert.encoder.embedding_hidden_mapping_in.weight": tables.mapping_weight,
        "albert.encoder.embedding_hidden_mapping_in.bias": tables.mapping_bias,
    })
    if has_pooler:
        state["albert.pooler.weight"] = teacher.pooler.dense.weight.detach().clone()
        state["albert.pooler.bias"] = teacher.pooler.dense.bias.detach().clone()
    torch.manual_seed(config.seed)
    # The MLM head (dense H->E, LayerNorm, decoder tied to the word embeddings) and the SOP classifier
    # keep ALBERT's standard initialisation: the teacher has no MLM head, and a projection guessed
    # through the head's GELU would be no better a start for further-pretraining.
    model = AlbertForPreTraining(_albert_config(teacher, config, n, positions.shape[0], types.shape[0]))
    missing, unexpected = model.load_state_dict(state, strict=False)
    new = NEW_HEADS if has_pooler else (*NEW_HEADS, "albert.pooler.")
    unfilled = [key for key in missing if not key.startswith(new)]
    if unexpected or unfilled:
        raise RuntimeError(f"transplant did not fill ALBERT: missing {unfilled}, unexpected {unexpected}")
    return model.eval(), pieces, tables.variance_kept, chosen


def transplant(config: TransplantConfig, overwrite: bool = False) -> TransplantResult:
    """Build the ALBERT for ``config`` and write it to ``config.out`` (atomically); return what was built."""
    started = time.perf_counter()
    out = Path(config.out)
    refuse_existing_output(out, overwrite)
    folder = teacher_transformer_folder(config.teacher)
    teacher_config = _teacher_config(folder)
    _validate(config, teacher_config)
    vocab, processor = _vocab_folder(config.vocab)
    teacher, tokenizer, has_pooler = load_teacher_transformer(folder)
    model, pieces, variance, chosen = _build(config, teacher, teacher_config, has_pooler, processor, tokenizer)
    result = TransplantResult(out=out, model=describe(model.config), teacher_layers=chosen,
                              variance_kept=variance, mapping=pieces.counts, identity_vocab=pieces.identity)
    meta = {
        "kalbert_version": __version__, "kind": Kind.PRETRAINED_MODEL, "command": invocation(),
        "languages": folder_languages(vocab), "model": result.model, "config": asdict(config),
        "vocab": str(vocab), "vocab_sha256": sha256_file(vocab / SPIECE),
        "max_seq_length": model.config.max_position_embeddings,
        "transplant": {
            "teacher": str(config.teacher), "teacher_model_type": teacher_config["model_type"],
            "teacher_layers": teacher_config["num_hidden_layers"], "teacher_layers_used": chosen,
            "share_groups": model.config.num_hidden_groups, "embedding_size": config.embedding_size,
            "hidden_size": model.config.hidden_size, "variance_kept": variance,
            "vocab_mapping": {**pieces.counts, "identity": pieces.identity, "pieces": processor.get_piece_size()},
            "teacher_pooler": has_pooler,
        },
    }
    with artifact_folder(out, Kind.PRETRAINED_MODEL, overwrite=overwrite) as tmp:
        model.save_pretrained(tmp)
        for name in TOKENIZER_FILES:
            if (vocab / name).exists():
                shutil.copy2(vocab / name, tmp / name)
        meta["seconds"] = round(time.perf_counter() - started, 1)
        meta = write_record(tmp, meta, Kind.PRETRAINED_MODEL, [teacher_root(config.teacher), vocab],
                            command=command_for(config))
        atomic_write_text(tmp / "README.md", model_card(out.name, meta))
    return result


def model_card(title: str, meta: dict) -> str:
    """README.md of a transplanted model: where every part came from and how much survived."""
    info = meta["transplant"]
    mapping = info["vocab_mapping"]
    kept = info["variance_kept"]
    vocab_line = ("the teacher's own vocabulary, mapped 1:1" if mapping["identity"] else
                  f"{mapping['single']:,} pieces from one teacher token, {mapping['several']:,} from the mean of "
                  f"several, {mapping['unk']:,} only <unk> (of {mapping['pieces']:,})")
    sharing = (f", averaged into {info['share_groups']} shared groups"
               if info["share_groups"] != len(info["teacher_layers_used"]) else "")
    layers = ", ".join(map(str, info["teacher_layers_used"]))
    kept_line = (f"second moment kept by the E-1 principal directions: {kept['all']:.2%} overall (words "
                 f"{kept['words']:.2%}, positions {kept['positions']:.2%}, types {kept['types']:.2%})")
    command = f"```\n{meta['command']}\n```" if meta.get("command") else "Built with the Python API; config below."
    return f"""---
library_name: transformers
tags: [albert, fill-mask, kalbert, transplant]
---
# {title}

An ALBERT (`AlbertForPreTraining`) transplanted from the {info['teacher_model_type']} encoder
`{info['teacher']}` onto the kalbert vocabulary `{meta['vocab']}`, without training. The encoder
layers are the teacher's; the MLM and SOP heads are new (standard initialisation), so further-pretrain
it before using them, e.g. `kalbert pretrain --init-from FOLDER --objective mlm+sop --data DATA --out RUN`.
It loads with plain transformers:

```python
from transformers import AutoModel, AutoTokenizer
tokenizer = AutoTokenizer.from_pretrained("path/to/this/folder")
model = AutoModel.from_pretrained("path/to/this/folder")  # or AutoModelForPreTraining for the heads
```

- model: {meta['model']}
- teacher layers used (0-based): {layers} of {info['teacher_layers']} ({meta['config']['layer_choice']}){sharing}
- embeddings: E={info['embedding_size']} of H={info['hidden_size']}; {kept_line}
- vocabulary: {vocab_line}
- pooler: {"the teacher's" if info['teacher_pooler'] else "new (the teacher has none)"}

{command}

## Config

```json
{json.dumps(meta['config'], indent=2, ensure_ascii=False)}
```
"""
