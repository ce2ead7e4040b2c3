"""Live controls for the study notebooks: one panel, built from a study's parameter description.

A study notebook ends with an "Explore" section: ``Explorer(...)`` shown as the last
expression of a cell.  What a panel is made of:

* ``controls``: the parameter description (``controls.py``), ``{name: Slider | Options | Several | Switch}``
  (ranges and choices per parameter, their defaults, labels and units).  Each becomes an
  ipywidgets control; the current values travel as a dict ``{name: value}``;
* ``inputs`` (optional, ``Inputs``): the trace picker, the bundled traces under
  ``traces/`` that suit the study, built-in inputs (a generated site, a scenario) and a
  path box for any other file; a file that cannot be read leaves one line (the
  project's ``InputError``) in the panel's status line;
* ``run(values, source) -> result``: ONE run of the study at these values on the
  chosen input, and ``draw(result, values, fig) -> table``: its figure (drawn on a
  matplotlib ``Figure`` the panel gives, never pyplot, so it can be drawn in a worker
  thread) and its key table (a DataFrame);
* ``notes(values, result) -> {name: Inert(why, off)}`` (optional): the controls that
  cannot act at these values on this input, and why.  ``off``: no value of it can act
  here (the control is disabled, its reason on a line under the controls); else it acts
  in steps, and a move inside a step says why in the status line;
* an output area: the figure (an ``Image`` widget, laid out again on every update: a new
  input's tick labels may be wider), the table (an ``HTML`` widget, in a box that scrolls
  sideways if it is ever wider than the output area; the panels keep their tables inside
  ``TABLE_BUDGET_PX``) and a status line (the time each update took; "no change in the
  figure or the table" and the reason, when a move changed neither, the titles left out
  (``figure_data``); "running..." once an update has taken longer than ``busy_after_s``;
  the error line).

Updates (``LatestOnly``): every control change bumps a generation counter and hands
the values to ONE worker thread after a short debounce (``debounce_s``: a burst of
changes makes one run).  The worker runs the newest values only; runs never overlap.
A study run cannot be interrupted, so a run whose values were superseded while it ran
finishes, and its result is dropped (its generation is no longer the newest); the
newest values run next.  Why a thread and not the kernel's own thread: ipywidgets
calls observers on the kernel's main thread, one comm message at a time; a run there
would hold back the messages of the next slider moves and then run each of them in
turn, stale ones included.  With the worker, the main thread stays free to take every
message and only bumps the counter.  ``Explorer.render(values, source)`` is the same
update done synchronously (the benchmark and the static figure use it).

Outside a live front-end: the panel is displayed as ONE output whose bundle holds the
widget view *and* the figure at the default values as ``image/png`` (and
``application/pdf``), with a caption naming the controls in the output's metadata
(``metadata["explore"]["caption"]``).  JupyterLab renders the widget view (the widget
manager's renderer outranks images); ``workbench slides``, nbconvert and GitHub show the
static figure.  Written by hand: ipywidgets has ``interact``, but no debounced worker, no
stale-result dropping and no static fallback.
"""

from __future__ import annotations

import base64
import html
import io
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError
from .controls import Control, Options, Several, Slider, Switch, defaults, describe

__all__ = ["Slider", "Options", "Several", "Switch", "Inputs", "View", "Explorer", "LatestOnly", "Inert",
           "bundled_traces", "TRACES_DIR", "TABLE_BUDGET_PX", "table_min_width_px", "figure_data", "update_line"]

TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"
STATIC_DPI = 144           # the static figure (slides: sharp on a projector)
LIVE_DPI = 96              # the live figure (re-encoded on every update)


# ---------------------------------------------------------------------------------------
# Inputs (the trace picker)


def bundled_traces(suffixes: tuple[str, ...], root: Path = TRACES_DIR) -> list[Path]:
    """The bundled traces under ``traces/`` whose names end in ``suffixes``, sorted."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes))


@dataclass(frozen=True)
class Inputs:
    """What a study reads: ``load(path)`` turns a file (or folder) into the study's input
    and raises ``InputError`` when it cannot; ``builtin`` names inputs that need no file
    (label -> the input itself, e.g. ``{"generated site": None}``); ``suffixes`` picks the
    bundled traces to offer (``skip``: name prefixes left out); ``default`` is a label of
    ``builtin``, a bundled trace (its path under ``traces/``) or a path."""

    load: Callable[[str], Any]
    suffixes: tuple[str, ...] = (".har",)
    builtin: dict[str, Any] = field(default_factory=dict)
    default: str | None = None
    note: str = ""
    skip: tuple[str, ...] = ()                   # bundled traces whose names start so are not offered


class _Sources:
    """The picker's choices and a cache of loaded inputs (by path and modification time)."""

    def __init__(self, inputs: Inputs):
        self.inputs = inputs
        self.bundled = {str(p.relative_to(TRACES_DIR)): p for p in bundled_traces(inputs.suffixes)
                        if not p.name.startswith(inputs.skip or ("\0",))}
        self._cache: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def choices(self) -> list[str]:
        return list(self.inputs.builtin) + list(self.bundled)

    def initial(self) -> tuple[str | None, str]:
        """(dropdown choice, path box text) for the default input."""
        d = self.inputs.default
        if d is None:
            return (self.choices()[0] if self.choices() else None), ""
        if d in self.inputs.builtin or d in self.bundled:
            return d, ""
        p = Path(d).expanduser()
        for key, bp in self.bundled.items():
            if p.exists() and p.resolve() == bp.resolve():
                return key, ""
        return (self.choices()[0] if self.choices() else None), d

    def get(self, key: str) -> Any:
        """The input named by a dropdown key or a path; ``InputError`` when unreadable."""
        if key in self.inputs.builtin:
            return self.inputs.builtin[key]
        path = self.bundled.get(key) or Path(key).expanduser()
        try:
            stamp = path.stat().st_mtime_ns
        except FileNotFoundError:
            raise InputError("no such file or folder.", path=str(key)) from None
        except OSError as exc:
            raise InputError(f"cannot be read ({exc.strerror or exc}).", path=str(key)) from None
        with self._lock:
            hit = self._cache.get((str(path), stamp))
        if hit is not None:
            return hit
        try:
            value = self.inputs.load(str(path))
        except InputError:
            raise
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InputError(f"cannot be read ({exc}).", path=str(key)) from None
        with self._lock:
            self._cache = {(str(path), stamp): value}       # keep the last one only
        return value


# ---------------------------------------------------------------------------------------
# Newest values only, on one worker thread


class LatestOnly:
    """Runs ``work(job)`` on one worker thread for the newest job only.

    ``submit(job)`` returns the job's generation (1, 2, ...).  The worker waits until no
    job has come for ``debounce_s``, takes the newest, runs it, and calls
    ``publish(generation, ok, value)`` (``ok`` False: ``value`` is the exception) unless
    a newer job was submitted meanwhile: then the result is dropped (``dropped`` counts
    them).  Jobs submitted while a run is under way replace each other; only the last
    runs.  ``on_busy(generation, elapsed_s)`` is called once a run has taken
    ``busy_after_s``, then every half second until it ends (a progress indicator).
    """

    def __init__(self, work: Callable[[Any], Any], publish: Callable[[int, bool, Any], None], *,
                 debounce_s: float = 0.2, busy_after_s: float = 0.5,
                 on_busy: Callable[[int, float], None] | None = None):
        self.work, self.publish, self.on_busy = work, publish, on_busy
        self.debounce_s, self.busy_after_s = debounce_s, busy_after_s
        self.generation = 0          # of the newest job submitted
        self.ran: list[int] = []     # generations that ran, in order
        self.published: list[int] = []
        self.dropped = 0
        self._pending: tuple[int, Any] | None = None
        self._due = 0.0
        self._running = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, job) -> int:
        """Queue ``job`` as the newest (it replaces any not yet started) and return its generation."""
        with self._cond:
            self.generation += 1
            self._pending = (self.generation, job)
            self._due = time.monotonic() + self.debounce_s
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="explore-worker", daemon=True)
                self._thread.start()
            self._cond.notify_all()
            return self.generation

    def idle(self) -> bool:
        """True when no job is waiting or running."""
        with self._cond:
            return self._pending is None and not self._running

    def wait(self, timeout: float = 30.0) -> bool:
        """Block until no job is pending or running; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending is not None or self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def close(self) -> None:
        """Stop the worker once its current job ends; later submissions are not run."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _tick(self, generation: int, done: threading.Event) -> None:
        """``on_busy(generation, elapsed_s)`` after ``busy_after_s``, then twice a second."""
        t0 = time.monotonic()
        if done.wait(self.busy_after_s):
            return
        while True:
            self.on_busy(generation, time.monotonic() - t0)
            if done.wait(0.5):
                return

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (self._pending is None or time.monotonic() < self._due):
                    self._cond.wait(None if self._pending is None else max(self._due - time.monotonic(), 0.001))
                if self._closed:
                    return
                generation, job = self._pending
                self._pending = None
                self._running = True
                self.ran.append(generation)
            done = threading.Event()
            if self.on_busy is not None:
                threading.Thread(target=self._tick, args=(generation, done), daemon=True).start()
            try:
                ok, value = True, self.work(job)
            except Exception as exc:  # noqa: BLE001 - shown in the panel, the worker lives on
                ok, value = False, exc
            done.set()
            with self._cond:
                stale = generation != self.generation
                if stale:
                    self.dropped += 1
            if not stale:
                try:
                    self.publish(generation, ok, value)
                finally:
                    self.published.append(generation)
            with self._cond:
                self._running = False
                self._cond.notify_all()


# ---------------------------------------------------------------------------------------
# The panel


@dataclass
class View:
    """One update's output: the figure as PNG, the key table, the timings (s)."""

    png: bytes
    table: Any
    run_s: float
    draw_s: float
    load_s: float = 0.0
    cpu_s: float = 0.0             # CPU time of the thread that made it (the update alone)
    values: dict = field(default_factory=dict)
    source: str | None = None
    signature: str = ""            # the figure's data and the table, titles left out (``figure_data``)
    notes: dict = field(default_factory=dict)   # {control: why it cannot act here} (the panel's ``notes``)
    off: frozenset = frozenset()   # the controls among ``notes`` that cannot act at all on this input

    @property
    def total_s(self) -> float:
        """Seconds the update took: loading the input, the study run and drawing."""
        return self.load_s + self.run_s + self.draw_s


def _png(fig, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)        # the figure's constrained layout sets the margins
    return buf.getvalue()


def _number(v) -> str:
    return f"{v:,.3f}".rstrip("0").rstrip(".") if v == v else ""


def _table_html(table) -> str:
    """The key table as HTML, in a box that scrolls sideways if it is ever wider than the
    output area (its first column, the row names, stays in view); the panels keep their
    tables inside ``TABLE_BUDGET_PX`` so that the scroll is a fallback, not the rule."""
    if table is None:
        return ""
    try:
        import pandas as pd

        if isinstance(table, pd.DataFrame | pd.Series):
            inner = table.to_html(float_format=_number, border=0, classes="wb-table")
            return f'<div class="wb-table-box">{inner}</div>'
    except ImportError:  # pragma: no cover - pandas is a dependency
        pass
    return f"<pre>{html.escape(str(table))}</pre>"


# The output area of a notebook cell in JupyterLab at its default width is about 964 px
# (measured in the issue that asked for this budget); a table keeps 60 px of it free.
TABLE_BUDGET_PX = 900
# How wide a table needs to be at least (``table_min_width_px``): every cell's longest
# unbreakable word at 8.2 px a character (13 px system font, header cells in bold) plus
# 16 px of cell padding.  Calibrated on the issue's measure: 02's old table, 1,214 px in
# JupyterLab, is estimated at 1,218 px.
CHAR_PX = 8.2
CELL_PAD_PX = 16


def table_min_width_px(table) -> float:
    """The narrowest the table can be drawn: per column (the row names included), its
    longest word (header words break at spaces, numbers never), summed."""
    import pandas as pd

    frame = table.to_frame() if isinstance(table, pd.Series) else table
    index_names = [str(n) for n in frame.index.names if n is not None]
    columns = [[*index_names, *map(str, frame.index)]] + [
        [str(name), *(_number(v) if isinstance(v, float) else str(v) for v in frame[name])] for name in frame.columns]
    width = 0.0
    for cells in columns:
        width += max((len(word) for cell in cells for word in cell.split()), default=0) * CHAR_PX + CELL_PAD_PX
    return width


# Readouts: a selection slider's readout is as wide as its label (ipywidgets gives it a
# fixed minimum and clips the rest: "as measured" showed as "as measure").
_CSS = (".wb-explore .wb-busy { opacity: 0.45; transition: opacity 0.2s; } "
        ".wb-explore table.wb-table td, .wb-explore table.wb-table th { padding: 1px 8px; } "
        ".wb-explore .wb-table-box { max-width: 100%; overflow-x: auto; } "
        ".wb-explore .wb-table-box table.wb-table th:first-child { position: sticky; left: 0; "
        "background: var(--jp-layout-color1, white); } "
        ".wb-explore .widget-readout, .wb-explore .jupyter-widget-readout { min-width: max-content; "
        "max-width: none; overflow: visible; } ")


def figure_data(fig) -> str:
    """A digest of what a figure shows, its titles left out (they name the values, so they
    change with every move): every axes' bars, lines, collections, texts, tick labels and
    axis labels.  Two updates with the same digest and the same table look the same to a
    reader but for the title."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for ax in fig.axes:
        for patch in ax.patches:
            h.update(np.asarray(patch.get_path().transformed(patch.get_patch_transform()).vertices,
                                dtype=float).round(9).tobytes())
            h.update(repr(patch.get_facecolor()).encode())
        for line in ax.lines:
            h.update(np.asarray(line.get_xydata(), dtype=float).round(9).tobytes())
        for coll in ax.collections:
            h.update(np.asarray(coll.get_offsets(), dtype=float).round(9).tobytes())
            for path in coll.get_paths():
                h.update(np.asarray(path.vertices, dtype=float).round(9).tobytes())
        for text in ax.texts:
            h.update(text.get_text().encode())
        for axis in (ax.xaxis, ax.yaxis):
            h.update(axis.get_label_text().encode())
            h.update(repr(axis.get_view_interval()).encode())
            h.update("|".join(t.get_text() for t in axis.get_ticklabels()).encode())
        legend = ax.get_legend()
        if legend is not None:
            h.update("|".join(t.get_text() for t in legend.get_texts()).encode())
    return h.hexdigest()


def _table_digest(table) -> str:
    import hashlib

    return hashlib.sha256(_table_html(table).encode()).hexdigest()


def error_line(exc: BaseException) -> str:
    """One line for the status: an ``InputError``'s sentence, else the type and message."""
    if isinstance(exc, InputError):
        return str(exc)
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@dataclass(frozen=True)
class Inert:
    """Why a control cannot act at the current values on the current input: ``off`` when
    no value of it can change the result there (the panel disables it and says why),
    else it acts only in steps (a move inside one step changes nothing, and the status
    says this instead of "updated")."""

    why: str
    off: bool = False


def moved_controls(before: dict, after: dict) -> list[str]:
    """The controls whose values differ between two updates, in order."""
    return [name for name in after if before.get(name) != after[name]]


def update_line(view: View, previous: View | None, labels: dict[str, str] | None = None) -> tuple[str, str]:
    """The status after an update and its kind (``updated``, ``explained``: nothing
    changed and the panel says why, ``unexplained``: nothing changed and no reason).
    ``labels``: the controls' labels, to name a control as the panel shows it."""
    labels = labels or {}
    took = (f"{view.total_s:.2f} s: study run {view.run_s:.2f} s, figure {view.draw_s:.2f} s"
            f"{f', input {view.load_s:.2f} s' if view.load_s > 0.05 else ''}")
    if previous is None or view.signature != previous.signature or view.source != previous.source:
        return f"updated in {took}", "updated"
    moved = moved_controls(previous.values, view.values)
    why = [f"{labels.get(name, name)}: {view.notes[name]}" for name in moved if name in view.notes]
    if why:
        return f"no change in the figure or the table. {'; '.join(why)} ({took})", "explained"
    return (f"no change in the figure or the table: this move does not act on this input at these values "
            f"({took})"), "unexplained"


class Explorer:
    """A live panel for one study (see the module docstring).

    ``Explorer(title, controls, run, draw, inputs=None)``: the figure and table at the
    default values are computed at once (synchronously); displaying the object shows the
    controls and the output area in a live front-end, the static figure elsewhere."""

    def __init__(self, title: str, controls: dict[str, Control], run: Callable[[dict, Any], Any],
                 draw: Callable[[Any, dict, Any], Any], *, inputs: Inputs | None = None,
                 figsize: tuple[float, float] = (9.0, 3.6), debounce_s: float = 0.2, busy_after_s: float = 0.5,
                 caption: str = "", notes: Callable[[dict, Any], dict[str, Any]] | None = None):
        self.title = title
        self.controls = dict(controls)
        self._run, self._draw = run, draw
        self.figsize = figsize
        self.extra_caption = caption
        self.sources = _Sources(inputs) if inputs is not None else None
        self._notes = notes
        self.values = defaults(self.controls)
        choice, path = self.sources.initial() if self.sources else (None, "")
        self.source = path or choice               # dropdown key or a path
        self.default_view, self._static = self._first_render()
        self.view = self.default_view
        self.shown_generation = 0
        self.errors: list[str] = []
        self._widgets: dict[str, Any] = {}
        self._root = None
        self._syncing = False                      # widgets being set from code: observers stay quiet
        self.queue = LatestOnly(self._job, self._publish, debounce_s=debounce_s, busy_after_s=busy_after_s,
                                on_busy=self._busy)

    # -- updates --------------------------------------------------------------------------

    def render(self, values: dict, source: str | None = None, *, dpi: int = LIVE_DPI, static: bool = False):
        """One update, synchronously: load the input (cached), run the study once, draw.
        Returns a ``View`` (and the figure too when ``static``)."""
        from matplotlib.figure import Figure

        c0, t0 = time.thread_time(), time.perf_counter()
        data = self.sources.get(source) if self.sources is not None and source is not None else None
        t1 = time.perf_counter()
        result = self._run(dict(values), data)
        t2 = time.perf_counter()
        # Constrained layout on every redraw: an input with other magnitudes (a 102-origin
        # page) has wider tick labels, and axes placed for the first input would cut them off.
        fig = Figure(figsize=self.figsize, layout="constrained")
        table = self._draw(result, dict(values), fig)
        png = _png(fig, dpi)                        # draws the figure: its tick labels are set after
        notes = {name: n if isinstance(n, Inert) else Inert(str(n)) for name, n in
                 (self._notes(dict(values), result) if self._notes is not None else {}).items()}
        t3 = time.perf_counter()
        view = View(png=png, table=table, run_s=t2 - t1, draw_s=t3 - t2, load_s=t1 - t0,
                    cpu_s=time.thread_time() - c0, values=dict(values), source=source,
                    signature=figure_data(fig) + _table_digest(table),
                    notes={name: n.why for name, n in notes.items()},
                    off=frozenset(name for name, n in notes.items() if n.off))
        return (view, fig) if static else view

    def _first_render(self):
        view, fig = self.render(self.values, self.source, static=True)
        static = {"image/png": _png(fig, STATIC_DPI)}
        buf = io.BytesIO()
        fig.savefig(buf, format="pdf")
        static["application/pdf"] = buf.getvalue()
        return view, static

    def _job(self, job):
        values, source = job
        return self.render(values, source)

    def _publish(self, generation: int, ok: bool, value) -> None:
        if not ok:
            line = error_line(value)
            self.errors.append(line)
            if not isinstance(value, InputError):
                self._log_traceback(value)
            self._status(line, error=True)
            return
        previous = self.view
        self.view, self.shown_generation = value, generation
        line, kind = update_line(value, previous, {name: c.label for name, c in self.controls.items()})
        if self._root is not None:
            self._widgets["figure"].value = value.png
            self._widgets["table"].value = _table_html(value.table)
            self._show_notes(value)
        self._status(line, warn=kind == "unexplained")

    def _busy(self, generation: int, elapsed_s: float) -> None:
        newer = generation != self.queue.generation
        self._status(f"running... {elapsed_s:.1f} s" + (" (the values changed since: they run next)" if newer
                                                         else " (the figure below is from the previous values)"),
                     busy=True)

    def _show_notes(self, view: View) -> None:
        """Controls that cannot act on this input are disabled, their reason as a tooltip
        and on the line under the controls."""
        for name in self.controls:
            cw = self._widgets[f"control:{name}"]
            off = name in view.off
            for target in (cw._wb_boxes if isinstance(self.controls[name], Several) else [cw]):
                target.disabled = off
                target.tooltip = view.notes[name] if off else None
        lines = [f"{self.controls[name].label}: {view.notes[name]}" for name in self.controls if name in view.off]
        self._widgets["notes"].value = ("<small>Not acting on this input: " + html.escape("; ".join(lines)) + "</small>"
                                        if lines else "")

    def _status(self, text: str, *, error: bool = False, busy: bool = False, warn: bool = False) -> None:
        if self._root is None:
            return
        color = "#b00020" if error else ("#1f5fa8" if busy else ("#a15c00" if warn else "#555"))
        icon = "&#9888; " if error else ("&#8987; " if busy else "")
        self._widgets["status"].value = f'<span style="color:{color}">{icon}{html.escape(text)}</span>'
        figure = self._widgets["figure"]
        figure.add_class("wb-busy") if busy else figure.remove_class("wb-busy")

    def _log_traceback(self, exc: BaseException) -> None:
        if self._root is not None:
            self._widgets["log"].value = "<pre style='font-size:75%'>" + html.escape(
                "".join(traceback.format_exception(exc))) + "</pre>"

    def change(self, **values) -> int:
        """Set controls programmatically, as a user moving them would (through the queue)."""
        unknown = set(values) - set(self.controls) - {"source"}
        if unknown:
            raise KeyError(f"no control named {', '.join(sorted(unknown))}")
        if "source" in values:
            self.source = values.pop("source")
        self.values.update(values)
        if self._root is not None:            # keep the widgets in step (their observers submit)
            self._sync_widgets()
        return self.queue.submit((dict(self.values), self.source))

    def wait(self, timeout: float = 30.0) -> bool:
        """Until every submitted update has run or been dropped (tests, benchmarks)."""
        return self.queue.wait(timeout)

    # -- widgets ----------------------------------------------------------------------------

    def widget(self):
        """The live panel (built once)."""
        if self._root is None:
            self._build()
        return self._root

    def _build(self) -> None:
        import ipywidgets as w

        controls = []
        for name, spec in self.controls.items():
            cw = spec.widget()
            cw.add_class(f"wb-control-{name}")
            self._widgets[f"control:{name}"] = cw
            if isinstance(spec, Several):
                for box in cw._wb_boxes:
                    box.observe(lambda change, name=name: self._from_widget(name), names="value")
            else:
                cw.observe(lambda change, name=name: self._from_widget(name), names="value")
            controls.append(cw)
        rows = [w.HTML(f"<style>{_CSS}</style><b>{html.escape(self.title)}</b>")]
        if self.sources is not None:
            choice, path = self.sources.initial()
            pick = w.Dropdown(options=self.sources.choices(), value=choice, description="input",
                              layout=w.Layout(width="420px"))
            text = w.Text(value=path, placeholder="or a file: a path from this notebook's folder, then Enter",
                          continuous_update=False, layout=w.Layout(width="420px"))
            pick.add_class("wb-explore-pick")
            text.add_class("wb-explore-path")
            pick.observe(self._from_pick, names="value")
            text.observe(self._from_path, names="value")
            self._widgets.update(pick=pick, path=text)
            rows.append(w.HBox([pick, text]))
            if self.sources.inputs.note:
                rows.append(w.HTML(f"<small>{html.escape(self.sources.inputs.note)}</small>"))
        rows.append(w.GridBox(controls, layout=w.Layout(grid_template_columns="repeat(2, minmax(300px, 1fr))",
                                                         grid_gap="2px 16px")))
        notes = w.HTML("")
        notes.add_class("wb-explore-notes")
        rows.append(notes)
        status = w.HTML("")
        status.add_class("wb-explore-status")
        figure = w.Image(value=self.view.png, format="png", layout=w.Layout(max_width="100%", height="auto"))
        figure.add_class("wb-explore-figure")
        table = w.HTML(_table_html(self.view.table))
        table.add_class("wb-explore-table")
        log = w.HTML("")
        self._widgets.update(status=status, figure=figure, table=table, log=log, notes=notes)
        rows += [status, figure, table, log]
        self._root = w.VBox(rows)
        self._root.add_class("wb-explore")
        self._show_notes(self.view)
        self._status(f"at the defaults ({self.view.total_s:.2f} s); move a control to re-run the study")

    def _control_value(self, name: str):
        cw = self._widgets[f"control:{name}"]
        if isinstance(self.controls[name], Several):
            return tuple(o for o, box in zip(cw._wb_options, cw._wb_boxes) if box.value)
        return cw.value

    def _sync_widgets(self) -> None:
        self._syncing = True
        try:
            for name, spec in self.controls.items():
                cw = self._widgets[f"control:{name}"]
                if isinstance(spec, Several):
                    for o, box in zip(cw._wb_options, cw._wb_boxes):
                        box.value = o in self.values[name]
                else:
                    cw.value = self.values[name]
        finally:
            self._syncing = False

    def _from_widget(self, name: str) -> None:
        if self._syncing:
            return
        self.values[name] = self._control_value(name)
        self.queue.submit((dict(self.values), self.source))

    def _from_pick(self, change) -> None:
        self.source = change["new"]
        if self._widgets["path"].value:
            self._syncing = True
            try:
                self._widgets["path"].value = ""
            finally:
                self._syncing = False
        self.queue.submit((dict(self.values), self.source))

    def _from_path(self, change) -> None:
        if self._syncing:
            return
        text = change["new"].strip()
        self.source = text or self._widgets["pick"].value
        self.queue.submit((dict(self.values), self.source))

    # -- display ----------------------------------------------------------------------------

    def caption(self) -> str:
        """The static figure's caption: the values it was drawn at and the controls."""
        names = [c.label for c in self.controls.values()]
        if self.sources is not None:
            names.append("the input (a bundled trace or any file)")
        source = f" on {Path(str(self.default_view.source)).name}" if self.default_view.source else ""
        text = (f"{self.title}{source}, at {describe(self.controls, self.default_view.values)}. "
                f"Live in JupyterLab: {', '.join(names)}.")
        return f"{text} {self.extra_caption}".strip()

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget()._repr_mimebundle_() or {})
        data["image/png"] = base64.b64encode(self._static["image/png"]).decode("ascii")
        data["application/pdf"] = base64.b64encode(self._static["application/pdf"]).decode("ascii")
        data["text/plain"] = self.caption()
        return data, {"explore": {"caption": self.caption(), "controls": list(self.controls)}}
