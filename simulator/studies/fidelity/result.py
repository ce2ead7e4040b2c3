"""The fidelity study's result: its tables (pages, skipped pages, repeat views) and their
JSON.  ``run`` gives each table as its rows, made into a DataFrame when first read, so the
command line's ``--json`` reads the rows themselves and never imports pandas (about half a
second of a run's start-up)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import StudyResult

if TYPE_CHECKING:
    import pandas as pd


class _Rows:
    """A table's rows (dicts), made into the DataFrame ``run`` always made of them when read
    (``columns``: the frame's columns when given)."""

    __slots__ = ("rows", "columns")

    def __init__(self, rows: list, columns: list | None = None) -> None:
        self.rows, self.columns = rows, columns

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows) if self.columns is None else pd.DataFrame(self.rows, columns=self.columns)


class _Concat:
    """The tables of several traces (``_Rows`` or DataFrames), made into one as ``run_paths``
    always joined them when read."""

    __slots__ = ("parts",)

    def __init__(self, parts: list) -> None:
        self.parts = parts

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        frames = [p.frame() if isinstance(p, _Rows) else p for p in self.parts]
        return (
            pd.concat([f for f in frames if len(f)], ignore_index=True)
            if any(len(f) for f in frames)
            else pd.DataFrame()
        )


def _rows_of(table) -> list | None:
    """The rows of a table not made yet (``_Rows``, or ``_Concat`` of them), else None."""
    if isinstance(table, _Rows):
        return table.rows
    if isinstance(table, _Concat) and all(isinstance(p, _Rows) for p in table.parts):
        return [row for p in table.parts for row in p.rows]
    return None


def _made(result, name: str) -> pd.DataFrame:
    table = getattr(result, name)
    if isinstance(table, (_Rows, _Concat)):
        table = table.frame()
        setattr(result, name, table)
    return table


class FidelityResult(StudyResult):
    """One fidelity run: measured vs simulated onload per page, the pages skipped, the repeat views.

    ``pages`` (one row per simulated page), ``skipped`` (one row per page left out, with the
    reason) and ``repeat_views`` (one row per repeat view predicted from its first view) are
    DataFrames, made from the run's rows when first read: ``to_dict`` (``--json``) reads the
    rows themselves, so the command line's JSON needs no pandas.  ``failed``: (trace, page or
    None, why) of each file or page that could not be read or simulated (also a skipped row):
    the command goes on past them and exits with status 2 at the end."""

    JSON_INDENT = 1

    def __init__(self, pages, skipped, repeat_views, params: dict, failed: list | None = None) -> None:
        self._pages, self._skipped, self._repeat_views = pages, skipped, repeat_views
        self.params = params
        self.failed = [] if failed is None else failed

    pages = property(lambda self: _made(self, "_pages"), lambda self, v: setattr(self, "_pages", v))
    skipped = property(lambda self: _made(self, "_skipped"), lambda self, v: setattr(self, "_skipped", v))
    repeat_views = property(
        lambda self: _made(self, "_repeat_views"), lambda self, v: setattr(self, "_repeat_views", v)
    )

    def __repr__(self) -> str:
        return (
            f"FidelityResult(pages={self.pages!r}, skipped={self.skipped!r}, repeat_views={self.repeat_views!r}, "
            f"params={self.params!r}, failed={self.failed!r})"
        )

    def summary(self) -> dict:
        """Pages, MAPE, median APE and Spearman's rho of simulated against measured onload."""
        return _summary(self, "_pages")

    def tables(self) -> dict[str, pd.DataFrame]:
        """``summary``: one row per simulated page; ``skipped`` and ``repeat_views`` as named (the
        trace is the batch's own column)."""
        tables = {"summary": self.pages, "skipped": self.skipped, "repeat_views": self.repeat_views}
        return {name: df.drop(columns=[c for c in ("trace",) if c in df.columns]) for name, df in tables.items()}

    def to_dict(self) -> dict:
        """Per-page measured and simulated onload, skipped pages, summary, parameters and the repeat views."""
        cols = ["trace", "page", "measured_onload_s", "simulated_onload_s", "error_percent"]
        return {
            "pages": _records(self, "_pages", cols),
            "skipped": _records(self, "_skipped", ["trace", "page", "reason"]),
            "summary": self.summary(),
            "params": self.params,
            "repeat_views": {
                "pages": _records(self, "_repeat_views", cols),
                "summary": _summary(self, "_repeat_views"),
            },
        }


def _records(result: FidelityResult, name: str, cols: list[str]) -> list[dict]:
    rows = _rows_of(getattr(result, name))
    if rows is None:
        df = _made(result, name)
        rows = df.to_dict(orient="records") if len(df) else []
    # The rows as the DataFrame gives them back: each column's values are of one type (the
    # page's times floats, its trace and id strings), which the frame keeps.
    out = []
    for row in rows:
        # NaN (no error: a prediction on another network) is JSON's null.
        out.append(
            {
                c: ((round(row[c], 6) if row[c] == row[c] else None) if isinstance(row[c], float) else row[c])
                for c in cols
            }
        )
    return out


def _summary(result: FidelityResult, name: str) -> dict:
    """``summarize`` of a table; of one not made yet with at most one row, taken of the row
    itself (a mean and a median of one value are that value)."""
    rows = _rows_of(getattr(result, name))
    if rows is None or len(rows) > 1:
        return summarize(_made(result, name))
    error = rows[0].get("error_percent") if rows else None
    if error is None or error != error:  # none, or a prediction on another network (at)
        return {"pages": len(rows), "mape_percent": None, "median_ape_percent": None, "spearman_rho": None}
    ape = round(float(abs(error)), 3)
    return {"pages": 1, "mape_percent": ape, "median_ape_percent": ape, "spearman_rho": None}


def summarize(pages: pd.DataFrame) -> dict:
    """Pages, MAPE, median APE and Spearman's rho of simulated against measured onLoad."""
    n = len(pages)
    if n == 0 or pages["error_percent"].isna().all():  # none, or predictions on another network (at)
        return {"pages": n, "mape_percent": None, "median_ape_percent": None, "spearman_rho": None}
    ape = pages["error_percent"].abs()
    rho = None
    if n >= 3:
        # Spearman's rho: Pearson's r of the ranks (ties get their mean rank).
        value = pages["measured_onload_s"].rank().corr(pages["simulated_onload_s"].rank())
        rho = None if value != value else round(float(value), 4)
    return {
        "pages": n,
        "mape_percent": round(float(ape.mean()), 3),
        "median_ape_percent": round(float(ape.median()), 3),
        "spearman_rho": rho,
    }
