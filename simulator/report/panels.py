"""The Explore panels of the study notebooks: one function per study.

Each ``*_panel(...)`` returns an ``explore.Explorer``: the study's parameter description
(the controls, with defaults small enough that one update takes well under 2 s on the
default input), ``run(values, input)`` (ONE call of the study's ``run``) and
``draw(result, values, fig) -> table`` (its figure on the given matplotlib ``Figure``,
titled with the controls' labels and the run's actual values, and its key table: the
key results first, columns named for a reader with their units, within the output
area's width) and, where a control cannot act on some inputs or values, ``notes``
saying why (``explore.Inert``).  A notebook shows one as the last expression of its Explore cell,
passing its own parameters (``base``) so the panel starts where the notebook stands.
``PANELS`` maps each notebook to its panel (the benchmark ``bench_explore`` times them).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from .explore import Explorer, Inert, Inputs, Options, Several, Slider

__all__ = ["hol_panel", "push_panel", "trailers_panel", "crossstream_panel", "stacks_panel", "demux_panel",
           "coalescing_panel", "fidelity_panel", "PANELS"]

KIB = 1024


def _load_trace(path: str):
    from ..traces import load

    return load(path)


def _load_page(path: str):
    from ..studies.pageload import page_graph

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
        "table_bytes": Options("table capacity", (256, 1024, 4096, 16384, 65536), base.table_bytes, style="slider",
                               unit="B"),
        "transport": Options("transport", (("QUIC", "quic"), ("TCP (HPACK only)", "tcp")), base.transport),
    }

    def run(v, trace):
        tcp = v["transport"] == "tcp"
        return hol.run(trace, replace(base, loss=str(v["loss"]), rtt_s=v["rtt_ms"] / 1000, table_bytes=v["table_bytes"],
                                      transport=v["transport"], schemes=("hpack",) if tcp else base.schemes))

    def draw(r, v, fig):
        ax = fig.subplots()
        blocks = r.blocks if v["transport"] == "quic" else r.blocks.assign(scheme="hpack over TCP")
        plots.hol_cdf(blocks, ax)
        _title(ax, f"HOL delay per header block: loss {v['loss']:.1%}, RTT {v['rtt_ms']} ms, "
                   f"table {v['table_bytes']:,} B, {v['transport'].upper()}")
        return _labelled(r.summary, (("blocks", "header blocks"), ("blocked", "blocked"),
                                     ("hol_total_ms", "HOL total (ms)"), ("hol_p95_ms", "HOL p95 (ms)"),
                                     ("header_bytes", "header bytes"), ("encoder_stream_bytes", "encoder stream bytes"),
                                     ("ratio", "compression ratio"), ("losses", "packets lost")))

    return Explorer("HOL blocking: one simulation per change", controls, run, draw,
                    inputs=Inputs(_load_trace, suffixes=(".qif", ".har"), default=trace), figsize=(8, 3.6))


# ---------------------------------------------------------------------------------------
# 02: push vs 103


PUSH_POLICIES = ("push", "hints", "push+hints", "hints-cdn")


def push_panel(trace: str = "synthetic-page.har", base=None) -> Explorer:
    """RTT, bandwidth, think time, cache, policies, whether the CDN edge has seen the page,
    h2/h3: one ``push.run`` (``none`` is always loaded too: the gains are against it)."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.patches import Patch

    from ..studies import push
    from .waterfall import POLICY_STYLES

    base = base or push.PushParams()
    controls = {
        "rtt_ms": Slider("RTT", 10, 400, 5, round(base.rtt_s * 1000), unit="ms"),
        "bandwidth_mbit": Options("bandwidth", (1, 2, 5, 10, 20, 50, 100, 200), 10, style="slider", unit="Mbit/s"),
        "think_ms": Options("document think time", (("from the trace", "trace"), ("0 ms", 0), ("50 ms", 50),
                                                    ("100 ms", 100), ("200 ms", 200), ("400 ms", 400),
                                                    ("800 ms", 800)), "trace", style="dropdown"),
        "cache": Options("cache", (("cold", "cold"), ("half cached", "0.5"), ("warm", "warm")), "cold"),
        "policies": Several("policies (and none)", PUSH_POLICIES, ("push", "hints", "push+hints")),
        # hints-cdn: a CDN edge hints only a page it has seen before (its first request has no hints)
        "edge_seen": Options("CDN edge (hints-cdn)", (("first request", False), ("has seen the page", True)),
                             base.edge_seen),
        "protocol": Options("protocol", (("HTTP/2", "h2"), ("HTTP/3", "h3")), base.protocol),
    }

    def run(v, graph):
        policies = ("none",) + tuple(p for p in PUSH_POLICIES if p in v["policies"])
        think = None if v["think_ms"] == "trace" else v["think_ms"] / 1000
        return push.run(graph, replace(base, policies=policies, rtt_s=v["rtt_ms"] / 1000,
                                       bandwidth_bps=v["bandwidth_mbit"] * 1e6, think_s=think, cache=v["cache"],
                                       protocol=v["protocol"], edge_seen=bool(v["edge_seen"])))

    def notes(v, r):
        out = {}
        if "hints-cdn" not in v["policies"]:
            out["edge_seen"] = Inert("only hints-cdn reads it: tick hints-cdn under policies", off=True)
        return out

    def draw(r, v, fig):
        s = r.summary
        left, right = fig.subplots(1, 2, width_ratios=(3, 2))
        metrics = (("document_s", "document"), ("render_blocking_s", "render-blocking set"), ("onload_s", "onload"))
        y = np.arange(len(s))
        height = 0.8 / len(metrics)
        for k, (col, label) in enumerate(metrics):
            left.barh(y + (k - 1) * height, s[col], height, label=label, color=("#bbbbbb", "#555555", "#1f77b4")[k])
        left.set_yticks(y, s.index)
        left.invert_yaxis()
        left.set_xlabel("time since navigation (s)")
        left.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
        left.grid(axis="x", alpha=0.3)
        _title(left, "load times per policy")
        gains = s.drop(index="none", errors="ignore")
        x = np.arange(len(gains))
        colors = [POLICY_STYLES.get(p, ("grey",))[0] for p in gains.index]
        right.bar(x - 0.2, gains["gain_render_blocking_s"] * 1000, 0.4, color=colors)
        right.bar(x + 0.2, gains["gain_onload_s"] * 1000, 0.4, alpha=0.45, color=colors)
        right.axhline(0, color="black", lw=0.7)
        right.set_xticks(x, gains.index)
        right.set_ylabel("gain vs none (ms)")
        right.grid(axis="y", alpha=0.3)
        if len(gains):
            # the legend's keys in the bars' own colours: one swatch per policy shown
            solid = tuple(Patch(color=c) for c in colors)
            light = tuple(Patch(color=c, alpha=0.45) for c in colors)
            right.legend([solid, light], ["render-blocking", "onload"], handler_map={tuple: HandlerTuple(ndivide=None)},
                         fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
        _title(right, "gain vs none")
        protocol = controls["protocol"].text(v["protocol"])
        think_s = float(s["think_s"].iloc[0])
        think = (f"think time from the trace ({think_s * 1000:,.0f} ms)" if v["think_ms"] == "trace"
                 else f"think time {v['think_ms']} ms")
        shown = ", ".join(s.index)
        edge = (f", CDN edge: {controls['edge_seen'].text(v['edge_seen'])}" if "hints-cdn" in v["policies"] else "")
        _suptitle(fig, f"{protocol}, RTT {v['rtt_ms']} ms, {v['bandwidth_mbit']} Mbit/s, "
                       f"{controls['cache'].text(v['cache'])} cache, {think}; policies: {shown}{edge}", width=140)
        table = _labelled(s, (("render_blocking_s", "render-blocking (s)"), ("onload_s", "onload (s)"),
                              ("gain_render_blocking_s", "gain render-blocking (ms)", 1000),
                              ("gain_onload_s", "gain onload (ms)", 1000)))
        table["pushes used / promised"] = [f"{u} / {p}" for u, p in zip(s["pushes_used"], s["pushes_promised"])]
        table["wasted (KiB)"] = s["bytes_wasted"] / KIB
        table["hinted fetches"] = s["hinted_fetches"]
        return table

    return Explorer("Push vs 103 Early Hints: one page load per policy per change", controls, run, draw,
                    inputs=Inputs(_load_page, suffixes=(".har",), default=trace,
                                  note="HAR page loads; the 300-resource page takes a few seconds per update."),
                    figsize=(10, 4.0), notes=notes)


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
        "rate_kb_s": Options("generation rate", (("50 kB/s", 50), ("200 kB/s", 200), ("1 MB/s", 1000),
                                                 ("3.2 MB/s", 3200), ("ready at once", "at-once")), 1000,
                             style="dropdown"),
        "version": Options("HTTP version", (("HTTP/1.1", "h1"), ("HTTP/2", "h2"), ("HTTP/3", "h3")), "h2"),
        "hop1": Options("hop next to the client", HOP_POLICIES, "pass", style="dropdown"),
        "hop2": Options("hop next to the origin", HOP_POLICIES, "merge", style="dropdown"),
        "te_share": Slider("share of requests with TE: trailers", 0.0, 1.0, 0.25, 0.5, percent=True),
    }

    def run(v, trace):
        hops = tuple(h for h in (v["hop1"], v["hop2"]) if h != "-")
        rate = None if v["rate_kb_s"] == "at-once" else v["rate_kb_s"] * 1000.0
        body = None if trace else v["body_kib"] * KIB          # a trace: its own sizes
        return trailers.run(trace, replace(base, versions=(v["version"],), body_bytes=body, rate_bytes_per_s=rate,
                                           hops=hops, responses=responses, spacing_s=0.5, te_trailers=v["te_share"],
                                           stack="model"))

    def draw(r, v, fig):
        d = r.responses
        agg = d.groupby("strategy", sort=False).agg(
            ttfb_ms=("ttfb_s", lambda s: 1000 * s.mean()), metadata_ms=("metadata_s", lambda s: 1000 * s.mean()),
            digest_lost=("integrity_lost", "sum"), status_lost=("status_lost", "sum"),
            origin_held_kib=("origin_held_max_bytes", lambda s: s.max() / KIB),
            hops_held_kib=("hops_held_sum_bytes", lambda s: s.max() / KIB))
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
        fig.suptitle(f"{controls['version'].text(v['version'])}, {size} at {rate}, hops: {chain}, "
                     f"TE: trailers on {v['te_share']:.0%} of requests", fontsize="medium")
        return _labelled(agg, (("ttfb_ms", "first byte (ms)"), ("metadata_ms", "metadata (ms)"),
                               ("digest_lost", "digest lost"), ("status_lost", "status lost"),
                               ("origin_held_kib", "origin held (KiB)"), ("hops_held_kib", "hops held (KiB)")))

    return Explorer("Trailers: one run of every strategy per change", controls, run, draw,
                    inputs=Inputs(_load_trace, suffixes=(".har",), builtin={"generated responses": None},
                                  default="generated responses",
                                  note=f"Generated: {responses} responses of the chosen size; a HAR: every "
                                       "exchange at its own size (the body control does not apply; a large HAR "
                                       "takes seconds)."),
                    figsize=(11, 3.6))


# ---------------------------------------------------------------------------------------
# 04: cross-stream compression


CROSS_SCHEMES = (("shared context", "shared"), ("static dictionary", "static-dict"),
                 ("dynamic dictionary", "dynamic-dict"), ("RFC 9842 dcb (Brotli)", "dcb"),
                 ("RFC 9842 dcz (Zstandard)", "dcz"))


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
        r = crossstream.run(corpus, replace(base, schemes=("per-response", v["scheme"]), codecs=codec_,
                                            scopings=(v["scoping"],), leak_lengths=(v["secret_chars"],),
                                            leak_codecs="first", releases=releases, measure_cpu=False))
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
                right.annotate(f"{int(row['correct_prefix_chars'])}/{v['secret_chars']} chars",
                               (xi, row["requests"]), ha="center", va="bottom", fontsize="small")
        right.set_xticks(x, s.index)
        right.set_ylabel("attacker requests")
        right.grid(axis="y", alpha=0.3)
        _title(right, f"the leak, {v['secret_chars']}-character secret (red: recovered)")
        table = _labelled(s, (("codec", "codec"), ("ratio", "ratio"), ("repeat_ratio", "repeat ratio"),
                              ("first_visit_s", "first visit (s)"), ("repeat_visit_s", "repeat visit (s)"),
                              ("client_dictionary_peak_bytes", "client dictionary peak (KiB)", 1 / KIB)))
        table["secret recovered"] = leak["recovered"]
        table["attacker requests"] = leak["requests"]
        return table

    return Explorer("Cross-stream compression: one run of the scheme and per-response compression per change",
                    controls, run, draw,
                    inputs=Inputs(_load_bodies, suffixes=(".har",), builtin={"generated site": None},
                                  default=bodies or "generated site",
                                  note=f"A generated site ({releases} releases), a HAR (bodies generated for its "
                                       "text responses) or a folder of real files (sub-folders: later releases)."),
                    figsize=(10, 3.6))


# ---------------------------------------------------------------------------------------
# 05: models vs real stacks


STACK_SETUPS = (("h2 + TLS 1.3", ("h2", True)), ("h2 cleartext", ("h2", False)), ("HTTP/3", ("h3", True)))


def _load_specs(path: str):
    from ..stacks import replay
    from ..stacks.common import StackParams

    return replay.specs_from_trace(_load_trace(path), StackParams())


def stacks_panel(base=None) -> Explorer:
    """Loss and stack: one replay on the real stack and one on its transport model per change."""
    from ..stacks import crossval, model_replay, replay
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
        for res, label, color in ((real, f"real {real.summary['stack']}", "#1f77b4"),
                                  (model, f"model ({model.summary['stack']})", "#ff7f0e")):
            t = times(res) * 1000
            ax.step(t, np.arange(1, len(t) + 1) / max(len(t), 1), where="post", label=label, color=color)
        ax.set_xscale("log")
        ax.set_xlabel("completion time per exchange (ms)")
        ax.set_ylabel("fraction of exchanges")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize="small")
        name = next(label for label, value in STACK_SETUPS if value == v["setup"])
        _title(ax, f"{name}, loss {v['loss']:.1%}, RTT {v['rtt_ms']} ms, seed {v['seed']}")
        keys = {"exchanges": "exchanges", "median_completion_s": "median completion (s)",
                "last_completion_s": "last completion (s)", "packets_sent": "packets sent",
                "packets_lost": "packets lost"}
        table = pd.DataFrame({"real stack": [real.summary[k] for k in keys],
                              "model": [model.summary[k] for k in keys]}, index=list(keys.values())).T
        table["median real / model"] = [real.summary["median_completion_s"] / model.summary["median_completion_s"],
                                        math.nan]
        return table

    return Explorer("Models vs real stacks: one replay on each per change", controls, run, draw,
                    inputs=Inputs(_load_specs, suffixes=(".har",),
                                  builtin={"page (30 exchanges, one origin)": scenarios["page"],
                                           "bulk download (300 kB)": scenarios["bulk"]},
                                  default="page (30 exchanges, one origin)",
                                  note="A HAR is replayed as recorded (every origin its connection); HTTP/3 on the "
                                       "79-exchange page takes about 3 s."),
                    figsize=(8, 3.6))


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
        return demux.run(None, replace(base, streams=int(v["streams"]), stream_bytes=stream_bytes,
                                       window_bytes=v["window_kib"] * KIB, part="model",
                                       rtts_s=(v["rtt_ms"] / 1000,), interleavings=(v["interleaving"],)))

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
        fig.suptitle(f"{v['streams']} streams x {stream_bytes // KIB:,} KiB, stream window {v['window_kib']} KiB, "
                     f"server interleaving {v['interleaving']}, RTT {v['rtt_ms']:g} ms (model)", fontsize="medium")
        return _labelled(m, (("completion_s", "completion (ms)", 1000), ("completion_ratio_vs_direct", "vs direct"),
                             ("peak_buffered_bytes", "peak buffered (KiB)", 1 / KIB),
                             ("wakeups_per_frame", "wakeups per frame"), ("dispatches_per_frame", "dispatches per frame"),
                             ("copied_bytes_per_mb", "bytes copied per MB"), ("window_stall_s", "window stall (ms)", 1000)))

    return Explorer("HTTP/2 demultiplexing: one model run of every receive strategy per change", controls, run,
                    draw, figsize=(10, 3.6))


# ---------------------------------------------------------------------------------------
# 07: coalescing


def _site(host: str) -> str:
    return ".".join(host.split(".")[-2:])


def shaped_topology(topology, dns: str, cert: str):
    """The drawn topology with its DNS answers and certificates shared differently.

    ``dns``: ``drawn`` (as drawn), ``per-host`` (every host its own address: the IP rule
    of RFC 9113 section 9.1.1 never matches) or ``per-provider`` (every customer of a
    CDN gets the CDN's same two addresses).  ``cert``: ``drawn``, ``per-site`` (every
    site its own wildcard certificate) or ``per-provider`` (one certificate per CDN
    naming all its customers).  A CDN's ORIGIN frame (RFC 8336) names the page hosts on
    the CDN that its certificate covers, recomputed."""
    from ..studies import coalescing as co

    servers = dict(topology.servers)
    if cert == "per-site":
        servers = {h: replace(s, san=(f"*.{_site(h)}", _site(h))) for h, s in servers.items()}
    elif cert == "per-provider":
        names: dict[str, list[str]] = {}
        for h, s in servers.items():
            if s.provider not in ("", "self"):
                names.setdefault(s.provider, []).extend([f"*.{_site(h)}", _site(h)])
        servers = {h: replace(s, san=tuple(dict.fromkeys(names[s.provider]))) if s.provider in names else s
                   for h, s in servers.items()}
    if dns == "per-host":
        servers = {h: replace(s, addresses=(f"198.18.{i // 250}.{i % 250 + 1}",))
                   for i, (h, s) in enumerate(servers.items())}
    elif dns == "per-provider":
        pools: dict[str, list[str]] = {}
        for s in servers.values():
            if s.provider not in ("", "self"):
                pools.setdefault(s.provider, []).extend(s.addresses)
        servers = {h: replace(s, addresses=tuple(sorted(set(pools[s.provider]))[:2])) if s.provider in pools else s
                   for h, s in servers.items()}
    hosts = list(servers)
    for h, s in list(servers.items()):
        if s.announces is not None:
            servers[h] = replace(s, announces=tuple(o for o in hosts if servers[o].provider == s.provider
                                                    and co.cert_covers(s.san, o)))
    return co.Topology(servers=servers, sources={"dns": f"default, shared {dns}", "cert": f"default, shared {cert}"})


def coalescing_panel(trace: str = "synthetic-page.har", base=None) -> Explorer:
    """Mode, DNS and certificate sharing, 421 probability, RTT: one ``coalescing.run``
    (the mode next to ``none``) per change."""
    from ..studies import coalescing as co

    base = base or co.CoalescingParams()
    controls = {
        "mode": Options("mode", ("ip", "origin", "h3-altsvc"), "origin"),
        "dns": Options("DNS answers shared", (("as drawn", "drawn"), ("never (one address per host)", "per-host"),
                                              ("per CDN", "per-provider")), "drawn", style="dropdown"),
        "cert": Options("certificates shared", (("as drawn", "drawn"), ("never (one per site)", "per-site"),
                                                ("per CDN", "per-provider")), "drawn", style="dropdown"),
        "p421": Slider("421 probability", 0.0, 1.0, 0.1, 0.0, percent=True),
        "rtt_ms": Slider("RTT", 10, 400, 10, round(base.rtt_s * 1000), unit="ms"),
    }

    def run(v, graph):
        p = replace(base, modes=("none", v["mode"]), p421=v["p421"], p421_announced=v["p421"], rtt_s=v["rtt_ms"] / 1000)
        topo = shaped_topology(co.topology_for(graph, p), v["dns"], v["cert"])
        return co.run(graph, p, topology=topo)

    def notes(v, r):
        # One seeded draw per (server, host) pair the mode sends to another host's server
        # (pool.py): the 421 probability acts only through those pairs, in steps.
        conns = r.connections[r.connections["mode"] == v["mode"]]
        pairs = [(server, h) for server, a, b in zip(conns["host"], conns["coalesced_hosts"], conns["refused_hosts"])
                 for h in f"{a},{b}".split(",") if h]
        out = {}
        if all(_site(server) == _site(h) for server, h in pairs):
            # a certificate per site covers every pair of hosts on one site, as the drawn ones do
            shown = ", ".join(f"{server} > {h}" for server, h in pairs) or "none"
            out["cert"] = Inert(f"every host coalesced here shares a site with its connection's host ({shown}), "
                                "which a certificate per site covers as well as the drawn one")
        pairs = len(pairs)
        if pairs == 0:
            out["p421"] = Inert(f"{v['mode']} coalesces no host onto another host's connection on this page "
                                "at these settings, so no server can answer 421", off=True)
            return out
        out["p421"] = Inert(f"a server refuses a host it was not asked for with one seeded draw per (server, "
                              f"host) pair; this page has {pairs} such pair{'s' if pairs > 1 else ''} in "
                              f"{v['mode']} mode, so the probability changes the result in at most {pairs} "
                              f"step{'s' if pairs > 1 else ''} (here {int(r.summary.loc[v['mode'], 'misdirected_421'])} "
                              "421 responses)")
        return out

    def draw(r, v, fig):
        s = r.summary
        axes = fig.subplots(1, 3)
        colors = ["grey", {"ip": "tab:blue", "origin": "tab:green", "h3-altsvc": "tab:red"}[v["mode"]]]
        for ax, col, label, factor in zip(axes, ("connections", "handshake_bytes", "onload_s"),
                                          ("connections", "handshake (KiB, both ends)", "onload (s)"),
                                          (1, 1 / KIB, 1)):
            ax.bar(s.index, s[col] * factor, color=colors)
            ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
        _suptitle(fig, f"{v['mode']} vs none: {controls['dns'].label} {controls['dns'].text(v['dns'])}, "
                       f"{controls['cert'].label} {controls['cert'].text(v['cert'])}, "
                       f"421 probability {v['p421']:.0%}, RTT {v['rtt_ms']} ms", width=130)
        return _labelled(s, (("onload_s", "onload (s)"), ("gain_onload_s", "gain vs none (ms)", 1000),
                             ("connections", "connections"), ("dns_lookups", "DNS lookups"),
                             ("handshake_rtts", "handshake RTTs"), ("handshake_bytes", "handshake (KiB)", 1 / KIB),
                             ("cert_bytes", "certificates (KiB)", 1 / KIB),
                             ("coalesced_requests", "coalesced requests"), ("misdirected_421", "421 responses")))

    return Explorer("Origin coalescing: one load per mode (and none) per change", controls, run, draw,
                    inputs=Inputs(_load_page, suffixes=(".har",), default=trace,
                                  note="HAR page loads; the 102-origin page takes about 2 s per update."),
                    figsize=(11, 3.5), notes=notes)


# ---------------------------------------------------------------------------------------
# 08: fidelity


def _measured_page(trace):
    """The page of ``trace`` with a measured onLoad and a document that has the most
    resources: (its load-event graph, its page record)."""
    from ..studies import fidelity
    from ..traces.pagegraph import page_graph

    best = None
    for meta in trace.pages:
        if meta.on_load_s is None or meta.repeat_view:
            continue
        try:
            graph = fidelity.load_event_graph(page_graph(trace, meta.id), meta.on_load_s, meta.start_s)
        except InputError:
            continue                    # e.g. a page with no document: not a page load to simulate
        if best is None or len(graph.resources) > len(best[0].resources):
            best = (graph, meta)
    if best is None:
        raise InputError("has no page with a measured onLoad and a document to simulate.", path=trace.source)
    return best


def fidelity_panel(trace: str = "har-real/http_http2-chrome.har", base=None) -> Explorer:
    """RTT and bandwidth scaled from what the HAR measured, and the protocol: the page
    simulated at the measured conditions and at the scaled ones (``simulate_page``)."""
    from ..studies import fidelity
    from ..studies.fidelity.conditions import infer_conditions
    from .fidelity import waterfall_compare

    base = base or fidelity.FidelityParams()
    controls = {
        "rtt_scale": Options("RTT", (("x 0.25", 0.25), ("x 0.5", 0.5), ("as measured", 1.0), ("x 2", 2.0),
                                     ("x 4", 4.0)), 2.0, style="slider"),
        "bw_scale": Options("bandwidth", (("x 0.25", 0.25), ("x 0.5", 0.5), ("as measured", 1.0), ("x 2", 2.0),
                                          ("x 4", 4.0)), 1.0, style="slider"),
        "protocol": Options("protocol", (("as in the HAR", "auto"), ("all HTTP/2", "h2"), ("all HTTP/3", "h3")),
                            base.protocol),
    }

    def scaled(cond, rtt, bw):
        origins = tuple((o, r * rtt, p, setup * rtt) for o, r, p, setup in cond.origins)
        return replace(cond, rtt_s=cond.rtt_s * rtt, origins=origins,
                       bandwidth_bps=None if cond.bandwidth_bps is None else cond.bandwidth_bps * bw)

    def run(v, trace):
        graph, meta = _measured_page(trace)
        cond = infer_conditions(graph, meta.start_s, v["protocol"])
        params = replace(base, protocol=v["protocol"])
        as_measured = fidelity.simulate_page(graph, cond, params)
        what_if = fidelity.simulate_page(graph, scaled(cond, v["rtt_scale"], v["bw_scale"]), params)
        return graph, meta, cond, as_measured, what_if

    def notes(v, r):
        graph, meta, cond = r[:3]
        out = {}
        if cond.bandwidth_bps is None:
            out["bw_scale"] = Inert("this HAR measured no bandwidth (the simulated link is unlimited), so there "
                                    "is none to scale", off=True)
        recorded = {p for _, _, p, _ in infer_conditions(graph, meta.start_s, "auto").origins}
        if len(recorded) == 1:
            (only,) = recorded
            name = {"h1": "HTTP/1.1", "h2": "HTTP/2", "h3": "HTTP/3"}.get(only, only)
            out["protocol"] = Inert(f"every origin of this HAR used {name}, so 'as in the HAR' and 'all {name}' "
                                    "simulate the same page")
        return out

    def draw(r, v, fig):
        graph, meta, cond, as_measured, what_if = r
        ax = fig.subplots()
        bw = ("bandwidth unlimited (none measured)" if cond.bandwidth_bps is None
              else f"{cond.bandwidth_bps * v['bw_scale'] / 1e6:,.1f} Mbit/s")
        rtts = sorted(r * v["rtt_scale"] * 1000 for _, r, _, _ in cond.origins) or [cond.rtt_s * 1000]
        span = f"{rtts[0]:,.0f} ms" if rtts[-1] - rtts[0] < 0.5 else f"{rtts[0]:,.0f}-{rtts[-1]:,.0f} ms"
        waterfall_compare(graph, what_if.resources, cond.start_offset_s, meta.start_s, ax, max_rows=20,
                          title=f"simulated at RTT x {v['rtt_scale']:g} (origins {span}), {bw}")
        scaled_bw = "bandwidth unlimited" if cond.bandwidth_bps is None else f"bandwidth x {v['bw_scale']:g}"
        rows = {"measured": meta.on_load_s, "simulated, conditions as measured": as_measured.metrics["onload_s"],
                f"simulated, RTT x {v['rtt_scale']:g}, {scaled_bw}": what_if.metrics["onload_s"]}
        onload = pd.Series(rows)
        return pd.DataFrame({"onload (s)": onload, "vs measured (%)": 100 * (onload / meta.on_load_s - 1)})

    return Explorer("Fidelity: the page at other network conditions", controls, run, draw,
                    inputs=Inputs(_load_trace, suffixes=(".har",), default=trace, skip=("synthetic-",),
                                  note="A HAR with a measured onLoad: its page with the most resources."),
                    figsize=(10, 4.6), notes=notes)


PANELS = {
    "01-hol-blocking": hol_panel,
    "02-push-vs-early-hints": push_panel,
    "03-trailers": trailers_panel,
    "04-cross-stream-compression": crossstream_panel,
    "05-models-vs-real-stacks": stacks_panel,
    "06-demux": demux_panel,
    "07-origin-coalescing": coalescing_panel,
    "08-fidelity": fidelity_panel,
}
