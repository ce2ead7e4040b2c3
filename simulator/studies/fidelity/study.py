"""The fidelity study: each page of a HAR with a measured onLoad simulated under the
conditions inferred from it, and the errors against the measurement (see the package
docstring)."""

from __future__ import annotations

import gc
import math
from dataclasses import dataclass, replace
from pathlib import Path
from ... import __version__
from ...errors import InputError
from ...stacks.common import StackStalled, collector_paused
from ...traces import load
from ...traces.model import Trace, header_value
from ...traces.pagegraph import LOAD_EVENT_TYPES, PageGraph, page_graph, page_ids
from ...net.conditions import PathConditions
from ...net.transport import TIMER_KEYS
from ..base import StudyParams
from ...browser import ClientCache, LoadParams, PageLoadResult, ServerPlan, load_page
from ...browser.load_params import H3_DISCOVERY
from .conditions import PROTOCOL_CHOICES, PageConditions, infer_conditions, on_protocol
from .loadevent import HAR_RESOLUTION_S, load_event_graph  # noqa: F401 (re-exported: defined here before)
from .result import FidelityResult, _Concat, _Rows, summarize  # noqa: F401 (summarize: re-exported)

__all__ = ["FidelityParams", "FidelityResult", "run", "run_paths", "simulate_page", "moved_to", "LOAD_EVENT_TYPES"]

BROWSER_CHOICES = ("auto", "chromium", "none")
SERVER_POLICIES = ("none", "hints")
SERVER_SCHEDULERS = ("urgency", "round-robin", "fifo")  # LoadParams.scheduler
# Chromium holds delayable requests on HTTP/2 and HTTP/3 connections too since it began to
# delay requests on multiplexed connections (2019); earlier versions held them on HTTP/1.1
# only, which the model's six connections per HTTP/1.1 origin already bound.  The exact
# release is not pinned down here: 74 is where this model draws the line.
CHROMIUM_DELAYS_MULTIPLEXED_FROM = 74
# From this version on Chrome's ClientHello carries a hybrid key share (X25519Kyber768, now X25519MLKEM768).
CHROMIUM_POST_QUANTUM_FROM = 124


def resource_scheduler(trace: Trace, browser: str = "auto") -> str:
    """The page-load model's ``resource_scheduler`` for ``trace``'s browser (``browser`` "auto"),
    or as forced."""
    if browser != "auto":
        return browser
    major = _chromium_major(trace)
    return "chromium" if major is not None and major >= CHROMIUM_DELAYS_MULTIPLEXED_FROM else "none"


def _chromium_major(trace: Trace) -> int | None:
    """The major version of ``trace``'s browser if it is Chrome or Chromium, else None."""
    name, _, version = trace.meta.get("browser", "").rpartition(" ")
    major = version.split(".")[0]
    chromium = any(word in name.lower() for word in ("chrome", "chromium"))
    return int(major) if chromium and major.isdigit() else None


def browser_connections(trace: Trace, scheduler: str) -> dict:
    """How ``trace``'s browser sets up connections, as ``simulate_page``'s keywords: Chromium's
    TLS client flights from version 124 on (its post-quantum key share, ``http.handshake``), and
    its connect jobs (``http.connect_jobs``: with Chromium's request scheduler a connection per
    waiting request to a new HTTP/2 origin and the backup; otherwise the backup alone, as every
    browser opens one)."""
    major = _chromium_major(trace)
    return {
        "tls_client": "chromium" if major is not None and major >= CHROMIUM_POST_QUANTUM_FROM else "stack",
        "connect_jobs": "chromium" if scheduler == "chromium" else "backup",
    }


@dataclass(frozen=True)
class FidelityParams(StudyParams):
    """The protocol to load every origin with, the seed and the congestion control (the
    network itself comes from each HAR, or from ``at``)."""

    protocol: str = "auto"  # auto: each origin's protocol from the HAR; h2 or h3: all origins
    seed: int = 1
    cc: str = "reno"
    # A counterfactual network (PathConditions' spelling, "rtt=300ms,bw=2mbit,loss=0.01"):
    # predict each page on it instead of on the network it was recorded on.
    at: str | None = None
    # The browser's request scheduling: "auto" (from the HAR's browser: Chromium's request
    # schedulers for a recent Chrome or Chromium, none otherwise), "chromium" or "none".
    browser: str = "auto"
    # A counterfactual server: "hints" sends the push study's 103 Early Hints on the navigation
    # (preload the render-blocking sub-resources, preconnect their other origins); and the
    # document's server time instead of the HAR's (None: the HAR's).
    policy: str = "none"
    document_think_s: float | None = None
    # The servers' order of sending their responses' bytes (``LoadParams.scheduler``):
    # "urgency" (RFC 9218 urgency from the browser's priorities, as servers that follow the
    # client's priorities send), "round-robin" (aioquic's stream rotation, a packet's worth
    # each, priorities ignored) or "fifo".
    server_scheduler: str = "urgency"
    # How the browser reaches HTTP/3 (``LoadParams.h3_discovery``): "alt-svc" (deployment: the
    # host is then known to support priorities) or "forced" (a flag, as the lab's Chromium:
    # the network service keeps holding the host's delayable requests).
    h3_discovery: str = "alt-svc"
    # The servers' QUIC datagrams, UDP payload bytes (``TransportConfig.max_datagram_bytes``;
    # None: the QUIC model's default).  The lab's aioquic sends 1200 (``lab.serve``).
    quic_datagram_bytes: int | None = None
    # What the HTTP/2 servers commit to their sockets beyond the TCP window, as (windows, bytes)
    # (``ModelNetwork(send_ahead=...)``; None: nothing, the writer keeps only the window
    # written).  The lab's hypercorn: one window in Linux's send buffer and 512 KiB in asyncio's
    # TLS transport (``lab.serve``).
    server_send_ahead: tuple[int, int] | None = None
    # Whether the HTTP/2 servers' responses are read a whole 16 KiB TLS record at a time
    # (``ModelNetwork(tls_full_records=...)``; False: as each segment arrives).  The lab's
    # hypercorn writes through OpenSSL, whose records of a large write are 16 KiB (``lab.serve``).
    server_tls_full_records: bool = False
    # The servers' certificate chain, DER bytes (None: the stacks' one 260-byte certificate).
    # The lab's sites present one leaf naming every host and its CA (``lab.certs``).
    server_cert_chain_bytes: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.protocol not in PROTOCOL_CHOICES:
            raise InputError(f"unknown protocol {self.protocol!r} (choose {', '.join(PROTOCOL_CHOICES)})")
        if self.browser not in BROWSER_CHOICES:
            raise InputError(f"unknown browser {self.browser!r} (choose {', '.join(BROWSER_CHOICES)})")
        if self.at is not None:
            PathConditions.parse(self.at)
        if self.policy not in SERVER_POLICIES:
            raise InputError(f"unknown policy {self.policy!r} (choose {', '.join(SERVER_POLICIES)})")
        if self.document_think_s is not None and not 0 <= self.document_think_s <= 60:
            raise InputError(
                f"--document-think (the document's think time) must be in [0, 60] s, got {self.document_think_s}"
            )
        if self.h3_discovery not in H3_DISCOVERY:
            raise InputError(f"unknown HTTP/3 discovery {self.h3_discovery!r} (choose {', '.join(H3_DISCOVERY)})")
        if self.quic_datagram_bytes is not None and not 1200 <= self.quic_datagram_bytes <= 1472:
            # RFC 9000 section 14: at least 1200; at most what a 1500-byte path carries over UDP/IPv4.
            raise InputError(f"QUIC datagram size must be in [1200, 1472] bytes, got {self.quic_datagram_bytes}")
        if self.server_send_ahead is not None and (
            len(self.server_send_ahead) != 2 or not all(0 <= v <= 1 << 30 for v in self.server_send_ahead)
        ):
            raise InputError(
                f"server send-ahead must be (windows, bytes), each in [0, 2^30], got {self.server_send_ahead}"
            )
        if self.server_cert_chain_bytes is not None and not 0 < self.server_cert_chain_bytes <= 1 << 20:
            raise InputError(f"certificate chain must be in (0, 2^20] bytes, got {self.server_cert_chain_bytes}")
        if self.server_scheduler not in SERVER_SCHEDULERS:
            raise InputError(
                f"unknown server scheduler {self.server_scheduler!r} (choose {', '.join(SERVER_SCHEDULERS)})"
            )

    def to_dict(self) -> dict:
        """Every field, but ``policy``, ``document_think_s``, ``server_scheduler``, ``h3_discovery``,
        ``quic_datagram_bytes``, ``server_send_ahead``, ``server_tls_full_records`` and
        ``server_cert_chain_bytes`` only when set:
        outputs without them read as they did before they existed."""
        d = super().to_dict()
        if d["policy"] == "none":
            del d["policy"]
        if d["document_think_s"] is None:
            del d["document_think_s"]
        if d["server_scheduler"] == "urgency":
            del d["server_scheduler"]
        if d["h3_discovery"] == "alt-svc":
            del d["h3_discovery"]
        if d["quic_datagram_bytes"] is None:
            del d["quic_datagram_bytes"]
        if self.server_send_ahead is None:
            del d["server_send_ahead"]
        else:
            d["server_send_ahead"] = list(self.server_send_ahead)
        if not self.server_tls_full_records:
            del d["server_tls_full_records"]
        if self.server_cert_chain_bytes is None:
            del d["server_cert_chain_bytes"]
        return d

    @property
    def counterfactual_server(self) -> bool:
        """True when the server is not the recorded one (hints, or another document think time)."""
        return self.policy != "none" or self.document_think_s is not None

    @property
    def at_conditions(self) -> PathConditions | None:
        """``at`` read as a ``PathConditions`` (None: the recorded network)."""
        return None if self.at is None else PathConditions.parse(self.at)


def _stamped(params: FidelityParams) -> dict:
    return {**params.to_dict(), "version": __version__}


def moved_to(cond: PageConditions, at: PathConditions, protocol: str) -> PageConditions:
    """The recorded page's conditions on another network: the access path's RTT, bandwidth,
    loss and queue are ``at``'s; each origin keeps how much farther than the nearest one it
    was (its RTT above the access path's, past the shared link) and its set-up time (DNS,
    slower TLS); server times, the browser's discovery delays and its start-up are carried
    over as measured.  ``protocol`` h2 or h3 puts every https origin on it (auto keeps each
    one's; ``conditions.on_protocol``)."""
    origins = tuple(
        (
            o,
            at.rtt_s + max(0.0, rtt - cond.rtt_s),
            on_protocol(o, protocol) if protocol in ("h2", "h3") else proto,
            setup,
        )
        for o, rtt, proto, setup in cond.origins
    )
    return replace(cond, rtt_s=at.rtt_s, bandwidth_bps=at.bandwidth_bps, origins=origins)


def simulate_page(
    graph: PageGraph,
    cond: PageConditions,
    params: FidelityParams,
    cache: ClientCache | None = None,
    scheduler: str = "none",
    hints: tuple = (),
    priorities=None,
    *,
    tls_client: str = "stack",
    connect_jobs: str | None = None,
) -> PageLoadResult:
    """One load of ``graph`` on the page-load model under ``cond`` (times from the navigation);
    with ``params.at``, the path's loss and queue are ``at``'s; ``scheduler`` is the browser's
    ``resource_scheduler``; ``hints``: the Link values of a 103 on the navigation (``ServerPlan.hints``);
    ``priorities``: an ``http.priority.PriorityPlan`` whose scheduler every server runs in place of
    ``params.server_scheduler``'s order (the lab's ``--scheduler``); ``tls_client`` and
    ``connect_jobs``: how the browser sets up its connections (``browser_connections``)."""
    at = params.at_conditions
    load_params = LoadParams(
        protocol="h3" if params.protocol == "h3" else "h2",
        rtt_s=cond.rtt_s,
        bandwidth_bps=cond.bandwidth_bps,
        seed=params.seed,
        coalesce="origin",
        cc=params.cc,
        origins=cond.origins,
        loss=at.loss if at else "0",
        queue_bytes=at.queue_bytes if at else None,
        resource_scheduler=scheduler,
        h3_discovery=params.h3_discovery,
        scheduler=params.server_scheduler,
    )
    plan = ServerPlan(think_s=dict(cond.think_s), hints=tuple(hints), pushes=tuple(cond.pushes))
    return load_page(
        graph,
        load_params,
        plan,
        cache or ClientCache(),
        discovery_s=cond.discovery_s,
        blockers=cond.blockers,
        streamed=cond.streamed,
        network=_linux_servers(
            cond.one_flight,
            cond.open_before,
            priorities,
            params.quic_datagram_bytes,
            None if priorities is not None else params.server_send_ahead,
            params.server_tls_full_records,
            connect_jobs,
            params.server_cert_chain_bytes,
            tls_client,
        ),
    )


def _linux_servers(
    one_flight: frozenset,
    open_before: frozenset = frozenset(),
    priorities=None,
    quic_datagram_bytes: int | None = None,
    send_ahead: tuple[int, int] | None = None,
    tls_full_records: bool = False,
    connect_jobs: str | None = None,
    cert_chain_bytes: int | None = None,
    tls_client: str = "stack",
):
    """The model backend with TCP as a Linux server on OpenSSL runs it (``ModelNetwork(linux_tcp=True)``:
    the window in segments, ACKs on data, TCP_NODELAY writes, two TLS session tickets), but to
    the origins whose recording shows a larger first flight.  Found by the lab: at 300 ms the
    rebuilt pages' 12 KB documents and 11 KB scripts on fresh connections took a second round
    trip, which a window of 10 x 1460 bytes does not need.  ``open_before``: origins whose
    connection the capture shows open before the page began (``conditions._open_before``);
    ``priorities``: a ``PriorityPlan`` scheduling every server's responses; ``quic_datagram_bytes``:
    the QUIC servers' UDP payload (None: the model's default); ``send_ahead``: what the HTTP/2
    servers commit beyond the window, (windows, bytes) (None: nothing; a ``PriorityPlan``'s
    scheduling servers keep only the window, as the lab's set TCP_NOTSENT_LOWAT);
    ``tls_full_records``: responses over TLS and TCP read a whole record at a time; ``connect_jobs``:
    how the browser races connections to a new HTTP/2 origin (``http.connect_jobs``: "chromium",
    a connection per waiting request and a backup; "backup", the backup alone); ``cert_chain_bytes``:
    the servers' certificate chain (None: the stacks'); ``tls_client``: the browser's TLS flights."""
    datagram = {} if quic_datagram_bytes is None else {"max_datagram_bytes": quic_datagram_bytes}
    if send_ahead is not None:
        datagram["send_ahead"] = tuple(send_ahead)
    if tls_full_records:
        datagram["tls_full_records"] = True

    def network(sim, params, listener, backend_cls):
        return backend_cls(
            sim,
            params,
            listener,
            linux_tcp=True,
            lab_quic=True,
            one_flight_servers=one_flight,
            open_before=open_before,
            priorities=priorities,
            connect_jobs=connect_jobs,
            cert_chain_bytes=cert_chain_bytes,
            tls_client=tls_client,
            **datagram,
        )

    return network


def _hints(graph: PageGraph, params: FidelityParams) -> tuple:
    """The Link values of the 103 ``params.policy`` sends on the navigation (none: no 103)."""
    if params.policy != "hints":
        return ()
    from ...browser.server import early_hints

    return tuple(early_hints(graph, _Coalesce()))


@dataclass(frozen=True)
class _Coalesce:
    coalesce: str = "origin"  # fidelity gives every origin its own connection (LoadParams above)


def _page_start(trace: Trace, page: str | None) -> float | None:
    p = next((p for p in trace.pages if p.id == page), None)
    return p.start_s if p is not None else None


def run(trace: Trace, params: FidelityParams | None = None, *, progress: bool = False) -> FidelityResult:
    """Simulate every page of ``trace`` that has a measured onLoad and compare.  ``progress``
    is the contract's; a trace's few pages take no bar (``run_paths`` draws one per trace)."""
    params = params or FidelityParams()
    scheduler = resource_scheduler(trace, params.browser)
    rows, skipped, repeats, failed = [], [], [], []
    first_views: dict[str, tuple] = {}
    pages = {p.id: p for p in trace.pages}
    no_setup = not writes_setup(trace)
    for page in page_ids(trace):
        if no_setup and str(trace.meta.get("creator", "")).startswith("PhantomJS"):
            skipped.append({"trace": trace.source, "page": page, "reason": NO_SETUP})
            continue
        with collector_paused():  # a page's graph, conditions and load: see collector_paused
            _run_page(trace, page, pages.get(page), params, scheduler, rows, skipped, repeats, failed, first_views)
    return FidelityResult(
        pages=_Rows(rows),
        skipped=_Rows(skipped, ["trace", "page", "reason"]),
        repeat_views=_Rows(repeats),
        params=_stamped(params),
        failed=failed,
    )


NO_SETUP = (
    "PhantomJS's HAR records no connection set-up (dns, connect and ssl -1 on every entry, the time "
    "before the first byte all in wait): round trips cannot be told from server times"
)


def writes_setup(trace: Trace) -> bool:
    """Whether ``trace`` writes a connection set-up phase: some entry has a ``connect`` or
    ``ssl`` of 0 or more, or WebPageTest's ``_connect_ms``.  PhantomJS (its netsniff script)
    writes none on any entry and puts every phase before the first byte in ``wait``: such a
    HAR gives no round trip apart from the server's time and the queueing, so its pages are
    skipped.  (A HAR of loads on connections that were all already open writes none either:
    a later run in one browser; its producer is named apart.)"""
    for e in trace.exchanges:
        t = e.timings or {}
        for key in ("connect", "ssl", "_connect_ms"):
            v = t.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
                return True
    return False


def _run_page(
    trace: Trace,
    page,
    meta,
    params: FidelityParams,
    scheduler: str,
    rows: list,
    skipped: list,
    repeats: list,
    failed: list,
    first_views: dict,
) -> None:
    """One page of ``run``: its row, or why it was skipped, appended to the lists."""
    base = {"trace": trace.source, "page": page}
    if meta is None or meta.on_load_s is None:
        skipped.append({**base, "reason": "no measured onLoad (pageTimings.onLoad missing or -1)"})
        return
    if meta.repeat_view:
        # Its HAR lacks what the browser's cache served, and the time the browser spent on it.
        skipped.append(
            {
                **base,
                "reason": "a repeat view (its HAR lacks what came from the browser's cache): "
                "predicted from its first view instead",
            }
        )
        first = first_views.get(meta.url) or (list(first_views.values())[-1] if first_views else None)
        if first is not None and params.at is None and not params.counterfactual_server:
            repeats.append(_repeat_view(first, {**base, "measured_onload_s": meta.on_load_s}, params, scheduler))
        return
    try:
        graph = page_graph(trace, page)
    except InputError as exc:
        skipped.append({**base, "reason": exc.detail})
        return
    times: list = []
    elsewhere = params.at is not None or params.counterfactual_server
    sub = load_event_graph(graph, meta.on_load_s, meta.start_s, times, elsewhere=elsewhere)
    cond = infer_conditions(sub, meta.start_s, params.protocol, times=times[0] if times else None)
    if params.at is not None:
        cond = moved_to(cond, params.at_conditions, params.protocol)
    if params.document_think_s is not None:
        cond = replace(cond, think_s={**cond.think_s, sub.document: params.document_think_s})
    try:
        metrics = simulate_page(
            sub, cond, params, scheduler=scheduler, hints=_hints(graph, params), **browser_connections(trace, scheduler)
        ).metrics
    except StackStalled as exc:  # the page's own load cannot end: the next page may
        skipped.append({**base, "reason": exc.detail})
        failed.append((trace.source, page, exc.detail))
        return
    simulated = cond.start_offset_s + metrics["onload_s"]
    row = {
        **base,
        "url": graph[graph.document].url,
        "measured_onload_s": meta.on_load_s,
        "simulated_onload_s": simulated,
        # With ``at`` (or another server) the measurement is of another load: no error to give.
        "error_percent": (
            math.nan
            if params.at or params.counterfactual_server
            else 100.0 * (simulated - meta.on_load_s) / meta.on_load_s
        ),
        "resources": len(sub),
        "requests": metrics["requests"],
        "connections": metrics["connections"],
        # What the transports resent and why: the lab holds these against the kernel's own count.
        **{k: metrics.get(k, 0) for k in ("packets_sent", "packets_lost", *TIMER_KEYS)},
        "creator": trace.meta.get("creator", ""),
        "resource_scheduler": scheduler,
        **cond.summary(),
    }
    rows.append(row)
    first_views[meta.url or row["url"]] = (graph, meta, cond)  # a repeat view follows its own first view


def _repeat_view(first: tuple, measured: dict, params: FidelityParams, scheduler: str = "none") -> dict:
    """The repeat view predicted from the first view's graph and conditions with an RFC 9111 cache."""
    graph, meta, cond = first
    sub = load_event_graph(graph, meta.on_load_s, meta.start_s)
    fresh, revalidate = cache_after(sub)
    resources = [
        replace(r, body_bytes=0, content_bytes=None, status=304) if r.index in revalidate else r for r in sub.resources
    ]
    repeat = PageGraph(
        resources=resources, source=sub.source, page=sub.page, edges_from=sub.edges_from, document=sub.document
    )
    metrics = simulate_page(repeat, cond, params, ClientCache(sub[i].url for i in fresh), scheduler).metrics
    simulated = cond.start_offset_s + metrics["onload_s"]
    return {
        "trace": measured["trace"],
        "page": measured["page"],
        "first_view": meta.id,
        "measured_onload_s": measured["measured_onload_s"],
        "simulated_onload_s": simulated,
        "error_percent": 100.0 * (simulated - measured["measured_onload_s"]) / measured["measured_onload_s"],
        "cached": len(fresh),
        "revalidated": len(revalidate),
    }


def cache_after(graph: PageGraph) -> tuple[set[int], set[int]]:
    """(fresh, to revalidate) after a first load of ``graph``, by RFC 9111: fresh for a
    positive ``max-age`` (section 5.2.2.1) or an ``Expires`` after ``Date`` (section 5.3),
    unless ``no-store``/``no-cache``, and a 301 or 308 without either (heuristically
    cacheable, RFC 9110 sections 15.4.2 and 15.4.9; browsers keep them); stale with an
    ``ETag`` or ``Last-Modified``: revalidated (section 4.3).  The navigation too: a normal
    navigation (not a reload) uses a fresh cached document."""
    from email.utils import parsedate_to_datetime

    fresh, revalidate = set(), set()
    for r in graph.resources:
        if r.status not in (200, 301, 308):
            continue
        h = r.response_headers
        cc = (header_value(h, b"cache-control") or b"").decode("latin-1").lower()
        directives = {
            d.strip().split("=", 1)[0]: (d.split("=", 1)[1].strip('" ') if "=" in d else "")
            for d in cc.split(",")
            if d.strip()
        }
        if "no-store" in directives:
            continue
        lifetime = None
        if "max-age" in directives and directives["max-age"].isdigit():
            lifetime = int(directives["max-age"])
        else:
            try:
                expires = parsedate_to_datetime((header_value(h, b"expires") or b"").decode("latin-1"))
                date = parsedate_to_datetime((header_value(h, b"date") or b"").decode("latin-1"))
                lifetime = (expires - date).total_seconds()
            except (TypeError, ValueError, IndexError):
                lifetime = None
        if lifetime is None and r.status in (301, 308):
            lifetime = math.inf
        if lifetime and lifetime > 0 and "no-cache" not in directives:
            fresh.add(r.index)
        elif header_value(h, b"etag") or header_value(h, b"last-modified"):
            revalidate.add(r.index)
    return fresh, revalidate


def har_paths(paths) -> list[str]:
    """Files named, and the ``*.har`` files of folders named, in order."""
    out = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            found = sorted(str(f) for f in path.glob("*.har"))
            if not found:
                raise InputError("the folder holds no .har file.", path=str(path))
            out += found
        else:
            out.append(str(path))
    return out


def run_paths(paths, params: FidelityParams, *, progress: bool = False) -> FidelityResult:
    """``run`` over every trace of ``paths``; a file that cannot be read is a skipped row and a
    ``failed`` entry, and the others still run (one file given alone raises instead)."""
    files = har_paths(paths)
    iterator = files
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(files, desc="traces", leave=False)
    parts = []
    for n, f in enumerate(iterator):
        if n and not gc.isenabled():
            # The command line runs with the collector off (cli.main): the cycles a trace's
            # loads leave are freed between traces, so a folder's memory stays one trace's.
            gc.collect()
        try:
            parts.append(run(load(f), params))
        except InputError as exc:
            if len(files) == 1:
                raise
            parts.append(
                FidelityResult(
                    pages=_Rows([]),  # empty tables: left out when the traces' are joined (_Concat)
                    repeat_views=_Rows([]),
                    params=_stamped(params),
                    skipped=_Rows([{"trace": f, "page": None, "reason": exc.detail}]),
                    failed=[(f, None, f"{exc.where}: {exc.detail}" if exc.where else exc.detail)],
                )
            )

    return FidelityResult(
        pages=_Concat([p._pages for p in parts]),
        skipped=_Concat([p._skipped for p in parts]),
        repeat_views=_Concat([p._repeat_views for p in parts]),
        params=_stamped(params),
        failed=[f for p in parts for f in p.failed],
    )
