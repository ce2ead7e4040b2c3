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
* an output area (``explore_view.py``: the ``View`` of one update, the table's HTML and
  width, the status line): the figure (an ``Image`` widget, laid out again on every
  update: a new input's tick labels may be wider), the table (an ``HTML`` widget, in a box that scrolls
  sideways if it is ever wider than the output area; the panels keep their tables inside
  ``TABLE_BUDGET_PX``) and a status line (the time each update took; "no change in the
  figure or the table" and the reason, when a move changed neither, the titles left out
  (``figure_data``); "running..." once an update has taken longer than ``busy_after_s``;
  the error line).

Updates (``LatestOnly``, ``explore_worker.py``): every control change bumps a generation
counter and hands the values to ONE worker thread after a short debounce (``debounce_s``: a burst of
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

# One update's output and status (explore_view) and the worker (explore_worker): their names
# stay importable from here.
from .explore_view import (
    _CSS,
    CELL_PAD_PX,  # noqa: F401
    CHAR_PX,  # noqa: F401
    TABLE_BUDGET_PX,
    Inert,
    View,  # noqa: F401
    _png,
    _table_digest,
    _table_html,
    error_line,
    figure_data,
    moved_controls,  # noqa: F401
    table_min_width_px,
    update_line,
)
from .explore_worker import LatestOnly

__all__ = [
    "Slider",
    "Options",
    "Several",
    "Switch",
    "Inputs",
    "View",
    "Explorer",
    "LatestOnly",
    "Inert",
    "bundled_traces",
    "TRACES_DIR",
    "TABLE_BUDGET_PX",
    "table_min_width_px",
    "figure_data",
    "update_line",
]

TRACES_DIR = Path(__file__).resolve().parents[2] / "traces"
STATIC_DPI = 144  # the static figure (slides: sharp on a projector)
LIVE_DPI = 96  # the live figure (re-encoded on every update)


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
    skip: tuple[str, ...] = ()  # bundled traces whose names start so are not offered


class _Sources:
    """The picker's choices and a cache of loaded inputs (by path and modification time)."""

    def __init__(self, inputs: Inputs):
        self.inputs = inputs
        self.bundled = {
            str(p.relative_to(TRACES_DIR)): p
            for p in bundled_traces(inputs.suffixes)
            if not p.name.startswith(inputs.skip or ("\0",))
        }
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
            self._cache = {(str(path), stamp): value}  # keep the last one only
        return value


# ---------------------------------------------------------------------------------------
# The panel


class Explorer:
    """A live panel for one study (see the module docstring).

    ``Explorer(title, controls, run, draw, inputs=None)``: the figure and table at the
    default values are computed at once (synchronously); displaying the object shows the
    controls and the output area in a live front-end, the static figure elsewhere."""

    def __init__(
        self,
        title: str,
        controls: dict[str, Control],
        run: Callable[[dict, Any], Any],
        draw: Callable[[Any, dict, Any], Any],
        *,
        inputs: Inputs | None = None,
        figsize: tuple[float, float] = (9.0, 3.6),
        debounce_s: float = 0.2,
        busy_after_s: float = 0.5,
        caption: str = "",
        notes: Callable[[dict, Any], dict[str, Any]] | None = None,
    ):
        self.title = title
        self.controls = dict(controls)
        self._run, self._draw = run, draw
        self.figsize = figsize
        self.extra_caption = caption
        self.sources = _Sources(inputs) if inputs is not None else None
        self._notes = notes
        self.values = defaults(self.controls)
        choice, path = self.sources.initial() if self.sources else (None, "")
        self.source = path or choice  # dropdown key or a path
        self.default_view, self._static = self._first_render()
        self.view = self.default_view
        self.shown_generation = 0
        self.errors: list[str] = []
        self._widgets: dict[str, Any] = {}
        self._root = None
        self._syncing = False  # widgets being set from code: observers stay quiet
        self.queue = LatestOnly(
            self._job, self._publish, debounce_s=debounce_s, busy_after_s=busy_after_s, on_busy=self._busy
        )

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
        png = _png(fig, dpi)  # draws the figure: its tick labels are set after
        notes = {
            name: n if isinstance(n, Inert) else Inert(str(n))
            for name, n in (self._notes(dict(values), result) if self._notes is not None else {}).items()
        }
        t3 = time.perf_counter()
        view = View(
            png=png,
            table=table,
            run_s=t2 - t1,
            draw_s=t3 - t2,
            load_s=t1 - t0,
            cpu_s=time.thread_time() - c0,
            values=dict(values),
            source=source,
            signature=figure_data(fig) + _table_digest(table),
            notes={name: n.why for name, n in notes.items()},
            off=frozenset(name for name, n in notes.items() if n.off),
        )
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
        self._status(
            f"running... {elapsed_s:.1f} s"
            + (
                " (the values changed since: they run next)"
                if newer
                else " (the figure below is from the previous values)"
            ),
            busy=True,
        )

    def _show_notes(self, view: View) -> None:
        """Controls that cannot act on this input are disabled, their reason as a tooltip
        and on the line under the controls."""
        for name in self.controls:
            cw = self._widgets[f"control:{name}"]
            off = name in view.off
            for target in cw._wb_boxes if isinstance(self.controls[name], Several) else [cw]:
                target.disabled = off
                target.tooltip = view.notes[name] if off else None
        lines = [f"{self.controls[name].label}: {view.notes[name]}" for name in self.controls if name in view.off]
        self._widgets["notes"].value = (
            "<small>Not acting on this input: " + html.escape("; ".join(lines)) + "</small>" if lines else ""
        )

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
            self._widgets["log"].value = (
                "<pre style='font-size:75%'>" + html.escape("".join(traceback.format_exception(exc))) + "</pre>"
            )

    def change(self, **values) -> int:
        """Set controls programmatically, as a user moving them would (through the queue)."""
        unknown = set(values) - set(self.controls) - {"source"}
        if unknown:
            raise KeyError(f"no control named {', '.join(sorted(unknown))}")
        if "source" in values:
            self.source = values.pop("source")
        self.values.update(values)
        if self._root is not None:  # keep the widgets in step (their observers submit)
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
            pick = w.Dropdown(
                options=self.sources.choices(), value=choice, description="input", layout=w.Layout(width="420px")
            )
            text = w.Text(
                value=path,
                placeholder="or a file: a path from this notebook's folder, then Enter",
                continuous_update=False,
                layout=w.Layout(width="420px"),
            )
            pick.add_class("wb-explore-pick")
            text.add_class("wb-explore-path")
            pick.observe(self._from_pick, names="value")
            text.observe(self._from_path, names="value")
            self._widgets.update(pick=pick, path=text)
            rows.append(w.HBox([pick, text]))
            if self.sources.inputs.note:
                rows.append(w.HTML(f"<small>{html.escape(self.sources.inputs.note)}</small>"))
        rows.append(
            w.GridBox(
                controls, layout=w.Layout(grid_template_columns="repeat(2, minmax(300px, 1fr))", grid_gap="2px 16px")
            )
        )
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
        text = (
            f"{self.title}{source}, at {describe(self.controls, self.default_view.values)}. "
            f"Live in JupyterLab: {', '.join(names)}."
        )
        return f"{text} {self.extra_caption}".strip()

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget()._repr_mimebundle_() or {})
        data["image/png"] = base64.b64encode(self._static["image/png"]).decode("ascii")
        data["application/pdf"] = base64.b64encode(self._static["application/pdf"]).decode("ascii")
        data["text/plain"] = self.caption()
        return data, {"explore": {"caption": self.caption(), "controls": list(self.controls)}}
