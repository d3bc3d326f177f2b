"""The training batches of a run, step after step, optionally built ahead in worker processes.

Masking, span finding and packing are Python work on the CPU. On a GPU they, not the model, bound the
step rate (a 128-instance batch takes about 40 ms with MLM+SOP and 120 ms with span selection on one
core), so ``--loader-workers N`` builds the batches of the coming steps in N processes while the
current one trains. A step's batch depends only on the step (``GlobalBatches``) and its mask key, never
on which process built it, so any number of workers gives the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from torch.utils.data import DataLoader, Dataset

from kalbert.pretrain.batches import Batch

StepBatches = tuple[int, list[Batch]]
"""a step and its micro-batches (this process's share of the global batch), on the CPU"""


class _Steps(Dataset):
    """Item ``step``: the step's micro-batches."""

    def __init__(self, micro_batches: Callable[[int], list[Batch]]) -> None:
        self.micro_batches = micro_batches

    def __getitem__(self, step: int) -> StepBatches:
        return step, self.micro_batches(step)


def _as_is(item: StepBatches) -> StepBatches:
    return item


def step_batches(micro_batches: Callable[[int], list[Batch]], first: int, last: int, workers: int
                 ) -> Iterator[StepBatches]:
    """Steps ``first..last`` in order with their batches; ``workers`` > 0 builds them ahead in that many
    forked processes (each keeps 4 steps ready), 0 builds each one when it is asked for."""
    loader = DataLoader(_Steps(micro_batches), batch_size=None, sampler=range(first, last + 1),
                        num_workers=workers, collate_fn=_as_is, prefetch_factor=4 if workers else None,
                        multiprocessing_context="fork" if workers else None)  # workers inherit the run's state
    return iter(loader)
