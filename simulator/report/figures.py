"""The figures the documentation shows, drawn from a run of the workbench (``make figures``).

``python -m simulator.report.figures docs/figures`` writes ``hol-cdf.png``: the per-block
head-of-line delay of HPACK, QPACK and QCRAM over the QUIC model, on the bundled synthetic
page at 100 ms, 10 Mbit/s and 2% loss (seed 1), the README's figure.  Deterministic: the same
code gives the same curves.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["readme_figure"]

TRACE = Path(__file__).resolve().parents[2] / "traces" / "synthetic-page.har"


def readme_figure(folder: str | Path) -> list[Path]:
    """Draw the README's HOL-delay figure into ``folder``; the path written (PNG)."""
    import matplotlib.pyplot as plt

    from ..studies.hol import HolParams, run
    from ..traces import load
    from .plots import hol_cdf, subplots

    params = HolParams(
        schemes=("hpack", "qpack", "qcram"), transport="quic", rtt_s=0.1, bandwidth_bps=10e6, loss="0.02", seed=1
    )
    result = run(load(str(TRACE)), params)
    fig, ax = subplots(size=(7, 3.6))
    hol_cdf(
        result.tables()["blocks"],
        ax,
        title="Header blocks waiting behind others over QUIC (100 ms, 10 Mbit/s, 2% loss)",
    )
    path = Path(folder) / "hol-cdf.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return [path]


if __name__ == "__main__":
    for p in readme_figure(sys.argv[1] if len(sys.argv) > 1 else "docs/figures"):
        print(p)
