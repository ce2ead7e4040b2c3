"""The Explore panels of the notebooks on one protocol mechanism: 01 HOL blocking, 03
trailers, 04 cross-stream compression, 05 models vs real stacks and 06 demux.

What a panel returns (an ``explore.Explorer``: controls, one study run per change, its
figure and key table) is described in ``panels.py``, which maps every notebook to its panel.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .explore import Explorer, Inputs, Options, Slider
from .panels_common import KIB, _labelled, _load_trace, _title


# ---------------------------------------------------------------------------------------
# 01: HOL blocking


def hol_panel(trace: str = "qif/fb-req-hq.qif", base=None) -> Explorer:
    """Loss, RTT and table capacity: one ``hol.run`` per change, the HOL-delay CDF."""
    from ..studies import hol
    from . import plots

    base = base or hol.HolParams()
    controls = {
        "loss": Slider("loss", 0.0, 0.05, 0.005, 0.02, percent=True),
        "rtt_ms": Slider("RTT", 10, 400, 10, round(base.rtt_s * 1000), unit="ms"),
        "table_bytes": Options(
            "table capacity", (256, 1024, 4096, 16384, 65536), base.table_bytes, style="slider", unit="B"
        ),
        "transport": Options("transport", (("QUIC", "quic"), ("TCP (HPACK only)", "tcp")), base.transport),
    }

    def run(v, trace):
        tcp = v["transport"] == "tcp"
        return hol.run(
            trace,
            replace(
                base,
                loss=str(v["loss"]),
                rtt_s=v["rtt_ms"] / 1000,
                table_bytes=v["table_bytes"],
                transport=v["transport"],
                schemes=("hpack",) if tcp else base.schemes,
            ),
        )

    def draw(r, v, fig):
        ax = fig.subplots()
        blocks = r.blocks if v["transport"] == "quic" else r.blocks.assign(scheme="hpack over TCP")
        plots.hol_cdf(blocks, ax)
        _title(
            ax,
            f"HOL delay per header block: loss {v['loss']:.1%}, RTT {v['rtt_ms']} ms, "
            f"table {v['table_bytes']:,} B, {v['transport'].upper()}",
        )
        return _labelled(
            r.summary,
            (
                ("blocks", "header blocks"),
                ("blocked", "blocked"),
                ("hol_total_ms", "HOL total (ms)"),
                ("hol_p95_ms", "HOL p95 (ms)"),
                ("header_bytes", "header bytes"),
                ("encoder_stream_bytes", "encoder stream bytes"),
                ("ratio", "compression ratio"),
                ("losses", "packets lost"),
            ),
        )

    return Explorer(
        "HOL blocking: one simulation per change",
        controls,
        run,
        draw,
        inputs=Inputs(_load_trace, suffixes=(".qif", ".har"), default=trace),
        figsize=(8, 3.6),
    )


# ---------------------------------------------------------------------------------------
# 03: trailers


HOP_POLICIES = (("no hop", "-"), ("pass", "pass"), ("drop", "drop"), ("merge", "merge"), ("store", "store"))
TRAILER_COLORS = {"buffer": "#d62728", "trailer": "#1f77b4", "in-body": "#2ca02c"}


def trailers_panel(base=None, *, responses: int = 4) -> Explorer:
    """Body size, generation rate, HTTP version, two hops and ``TE: trailers``: one
    ``trailers.run`` over ``responses`` responses per change."""
    from ..studies import trailers

    base = base or trailers.TrailersParams()
    controls = {
        "body_kib": Options("body", (16, 64, 128, 256, 512), 256, style="slider", unit="KiB"),
        "rate_kb_s": Options(
            "generation rate",
            (("50 kB/s", 50), ("200 kB/s", 200), ("1 MB/s", 1000), ("3.2 MB/s", 3200), ("ready at once", "at-once")),
            1000,
            style="dropdown",
        ),
        "version": Options("HTTP version", (("HTTP/1.1", "h1"), ("HTTP/2", "h2"), ("HTTP/3", "h3")), "h2"),
        "hop1": Options("hop next to the client", HOP_POLICIES, "pass", style="dropdown"),
        "hop2": Options("hop next to the origin", HOP_POLICIES, "merge", style="dropdown"),
        "te_share": Slider("share of requests with TE: trailers", 0.0, 1.0, 0.25, 0.5, percent=True),
    }

    def run(v, trace):
        hops = tuple(h for h in (v["hop1"], v["hop2"]) if h != "-")
        rate = None if v["rate_kb_s"] == "at-once" else v["rate_kb_s"] * 1000.0
        body = None if trace else v["body_kib"] * KIB  # a trace: its own sizes
        return trailers.run(
            trace,
            replace(
                base,
                versions=(v["version"],),
                body_bytes=body,
                rate_bytes_per_s=rate,
                hops=hops,
                responses=responses,
                spacing_s=0.5,
                te_trailers=v["te_share"],
                stack="model",
            ),
        )

    def draw(r, v, fig):
        d = r.responses
        agg = d.groupby("strategy", sort=False).agg(
            ttfb_ms=("ttfb_s", lambda s: 1000 * s.mean()),
            metadata_ms=("metadata_s", lambda s: 1000 * s.mean()),
            digest_lost=("integrity_lost", "sum"),
            status_lost=("status_lost", "sum"),
            origin_held_kib=("origin_held_max_bytes", lambda s: s.max() / KIB),
            hops_held_kib=("hops_held_sum_bytes", lambda s: s.max() / KIB),
        )
        axes = fig.subplots(1, 3)
        colors = [TRAILER_COLORS.get(s, "grey") for s in agg.index]
        axes[0].bar(agg.index, agg["ttfb_ms"], color=colors)
        axes[0].set_ylabel("time to first byte (ms, mean)")
        axes[1].bar(agg.index, agg["metadata_ms"], color=colors)
        axes[1].set_ylabel("time to the metadata (ms, mean)")
        x = np.arange(len(agg))
        axes[2].bar(x - 0.2, agg["digest_lost"], 0.4, color="#8c564b", label="digest lost")
        axes[2].bar(x + 0.2, agg["status_lost"], 0.4, color="#e377c2", label="status lost")
        axes[2].set_xticks(x, agg.index)
        axes[2].set_ylabel(f"responses of {d['response'].nunique()} losing metadata")
        axes[2].set_ylim(0, max(1, d["response"].nunique()))
        axes[2].legend(fontsize="small")
        for ax in axes:
            ax.grid(axis="y", alpha=0.3)
        chain = " > ".join(h for h in (v["hop1"], v["hop2"]) if h != "-") or "direct"
        rate = "ready at once" if v["rate_kb_s"] == "at-once" else f"{v['rate_kb_s']:,} kB/s"
        size = "the trace's sizes" if d["body_bytes"].nunique() > 1 else f"{int(d['body_bytes'].iloc[0]) // KIB:,} KiB"
        fig.suptitle(
            f"{controls['version'].text(v['version'])}, {size} at {rate}, hops: {chain}, "
            f"TE: trailers on {v['te_share']:.0%} of requests",
            fontsize="medium",
        )
        return _labelled(
            agg,
            (
                ("ttfb_ms", "first byte (ms)"),
                ("metadata_ms", "metadata (ms)"),
                ("digest_lost", "digest lost"),
                ("status_lost", "status lost"),
                ("origin_held_kib", "origin held (KiB)"),
                ("hops_held_kib", "hops held (KiB)"),
            ),
        )

    return Explorer(
        "Trailers: one run of every strategy per change",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_trace,
            suffixes=(".har",),
            builtin={"generated responses": None},
            default="generated responses",
            note=f"Generated: {responses} responses of the chosen size; a HAR: every "
            "exchange at its own size (the body control does not apply; a large HAR "
            "takes seconds).",
        ),
        figsize=(11, 3.6),
    )


# ---------------------------------------------------------------------------------------
# 04: cross-stream compression


CROSS_SCHEMES = (
    ("shared context", "shared"),
    ("static dictionary", "static-dict"),
    ("dynamic dictionary", "dynamic-dict"),
    ("RFC 9842 dcb (Brotli)", "dcb"),
    ("RFC 9842 dcz (Zstandard)", "dcz"),
)


def _load_bodies(path: str):
    from ..studies.crossstream import bodies

    if Path(path).is_dir():
        return bodies.load_folder(path)
    return _load_trace(path)


def crossstream_panel(bodies: str | None = None, base=None, *, releases: int = 2) -> Explorer:
    """Scheme, library and level, scoping, secret length: one ``crossstream.run`` (the
    scheme next to per-response compression, then the leak) per change.  ``bodies``: a
    folder of real files or a trace to start from (default: the generated site)."""
    from ..studies import crossstream

    base = base or crossstream.CrossstreamParams()
    controls = {
        "scheme": Options("scheme", CROSS_SCHEMES, "dynamic-dict", style="dropdown"),
        "library": Options("library (dcb: Brotli, dcz: Zstandard)", ("brotli", "zlib", "zstd"), "brotli"),
        "level": Slider("level", 1, 9, 1, 5),
        "scoping": Options("scoping", ("none", "context", "never-indexed"), "none"),
        "secret_chars": Slider("secret length (characters)", 2, 8, 1, 4),
    }

    def codec(v) -> str:
        # RFC 9842's delta encodings name their library: dcb is Brotli, dcz Zstandard.
        library = {"dcb": "brotli", "dcz": "zstd"}.get(v["scheme"], v["library"])
        return f"{library}:{v['level']}"

    def run(v, corpus):
        codec_ = codec(v)
        r = crossstream.run(
            corpus,
            replace(
                base,
                schemes=("per-response", v["scheme"]),
                codecs=codec_,
                scopings=(v["scoping"],),
                leak_lengths=(v["secret_chars"],),
                leak_codecs="first",
                releases=releases,
                measure_cpu=False,
            ),
        )
        if v["scheme"] not in set(r.summary["scheme"]):
            why = "; ".join(u["reason"] for u in r.unavailable if u["scheme"] == v["scheme"])
            raise InputError(f"scheme {v['scheme']} cannot run with {codec_}{': ' + why if why else ''}.")
        return r

    def draw(r, v, fig):
        s = r.summary.set_index("scheme")
        left, right = fig.subplots(1, 2)
        x = np.arange(len(s))
        left.bar(x - 0.2, s["first_visit_bytes"] / KIB, 0.4, label="first visit", color="#1f77b4")
        left.bar(x + 0.2, s["repeat_visit_bytes"] / KIB, 0.4, label="repeat visits", color="#ff7f0e")
        left.set_xticks(x, s.index)
        left.set_ylabel("bytes on the wire (KiB)")
        left.legend(fontsize="small")
        left.grid(axis="y", alpha=0.3)
        _title(left, f"{codec(v)}, scoping: {controls['scoping'].text(v['scoping'])}")
        leak = r.leak.set_index("scheme").reindex(s.index)
        colors = ["#d62728" if ok else "#2ca02c" for ok in leak["recovered"].fillna(False)]
        right.bar(x, leak["requests"], color=colors)
        for xi, (_, row) in zip(x, leak.iterrows()):
            if row["requests"] == row["requests"]:
                right.annotate(
                    f"{int(row['correct_prefix_chars'])}/{v['secret_chars']} chars",
                    (xi, row["requests"]),
                    ha="center",
                    va="bottom",
                    fontsize="small",
                )
        right.set_xticks(x, s.index)
        right.set_ylabel("attacker requests")
        right.grid(axis="y", alpha=0.3)
        _title(right, f"the leak, {v['secret_chars']}-character secret (red: recovered)")
        table = _labelled(
            s,
            (
                ("codec", "codec"),
                ("ratio", "ratio"),
                ("repeat_ratio", "repeat ratio"),
                ("first_visit_s", "first visit (s)"),
                ("repeat_visit_s", "repeat visit (s)"),
                ("client_dictionary_peak_bytes", "client dictionary peak (KiB)", 1 / KIB),
            ),
        )
        table["secret recovered"] = leak["recovered"]
        table["attacker requests"] = leak["requests"]
        return table

    return Explorer(
        "Cross-stream compression: one run of the scheme and per-response compression per change",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_bodies,
            suffixes=(".har",),
            builtin={"generated site": None},
            default=bodies or "generated site",
            note=f"A generated site ({releases} releases), a HAR (bodies generated for its "
            "text responses) or a folder of real files (sub-folders: later releases).",
        ),
        figsize=(10, 3.6),
    )


# ---------------------------------------------------------------------------------------
# 05: models vs real stacks


STACK_SETUPS = (("h2 + TLS 1.3", ("h2", True)), ("h2 cleartext", ("h2", False)), ("HTTP/3", ("h3", True)))


def _load_specs(path: str):
    from ..stacks import replay
    from ..stacks.common import StackParams

    return replay.specs_from_trace(_load_trace(path), StackParams())


def stacks_panel(base=None) -> Explorer:
    """Loss and stack: one replay on the real stack and one on its transport model per change."""
    from ..http import crossval, model_replay
    from ..stacks import replay
    from ..stacks.common import StackParams

    base = base or StackParams()
    scenarios = crossval.scenarios("small")
    controls = {
        "loss": Slider("loss", 0.0, 0.05, 0.005, 0.01, percent=True),
        "setup": Options("stack", STACK_SETUPS, ("h2", True)),
        "rtt_ms": Slider("RTT", 10, 200, 10, round(base.rtt_s * 1000), unit="ms"),
        "seed": Slider("seed", 1, 20, 1, 1),
    }

    def run(v, specs):
        stack, tls = v["setup"]
        p = replace(base, stack=stack, tls=tls, loss=str(v["loss"]), rtt_s=v["rtt_ms"] / 1000, seed=int(v["seed"]))
        return replay.run_specs(specs, p), model_replay.run_specs(specs, p)

    def times(result):
        df = result.exchanges
        return np.sort(df.loc[(df["kind"] == "request") & df["completed"], "completion_s"].to_numpy())

    def draw(r, v, fig):
        real, model = r
        ax = fig.subplots()
        for res, label, color in (
            (real, f"real {real.summary['stack']}", "#1f77b4"),
            (model, f"model ({model.summary['stack']})", "#ff7f0e"),
        ):
            t = times(res) * 1000
            ax.step(t, np.arange(1, len(t) + 1) / max(len(t), 1), where="post", label=label, color=color)
        ax.set_xscale("log")
        ax.set_xlabel("completion time per exchange (ms)")
        ax.set_ylabel("fraction of exchanges")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
        name = next(label for label, value in STACK_SETUPS if value == v["setup"])
        _title(ax, f"{name}, loss {v['loss']:.1%}, RTT {v['rtt_ms']} ms, seed {v['seed']}")
        keys = {
            "exchanges": "exchanges",
            "median_completion_s": "median completion (s)",
            "last_completion_s": "last completion (s)",
            "packets_sent": "packets sent",
            "packets_lost": "packets lost",
        }
        table = pd.DataFrame(
            {"real stack": [real.summary[k] for k in keys], "model": [model.summary[k] for k in keys]},
            index=list(keys.values()),
        ).T
        table["median real / model"] = [
            real.summary["median_completion_s"] / model.summary["median_completion_s"],
            math.nan,
        ]
        return table

    return Explorer(
        "Models vs real stacks: one replay on each per change",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_specs,
            suffixes=(".har",),
            builtin={"page (30 exchanges, one origin)": scenarios["page"], "bulk download (300 kB)": scenarios["bulk"]},
            default="page (30 exchanges, one origin)",
            note="A HAR is replayed as recorded (every origin its connection); HTTP/3 on the "
            "79-exchange page takes about 3 s.",
        ),
        figsize=(8, 3.6),
    )


# ---------------------------------------------------------------------------------------
# 06: demux


DEMUX_COLORS = {"stop-the-train": "#d62728", "side-track": "#ff7f0e", "per-stream": "#9467bd", "direct": "#1f77b4"}


def demux_panel(base=None, *, stream_bytes: int = 1 << 20) -> Explorer:
    """Streams, window, interleaving and RTT: one ``demux.run`` on the model (every
    receive strategy) per change."""
    from ..studies import demux

    base = base or demux.DemuxParams()
    controls = {
        "streams": Slider("streams", 2, 16, 1, 8),
        "window_kib": Options("stream window", (64, 128, 256, 512, 1024), 256, style="slider", unit="KiB"),
        "interleaving": Options("server interleaving", tuple(demux.INTERLEAVINGS), "runs"),
        "rtt_ms": Options("RTT", (0.5, 2, 10, 50), 2, style="slider", unit="ms"),
    }

    def run(v, _):
        return demux.run(
            None,
            replace(
                base,
                streams=int(v["streams"]),
                stream_bytes=stream_bytes,
                window_bytes=v["window_kib"] * KIB,
                part="model",
                rtts_s=(v["rtt_ms"] / 1000,),
                interleavings=(v["interleaving"],),
            ),
        )

    def draw(r, v, fig):
        m = r.model.set_index("strategy")
        left, right = fig.subplots(1, 2)
        colors = [DEMUX_COLORS.get(s, "grey") for s in m.index]
        left.bar(m.index, m["completion_s"] * 1000, color=colors)
        left.set_ylabel("completion (ms, virtual time)")
        right.bar(m.index, m["peak_buffered_bytes"] / KIB, color=colors)
        right.axhline(v["streams"] * v["window_kib"], color="black", ls="--", lw=0.8, label="N x window")
        right.set_yscale("log")
        right.set_ylabel("peak payload buffered (KiB)")
        right.legend(fontsize="small")
        for ax in (left, right):
            ax.tick_params(axis="x", labelsize=8)
            ax.grid(axis="y", alpha=0.3)
        fig.suptitle(
            f"{v['streams']} streams x {stream_bytes // KIB:,} KiB, stream window {v['window_kib']} KiB, "
            f"server interleaving {v['interleaving']}, RTT {v['rtt_ms']:g} ms (model)",
            fontsize="medium",
        )
        return _labelled(
            m,
            (
                ("completion_s", "completion (ms)", 1000),
                ("completion_ratio_vs_direct", "vs direct"),
                ("peak_buffered_bytes", "peak buffered (KiB)", 1 / KIB),
                ("wakeups_per_frame", "wakeups per frame"),
                ("dispatches_per_frame", "dispatches per frame"),
                ("copied_bytes_per_mb", "bytes copied per MB"),
                ("window_stall_s", "window stall (ms)", 1000),
            ),
        )

    return Explorer(
        "HTTP/2 demultiplexing: one model run of every receive strategy per change",
        controls,
        run,
        draw,
        figsize=(10, 3.6),
    )
