"""Memory-mapped instance shards: write them during ``data build``, read them during training.

A split (``train``, ``heldout``) is a list of shards; shard ``k`` is three ``.npy`` files:
``{split}-{k:05d}.ids.npy`` (token ids, uint16 when the vocabulary fits, else int32, all instances
back to back), ``.flags.npy`` (uint8 per token: bit 0 word start, bit 1 morpheme start) and
``.index.npy`` (int64 rows: offset, length, length of A, SOP label). ``.npy`` keeps the dtype and
shape in the file, and ``np.load(mmap_mode="r")`` maps it without reading it, so a training
process touches only the instances it samples.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kalbert.errors import KalbertError
from kalbert.pretrain.instances import Instance

_INDEX_COLUMNS = 4  # offset, length, length_a, label


def ids_dtype(vocab_size: int) -> np.dtype:
    """uint16 while every id fits, else int32."""
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


def shard_names(split: str, number: int) -> tuple[str, str, str]:
    stem = f"{split}-{number:05d}"
    return f"{stem}.ids.npy", f"{stem}.flags.npy", f"{stem}.index.npy"


class ShardWriter:
    """Buffers instances of one split and writes a shard every ``shard_instances`` instances."""

    def __init__(self, folder: Path, split: str, dtype: np.dtype, shard_instances: int) -> None:
        self.folder, self.split, self.dtype, self.shard_instances = folder, split, dtype, shard_instances
        self.shards: list[dict[str, int | str]] = []
        self._pending: list[Instance] = []

    def add(self, instances: list[Instance]) -> None:
        self._pending.extend(instances)
        while len(self._pending) >= self.shard_instances:
            self._write(self._pending[: self.shard_instances])
            self._pending = self._pending[self.shard_instances:]

    def close(self) -> list[dict[str, int | str]]:
        """Write what is left; return one record (file stem, instances, tokens) per shard."""
        if self._pending:
            self._write(self._pending)
            self._pending = []
        return self.shards

    def _write(self, instances: list[Instance]) -> None:
        lengths = np.array([len(inst.ids) for inst in instances], dtype=np.int64)
        index = np.empty((len(instances), _INDEX_COLUMNS), dtype=np.int64)
        index[:, 0] = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        index[:, 1] = lengths
        index[:, 2] = [inst.length_a for inst in instances]
        index[:, 3] = [inst.label for inst in instances]
        ids_name, flags_name, index_name = shard_names(self.split, len(self.shards))
        np.save(self.folder / ids_name, np.concatenate([inst.ids for inst in instances]).astype(self.dtype))
        np.save(self.folder / flags_name, np.concatenate([inst.flags for inst in instances]))
        np.save(self.folder / index_name, index)
        self.shards.append({"stem": ids_name.removesuffix(".ids.npy"), "instances": len(instances),
                            "tokens": int(lengths.sum())})


class InstanceSet:
    """The instances of one split across its shards, memory-mapped, addressed by a global index."""

    def __init__(self, folder: Path, shards: list[dict]) -> None:
        self._ids, self._flags, self._index = [], [], []
        for shard in shards:
            stem = folder / str(shard["stem"])
            try:
                self._ids.append(np.load(f"{stem}.ids.npy", mmap_mode="r"))
                self._flags.append(np.load(f"{stem}.flags.npy", mmap_mode="r"))
                index = np.load(f"{stem}.index.npy", mmap_mode="r")
            except (OSError, ValueError) as exc:
                raise KalbertError(f"cannot read shard {stem}: {exc}",
                                   "rebuild the data with `kalbert data build`") from None
            if index.shape != (shard["instances"], _INDEX_COLUMNS):
                raise KalbertError(f"shard {stem} holds {index.shape[0]} instances, kalbert.json says "
                                   f"{shard['instances']}", "rebuild the data with `kalbert data build`")
            self._index.append(index)
        self._starts = np.cumsum([0] + [len(index) for index in self._index])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, i: int) -> Instance:
        shard = int(np.searchsorted(self._starts, i, side="right")) - 1
        offset, length, length_a, label = (int(v) for v in self._index[shard][i - self._starts[shard]])
        ids = np.asarray(self._ids[shard][offset:offset + length], dtype=np.int64)
        flags = np.asarray(self._flags[shard][offset:offset + length])
        return Instance(ids, flags, length_a, label)
