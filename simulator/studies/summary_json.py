"""JSON for study summaries: one object per summary row, NumPy scalars made plain and NaN
made ``null`` (JSON has no NaN), so ``--json`` output is valid and byte-stable."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["jsonable", "rows_by_index"]


def jsonable(v: Any) -> Any:
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def rows_by_index(summary: pd.DataFrame) -> dict:
    """``{index value: {column: value}}`` with every value JSON-ready."""
    return {name: {k: jsonable(v) for k, v in row.items()} for name, row in summary.to_dict(orient="index").items()}
