"""Statistics shared by the studies, the figures and the notebooks (seeded, so reproducible)."""

from __future__ import annotations

import math

__all__ = ["confidence_band"]


def confidence_band(values, *, level: float = 0.95, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean and a bootstrap percentile confidence interval (seeded, so reproducible)."""
    import numpy as np  # here, not with the module: ``studies.hol`` offers this function

    x = np.asarray(list(values), dtype=float)
    if len(x) == 0:
        return (math.nan, math.nan, math.nan)
    if len(x) == 1:
        return (float(x[0]), float(x[0]), float(x[0]))
    rng = np.random.default_rng(seed)
    means = rng.choice(x, size=(resamples, len(x)), replace=True).mean(axis=1)
    lo, hi = np.percentile(means, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return (float(x.mean()), float(lo), float(hi))
