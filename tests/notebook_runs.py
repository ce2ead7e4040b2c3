"""Each study notebook executed once per test session, shared by ``test_notebooks.py`` (it
runs top to bottom) and ``test_decks.py`` (its deck fits a slide).

A notebook runs as ``workbench slides`` runs it (``execute.execute_notebook``: nbclient, the
inline backend writing every figure as PNG and PDF, the slide style of
``simulator.report.plots``), on the small parameter set of its ``parameters`` cell; the
committed notebooks are not written back.  The executed copy is kept in the session's
temporary folder; under ``pytest -n`` that folder is shared by the workers, and a lock
per notebook makes a worker that needs a notebook another worker is running wait for
that run instead of starting a second one.  (pytest-xdist's ``loadgroup``, which would
keep both tests on one worker, does not group on pytest 9.2: it renames the nodeid
through an attribute pytest no longer reads.)
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HAR_CORPUS = ROOT.parent / "shared" / "traces" / "har-real"  # notebook 08 adds it when it is there

_RUNS: dict[Path, object] = {}


def _session_folder(tmp_path_factory) -> Path:
    """A folder every process of this test session sees: the session's base temp folder
    (under xdist each worker's is a sub-folder ``popen-gwN`` of it)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "notebook-runs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def executed(path: Path, tmp_path_factory):
    """The notebook at ``path`` after its one run in this session; a failed run raises its
    error again (nbclient's, with the cell's traceback, in the process that ran it)."""
    if path in _RUNS:
        run = _RUNS[path]
        if isinstance(run, Exception):
            raise run
        return run
    folder = _session_folder(tmp_path_factory)
    done, failed = folder / f"{path.stem}.ipynb", folder / f"{path.stem}.error"
    with open(folder / f"{path.stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the run in the other process ends
        if done.exists():
            _RUNS[path] = nbformat.read(done, as_version=4)
        elif failed.exists():
            _RUNS[path] = RuntimeError(f"{path.name} failed in another test process:\n{failed.read_text()}")
        else:
            _RUNS[path] = _run(path, folder)
            if isinstance(_RUNS[path], Exception):
                failed.write_text(str(_RUNS[path]))
            else:
                nbformat.write(_RUNS[path], done)
    return executed(path, tmp_path_factory)


def _run(path: Path, folder: Path):
    from simulator.report.execute import execute_notebook

    out = folder / f"{path.stem}-out"
    saved = os.environ.get("WORKBENCH_HAR_CORPUS")
    if HAR_CORPUS.is_dir():
        os.environ["WORKBENCH_HAR_CORPUS"] = str(HAR_CORPUS)
    try:
        return execute_notebook(path, timeout=600, notebook_out=str(out), one_line_errors=False)
    except Exception as exc:
        return exc
    finally:
        if saved is None:
            os.environ.pop("WORKBENCH_HAR_CORPUS", None)
        else:
            os.environ["WORKBENCH_HAR_CORPUS"] = saved
