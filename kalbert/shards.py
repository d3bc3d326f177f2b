"""``--shard I/N``: one process's share of an encoding job, so N processes or machines split a corpus.

Shares are fixed by the work alone (a shard number, a sentence's hash), never by timing, so every process
computes the same split without talking to the others, and the merge is copying files into one folder.
"""

from __future__ import annotations

from kalbert.errors import KalbertError

Shard = tuple[int, int]


def parse_shard(shard: str | None) -> Shard | None:
    """``"1/4"`` -> ``(1, 4)``; None stays None; anything else is a one-line error."""
    if shard is None:
        return None
    try:
        index, count = (int(part) for part in shard.split("/"))
    except ValueError:
        index, count = -1, 0
    if not 0 <= index < count:
        raise KalbertError(f"--shard {shard} is not I/N with 0 <= I < N", "e.g. --shard 0/4 ... --shard 3/4")
    return index, count


def in_share(number: int, shard: Shard | None) -> bool:
    """Whether work item ``number`` (a shard index, a hash) belongs to ``shard`` (all do without one)."""
    return shard is None or number % shard[1] == shard[0]
