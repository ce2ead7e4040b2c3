"""The Explore panels of the page-load notebooks: 02 push vs 103 Early Hints, 07 origin
coalescing and 08 fidelity (each simulates the load of a HAR's page once per change).

What a panel returns (an ``explore.Explorer``: controls, one study run per change, its
figure and key table, and the controls that cannot act) is described in ``panels.py``,
which maps every notebook to its panel.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..errors import InputError
from .explore import Explorer, Inert, Inputs, Options, Several, Slider
from .panels_common import KIB, _labelled, _load_page, _load_trace, _suptitle, _title


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
        "think_ms": Options(
            "document think time",
            (
                ("from the trace", "trace"),
                ("0 ms", 0),
                ("50 ms", 50),
                ("100 ms", 100),
                ("200 ms", 200),
                ("400 ms", 400),
                ("800 ms", 800),
            ),
            "trace",
            style="dropdown",
        ),
        "cache": Options("cache", (("cold", "cold"), ("half cached", "0.5"), ("warm", "warm")), "cold"),
        "policies": Several("policies (and none)", PUSH_POLICIES, ("push", "hints", "push+hints")),
        # hints-cdn: a CDN edge hints only a page it has seen before (its first request has no hints)
        "edge_seen": Options(
            "CDN edge (hints-cdn)", (("first request", False), ("has seen the page", True)), base.edge_seen
        ),
        "protocol": Options("protocol", (("HTTP/2", "h2"), ("HTTP/3", "h3")), base.protocol),
    }

    def run(v, graph):
        policies = ("none",) + tuple(p for p in PUSH_POLICIES if p in v["policies"])
        think = None if v["think_ms"] == "trace" else v["think_ms"] / 1000
        return push.run(
            graph,
            replace(
                base,
                policies=policies,
                rtt_s=v["rtt_ms"] / 1000,
                bandwidth_bps=v["bandwidth_mbit"] * 1e6,
                think_s=think,
                cache=v["cache"],
                protocol=v["protocol"],
                edge_seen=bool(v["edge_seen"]),
            ),
        )

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
            right.legend(
                [solid, light],
                ["render-blocking", "onload"],
                handler_map={tuple: HandlerTuple(ndivide=None)},
                fontsize="small",
                loc="upper center",
                bbox_to_anchor=(0.5, -0.12),
                ncol=2,
                frameon=False,
            )
        _title(right, "gain vs none")
        protocol = controls["protocol"].text(v["protocol"])
        think_s = float(s["think_s"].iloc[0])
        think = (
            f"think time from the trace ({think_s * 1000:,.0f} ms)"
            if v["think_ms"] == "trace"
            else f"think time {v['think_ms']} ms"
        )
        shown = ", ".join(s.index)
        edge = f", CDN edge: {controls['edge_seen'].text(v['edge_seen'])}" if "hints-cdn" in v["policies"] else ""
        _suptitle(
            fig,
            f"{protocol}, RTT {v['rtt_ms']} ms, {v['bandwidth_mbit']} Mbit/s, "
            f"{controls['cache'].text(v['cache'])} cache, {think}; policies: {shown}{edge}",
            width=140,
        )
        table = _labelled(
            s,
            (
                ("render_blocking_s", "render-blocking (s)"),
                ("onload_s", "onload (s)"),
                ("gain_render_blocking_s", "gain render-blocking (ms)", 1000),
                ("gain_onload_s", "gain onload (ms)", 1000),
            ),
        )
        table["pushes used / promised"] = [f"{u} / {p}" for u, p in zip(s["pushes_used"], s["pushes_promised"])]
        table["wasted (KiB)"] = s["bytes_wasted"] / KIB
        table["hinted fetches"] = s["hinted_fetches"]
        return table

    return Explorer(
        "Push vs 103 Early Hints: one page load per policy per change",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_page,
            suffixes=(".har",),
            default=trace,
            note="HAR page loads; the 300-resource page takes a few seconds per update.",
        ),
        figsize=(10, 4.0),
        notes=notes,
    )


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
        servers = {
            h: replace(s, san=tuple(dict.fromkeys(names[s.provider]))) if s.provider in names else s
            for h, s in servers.items()
        }
    if dns == "per-host":
        servers = {
            h: replace(s, addresses=(f"198.18.{i // 250}.{i % 250 + 1}",)) for i, (h, s) in enumerate(servers.items())
        }
    elif dns == "per-provider":
        pools: dict[str, list[str]] = {}
        for s in servers.values():
            if s.provider not in ("", "self"):
                pools.setdefault(s.provider, []).extend(s.addresses)
        servers = {
            h: replace(s, addresses=tuple(sorted(set(pools[s.provider]))[:2])) if s.provider in pools else s
            for h, s in servers.items()
        }
    hosts = list(servers)
    for h, s in list(servers.items()):
        if s.announces is not None:
            servers[h] = replace(
                s, announces=tuple(o for o in hosts if servers[o].provider == s.provider and co.cert_covers(s.san, o))
            )
    return co.Topology(servers=servers, sources={"dns": f"default, shared {dns}", "cert": f"default, shared {cert}"})


def coalescing_panel(trace: str = "synthetic-page.har", base=None) -> Explorer:
    """Mode, DNS and certificate sharing, 421 probability, RTT: one ``coalescing.run``
    (the mode next to ``none``) per change."""
    from ..studies import coalescing as co

    base = base or co.CoalescingParams()
    controls = {
        "mode": Options("mode", ("ip", "origin", "h3-altsvc"), "origin"),
        "dns": Options(
            "DNS answers shared",
            (("as drawn", "drawn"), ("never (one address per host)", "per-host"), ("per CDN", "per-provider")),
            "drawn",
            style="dropdown",
        ),
        "cert": Options(
            "certificates shared",
            (("as drawn", "drawn"), ("never (one per site)", "per-site"), ("per CDN", "per-provider")),
            "drawn",
            style="dropdown",
        ),
        "p421": Slider("421 probability", 0.0, 1.0, 0.1, 0.0, percent=True),
        "rtt_ms": Slider("RTT", 10, 400, 10, round(base.rtt_s * 1000), unit="ms"),
    }

    def run(v, graph):
        p = replace(base, modes=("none", v["mode"]), p421=v["p421"], p421_announced=v["p421"], rtt_s=v["rtt_ms"] / 1000)
        topo = shaped_topology(co.topology_for(graph, p), v["dns"], v["cert"])
        return co.run(graph, replace(p, topology=topo))

    def notes(v, r):
        # One seeded draw per (server, host) pair the mode sends to another host's server
        # (pool.py): the 421 probability acts only through those pairs, in steps.
        conns = r.connections[r.connections["mode"] == v["mode"]]
        pairs = [
            (server, h)
            for server, a, b in zip(conns["host"], conns["coalesced_hosts"], conns["refused_hosts"])
            for h in f"{a},{b}".split(",")
            if h
        ]
        out = {}
        if all(_site(server) == _site(h) for server, h in pairs):
            # a certificate per site covers every pair of hosts on one site, as the drawn ones do
            shown = ", ".join(f"{server} > {h}" for server, h in pairs) or "none"
            out["cert"] = Inert(
                f"every host coalesced here shares a site with its connection's host ({shown}), "
                "which a certificate per site covers as well as the drawn one"
            )
        pairs = len(pairs)
        if pairs == 0:
            out["p421"] = Inert(
                f"{v['mode']} coalesces no host onto another host's connection on this page "
                "at these settings, so no server can answer 421",
                off=True,
            )
            return out
        out["p421"] = Inert(
            f"a server refuses a host it was not asked for with one seeded draw per (server, "
            f"host) pair; this page has {pairs} such pair{'s' if pairs > 1 else ''} in "
            f"{v['mode']} mode, so the probability changes the result in at most {pairs} "
            f"step{'s' if pairs > 1 else ''} "
            f"(here {int(r.summary.loc[v['mode'], 'misdirected_421'])} "
            "421 responses)"
        )
        return out

    def draw(r, v, fig):
        s = r.summary
        axes = fig.subplots(1, 3)
        colors = ["grey", {"ip": "tab:blue", "origin": "tab:green", "h3-altsvc": "tab:red"}[v["mode"]]]
        for ax, col, label, factor in zip(
            axes,
            ("connections", "handshake_bytes", "onload_s"),
            ("connections", "handshake (KiB, both ends)", "onload (s)"),
            (1, 1 / KIB, 1),
        ):
            ax.bar(s.index, s[col] * factor, color=colors)
            ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
        _suptitle(
            fig,
            f"{v['mode']} vs none: {controls['dns'].label} {controls['dns'].text(v['dns'])}, "
            f"{controls['cert'].label} {controls['cert'].text(v['cert'])}, "
            f"421 probability {v['p421']:.0%}, RTT {v['rtt_ms']} ms",
            width=130,
        )
        return _labelled(
            s,
            (
                ("onload_s", "onload (s)"),
                ("gain_onload_s", "gain vs none (ms)", 1000),
                ("connections", "connections"),
                ("dns_lookups", "DNS lookups"),
                ("handshake_rtts", "handshake RTTs"),
                ("handshake_bytes", "handshake (KiB)", 1 / KIB),
                ("cert_bytes", "certificates (KiB)", 1 / KIB),
                ("coalesced_requests", "coalesced requests"),
                ("misdirected_421", "421 responses"),
            ),
        )

    return Explorer(
        "Origin coalescing: one load per mode (and none) per change",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_page,
            suffixes=(".har",),
            default=trace,
            note="HAR page loads; the 102-origin page takes about 2 s per update.",
        ),
        figsize=(11, 3.5),
        notes=notes,
    )


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
            continue  # e.g. a page with no document: not a page load to simulate
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
        "rtt_scale": Options(
            "RTT",
            (("x 0.25", 0.25), ("x 0.5", 0.5), ("as measured", 1.0), ("x 2", 2.0), ("x 4", 4.0)),
            2.0,
            style="slider",
        ),
        "bw_scale": Options(
            "bandwidth",
            (("x 0.25", 0.25), ("x 0.5", 0.5), ("as measured", 1.0), ("x 2", 2.0), ("x 4", 4.0)),
            1.0,
            style="slider",
        ),
        "protocol": Options(
            "protocol", (("as in the HAR", "auto"), ("all HTTP/2", "h2"), ("all HTTP/3", "h3")), base.protocol
        ),
    }

    def scaled(cond, rtt, bw):
        origins = tuple((o, r * rtt, p, setup * rtt) for o, r, p, setup in cond.origins)
        return replace(
            cond,
            rtt_s=cond.rtt_s * rtt,
            origins=origins,
            bandwidth_bps=None if cond.bandwidth_bps is None else cond.bandwidth_bps * bw,
        )

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
            out["bw_scale"] = Inert(
                "this HAR measured no bandwidth (the simulated link is unlimited), so there is none to scale", off=True
            )
        recorded = {p for _, _, p, _ in infer_conditions(graph, meta.start_s, "auto").origins}
        if len(recorded) == 1:
            (only,) = recorded
            name = {"h1": "HTTP/1.1", "h2": "HTTP/2", "h3": "HTTP/3"}.get(only, only)
            out["protocol"] = Inert(
                f"every origin of this HAR used {name}, so 'as in the HAR' and 'all {name}' simulate the same page"
            )
        return out

    def draw(r, v, fig):
        graph, meta, cond, as_measured, what_if = r
        ax = fig.subplots()
        bw = (
            "bandwidth unlimited (none measured)"
            if cond.bandwidth_bps is None
            else f"{cond.bandwidth_bps * v['bw_scale'] / 1e6:,.1f} Mbit/s"
        )
        rtts = sorted(r * v["rtt_scale"] * 1000 for _, r, _, _ in cond.origins) or [cond.rtt_s * 1000]
        span = f"{rtts[0]:,.0f} ms" if rtts[-1] - rtts[0] < 0.5 else f"{rtts[0]:,.0f}-{rtts[-1]:,.0f} ms"
        waterfall_compare(
            graph,
            what_if.resources,
            cond.start_offset_s,
            meta.start_s,
            ax,
            max_rows=20,
            title=f"simulated at RTT x {v['rtt_scale']:g} (origins {span}), {bw}",
        )
        scaled_bw = "bandwidth unlimited" if cond.bandwidth_bps is None else f"bandwidth x {v['bw_scale']:g}"
        rows = {
            "measured": meta.on_load_s,
            "simulated, conditions as measured": as_measured.metrics["onload_s"],
            f"simulated, RTT x {v['rtt_scale']:g}, {scaled_bw}": what_if.metrics["onload_s"],
        }
        onload = pd.Series(rows)
        return pd.DataFrame({"onload (s)": onload, "vs measured (%)": 100 * (onload / meta.on_load_s - 1)})

    return Explorer(
        "Fidelity: the page at other network conditions",
        controls,
        run,
        draw,
        inputs=Inputs(
            _load_trace,
            suffixes=(".har",),
            default=trace,
            skip=("synthetic-",),
            note="A HAR with a measured onLoad: its page with the most resources.",
        ),
        figsize=(10, 4.6),
        notes=notes,
    )
