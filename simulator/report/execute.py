"""Run a notebook top to bottom as ``workbench slides`` and the notebook tests do: nbclient
with the kernel of this environment, papermill-style parameters injected after the cell
tagged ``parameters``, a hidden first cell that makes every figure PNG + PDF in the slide
style, waits on the kernel's channels that cannot miss a wake-up (``poll_in_slices``), a
clean kernel shutdown, and a failing cell, a timeout or a dead kernel as one line.
Written by hand around nbclient."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import tempfile
import time
import json
import warnings
from pathlib import Path

from ..errors import InputError

__all__ = [
    "execute_notebook",
    "inject_parameters",
    "poll_in_slices",
    "SETUP_TAG",
    "INJECTED_TAG",
    "SETUP_TIMEOUT_S",
    "POLL_SLICE_S",
]

SETUP_TAG = "workbench-slides-setup"
INJECTED_TAG = "injected-parameters"
SETUP_TIMEOUT_S = 120

_SETUP_SOURCE = """\
try:
    import simulator.report.plots as _wb_plots  # (it picks Agg outside Jupyter; the inline backend wins below)
except ImportError:
    _wb_plots = None
%matplotlib inline
from matplotlib_inline.backend_inline import set_matplotlib_formats as _wb_formats
_wb_formats("png", "pdf")
if _wb_plots is not None:
    _wb_plots.use_slide_style()          # figures sized and lettered for a 1280x720 slide
import matplotlib as _wb_mpl
_wb_mpl.rcParams["figure.dpi"] = 144     # sharp on a projector
del _wb_formats, _wb_mpl, _wb_plots"""


def _parameter_names(source: str) -> set[str]:
    names = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return names
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        for t in targets:
            if isinstance(t, ast.Name):
                names.add(t.id)
    return names


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def inject_parameters(nb, parameters: dict, *, source: str = "notebook") -> None:
    """Papermill convention: a cell tagged ``injected-parameters`` after the ``parameters`` cell."""
    import nbformat

    if not parameters:
        return
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in _tags(c)), None)
    if idx is None:
        raise InputError("has no cell tagged 'parameters' to override.", path=source)
    known = _parameter_names(nb.cells[idx].source)
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise InputError(
            f"unknown parameter(s) {', '.join(unknown)} (the parameters cell sets "
            f"{', '.join(sorted(known)) or 'nothing'}).",
            path=source,
        )
    lines = ["# Injected parameters"] + [f"{k} = {v!r}" for k, v in parameters.items()]
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = [INJECTED_TAG]
    nb.cells.insert(idx + 1, cell)


POLL_SLICE_S = 0.5


def poll_in_slices(channel, slice_s: float = POLL_SLICE_S) -> None:
    """Make ``channel.get_msg(timeout)`` wait in slices of ``slice_s``, each after a check
    that does not block.

    A ZeroMQ socket's file descriptor signals edge-triggered: when the asyncio poller
    misses that edge, a long ``poll(timeout)`` sleeps with the kernel's reply already in
    the socket's queue, until the timeout (600 s per cell: ``workbench slides`` sat silent
    for ten minutes with every cell done, then nbclient interrupted the kernel and found
    the reply).  A non-blocking check at least every ``slice_s`` finds a queued message
    whether or not the edge was seen."""
    wait = channel.get_msg

    async def get_msg(timeout: float | None = None):
        from queue import Empty

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return await wait(timeout=0)  # a message already queued
            except Empty:
                pass
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise Empty
            try:
                return await wait(timeout=slice_s if left is None else min(slice_s, left))
            except Empty:
                continue

    channel.get_msg = get_msg


async def _maybe_await(value):
    return await value if inspect.isawaitable(value) else value


def _notebook_client(nb, timeout: int, path: Path):
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        """nbclient whose waits for the kernel's messages cannot miss a wake-up."""

        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            for channel in (kc.shell_channel, kc.iopub_channel):
                poll_in_slices(channel)
            return kc

        async def _async_cleanup_kernel(self):
            # jupyter_client's shutdown interrupts the kernel first, and an idle ipykernel
            # then logs "KeyboardInterrupt caught in kernel" on a build that went well: ask
            # it to shut down (the messaging protocol's shutdown_request) and give it a few
            # seconds to exit; the interrupt is left for a kernel that did not.
            km, kc = self.km, self.kc
            if km is None:  # already cleaned up (the kernel died): nothing to stop
                return
            if kc is not None and await _maybe_await(km.is_alive()):
                await _maybe_await(kc.shutdown())
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline and await _maybe_await(km.is_alive()):
                    await asyncio.sleep(0.05)
            await super()._async_cleanup_kernel()

    def timeout_for(cell) -> int:
        # The hidden set-up cell imports matplotlib and the workbench: seconds on a loaded
        # machine, whatever --timeout the notebook's own cells get.
        return max(timeout, SETUP_TIMEOUT_S) if SETUP_TAG in _tags(cell) else timeout

    return _Client(
        nb,
        timeout=timeout,
        timeout_func=timeout_for,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )


def read_notebook(path):
    """The notebook at ``path`` (nbformat 4); a file that is not one (not JSON, nested past
    the parser, not the notebook schema) is one ``InputError`` line naming it."""
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the schema is checked below, in one line
            nb = nbformat.read(path, as_version=4)
    except RecursionError:
        raise InputError("not a readable notebook (nested deeper than the JSON parser goes).", path=str(path)) from None
    except Exception as exc:  # nbformat raises JSON, schema and reader errors of several kinds
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"not a readable notebook ({first[:200]}).", path=str(path)) from None
    try:
        # nbformat's reader takes a notebook its schema does not (a source that is a number, an
        # output of no known type): the slides would meet it half-way through, as a traceback.
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        where = "/".join(str(p) for p in getattr(exc, "absolute_path", ())) or "top level"
        first = (str(getattr(exc, "message", "")) or str(exc)).strip().splitlines()[0]
        raise InputError(
            f"not a valid notebook (nbformat 4 schema, at {where}: {first[:160]}).", path=str(path)
        ) from None
    try:
        # JSON may escape a lone UTF-16 surrogate ("\ud800"), which is no Unicode text (RFC 8259
        # section 8.2): the deck, written as UTF-8, would meet it at the end.
        json.dumps(nb, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"not a valid notebook (its text holds a lone surrogate, U+{ord(exc.object[exc.start]):04X}, "
            "which is not Unicode text).",
            path=str(path),
        ) from None
    return nb


def execute_notebook(
    path: Path,
    parameters: dict | None = None,
    *,
    timeout: int = 600,
    notebook_out: str | None = None,
    one_line_errors: bool = True,
):
    """Run a notebook top to bottom (nbclient) with figures as PNG + PDF outputs, in the
    slide style.  A failing cell is one ``InputError`` line (``one_line_errors=False``:
    nbclient's own error, with the cell's traceback, as a test wants it)."""
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = read_notebook(path)
    inject_parameters(nb, parameters or {}, source=str(path))
    setup = nbformat.v4.new_code_cell(_SETUP_SOURCE)
    setup.metadata["tags"] = [SETUP_TAG]
    nb.cells.insert(0, setup)
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # the inline backend draws the figures into the outputs
    tmp = None
    if notebook_out is None and "WORKBENCH_NOTEBOOK_OUT" not in env:
        tmp = tempfile.TemporaryDirectory(prefix="workbench-slides-")
        notebook_out = tmp.name
    if notebook_out is not None:
        env["WORKBENCH_NOTEBOOK_OUT"] = str(notebook_out)
    client = _notebook_client(nb, timeout, path)
    try:
        client.execute(env=env)
    except (CellTimeoutError, CellExecutionError) as exc:
        if not one_line_errors:
            raise
        raise _one_line_error(exc, nb, path, timeout) from None
    except DeadKernelError:
        if not one_line_errors:
            raise
        raise InputError(
            "the notebook's kernel died while running (it was killed, or ran out of memory)", path=str(path)
        ) from None
    finally:
        if tmp is not None:
            tmp.cleanup()
    return nb


def _one_line_error(exc: Exception, nb, path: Path, timeout: int) -> InputError:
    """A cell's timeout or error as one InputError line."""
    from nbclient.exceptions import CellTimeoutError

    if isinstance(exc, CellTimeoutError):
        # The cell that got no reply; the set-up cell put first makes indices count from 1.
        cell = next(
            (
                i
                for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and "shell.execute_reply" not in c.get("metadata", {}).get("execution", {})
            ),
            None,
        )
        where = f"cell {cell} of the notebook" if cell else "a cell"
        return InputError(
            f"{where} did not finish within {timeout} s (the kernel was stopped; "
            "give more time with --timeout, or fewer parameters)",
            path=str(path),
        )
    first = next((ln for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("-")), "")
    ename = getattr(exc, "ename", "error")
    evalue = getattr(exc, "evalue", first)
    return InputError(f"the notebook failed while running: {ename}: {evalue}", path=str(path))
