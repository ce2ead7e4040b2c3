"""The browser side of a page load, and ``load_page``.  Written by hand.

Sans-I/O: ``PageLoad`` decides what to fetch and when; a network backend
(``http.network.ModelNetwork`` over the transport models, ``stack_net.StackNetwork`` over
the real h2 / aioquic stacks) moves the bytes and calls back:

- ``on_informational(index, links)``: a 103 arrived on the request for resource ``index``;
- ``on_push_promise(push_key, url)``: the server promised a push of ``url``;
- ``on_push_complete(push_key)``: a pushed response arrived in full;
- ``on_response_complete(index)``: the response for resource ``index`` arrived in full;
- ``on_connected(key, protocol)`` (the model network only): a connection of ``key`` is usable.

The browser model (after Lighthouse's Lantern simulator, now in ChromeDevTools/devtools-frontend
``front_end/models/trace/lantern/``: a dependency graph from initiators, a TCP window of
10 x 1460 B doubling per RTT, DNS + handshake on a cold connection, 30 ms server time;
with what Lantern lacks):

- Navigation at t = 0.  A resource is *discovered* when its parent is *ready* plus a
  parse/CPU delay that depends on the parent's type (``LoadParams.parse_delay_s``).
- A discovered resource is served from the HTTP cache (ready at once), from the push
  cache (ready when the pushed response has arrived), from a fetch a 103 hint already
  started, or fetched now.  A resource is *ready* when it is both discovered and arrived.
  A URL that appears twice on a page is fetched once.
- Connections: one per connection key (an origin, or with ``coalesce="site"`` all
  first-party hosts of the document's site share the document's connection: one
  certificate for ``*.site``, one address, RFC 9113 section 9.1.1).  Opening one costs
  DNS (``dns_s``) and the handshake (backend: TCP + TLS 1.3 = 2 RTT, or cleartext 1 RTT;
  QUIC 1 RTT).
- 103 Early Hints (RFC 8297): only the first 103, only on the navigation (as Chrome);
  ``rel=preload`` fetches what is not cached, ``rel=preconnect`` opens a connection.
- ``resource_scheduler="chromium"``: Chromium's two request schedulers (``scheduling``: Blink
  holds requests below High priority to two in flight until the ``<body>``, the network service
  holds delayable ones to servers not known to support priorities: HTTP/1.1 hosts, and HTTP/3
  hosts when ``h3_discovery="forced"``), and the first layout (the render-blocking set ready)
  raising the images a capture shows raised; ``"none"`` (the default) starts every request
  when it is discovered.  103 preloads are not held.
- Push (RFC 9113 section 8.4, RFC 9114 section 4.6): the push cache is per connection and
  use-once; a promise for something the browser has cached (or already fetches) is
  cancelled (RST_STREAM CANCEL / STOP_SENDING), which reaches the server a one-way delay
  later: the pushed bytes it sent until then are waste, as are pushes never used.

Metrics: time to the document (its response arrived), to the render-blocking set (the
document, its stylesheets and parser-blocking scripts all ready), onload (every resource the
load event waits for ready: not XHR/fetch); per resource: discovered, requested, arrived, ready and where it came from.

The load's inputs (``LoadParams``, ``ServerPlan``, ``HeldScripts``, ``connection_key``,
``parse_link`` and their constants) are in ``browser.load_params``, re-exported here.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from ..engine import Simulator
from ..errors import InputError
from ..stacks.common import ExchangeSpec, PushSpec, StackStalled, collector_paused, let_go, run_until
from ..stacks.replay import exchange_headers
from .cache import ClientCache
from .load_params import (  # noqa: F401 (re-exported: the load's inputs were defined here)
    COALESCE,
    DEADLINE_FACTOR,
    DEFAULT_PARSE_DELAY_S,
    ORIGIN_PROTOCOLS,
    PROTOCOLS,
    RESOURCE_SCHEDULERS,
    HeldScripts,
    LoadParams,
    ServerPlan,
    connection_key,
    load_deadline_s,
    parse_link,
)
from .scheduling import ChromiumScheduler
from ..traces.pagegraph import LOAD_EVENT_TYPES, PageGraph

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LoadParams",
    "ServerPlan",
    "HeldScripts",
    "PageLoad",
    "PageLoadResult",
    "load_page",
    "connection_key",
    "DEFAULT_PARSE_DELAY_S",
    "BACKENDS",
    "PROTOCOLS",
]

BACKENDS = ("model", "stacks")


_PUSH_COLUMNS = ["url", "promised_s", "complete_s", "used", "cancelled", "received_bytes", "wasted_bytes"]


class PageLoadResult:
    """One page load: per-resource timings, per-push outcome, page metrics and counters.

    ``resources`` (one row per resource of the page) and ``pushes`` (one row per promised
    push) are tables made from the load's rows when first read: a caller that wants only
    ``metrics`` (``fidelity``) makes none, nor imports pandas."""

    __slots__ = ("_resources", "_pushes", "metrics")

    def __init__(self, resources, pushes, metrics: dict) -> None:
        # resources, pushes: DataFrames, or their rows (lists of dicts, or for resources a
        # function that makes them) to make them of.
        self._resources, self._pushes, self.metrics = resources, pushes, metrics

    @property
    def resources(self) -> pd.DataFrame:
        """One row per resource of the page (made from the load's rows when first read)."""
        if callable(self._resources):  # the rows, made now
            self._resources = self._resources()
        if isinstance(self._resources, list):
            import pandas as pd

            self._resources = pd.DataFrame.from_records(self._resources)
        return self._resources

    @property
    def pushes(self) -> pd.DataFrame:
        """One row per promised push (made from the load's rows when first read)."""
        if isinstance(self._pushes, list):
            import pandas as pd

            self._pushes = pd.DataFrame.from_records(self._pushes, columns=_PUSH_COLUMNS)
        return self._pushes

    def __repr__(self) -> str:
        return f"PageLoadResult(resources={self.resources!r}, pushes={self.pushes!r}, metrics={self.metrics!r})"


def _max_known(values) -> float:
    """The largest of ``values`` leaving NaN out (``Series.max()``); NaN when none is left."""
    known = [v for v in values if v == v]
    return max(known) if known else math.nan


def load_event_s(g: PageGraph, discovered: dict, ready: dict) -> float:
    """When the page's load event fires (HTML: once every resource that delays it and was
    asked for before it is in): after every resource that delays it, and after each one the
    capture asked for after its load event (``Resource.asked_after_load``) that is asked for
    here before the event has fired (a timer's request, on a slower network)."""
    at = _max_known(ready[r.index] for r in g.resources if r.delays_load_event)
    late = [r.index for r in g.resources if r.asked_after_load and r.resource_type in LOAD_EVENT_TYPES]
    for i in sorted((i for i in late if discovered[i] == discovered[i]), key=lambda i: discovered[i]):
        if not discovered[i] < at:  # the event only moves later: past it, nothing more joins
            break
        at = max(at, ready[i])
    return at


class PageLoad:
    """The browser for one page load; see the module docstring."""

    def __init__(
        self,
        sim: Simulator,
        graph: PageGraph,
        params: LoadParams,
        plan: ServerPlan,
        cache: ClientCache,
        backend_cls: Callable,
        discovery_s: dict | None = None,
        blockers: HeldScripts | None = None,
        streamed: dict | None = None,
    ) -> None:
        self.sim, self.graph, self.params, self.plan, self.cache = sim, graph, params, plan, cache
        self.discovery_s = discovery_s or {}  # resource -> its delay after its parent is ready
        blockers = blockers or HeldScripts()
        # parent -> [(share of its body, child)]: children the parser finds while the parent streams in
        self._streamed: dict[int, list[tuple[float, int]]] = {}
        for child, share in sorted((streamed or {}).items(), key=lambda kv: (kv[1], kv[0])):
            parent = graph[child].parent
            if parent is not None and child not in blockers:
                self._streamed.setdefault(parent, []).append((share, child))
        # The parser-blocking scripts a resource's discovery also waits for: a prefix of
        # ``blockers.order``.  ``_scripts_ready`` scripts of it, from the first, are ready; a
        # resource whose parent is ready waits in ``_held_by_prefix`` until they cover its prefix.
        self._blockers = blockers
        self._held_position = {s: k for k, s in enumerate(blockers.order)}
        self._held_rank = {child: k for k, child in enumerate(blockers.prefix)}  # the order they are released in
        self._scripts_ready = 0
        self._held_by_prefix: dict[int, list[int]] = {}
        n = len(graph)
        self.discovered_s = [math.nan] * n
        self.requested_s = [math.nan] * n
        self.arrived_s = [math.nan] * n
        self.ready_s = [math.nan] * n
        self.source = [""] * n
        first = self._by_url = graph.by_url()
        self.canonical = [first[r.url] for r in graph.resources]  # a URL twice on a page: fetched once
        self._duplicates: dict[int, list[int]] = {}  # resource -> later ones of its URL
        for j, canon in enumerate(self.canonical):
            if canon != j:
                self._duplicates.setdefault(canon, []).append(j)
        self.document_origin = graph[graph.document].origin
        self.pushes: dict = {}  # push_key -> record
        self.push_by_url: dict[str, object] = {}
        self.hinted = False
        self.counters = {
            "requests": 0,
            "hinted_fetches": 0,
            "hints_skipped_cached": 0,
            "preconnects": 0,
            "pushes_promised": 0,
            "pushes_used": 0,
            "pushes_cancelled": 0,
        }
        self.remaining = n
        # Chromium's request schedulers (resource_scheduler="chromium"), and what ends its tight mode:
        # the document and its parser-blocking scripts ready (the parser is at the <body>).
        self.scheduler = (
            ChromiumScheduler(self._send, lambda i: self.key(self.graph[i].origin))
            if params.resource_scheduler == "chromium"
            else None
        )
        self._head_scripts = {
            r.index
            for r in graph.resources
            if r.render_blocking and r.parent == graph.document and r.resource_type == "script"
        }
        # What the first layout waits for: the document and its render-blocking set ready.
        self._before_layout = {*graph.render_blocking, graph.document} if self.scheduler is not None else set()
        self.net = backend_cls(sim, params, self)

    # -- helpers ----------------------------------------------------------------------
    def key(self, origin: str) -> str:
        """The connection key of ``origin``'s requests (its own, or the document's with site coalescing)."""
        return connection_key(origin, self.document_origin, self.params.coalesce)

    def spec(self, index: int) -> ExchangeSpec:
        """The request for resource ``index``: headers, body bytes, and on the navigation its 103 hints and pushes."""
        r = self.graph[index]
        body = 0 if r.status in (204, 304) else r.body_bytes
        request, response, body = exchange_headers(r.request_headers, r.response_headers, r.origin, body)
        navigation = index == self.graph.document
        hints = self.plan.hints if navigation else ()
        pushes = ()
        if navigation:
            pushes = tuple(
                PushSpec(
                    self.graph[j].path.encode("latin-1"),
                    self.graph[j].body_bytes,
                    authority=self.graph[j].authority.encode("latin-1"),
                )
                for j in self.plan.pushes
            )
        return ExchangeSpec(
            index=index,
            request_headers=request,
            response_headers=response,
            response_body_bytes=body,
            origin=self.key(r.origin),
            early_hints=hints,
            pushes=pushes,
            think_s=self.plan.think(index),
        )

    # -- the browser --------------------------------------------------------------------
    def start(self) -> None:
        """Start the load: the document is discovered at the current instant."""
        self.sim.call_soon(self._discover, 0)

    def response_marks(self, index: int) -> list[tuple[int, Callable, tuple]]:
        """(bytes of the response, callback, args) for the network to call as resource
        ``index``'s response streams in: the children its parser finds on the way, each its
        discovery delay after the bytes that hold its tag."""
        body, marks = self.graph[index].body_bytes, []
        for share, child in self._streamed.get(index, ()):
            delay = self.discovery_s.get(child)
            call = (self.sim.call_later, (delay, self._discover, child)) if delay else (self._discover, (child,))
            marks.append((max(1, int(share * body)), *call))
        return marks

    def _discover(self, index: int) -> None:
        if not math.isnan(self.discovered_s[index]):
            return  # found while its parent streamed in
        now = self.sim.now
        self.discovered_s[index] = now
        r = self.graph[index]
        canon = self.canonical[index]
        if canon != index:
            self.source[index] = "duplicate"
            if not math.isnan(self.arrived_s[canon]):
                self._arrived(index)
            return
        # From the cache (the navigation too, when held fresh), or the browser's own redirect
        # (HSTS): ready at once, nothing fetched.
        if r.internal or self.cache.has(r.url):
            self.source[index] = "internal" if r.internal else "cache"
            self._arrived(index)
            return
        push = self.push_by_url.get(r.url)
        if push is not None and not push["cancelled"]:
            push["used"] = True
            self.source[index] = "push"
            if push["complete_s"] == push["complete_s"]:
                self._arrived(index)
            return
        if not math.isnan(self.requested_s[index]):
            if not math.isnan(self.arrived_s[index]):
                self._ready(index)
            elif self.scheduler is not None:
                # The renderer's own request waits on the 103 preload still on its way, and holds
                # a place in Blink's scheduler until it arrives (``_send`` fetches nothing twice).
                self._ask(index)
            return  # a 103 preload is on its way
        self.source[index] = "network"
        self._request(index)

    def _request(self, index: int, *, hinted: bool = False) -> None:
        if self.scheduler is not None and not hinted and index != self.graph.document:
            self._ask(index)
            return
        self._send(index)

    def _ask(self, index: int) -> None:
        r = self.graph[index]
        initial = self.scheduler.initial_priority(r.resource_type, r.render_blocking, r.priority)
        raised = self.scheduler.layout_priority(r.resource_type, initial, r.priority, r.in_viewport)
        self.scheduler.ask(index, initial, raised)

    def _send(self, index: int) -> None:
        if not math.isnan(self.requested_s[index]):
            return  # a 103 preload already fetches it
        self.requested_s[index] = self.sim.now
        self.counters["requests"] += 1
        spec = self.spec(index)
        self.net.fetch(spec.origin, spec)  # spec.origin: the connection key of the resource's origin

    def on_connected(self, key: str, protocol: str) -> None:
        """A connection of ``key`` is up: over HTTP/2, or HTTP/3 found by an Alt-Svc, the host supports priorities."""
        known = protocol == "h2" or (protocol == "h3" and self.params.h3_discovery == "alt-svc")
        if self.scheduler is not None and known:
            self.scheduler.connected(key)

    def _arrived(self, index: int) -> None:
        if self.scheduler is not None:
            self.scheduler.finished(index)
        if math.isnan(self.arrived_s[index]):
            self.arrived_s[index] = self.sim.now
        if not math.isnan(self.discovered_s[index]):
            self._ready(index)
        # Duplicates of this URL that were waiting for it.
        for j in self._duplicates.get(index, ()):
            if not math.isnan(self.discovered_s[j]) and math.isnan(self.ready_s[j]):
                self.arrived_s[j] = self.sim.now
                self._ready(j)

    def _ready(self, index: int) -> None:
        if not math.isnan(self.ready_s[index]):
            return
        self.ready_s[index] = self.sim.now
        self.remaining -= 1
        if (
            self.scheduler is not None
            and self.scheduler.tight
            and (index == self.graph.document or index in self._head_scripts)
        ):
            self._head_scripts.discard(index)
            if not self._head_scripts and not math.isnan(self.ready_s[self.graph.document]):
                self.scheduler.body_reached()
        if index in self._before_layout:
            self._before_layout.discard(index)
            if not self._before_layout:
                self.scheduler.layout()
        if self.remaining == 0:
            self.sim.stop()  # hand control back to run_until at the very event
        delay = self.params.parse_delay(self.graph[index].resource_type)
        held = self._blockers.prefix
        for child in self.graph.children(index):
            if child in held:  # the parent is ready; its scripts may still wait
                if held[child] <= self._scripts_ready:
                    self.sim.call_later(self.discovery_s.get(child, 0.0), self._discover, child)
                else:
                    self._held_by_prefix.setdefault(held[child], []).append(child)
                continue
            self.sim.call_later(self.discovery_s.get(child, delay), self._discover, child)
        if index in self._held_position:
            self._script_ready()

    def _script_ready(self) -> None:
        """A held script is ready: discover the resources (parent ready) whose scripts now all are."""
        order = self._blockers.order
        before = ready = self._scripts_ready
        while ready < len(order) and not math.isnan(self.ready_s[order[ready]]):
            ready += 1
        self._scripts_ready = ready
        released = [c for k in range(before + 1, ready + 1) for c in self._held_by_prefix.pop(k, ())]
        for child in sorted(released, key=self._held_rank.__getitem__):
            self.sim.call_later(self.discovery_s.get(child, 0.0), self._discover, child)

    @property
    def done(self) -> bool:
        """True when every resource is ready."""
        return self.remaining == 0

    # -- callbacks from the network -------------------------------------------------------
    def on_response_complete(self, index: int) -> None:
        """Resource ``index``'s response arrived in full."""
        if self.scheduler is not None:  # a response over HTTP/2 or HTTP/3: the host multiplexes
            origin = self.graph[index].origin
            self.on_connected(self.key(origin), self.params.origin(origin)[1])
        self._arrived(index)

    def on_informational(self, index: int, links) -> None:
        """Act on the navigation's first 103's Link values: preconnect, and fetch preloads not cached or pushed."""
        if index != self.graph.document or self.hinted:  # Chrome: the first 103 of the navigation only
            return
        self.hinted = True
        by_url = self._by_url
        for value in links:
            parsed = parse_link(value)
            if parsed is None:
                continue
            url, rels = parsed
            if "preconnect" in rels:
                self.counters["preconnects"] += 1
                self.net.connect(self.key(url.rstrip("/")))
            if "preload" in rels:
                if self.cache.has(url):
                    self.counters["hints_skipped_cached"] += 1
                    continue
                j = by_url.get(url)
                if j is None or not math.isnan(self.requested_s[j]) or url in self.push_by_url:
                    continue
                self.counters["hinted_fetches"] += 1
                self.source[j] = "hint"
                self._request(j, hinted=True)

    def on_push_promise(self, push_key, url: str) -> None:
        """Record a promise; cancel a push the browser does not want (RFC 9113 8.4.2), else use it when discovered."""
        self.counters["pushes_promised"] += 1
        record = {"url": url, "promised_s": self.sim.now, "complete_s": math.nan, "used": False, "cancelled": False}
        self.pushes[push_key] = record
        j = self._by_url.get(url)
        unwanted = (
            self.cache.has(url) or url in self.push_by_url or (j is not None and not math.isnan(self.requested_s[j]))
        )
        if unwanted:
            # RFC 9113 section 8.4.2: the client cancels a push it does not want.
            record["cancelled"] = True
            self.counters["pushes_cancelled"] += 1
            self.net.cancel_push(push_key)
            return
        self.push_by_url[url] = record
        if j is not None and not math.isnan(self.discovered_s[j]) and math.isnan(self.ready_s[j]):
            record["used"] = True  # discovered before the promise: the browser waits for the push
            self.source[j] = "push"

    def on_push_complete(self, push_key) -> None:
        """A pushed response arrived in full: the resource is ready when the browser was waiting for it."""
        record = self.pushes.get(push_key)
        if record is None or record["cancelled"]:
            return
        record["complete_s"] = self.sim.now
        j = self._by_url.get(record["url"])
        if j is not None and record["used"]:
            self._arrived(j)

    # -- results --------------------------------------------------------------------------
    def result(self) -> PageLoadResult:
        """The resources and pushes tables and the page metrics (document, render-blocking, onload seconds)."""
        g, doc_origin, coalesce = self.graph, self.document_origin, self.params.coalesce
        source, discovered, requested, arrived, ready = (
            self.source,
            self.discovered_s,
            self.requested_s,
            self.arrived_s,
            self.ready_s,
        )

        def rows() -> list[dict]:  # made when the table is read (the load's lists, no longer written)
            return [
                {
                    "index": r.index,
                    "url": r.url,
                    "origin": r.origin,
                    "connection": connection_key(r.origin, doc_origin, coalesce),  # self.key
                    "resource_type": r.resource_type,
                    "body_bytes": r.body_bytes,
                    "parent": -1 if r.parent is None else r.parent,
                    "render_blocking": r.render_blocking,
                    "source": source[r.index],
                    "discovered_s": discovered[r.index],
                    "requested_s": requested[r.index],
                    "arrived_s": arrived[r.index],
                    "ready_s": ready[r.index],
                }
                for r in g.resources
            ]

        push_rows = []
        for key, rec in self.pushes.items():
            received = self.net.push_bytes(key)
            push_rows.append(
                {
                    "url": rec["url"],
                    "promised_s": rec["promised_s"],
                    "complete_s": rec["complete_s"],
                    "used": rec["used"],
                    "cancelled": rec["cancelled"],
                    "received_bytes": received,
                    "wasted_bytes": 0 if rec["used"] else received,
                }
            )
        # The tables' sums and maxima, taken of the rows' values (the tables are made when read).
        self.counters["pushes_used"] = int(sum(p["used"] for p in push_rows))
        metrics = {
            "document_s": float(self.arrived_s[g.document]),
            "render_blocking_s": float(_max_known(ready[r.index] for r in g.resources if r.render_blocking)),
            "onload_s": float(load_event_s(g, discovered, ready)),
            "resources": len(g),
            "bytes_pushed": int(sum(p["received_bytes"] for p in push_rows)),
            "bytes_wasted": int(sum(p["wasted_bytes"] for p in push_rows)),
            **self.counters,
            **self.net.stats(),
        }
        return PageLoadResult(resources=rows, pushes=push_rows, metrics=metrics)


def load_page(
    graph: PageGraph,
    params: LoadParams,
    plan: ServerPlan,
    cache: ClientCache,
    *,
    backend: str = "model",
    network: Callable | None = None,
    discovery_s: dict | None = None,
    blockers: HeldScripts | None = None,
    streamed: dict | None = None,
) -> PageLoadResult:
    """Simulate one page load of ``graph`` on ``backend`` ("model" or "stacks").

    ``network(sim, params, listener, backend_cls)``, when given, builds the network the
    browser talks to around the backend (e.g. ``studies.coalescing``'s connection pool,
    which picks the connection of each request, times DNS and handshakes, and answers
    the backend's callbacks).  ``discovery_s`` (resource -> seconds), when given, is each
    resource's delay after its parent is ready, instead of the parent type's parse delay;
    ``blockers`` (``HeldScripts``: resource -> a prefix of one order of scripts) adds what else
    must be ready before that delay starts;
    ``streamed`` (resource -> share) discovers a child when that share of its parent's body has
    arrived instead (the model backend; the stacks backend discovers it at the parent's end)."""
    if backend == "model":
        from ..http.network import ModelNetwork as backend_cls
    elif backend == "stacks":
        from .stack_net import StackNetwork as backend_cls
    else:
        raise InputError(f"unknown backend {backend!r} (choose model or stacks)")
    if network is not None:
        inner_cls = backend_cls

        def backend_cls(sim, params, listener):
            return network(sim, params, listener, inner_cls)

    with collector_paused(backend == "model"):  # the model's load: see collector_paused
        sim = Simulator(seed=params.seed)
        load = PageLoad(sim, graph, params, plan, cache, backend_cls, discovery_s, blockers, streamed)
        load.start()
        deadline_s, basis = load_deadline_s(graph, params, plan, discovery_s)
        try:
            # Events run in bulk; run_until looks again when the page is done or a connection
            # terminates (both call sim.stop()), or at the deadline.
            run_until(
                sim,
                lambda: load.done,
                check=lambda: load.net.check(),
                deadline_s=deadline_s,
                safe_until=lambda: deadline_s,
            )
            # Pushes still being written when the page was done (a cancel on its way, a push
            # never used) are waste until they settle: run on until they do (model backend).
            settled = getattr(load.net, "settled", None)
            while settled is not None and not settled() and sim.pending and sim.now <= deadline_s:
                sim.run(until_s=deadline_s)
        except StackStalled as exc:
            if backend == "model" and sim.now > deadline_s:
                # The models never give up (no idle timeout): only the deadline ends a load that cannot.
                raise StackStalled(
                    f"the page load stalled: {len(graph) - load.remaining} of {len(graph)} "
                    f"resources were ready when virtual time passed {deadline_s:.0f} s, "
                    f"{DEADLINE_FACTOR}x what the page takes ({basis}) plus 10 idle timeouts: a load "
                    "that cannot end, not a slow one (see the path's rate, loss and queue: --bw, --loss, "
                    "--queue, --at)"
                ) from None
            raise StackStalled(f"the page load stalled: {exc}") from None
        result = load.result()
        if backend == "model" and network is None:  # (a caller's network may be read after)
            load.net.release()  # its QUIC connections' cycles
            let_go(load, load.net, load.net.conns)  # the load's cycles, freed now
        return result
