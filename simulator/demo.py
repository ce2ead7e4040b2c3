"""``workbench demo``: the HOL-blocking study on a bundled trace, a table and a figure."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import argtypes

BUNDLED = Path(__file__).resolve().parent.parent / "traces" / "synthetic-session.har"


def _cmd(args: argparse.Namespace) -> int:
    import matplotlib.pyplot as plt
    import pandas as pd

    from .report import plots
    from .studies import hol
    from .traces import load

    trace = load(args.trace)
    params = hol.HolParams(loss=args.loss, rtt_s=0.1, seed=args.seed)
    print(
        f"HOL-blocking study: {trace.source}, {len(trace)} exchanges; QUIC and TCP, "
        f"RTT 100 ms, 10 Mbit/s, loss {params.loss}, seed {params.seed}\n"
    )
    cols = [
        "blocks",
        "blocked",
        "hol_total_ms",
        "hol_p95_ms",
        "hol_max_ms",
        "header_bytes",
        "encoder_stream_bytes",
        "ratio",
        "packets",
        "losses",
    ]
    results = {}
    for transport, schemes in (("quic", ("hpack", "qpack", "qcram")), ("tcp", ("hpack",))):
        result = hol.run(trace, params.derive(transport=transport, schemes=schemes))
        results[transport] = result
        print(f"over {transport.upper()}:")
        with pd.option_context("display.width", 200, "display.float_format", "{:.2f}".format):
            print(result.summary[cols].to_string())
        print()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    blocks = pd.concat([results["quic"].blocks, results["tcp"].blocks.assign(scheme="hpack over TCP")])
    plots.hol_cdf(blocks, ax1, title=f"HOL delay per header block, loss {params.loss}")
    plots.scheme_bars(results["quic"].summary, "ratio", ax2, ylabel="encoded / raw bytes (QUIC)")
    out = plots.savefig(fig, Path(args.out or "out/demo") / "hol-demo.png")
    print("figure written to " + " and ".join(str(p) for p in out))
    return 0


def add_commands(sub) -> None:
    """Register ``workbench demo`` (the HOL study on a bundled trace: table and figure) on ``sub``."""
    p = sub.add_parser("demo", help="run the HOL study on a bundled trace: table and figure")
    p.add_argument("--trace", default=str(BUNDLED))
    p.add_argument("--loss", default="0.02", type=argtypes.loss)
    p.add_argument("--seed", default=1, type=argtypes.seed)
    # Checked only when given: the default folder is created with its parent.
    p.add_argument("--out", default=None, type=argtypes.output_folder, help="where the figure goes (default out/demo)")
    p.set_defaults(func=_cmd)
