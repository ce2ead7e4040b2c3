"""HTTP/2 server push vs 103 Early Hints, on the page-load model.

The question: both try to use the idle window while the server
"thinks" about the document.  Push (RFC 9113 section 8.4, RFC 9114 section 4.6) sends the
bytes itself: it saves a round trip for same-connection resources, but pushes what the
client may already have (cancelled only after a one-way delay) and only for origins the
connection is authoritative for.  A 103 (RFC 8297) only names what to fetch: the client
still pays a round trip, skips what it has cached, and can preconnect to other origins.

Published reference points: "Push or Request" (Rosen et al., WWW 2017) measured a median
page load 16% faster with push at 2% loss and 14% faster at 100 ms RTT, with little gain
on fast links; "Is the Web Ready for HTTP/2 Server Push?" (Zimmermann et al., CoNEXT
2018) found push helped only some sites; Vroom (Ruamviboonsuk et al., SIGCOMM 2017)
halved the median load time of news and sports pages with server-aided discovery
(hints plus push).  Chrome turned push off by default in Chrome 106 (2022): 99.95% of
its HTTP/2 connections had never received a pushed stream, and fewer than 40% of the
pushes received were used.  The Early Hints trial of Chrome with a CDN and an
e-commerce platform (late 2021) saw LCP more than 500 ms faster at the median; such a
CDN caches the origin's ``Link`` headers and hints on later requests, never the first.
Chrome honours only the first 103, on navigations, over HTTP/2 and HTTP/3, for preload
and preconnect.

For each policy, the same page (``pageload.page_graph``) is loaded with the same seed on
the same network; the page-load metrics and the gain against ``none`` are compared:

- ``none``: no push, no 103;
- ``push``: push the push set (``push_set``: the render-blocking sub-resources the
  document's connection is authoritative for, ``all`` such resources, the ``largest:N``,
  or an explicit ``list:URL URL ...``) on the document's stream;
- ``hints``: a 103 with ``rel=preload`` for every render-blocking sub-resource and
  ``rel=preconnect`` for each other connection they need;
- ``push+hints``: push what can be pushed, hint the rest;
- ``hints-cdn``: as ``hints``, but sent by a CDN that learnt the Link headers from an
  earlier response of the origin: the first request for the page through an edge is
  never hinted (``edge_seen=False``, the default, is that first request).

Server think time: the document's (default: the trace's ``wait`` for it, which also
holds one RTT of the capture's network, stated) and the sub-resources' (default 0).
Backends: ``model`` (transport models, fast) and ``stacks`` (real h2 / aioquic).

Limits (stated in notebook 02 too): discovery waits for a parent's whole body; no
client-side prioritisation across connections, so on a bandwidth-bound page a policy
that requests the render-blocking set early also gets the link first (an upper bound
on that gain).  The real h2 stack runs TLS 1.3 like the model (``tls=False``: cleartext
on both backends).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, replace

import pandas as pd

from .. import __version__, argtypes
from ..errors import InputError
from ..traces.model import Trace
from .summary_json import rows_by_index
from ..units import parse_bandwidth, parse_duration
from .pageload import ClientCache, LoadParams, ServerPlan, load_page, page_graph
from .pageload.cache import parse_cache
from .pageload.client import BACKENDS, COALESCE, DEFAULT_PARSE_DELAY_S, PROTOCOLS, connection_key
from ..traces.pagegraph import PageGraph

__all__ = ["PushParams", "PushResult", "POLICIES", "run", "run_seeds", "server_plan"]

POLICIES = ("none", "push", "hints", "push+hints", "hints-cdn")
_AS = {"stylesheet": "style", "script": "script", "font": "font", "image": "image", "fetch": "fetch",
       "document": "document"}
METRICS = ("document_s", "render_blocking_s", "onload_s")
DEFAULT_PARSE_DELAY = ",".join(f"{kind}={seconds * 1000:g}ms" for kind, seconds in DEFAULT_PARSE_DELAY_S)


@dataclass(frozen=True)
class PushParams:
    """Everything that determines a run (units in the names)."""

    policies: tuple[str, ...] = ("none", "push", "hints", "push+hints")
    protocol: str = "h2"
    backend: str = "model"
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    seed: int = 1
    think_s: float | None = None          # document think time; None = the trace's wait for it
    asset_think_s: float = 0.0            # think time of every sub-resource
    cache: str = "cold"                   # cold, warm, a hit probability or list:URL URL ...
    push_set: str = "render-blocking"     # render-blocking | all | largest:N | list:URL URL ...
    coalesce: str = "site"
    tls: bool = True
    dns_s: float = 0.0
    edge_seen: bool = False               # hints-cdn: has the edge seen this page before?
    scheduler: str = "urgency"            # model server's writer: urgency (RFC 9218), round-robin, fifo
    push_urgency: int = 3                 # RFC 9218 urgency of pushed responses (model server)
    parse_delay: str = DEFAULT_PARSE_DELAY  # parse/CPU delay before a parent's references are found, per type
    page: str | None = None

    def __post_init__(self) -> None:
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
        _push_count(self.push_set)
        parse_delays(self.parse_delay)
        self.load_params()                  # network values checked here, before any work

    def load_params(self) -> LoadParams:
        return LoadParams(protocol=self.protocol, rtt_s=self.rtt_s, bandwidth_bps=self.bandwidth_bps, loss=self.loss,
                          seed=self.seed, tls=self.tls, dns_s=self.dns_s, coalesce=self.coalesce,
                          scheduler=self.scheduler, push_urgency=self.push_urgency,
                          parse_delay_s=parse_delays(self.parse_delay))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["policies"] = ",".join(self.policies)
        return d


def parse_delays(text: str, *, require_unit: bool = False) -> tuple:
    """``document=5ms,script=10ms`` -> ((resource type, seconds), ...); types not named: 0."""
    out = []
    for item in str(text).split(","):
        if not item.strip():
            continue
        kind, sep, value = item.partition("=")
        if not sep or not kind.strip():
            raise InputError(f"parse delay must be TYPE=DURATION[,TYPE=DURATION...], got {item.strip()!r}")
        seconds = parse_duration(value.strip(), require_unit=require_unit)
        if seconds < 0:
            raise InputError(f"parse delay of {kind.strip()} must be >= 0, got {value.strip()!r}")
        out.append((kind.strip(), seconds))
    return tuple(out)


def _urgency(text: str) -> int:
    if not str(text).strip().isdigit() or not 0 <= int(text) <= 7:
        raise InputError(f"push urgency must be 0..7 (RFC 9218), got {text!r}")
    return int(text)


def _push_count(push_set: str) -> int | None:
    """None for the named sets and lists, N for ``largest:N``."""
    if push_set in ("render-blocking", "all"):
        return None
    name, _, n = push_set.partition(":")
    if name == "largest" and n.isdigit() and int(n) > 0:
        return int(n)
    if name == "list" and n.split():
        return None
    raise InputError(f"unknown push set {push_set!r} (choose render-blocking, all, largest:N or list:URL URL ...)")


# ---------------------------------------------------------------------------------------
# Policies -> what the server does


def pushable(graph: PageGraph, coalesce: str) -> list[int]:
    """Sub-resources the document's connection is authoritative for (RFC 9113 section 8.4:
    only for the same authority or one the connection may carry), each URL once."""
    doc = graph[graph.document]
    key = connection_key(doc.origin, doc.origin, coalesce)
    seen, out = set(), []
    for r in graph.resources:
        if r.index in (0, graph.document) or r.status != 200 or r.url in seen:
            continue
        seen.add(r.url)
        if connection_key(r.origin, doc.origin, coalesce) == key:
            out.append(r.index)
    return out


def server_plan(graph: PageGraph, policy: str, params: PushParams) -> ServerPlan:
    doc = graph[graph.document]
    think = {r.index: params.asset_think_s for r in graph.resources}
    think[graph.document] = params.think_s if params.think_s is not None else (doc.wait_s or 0.0)
    if policy == "none" or (policy == "hints-cdn" and not params.edge_seen):
        return ServerPlan(think_s=think)
    blocking = [i for i in graph.render_blocking if i != graph.document]
    pushes: list[int] = []
    if policy in ("push", "push+hints"):
        candidates = pushable(graph, params.coalesce)
        n = _push_count(params.push_set)
        if params.push_set == "render-blocking":
            pushes = [i for i in candidates if graph[i].render_blocking]
        elif params.push_set == "all":
            pushes = candidates
        elif params.push_set.startswith("list:"):
            pushes = _listed(graph, candidates, params.push_set[len("list:"):].split())
        else:
            pushes = sorted(candidates, key=lambda i: (-graph[i].body_bytes, i))[:n]
    hints: list[bytes] = []
    if policy in ("hints", "push+hints", "hints-cdn"):
        doc_key = connection_key(doc.origin, doc.origin, params.coalesce)
        preconnect: dict[str, None] = {}
        for i in blocking:
            r = graph[i]
            if i in pushes:
                continue
            hints.append(f"<{r.url}>; rel=preload; as={_AS.get(r.resource_type, 'fetch')}".encode())
            key = connection_key(r.origin, doc.origin, params.coalesce)
            if key != doc_key:
                preconnect.setdefault(key, None)
        hints += [f"<{k}>; rel=preconnect".encode() for k in preconnect]
    return ServerPlan(think_s=think, hints=tuple(hints), pushes=tuple(pushes))


def _listed(graph: PageGraph, candidates: list[int], urls: list[str]) -> list[int]:
    """An explicit push list: each URL must be on the page and pushable (RFC 9113 section
    8.4: only what the document's connection is authoritative for)."""
    by_url = {graph[i].url: i for i in candidates}
    on_page = graph.by_url()
    out = []
    for url in dict.fromkeys(urls):
        if url not in on_page:
            raise InputError(f"cannot push {url}: it is not a resource of the page", path=graph.source)
        if url not in by_url:
            raise InputError(f"cannot push {url}: the document's connection is not authoritative for it "
                             f"(RFC 9113 section 8.4), or it is the document or not a 200", path=graph.source)
        out.append(by_url[url])
    return out


# ---------------------------------------------------------------------------------------
# The study


@dataclass
class PushResult:
    summary: pd.DataFrame            # one row per policy
    resources: pd.DataFrame          # one row per (policy, resource)
    pushes: pd.DataFrame             # one row per (policy, promised push)
    params: dict
    trace: dict

    def to_dict(self) -> dict:
        policies = rows_by_index(self.summary)
        return {"policies": policies, "params": self.params, "trace": self.trace}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def run(trace: Trace | PageGraph, params: PushParams | None = None, *, progress: bool = False) -> PushResult:
    """Load the page once per policy with the same seed and compare."""
    params = params or PushParams()
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    load_params = params.load_params()
    import random

    from ..engine import derive_seed
    cache = ClientCache.for_page(graph, params.cache, random.Random(derive_seed(params.seed, "cache")))
    policies = ("none",) + tuple(p for p in params.policies if p != "none")
    iterator = policies
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(policies, desc="policies", leave=False)
    plans = {policy: server_plan(graph, policy, params) for policy in policies}
    _check_something_to_compare(graph, params, plans)
    rows, resources, pushes = {}, [], []
    for policy in iterator:
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
    return PushResult(summary=summary, resources=resources_df, pushes=pushes_df,
                      params={**pdict, "version": __version__}, trace=tinfo)


def _check_something_to_compare(graph: PageGraph, params: PushParams, plans: dict) -> None:
    """Every policy doing what ``none`` does would print identical rows: say why instead."""
    if len(plans) < 2 or any(p.pushes or p.hints for name, p in plans.items() if name != "none"):
        return
    why = []
    if len(graph.render_blocking) <= 1:
        why.append("its render-blocking set is the document alone (no stylesheet or synchronous script to "
                   "push or hint; `workbench trace info` shows why)")
    elif any(p in ("push", "push+hints") for p in plans):
        why.append(f"the push set ({params.push_set}) is empty on the document's connection")
    if "hints-cdn" in plans and not params.edge_seen:
        why.append("hints-cdn sends no hint on the edge's first request for the page (give --edge-seen)")
    raise InputError(f"nothing to compare on page {graph.page or '-'}: every policy would load it as 'none' "
                     f"does, because {'; and '.join(why) or 'no policy pushes or hints anything'}.",
                     path=graph.source)


def run_seeds(trace: Trace | PageGraph, params: PushParams, seeds, *, progress: bool = False) -> pd.DataFrame:
    """Summaries over several seeds: one row per (seed, policy)."""
    graph = trace if isinstance(trace, PageGraph) else page_graph(trace, params.page)
    seeds = list(seeds)
    iterator = seeds
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(seeds, desc="seeds")
    frames = []
    for seed in iterator:
        s = run(graph, replace(params, seed=seed)).summary.reset_index()
        s.insert(1, "seed", seed)
        frames.append(s)
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------------------------------
# CLI


def params_from_args(args: argparse.Namespace) -> PushParams:
    think = None if str(args.think).lower() == "trace" else parse_duration(args.think)
    return PushParams(
        policies=tuple(p.strip() for p in args.policy.split(",") if p.strip()), protocol=args.protocol,
        backend=args.backend, rtt_s=parse_duration(args.rtt), bandwidth_bps=parse_bandwidth(args.bw), loss=str(args.loss),
        seed=int(args.seed), think_s=think, asset_think_s=parse_duration(args.asset_think), cache=args.cache,
        push_set=args.push_set, coalesce=args.coalesce, tls=not args.no_tls, dns_s=parse_duration(args.dns),
        edge_seen=bool(args.edge_seen), scheduler=args.scheduler, push_urgency=int(args.push_urgency),
        parse_delay=args.parse_delay, page=args.page,
    )


def _cmd(args: argparse.Namespace) -> int:
    from ..traces import load

    params = params_from_args(args)
    if args.seeds < 1:
        raise InputError(f"--seeds must be at least 1, got {args.seeds}")
    trace = load(args.trace)
    progress = not args.json and sys.stderr.isatty()
    if args.seeds == 1:
        result = run(trace, params, progress=progress)
        summary = result.summary
    else:
        per_seed = run_seeds(trace, replace(params, seed=params.seed), range(params.seed, params.seed + args.seeds),
                             progress=progress)
        summary = per_seed.drop(columns=["seed"]).groupby("policy", sort=False).median()
        result = run(trace, params)          # for the trace info and params
        result.summary = summary.loc[[p for p in params.policies]]
        result.params["seeds"] = args.seeds
        result.params["aggregate"] = "median over seeds"
    if args.json:
        print(result.to_json())
        return 0
    t = result.trace
    print(f"page {t['page'] or '-'} of {t['source']}: {t['resources']} resources, {t['origins']} origins, "
          f"{t['render_blocking']} render-blocking, edges from {t['edges_from']}; {params.protocol} on the "
          f"{params.backend}, RTT {params.rtt_s * 1000:g} ms, loss {params.loss}, cache {params.cache}, "
          f"think {result.summary['think_s'].iloc[0] * 1000:.0f} ms, seed {params.seed}"
          + (f" (median of {args.seeds} seeds)" if args.seeds > 1 else ""))
    cols = ["render_blocking_s", "onload_s", "gain_render_blocking_s", "gain_render_blocking_rtts", "gain_onload_s",
            "requests", "connections", "pushes_promised", "pushes_used", "pushes_cancelled", "bytes_pushed",
            "bytes_wasted", "hinted_fetches"]
    with pd.option_context("display.width", 220, "display.float_format", "{:.3f}".format):
        print(result.summary[cols].to_string())
    for policy in ("push", "push+hints"):
        if policy in result.summary.index and not result.summary.loc[policy, "pushes_planned"]:
            print(f"note: {policy} pushes nothing: no resource of the push set ({params.push_set}) is on the "
                  "document's connection (RFC 9113 section 8.4: a server pushes only what it is authoritative for)")
    return 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", required=True, help="HAR of a page load (Chrome's _initiator gives the graph)")
    p.add_argument("--policy", default="none,push,hints,push+hints", type=argtypes.names(POLICIES, "policy"),
                   help="comma-separated: " + ",".join(POLICIES))
    p.add_argument("--protocol", default="h2", choices=list(PROTOCOLS), help="h2 (over TCP) or h3 (over QUIC)")
    p.add_argument("--backend", default="model", choices=list(BACKENDS),
                   help="model (transport models) or stacks (real h2 / aioquic)")
    p.add_argument("--rtt", default="100ms", type=argtypes.positive_duration, help="round-trip time, e.g. 100ms")
    p.add_argument("--bw", default="10mbit", type=argtypes.bandwidth,
                   help="bottleneck bandwidth, e.g. 10mbit (none = unlimited)")
    p.add_argument("--loss", default="0", type=argtypes.loss, help="0.01 (Bernoulli) or ge:P,R[,h,k] (Gilbert-Elliott)")
    p.add_argument("--think", default="trace", type=argtypes.duration_or("trace"),
                   help="document think time, or 'trace' (its HAR wait)")
    p.add_argument("--asset-think", default="0ms", type=argtypes.duration, help="think time of every sub-resource")
    p.add_argument("--cache", default="cold", type=argtypes.checked(parse_cache, "cache"),
                   help="cold, warm, a per-resource hit probability, or 'list:URL URL ...' (an explicit cached set)")
    p.add_argument("--push-set", default="render-blocking", type=argtypes.checked(_push_count, "push set"),
                   help="render-blocking, all, largest:N, or 'list:URL URL ...'")
    p.add_argument("--parse-delay", default=DEFAULT_PARSE_DELAY,
                   type=argtypes.checked(lambda t: parse_delays(t, require_unit=True), "parse delay"),
                   help="parse/CPU delay before a parent's references are found, per resource type "
                        "(TYPE=DURATION,...; types not named: 0)")
    p.add_argument("--coalesce", default="site", choices=list(COALESCE),
                   help="site: first-party hosts share the document's connection; origin: one per origin")
    p.add_argument("--no-tls", action="store_true", help="cleartext h2 (one RTT less per cold TCP connection), on both backends")
    p.add_argument("--dns", default="0ms", type=argtypes.duration, help="DNS time before each cold connection")
    p.add_argument("--edge-seen", action="store_true", help="hints-cdn: the CDN edge has seen the page before")
    p.add_argument("--scheduler", default="urgency", choices=["urgency", "round-robin", "fifo"],
                   help="model server's response order: RFC 9218 urgency, round-robin (aioquic) or fifo (h2 stack)")
    p.add_argument("--push-urgency", default=3, type=argtypes.checked(_urgency, "urgency"),
                   help="RFC 9218 urgency of pushed responses, 0..7 (model)")
    p.add_argument("--page", help="page id in the HAR (default: the first page)")
    p.add_argument("--seed", default=1, type=int)
    p.add_argument("--seeds", default=1, type=argtypes.count(1), help="run seeds SEED..SEED+N-1 and report medians")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_commands(sub) -> None:
    p = sub.add_parser("push", help="HTTP/2 server push vs 103 Early Hints on a page-load model")
    add_arguments(p)
    p.set_defaults(func=_cmd)
