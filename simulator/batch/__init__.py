"""Batch simulation over trace sets: traces x parameter grid x seeds -> a Parquet results folder.

``run_batch`` (and ``workbench batch STUDY --traces ... --grid GRID.toml --out DIR``) runs
the jobs in local worker processes or on Dask; ``load(DIR)`` reads every row back as one
pandas DataFrame; ``status(DIR)`` counts jobs done, failed and missing; ``failures(DIR)``
lists the failed jobs and their errors.  ``STUDIES`` is the registry of batch studies.
"""

from __future__ import annotations

from .registry import STUDIES, get_study, read_grid
from .runner import BatchReport, plan, resolve_traces, run_batch
from .store import failures, load, status

__all__ = [
    "load",
    "status",
    "failures",
    "run_batch",
    "plan",
    "resolve_traces",
    "BatchReport",
    "STUDIES",
    "get_study",
    "read_grid",
]
