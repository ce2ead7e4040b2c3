"""Each study notebook executed once per test process, shared by ``test_notebooks.py`` (it
runs top to bottom) and ``test_decks.py`` (its deck fits a slide).

A notebook runs as ``workbench slides`` runs it (``slides.execute_notebook``: nbclient, the
inline backend writing every figure as PNG and PDF, the slide style of
``simulator.report.plots``), on the small parameter set of its ``parameters`` cell; the
committed notebooks are not written back.  The tests of one notebook carry the same
``xdist_group`` mark, so under ``pytest -n 2`` (``--dist loadgroup``, set in
pyproject.toml) they run in the same process and the notebook runs once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HAR_CORPUS = ROOT.parent / "shared" / "traces" / "har-real"   # notebook 08 adds it when it is there

_RUNS: dict[Path, object] = {}


def notebook_params():
    """``parametrize`` values: one per notebook, grouped by notebook for pytest-xdist."""
    return [pytest.param(p, id=p.name, marks=pytest.mark.xdist_group(p.stem)) for p in NOTEBOOKS]


def executed(path: Path, tmp_path_factory):
    """The notebook at ``path`` after one run (cached per process); its error, raised again."""
    if path not in _RUNS:
        from simulator.report.slides import execute_notebook

        out = tmp_path_factory.mktemp(f"run-{path.stem}")
        saved = os.environ.get("WORKBENCH_HAR_CORPUS")
        if HAR_CORPUS.is_dir():
            os.environ["WORKBENCH_HAR_CORPUS"] = str(HAR_CORPUS)
        try:
            _RUNS[path] = execute_notebook(path, timeout=600, notebook_out=str(out), one_line_errors=False)
        except Exception as exc:          # the second test of the notebook sees the same error
            _RUNS[path] = exc
        finally:
            if saved is None:
                os.environ.pop("WORKBENCH_HAR_CORPUS", None)
            else:
                os.environ["WORKBENCH_HAR_CORPUS"] = saved
    run = _RUNS[path]
    if isinstance(run, Exception):
        raise run
    return run
