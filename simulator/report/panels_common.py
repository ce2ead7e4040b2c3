"""What the Explore panels (``panels.py``) share: loading a panel's input (a trace, a
HAR's page graph), titling its figure, and labelling its key table for a reader (the
columns named with their units, so the table fits ``explore.TABLE_BUDGET_PX``).
"""

from __future__ import annotations

import pandas as pd


KIB = 1024


def _load_trace(path: str):
    from ..traces import load

    return load(path)


def _load_page(path: str):
    from ..browser import page_graph

    return page_graph(_load_trace(path))


def _title(ax, text: str) -> None:
    ax.set_title(text, fontsize="medium")


def _suptitle(fig, text: str, width: int = 120) -> None:
    """A figure title that wraps at ``width`` characters (it names every value, and a
    line wider than the figure would be cut off)."""
    import textwrap

    fig.suptitle("\n".join(textwrap.wrap(text, width)), fontsize="medium")


def _labelled(frame: pd.DataFrame, columns: tuple, index: str | None = None) -> pd.DataFrame:
    """The key table as a reader reads it: ``columns`` is ``(column, label)`` or
    ``(column, label, factor)`` in the order shown; the labels name the quantity and its
    unit ("onload (s)", "gain vs none (ms)"), so the table fits the output area
    (``explore.TABLE_BUDGET_PX``) without the study's internal column names."""
    out = pd.DataFrame(index=frame.index)
    for spec in columns:
        column, label, factor = (*spec, None)[:3]
        out[label] = frame[column] if factor is None else frame[column] * factor
    if index is not None:
        out.index.name = index
    return out
