"""The priorities study held against the published record: the schedulers' ranking against
Wijnants et al.'s (Kendall's tau) and the pages whose best scheduler differs from the
rest (Marx et al.).  Written by hand (no SciPy in the workbench: tau-b is a dozen lines).

- ``WIJNANTS_TIERS``: the reference ranking.  Wijnants et al. (WWW 2018, "HTTP/2
  Prioritization and its Impact on Web Performance") report the naive schedulers over 25%
  slower on median visual load than the dependency-aware ones; they give no total order
  within either group, so the reference is two tiers, tied within: dependency-aware
  (RFC 9218, the RFC 7540 tree, and the urgency-respecting servers' schedulers) first,
  naive (round-robin, first come first served, LIFO: no signal read) second.
- ``kendall_tau_b``: Kendall's tau-b (ties in either ranking allowed) between two rankings;
  against the tied tiers it stays below 1 (``max_tau_b``: its largest value).
- ``best_per_page``: each page's best scheduler on a metric; ``flips``: the pages whose best
  is not the overall best (Marx et al., 2019: no single scheduler is best on every page).
"""

from __future__ import annotations

import math

import pandas as pd

__all__ = [
    "WIJNANTS_TIERS",
    "NAIVE",
    "kendall_tau_b",
    "max_tau_b",
    "reference_rank",
    "ranking_against_reference",
    "best_per_page",
    "flips",
    "naive_slowdown",
    "relative_to_best",
]

NAIVE = ("rr", "fifo", "lifo")
# tier 1: reads the client's signals; tier 2: naive (any scheduler not named is left out).
WIJNANTS_TIERS = {
    "rfc9218": 1,
    "tree": 1,
    "cf-exclusive-sequential": 1,
    "cf-shared-sequential": 1,
    "cf-shared": 1,
    "urgency-rr": 1,
    "urgency-fifo": 1,
    "rr": 2,
    "fifo": 2,
    "lifo": 2,
}


def kendall_tau_b(x, y) -> float:
    """Kendall's tau-b of two equally long sequences (ties allowed in both); NaN when either
    is constant.  tau-b = (C - D) / sqrt((n0 - n1) (n0 - n2)): C and D the concordant and
    discordant pairs, n0 all pairs, n1 and n2 the pairs tied in x and in y."""
    x, y = list(x), list(y)
    if len(x) != len(y):
        raise ValueError("rankings of different lengths")
    concordant = discordant = tied_x = tied_y = pairs = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            pairs += 1
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx and dy:
                if (dx > 0) == (dy > 0):
                    concordant += 1
                else:
                    discordant += 1
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    return (concordant - discordant) / denominator if denominator else math.nan


def max_tau_b(tiers) -> float:
    """The largest tau-b a ranking without ties can reach against ``tiers`` (which tie
    within a tier, so it is below 1: 0.77 for two schedulers in one tier and three in the other)."""
    tiers = sorted(tiers)
    return kendall_tau_b(range(len(tiers)), tiers)


def reference_rank(scheduler: str) -> int | None:
    """The scheduler's tier in Wijnants et al.'s ranking (1 first), None if it has none."""
    return WIJNANTS_TIERS.get(scheduler)


def ranking_against_reference(rows: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, float]:
    """The schedulers ranked by their median ``metric`` over ``rows`` (lower first) beside
    the reference tier, and Kendall's tau-b between the two (schedulers with a tier only)."""
    med = rows.groupby("scheduler", sort=False)[metric].median().sort_values(kind="stable")
    table = pd.DataFrame(
        {
            "median": med,
            "rank": med.rank(method="min").astype(int),
            "wijnants_tier": [reference_rank(s) for s in med.index],
        }
    )
    known = table.dropna(subset=["wijnants_tier"])
    return table, kendall_tau_b(list(known["median"]), list(known["wijnants_tier"]))


def naive_slowdown(rows: pd.DataFrame, metric: str, per: tuple[str, ...] = ("page",)) -> pd.DataFrame:
    """Per ``per`` group: the best naive scheduler's ``metric`` over the best dependency-aware
    one's, minus one (0.25: the naive ones at least 25% slower, Wijnants et al.'s figure)."""
    aware = rows[rows["scheduler"].map(lambda s: WIJNANTS_TIERS.get(s) == 1)]
    naive = rows[rows["scheduler"].isin(NAIVE)]
    best_aware = aware.groupby(list(per))[metric].min()
    best_naive = naive.groupby(list(per))[metric].min()
    return (best_naive / best_aware - 1).rename("naive_slowdown").reset_index()


def relative_to_best(rows: pd.DataFrame, metric: str, per: tuple[str, ...] = ("page",)) -> pd.Series:
    """``metric`` over the best scheduler's on the same ``per`` group (1.0: the best): pages
    of different sizes on one scale."""
    return rows[metric] / rows.groupby(list(per))[metric].transform("min")


def best_per_page(
    rows: pd.DataFrame, metric: str, per: tuple[str, ...] = ("page",), tolerance: float = 0.01
) -> pd.DataFrame:
    """Per ``per`` group, the scheduler(s) with the lowest ``metric`` (within ``tolerance``,
    relative: ties are schedulers that come out the same), joined by ``,``, and the spread
    between the worst and the best."""
    out = []
    for key, g in rows.groupby(list(per), sort=False):
        best = g[metric].min()
        winners = g.loc[g[metric] <= best * (1 + tolerance), "scheduler"]
        out.append(
            {
                **dict(zip(per, key if isinstance(key, tuple) else (key,))),
                "best": ",".join(winners),
                "best_s": best,
                "spread": g[metric].max() / best - 1 if best > 0 else 0.0,
            }
        )
    return pd.DataFrame(out)


def flips(best: pd.DataFrame, overall: str) -> pd.DataFrame:
    """The rows of ``best_per_page`` where ``overall`` (the best scheduler over all pages) is
    not among the page's best: the pages that flip."""
    return best[~best["best"].str.split(",").map(lambda names: overall in names)]
