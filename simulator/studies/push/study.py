"""The push study: its parameters, ``run`` (one page load per policy, same seed) and the
gains against ``none``."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pandas as pd

from ... import __version__
from ...engine import derive_seed
from ...errors import InputError
from ...net.conditions import handing_over
from ...traces.model import Trace
from ...traces.pagegraph import PageGraph
from ...units import parse_named_durations
from ..base import StudyParams, StudyResult, rows_by_index, steps
from ...browser import ClientCache, LoadParams, load_page, page_graph
from ...browser.cache import parse_cache
from ...browser.client import BACKENDS, COALESCE, DEFAULT_PARSE_DELAY_S, PROTOCOLS
from ...browser.server import POLICIES, push_count, server_plan

__all__ = ["PushParams", "PushResult", "run", "METRICS", "DEFAULT_PARSE_DELAY"]

METRICS = ("document_s", "render_blocking_s", "onload_s")
DEFAULT_PARSE_DELAY = ",".join(f"{kind}={seconds * 1000:g}ms" for kind, seconds in DEFAULT_PARSE_DELAY_S)


@dataclass(frozen=True)
class PushParams(StudyParams):
    """Everything that determines a run (units in the names)."""

    policies: tuple[str, ...] = ("none", "push", "hints", "push+hints")
    protocol: str = "h2"
    backend: str = "model"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    seed: int = 1
    think_s: float | None = None  # document think time; None = the trace's wait for it
    asset_think_s: float = 0.0  # think time of every sub-resource
    cache: str = "cold"  # cold, warm, a hit probability or list:URL URL ...
    push_set: str = "render-blocking"  # render-blocking | all | largest:N | list:URL URL ...
    coalesce: str = "site"
    tls: bool = True
    dns_s: float = 0.0
    edge_seen: bool = False  # hints-cdn: has the edge seen this page before?
    scheduler: str = "urgency"  # model server's writer: urgency (RFC 9218), round-robin, fifo
    push_urgency: int = 3  # RFC 9218 urgency of pushed responses (model server)
    parse_delay: str = DEFAULT_PARSE_DELAY  # parse/CPU delay before a parent's references are found, per type
    page: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.policies:
            raise InputError("no policy given (choose from " + ", ".join(POLICIES) + ")")
        for p in self.policies:
            if p not in POLICIES:
                raise InputError(f"unknown policy {p!r} (choose from {', '.join(POLICIES)})")
        if self.backend not in BACKENDS:
            raise InputError(f"unknown backend {self.backend!r} (choose {', '.join(BACKENDS)})")
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol {self.protocol!r} (choose {', '.join(PROTOCOLS)})")
        if self.coalesce not in COALESCE:
            raise InputError(f"unknown coalescing rule {self.coalesce!r} (choose {', '.join(COALESCE)})")
        if self.think_s is not None and self.think_s < 0 or self.asset_think_s < 0:
            raise InputError("think times must be >= 0")
        parse_cache(self.cache)
        push_count(self.push_set)
        self.load_params()  # the page-load model's own checks, before any work

    def load_params(self) -> LoadParams:
        """The page load's network and browser parameters for this run."""
        with handing_over(self.network):
            return LoadParams(
                protocol=self.protocol,
                rtt_s=self.rtt_s,
                bandwidth_bps=self.bandwidth_bps,
                loss=self.loss,
                seed=self.seed,
                tls=self.tls,
                dns_s=self.dns_s,
                coalesce=self.coalesce,
                scheduler=self.scheduler,
                push_urgency=self.push_urgency,
                parse_delay_s=parse_named_durations(self.parse_delay, "parse delay"),
            )


@dataclass
class PushResult(StudyResult):
    """One run of the push study: per-policy summary, per-resource and per-push tables."""

    summary: pd.DataFrame  # one row per policy
    resources: pd.DataFrame  # one row per (policy, resource)
    pushes: pd.DataFrame  # one row per (policy, promised push)
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        """The per-policy rows, the parameters and the trace."""
        policies = rows_by_index(self.summary)
        return {"policies": policies, "params": self.params, "trace": self.trace}

    def tables(self) -> dict[str, pd.DataFrame]:
        """Summary, resources and pushes, without the seed column the batch adds itself."""
        # Per-resource rows carry policy and seed already; the batch adds the parameters.
        return {
            "summary": self.summary.reset_index(),
            "resources": self.resources.drop(columns=["seed"]),
            "pushes": self.pushes.drop(columns=["seed"]),
        }


def run(trace: Trace | PageGraph, params: PushParams | None = None, *, progress: bool = False) -> PushResult:
    """Load the page once per policy with the same seed and compare."""
    params = params or PushParams()
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    load_params = params.load_params()
    cache = ClientCache.for_page(graph, params.cache, random.Random(derive_seed(params.seed, "cache")))
    policies = ("none",) + tuple(p for p in params.policies if p != "none")
    plans = {policy: server_plan(graph, policy, params) for policy in policies}
    _check_something_to_compare(graph, params, plans)
    rows, resources, pushes = {}, [], []
    for policy in steps(policies, "policies", progress):
        plan = plans[policy]
        loaded = load_page(graph, load_params, plan, cache, backend=params.backend)
        m = dict(loaded.metrics)
        m["pushes_planned"] = len(plan.pushes)
        m["hints_sent"] = len(plan.hints)
        m["think_s"] = plan.think(graph.document)
        rows[policy] = m
        for df, out in ((loaded.resources, resources), (loaded.pushes, pushes)):
            df = df.copy()
            df.insert(0, "policy", policy)
            out.append(df)
    base = rows["none"]
    for policy, m in rows.items():
        for metric in METRICS:
            gain = base[metric] - m[metric]
            m[f"gain_{metric}"] = gain
            m[f"gain_{metric[:-2]}_rtts"] = gain / params.rtt_s
            m[f"gain_{metric[:-2]}_percent"] = 100.0 * gain / base[metric] if base[metric] else math.nan
    summary = pd.DataFrame.from_dict({p: rows[p] for p in policies if p in params.policies}, orient="index")
    summary.index.name = "policy"
    pdict = params.to_dict()
    resources_df = pd.concat(resources, ignore_index=True)
    pushes_df = pd.concat(pushes, ignore_index=True)
    for df in (resources_df, pushes_df):
        df["seed"] = params.seed
    tinfo = {"source": graph.source, "page": graph.page, **graph.summary(), "cached": len(cache)}
    if isinstance(trace, Trace):
        tinfo["content_hash"] = trace.content_hash()
    return PushResult(
        summary=summary, resources=resources_df, pushes=pushes_df, params={**pdict, "version": __version__}, trace=tinfo
    )


def _check_something_to_compare(graph: PageGraph, params: PushParams, plans: dict) -> None:
    """Every policy doing what ``none`` does would print identical rows: say why instead."""
    if len(plans) < 2 or any(p.pushes or p.hints for name, p in plans.items() if name != "none"):
        return
    why = []
    if len(graph.render_blocking) <= 1:
        why.append(
            "its render-blocking set is the document alone (no stylesheet or synchronous script to "
            "push or hint; `workbench trace info` shows why)"
        )
    elif any(p in ("push", "push+hints") for p in plans):
        why.append(f"the push set ({params.push_set}) is empty on the document's connection")
    if "hints-cdn" in plans and not params.edge_seen:
        why.append("hints-cdn sends no hint on the edge's first request for the page (give --edge-seen)")
    raise InputError(
        f"nothing to compare on page {graph.page or '-'}: every policy would load it as 'none' "
        f"does, because {'; and '.join(why) or 'no policy pushes or hints anything'}.",
        path=graph.source,
    )
