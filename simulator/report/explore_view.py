"""What one update of an Explore panel (``explore.py``) shows and how it is told: the
``View`` (the figure as PNG, the key table, the timings), the table as HTML in its sideways
scrolling box and the estimate of its width (``table_min_width_px`` against
``TABLE_BUDGET_PX``), the panel's CSS, the digest of what a figure shows (``figure_data``:
"no change" is decided on it) and the status line (``update_line``, ``error_line``, ``Inert``).
"""

from __future__ import annotations

import html
import io
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError


@dataclass
class View:
    """One update's output: the figure as PNG, the key table, the timings (s)."""

    png: bytes
    table: Any
    run_s: float
    draw_s: float
    load_s: float = 0.0
    cpu_s: float = 0.0  # CPU time of the thread that made it (the update alone)
    values: dict = field(default_factory=dict)
    source: str | None = None
    signature: str = ""  # the figure's data and the table, titles left out (``figure_data``)
    notes: dict = field(default_factory=dict)  # {control: why it cannot act here} (the panel's ``notes``)
    off: frozenset = frozenset()  # the controls among ``notes`` that cannot act at all on this input

    @property
    def total_s(self) -> float:
        """Seconds the update took: loading the input, the study run and drawing."""
        return self.load_s + self.run_s + self.draw_s


def _png(fig, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)  # the figure's constrained layout sets the margins
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
        [str(name), *(_number(v) if isinstance(v, float) else str(v) for v in frame[name])] for name in frame.columns
    ]
    width = 0.0
    for cells in columns:
        width += max((len(word) for cell in cells for word in cell.split()), default=0) * CHAR_PX + CELL_PAD_PX
    return width


# Readouts: a selection slider's readout is as wide as its label (ipywidgets gives it a
# fixed minimum and clips the rest: "as measured" showed as "as measure").
_CSS = (
    ".wb-explore .wb-busy { opacity: 0.45; transition: opacity 0.2s; } "
    ".wb-explore table.wb-table td, .wb-explore table.wb-table th { padding: 1px 8px; } "
    ".wb-explore .wb-table-box { max-width: 100%; overflow-x: auto; } "
    ".wb-explore .wb-table-box table.wb-table th:first-child { position: sticky; left: 0; "
    "background: var(--jp-layout-color1, white); } "
    ".wb-explore .widget-readout, .wb-explore .jupyter-widget-readout { min-width: max-content; "
    "max-width: none; overflow: visible; } "
)


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
            h.update(
                np.asarray(patch.get_path().transformed(patch.get_patch_transform()).vertices, dtype=float)
                .round(9)
                .tobytes()
            )
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
    took = (
        f"{view.total_s:.2f} s: study run {view.run_s:.2f} s, figure {view.draw_s:.2f} s"
        f"{f', input {view.load_s:.2f} s' if view.load_s > 0.05 else ''}"
    )
    if previous is None or view.signature != previous.signature or view.source != previous.source:
        return f"updated in {took}", "updated"
    moved = moved_controls(previous.values, view.values)
    why = [f"{labels.get(name, name)}: {view.notes[name]}" for name in moved if name in view.notes]
    if why:
        return f"no change in the figure or the table. {'; '.join(why)} ({took})", "explained"
    return (
        f"no change in the figure or the table: this move does not act on this input at these values ({took})"
    ), "unexplained"
