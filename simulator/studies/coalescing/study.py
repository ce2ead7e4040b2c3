"""The coalescing study: its parameters, ``run`` (one page load per mode, same seed, same
topology) and the gains against ``none``."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import pandas as pd

from ... import __version__
from ...engine import derive_seed
from ...errors import InputError
from ...net.conditions import handing_over
from ...traces.model import Trace
from ...traces.pagegraph import PageGraph
from ..base import StudyParams, StudyResult, rows_by_index, steps
from ...browser import ClientCache, LoadParams, ServerPlan, load_page, page_graph
from ...browser.cache import parse_cache
from .pool import CoalescingPool
from .topology import Topology, host_of, read_topology

__all__ = ["MODES", "CoalescingParams", "CoalescingResult", "run", "topology_for", "ROW_PARAMS"]

MODES = ("none", "ip", "origin", "h3-altsvc")
METRICS = ("document_s", "render_blocking_s", "onload_s")


@dataclass(frozen=True)
class CoalescingParams(StudyParams):
    """Everything that determines a run (units in the names)."""

    modes: tuple[str, ...] = MODES
    backend: str = "model"  # model (transport models) or stacks (real h2)
    tls: bool = True  # h2 handshakes with TLS 1.3 (False: cleartext, both backends)
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    seed: int = 1
    dns_lookup_s: float = 0.030  # one lookup per host and page load
    p421: float = 0.0  # a server refuses a request coalesced by the ip rule
    p421_announced: float = 0.0  # ... for an origin it announced in ORIGIN
    altsvc_cache: str = "warm"  # h3-altsvc: warm (repeat view) or cold (first view)
    wait_pending: bool = True  # wait for a handshake to an address in the DNS answer
    think_s: float | None = None  # document think time; None = the trace's wait for it
    asset_think_s: float = 0.0
    cache: str = "cold"
    dns_file: str | None = None
    cert_file: str | None = None
    cc: str = "reno"
    scheduler: str = "urgency"
    page: str | None = None
    # The hosts' addresses and certificates, when given whole (a notebook's or the Explore
    # panel's shaped topology); None: drawn from the seed with dns_file and cert_file's entries.
    topology: Topology | None = field(default=None, compare=False, repr=False)

    NOT_PARAMETERS = ("topology",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.modes:
            raise InputError("no mode given (choose from " + ", ".join(MODES) + ")")
        for m in self.modes:
            if m not in MODES:
                raise InputError(f"unknown mode {m!r} (choose from {', '.join(MODES)})")
        for name in ("p421", "p421_announced"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise InputError(f"{name} must be a probability in [0, 1], got {v!r}")
        if self.backend not in ("model", "stacks"):
            raise InputError(f"unknown backend {self.backend!r} (choose model or stacks)")
        if self.backend == "stacks":
            if "h3-altsvc" in self.modes:
                raise InputError(
                    "mode h3-altsvc mixes h2 and h3 connections; the stacks backend runs h2 only "
                    "(choose from none, ip, origin)"
                )
        if self.altsvc_cache not in ("warm", "cold"):
            raise InputError(f"unknown Alt-Svc cache {self.altsvc_cache!r} (choose warm or cold)")
        if self.dns_lookup_s < 0:
            raise InputError(f"DNS lookup time must be >= 0, got {self.dns_lookup_s}")
        if (self.think_s is not None and self.think_s < 0) or self.asset_think_s < 0:
            raise InputError("think times must be >= 0")
        parse_cache(self.cache)
        self.load_params()

    def load_params(self) -> LoadParams:
        """The page load's parameters, with the backend's own DNS and set-up off: the pool times them."""
        # The pool times DNS and handshakes itself, so the backend's own set-up is off
        # (dns_s 0; each connection gets its set-up time from the pool).
        with handing_over(self.network):
            return LoadParams(
                protocol="h2",
                rtt_s=self.rtt_s,
                bandwidth_bps=self.bandwidth_bps,
                loss=self.loss,
                seed=self.seed,
                tls=self.tls,
                dns_s=0.0,
                coalesce="origin",
                cc=self.cc,
                scheduler=self.scheduler,
            )


ROW_PARAMS = (
    "seed",
    "backend",
    "tls",
    "rtt_s",
    "bandwidth_bps",
    "loss",
    "dns_lookup_s",
    "p421",
    "p421_announced",
    "altsvc_cache",
    "wait_pending",
)


@dataclass
class CoalescingResult(StudyResult):
    """One run of the coalescing study: per-mode summary, connections and resources tables, the topology."""

    summary: pd.DataFrame  # one row per mode
    connections: pd.DataFrame  # one row per (mode, connection)
    resources: pd.DataFrame  # one row per (mode, resource)
    params: dict
    trace: dict
    topology: Topology

    def to_dict(self) -> dict:
        """The per-mode rows, parameters, trace and the topology's sources and digest."""
        return {
            "modes": rows_by_index(self.summary),
            "params": self.params,
            "trace": self.trace,
            "topology": {"sources": self.topology.sources, "digest": self.topology.digest()},
        }

    def tables(self) -> dict[str, pd.DataFrame]:
        """Summary, connections and resources, without the columns the batch runner adds itself."""
        # The batch adds every parameter (and the seed) to each row: drop the study's copies.
        summary = self.summary.reset_index().drop(columns=[c for c in ROW_PARAMS if c in self.summary.columns])
        return {
            "summary": summary,
            "connections": self.connections.drop(columns=["seed"]),
            "resources": self.resources.drop(columns=["seed"]),
        }


def topology_for(graph: PageGraph, params: CoalescingParams) -> Topology:
    """The page's hosts as the run meets them: the seeded default, with the files' entries."""
    hosts = list(dict.fromkeys(host_of(r.origin) for r in graph.resources))
    return read_topology(hosts, host_of(graph[graph.document].origin), params.seed, params.dns_file, params.cert_file)


def run(
    trace: Trace | PageGraph, params: CoalescingParams | None = None, *, progress: bool = False
) -> CoalescingResult:
    """Load the page once per mode with the same seed and compare."""
    params = params or CoalescingParams()
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    topo = params.topology or topology_for(graph, params)
    load_params = params.load_params()
    cache = ClientCache.for_page(graph, params.cache, random.Random(derive_seed(params.seed, "cache")))
    doc = graph[graph.document]
    think = {r.index: params.asset_think_s for r in graph.resources}
    think[graph.document] = params.think_s if params.think_s is not None else (doc.wait_s or 0.0)
    plan = ServerPlan(think_s=think)
    row_params = {k: getattr(params, k) for k in ROW_PARAMS}
    rows, conns, resources = {}, [], []
    for mode in steps(params.modes, "modes", progress):
        pools = []

        def network(sim, lp, listener, inner_cls, mode=mode):
            pool = CoalescingPool(sim, lp, listener, inner_cls, mode=mode, topo=topo, cp=params)
            pools.append(pool)
            return pool

        loaded = load_page(graph, load_params, plan, cache, backend=params.backend, network=network)
        pool = pools[0]
        m = {**loaded.metrics, **pool.stats()}
        for k in (
            "bytes_pushed",
            "bytes_wasted",
            "hinted_fetches",
            "hints_skipped_cached",
            "preconnects",
            "pushes_promised",
            "pushes_used",
            "pushes_cancelled",
        ):
            m.pop(k, None)
        m["origins"] = len(graph.origins)
        m["think_s"] = plan.think(graph.document)
        rows[mode] = {**m, **row_params}
        cdf = pd.DataFrame.from_records(pool.connection_rows())
        cdf.insert(0, "mode", mode)
        conns.append(cdf)
        rdf = loaded.resources.copy()
        rdf["connection"] = [pool.request_conn[i].key if i in pool.request_conn else "" for i in rdf["index"]]
        rdf["coalesced"] = [
            i in pool.request_conn and pool.request_conn[i].host != host_of(o)
            for i, o in zip(rdf["index"], rdf["origin"])
        ]
        rdf["misdirected_421"] = [pool.misdirected.get(i, 0) for i in rdf["index"]]
        rdf.insert(0, "mode", mode)
        resources.append(rdf)
    base = rows.get("none")
    for m in rows.values():
        for metric in METRICS:
            m[f"gain_{metric}"] = base[metric] - m[metric] if base else math.nan
        m["gain_onload_rtts"] = m["gain_onload_s"] / params.rtt_s if base else math.nan
    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary.index.name = "mode"
    conns_df = pd.concat(conns, ignore_index=True)
    resources_df = pd.concat(resources, ignore_index=True)
    for df in (conns_df, resources_df):
        df["seed"] = params.seed
    tinfo = {"source": graph.source, "page": graph.page, **graph.summary(), "cached": len(cache)}
    if isinstance(trace, Trace):
        tinfo["content_hash"] = trace.content_hash()
    return CoalescingResult(
        summary=summary,
        connections=conns_df,
        resources=resources_df,
        params={**params.to_dict(), "version": __version__},
        trace=tinfo,
        topology=topo,
    )
