"""The priorities study's parameters, ``run`` (one page load per browser profile and
scheduler, same seed) and result: rows of onLoad and the visual metrics."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from ... import __version__
from ...errors import InputError
from ...net.conditions import handing_over
from ...browser.priorities import browser_signals, profile_names
from ...http.network import ModelNetwork
from ...http.priority import PriorityPlan, scheduler_names
from ...http.priority_stacks import scheduled_h2_server
from ...traces.model import Trace
from ...traces.pagegraph import PageGraph
from ...units import parse_named_durations
from ..base import StudyParams, StudyResult, records, steps
from ...browser import ClientCache, LoadParams, ServerPlan, load_page, page_graph
from ...browser.client import BACKENDS, DEFAULT_PARSE_DELAY_S, PROTOCOLS
from .metrics import METRICS, visual_metrics

__all__ = ["PrioritiesParams", "PrioritiesResult", "run", "load_with", "DEFAULT_PARSE_DELAY", "METRICS"]

DEFAULT_PARSE_DELAY = ",".join(f"{kind}={seconds * 1000:g}ms" for kind, seconds in DEFAULT_PARSE_DELAY_S)


@dataclass(frozen=True)
class PrioritiesParams(StudyParams):
    """Everything that determines a run (units in the names)."""

    schedulers: tuple[str, ...] = ("rfc9218", "tree", "fifo", "rr", "lifo")
    browsers: tuple[str, ...] = ("chromium", "firefox")
    protocol: str = "h2"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    seed: int = 1
    tls: bool = True
    reprioritize: bool = True             # the LCP image's PRIORITY_UPDATE after layout (RFC 9218 section 7)
    think_s: float = 0.0                  # the server's think time for every response
    parse_delay: str = DEFAULT_PARSE_DELAY
    page: str | None = None
    backend: str = "model"                # or "stacks": the real h2 or aioquic server with the scheduler
    # A ``http.priority_qlog.PriorityQlog`` collecting every HTTP/3 connection's scheduling
    # events (``--qlog``): where the run writes, not what it computes.
    qlog: object | None = field(default=None, compare=False)

    NOT_PARAMETERS = ("qlog",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.schedulers:
            raise InputError("no scheduler given (choose from " + ", ".join(scheduler_names()) + ")")
        for name in self.schedulers:
            PriorityPlan(name)                            # an unknown one: InputError naming the choices
        if not self.browsers:
            raise InputError("no browser profile given (choose from " + ", ".join(profile_names()) + ")")
        for b in self.browsers:
            if b not in profile_names():
                raise InputError(f"unknown browser profile {b!r} (choose from {', '.join(profile_names())})")
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol {self.protocol!r} (choose {', '.join(PROTOCOLS)})")
        if self.backend not in BACKENDS:
            raise InputError(f"unknown backend {self.backend!r} (choose {', '.join(BACKENDS)})")
        if self.think_s < 0:
            raise InputError(f"think time must be >= 0, got {self.think_s}")
        self.load_params()

    def to_dict(self) -> dict:
        """Every parameter; ``backend`` only when not the model (runs on the model print as before it existed)."""
        d = super().to_dict()
        if d.get("backend") == "model":
            del d["backend"]
        return d

    def load_params(self) -> LoadParams:
        """The page-load model's parameters of every load of the run."""
        with handing_over(self.network):
            return LoadParams(protocol=self.protocol, rtt_s=self.rtt_s, bandwidth_bps=self.bandwidth_bps,
                              loss=self.loss, seed=self.seed, tls=self.tls,
                              parse_delay_s=parse_named_durations(self.parse_delay, "parse delay"))


@dataclass
class PrioritiesResult(StudyResult):
    """One row per (browser, scheduler) in ``summary``; per-resource times in ``resources``."""

    summary: pd.DataFrame
    resources: pd.DataFrame
    params: dict
    trace: dict
    notes: list = field(default_factory=list)    # what the reader must know to read the rows

    def tables(self):
        # The batch adds the parameters and the seed itself: the rows without their copies.
        """The batch's tables: the summary and the per-resource times, without the parameter columns."""
        own = ["protocol", "rtt_s", "bandwidth_bps", "loss", "seed"]
        return {"summary": self.summary.drop(columns=own), "resources": self.resources.drop(columns=["seed"])}

    def to_dict(self):
        """The JSON object: ``schedulers`` (the rows), ``params``, ``trace`` and any ``notes``."""
        out = {"schedulers": records(self.summary), "params": self.params, "trace": self.trace}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


class _Layout:
    """The browser model with its first layout: once its render-blocking set is ready it
    sends the profile's PRIORITY_UPDATEs (``ModelNetwork.reprioritize``).  Everything
    else is the browser's own (``PageLoad``)."""

    def __init__(self, load, updates: tuple, blocking: list[int]) -> None:
        self._load, self._updates, self._blocking = load, updates, blocking
        self.network = None

    def __getattr__(self, name):
        return getattr(self._load, name)

    def on_response_complete(self, index: int) -> None:
        self._load.on_response_complete(index)
        if self._updates and all(not math.isnan(self._load.ready_s[i]) for i in self._blocking):
            updates, self._updates = self._updates, ()
            for resource, signal in updates:
                self.network.reprioritize(resource, signal)


def load_with(graph: PageGraph, params: PrioritiesParams, browser: str, scheduler: str, *, qlog=None,
              plan_cls=PriorityPlan, on_network=None):
    """One page load of ``graph`` with ``browser``'s signals and ``scheduler`` on the server
    (``qlog``: an ``http.priority_qlog.PriorityQlog`` that gets the HTTP/3 connections' events),
    on the model or, with ``params.backend == "stacks"``, on the real stack with a scheduling
    server (h2: ``http.priority_stacks``, h3: aioquic with ``http.priority_stacks_h3``).
    ``plan_cls`` and ``on_network`` (called with the network once made) are for comparisons
    that read the connections afterwards (``real``)."""
    signals, updates = browser_signals(graph, browser, params.protocol, reprioritize=params.reprioritize)
    if qlog is not None:
        qlog.label = f"{browser} {scheduler}"
    plan = plan_cls(scheduler, signals, updates, qlog=qlog)

    def network(sim, load_params, listener, backend_cls):
        layout = _Layout(listener, updates, graph.render_blocking)
        if params.backend == "stacks":
            if params.protocol == "h2":
                server = scheduled_h2_server
            else:
                from ...http.priority_stacks_h3 import scheduled_h3_server as server   # aioquic only when asked for
            layout.network = backend_cls(sim, load_params, layout, server_end=server(plan))
        else:
            layout.network = ModelNetwork(sim, load_params, layout, priorities=plan)
        if on_network is not None:
            on_network(layout.network)
        return layout.network

    think = {r.index: params.think_s for r in graph.resources} if params.think_s else {}
    return load_page(graph, params.load_params(), ServerPlan(think_s=think), ClientCache(), backend=params.backend,
                     network=network)


def run(trace: Trace | PageGraph, params: PrioritiesParams | None = None, *,
        progress: bool = False) -> PrioritiesResult:
    """Load the page once per (browser, scheduler) with the same seed; the visual metrics per row
    (``params.qlog``: a ``PriorityQlog`` collecting every HTTP/3 connection's scheduling events)."""
    params = params or PrioritiesParams()
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    rows, resources = [], []
    pairs = [(b, s) for b in params.browsers for s in params.schedulers]
    for browser, scheduler in steps(pairs, "loads", progress):
        loaded = load_with(graph, params, browser, scheduler, qlog=params.qlog)
        rows.append({"scheduler": scheduler, "browser": browser, **visual_metrics(loaded.resources, graph),
                     "protocol": params.protocol, "rtt_s": params.rtt_s, "bandwidth_bps": params.bandwidth_bps,
                     "loss": params.loss, "seed": params.seed})
        df = loaded.resources.copy()
        df.insert(0, "scheduler", scheduler)
        df.insert(0, "browser", browser)
        resources.append(df)
    summary = pd.DataFrame(rows)
    res = pd.concat(resources, ignore_index=True)
    res["seed"] = params.seed
    tinfo = {"source": graph.source, "page": graph.page, **graph.summary()}
    if isinstance(trace, Trace):
        tinfo["content_hash"] = trace.content_hash()
    return PrioritiesResult(summary=summary, resources=res, params={**params.to_dict(), "version": __version__},
                            trace=tinfo, notes=notes(params))


def notes(params: PrioritiesParams) -> list[str]:
    """The caveats of a run's rows: ``tree`` over HTTP/3, which carries no tree."""
    out = []
    if params.protocol != "h2" and "tree" in params.schedulers:
        out.append(f"tree over {params.protocol}: HTTP/3 has no dependency tree (no PRIORITY frame, RFC 9114; "
                   "RFC 9218 section 2.1), so the tree server sees every stream under the root at the default "
                   "weight and shares bytes round-robin")
    return out
