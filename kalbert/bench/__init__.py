"""Benchmarks: sentence models and baselines on Korean/Chinese STS, pair, multiple-choice and passage-retrieval
sets, results files with a format version, and a byte-stable Markdown + PNG report.

``kalbert bench run`` -> :func:`run_bench`; ``kalbert bench report`` -> :func:`write_report`.
"""

from kalbert.bench.baselines import BASELINES, load_encoder
from kalbert.bench.report import write_report
from kalbert.bench.results import FORMAT, ResultsFile, read_results, write_results
from kalbert.bench.runner import run_bench
from kalbert.bench.tasks import TASKS, get_task, select_tasks

__all__ = [
    "BASELINES",
    "FORMAT",
    "TASKS",
    "ResultsFile",
    "get_task",
    "load_encoder",
    "read_results",
    "run_bench",
    "select_tasks",
    "write_report",
    "write_results",
]
