"""The inputs of a page load (``browser.client``): its network and browser parameters
(``LoadParams``), what the server does per request (``ServerPlan``), the parser-blocking
scripts each resource waits for (``HeldScripts``), the connection a request goes on
(``connection_key``) and the Link values of a 103 (``parse_link``).  Written by hand.

Moved out of ``browser.client`` (which re-exports every name) so that the browser there
stays under the module size limit: these are the values and pure functions a load is
made of, with no state of its own and nothing of ``PageLoad``.  The checks are the
load's input checks (``InputError``: one sentence naming the value); the RFC sections
cited are where a rule comes from.
"""

from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass, field

from typing import TYPE_CHECKING

from ..errors import InputError
from ..net.conditions import adopt_network

if TYPE_CHECKING:
    from ..traces.pagegraph import PageGraph

__all__ = [
    "LoadParams",
    "ServerPlan",
    "HeldScripts",
    "connection_key",
    "parse_link",
    "DEFAULT_PARSE_DELAY_S",
    "PROTOCOLS",
    "ORIGIN_PROTOCOLS",
    "load_deadline_s",
    "DEADLINE_FACTOR",
    "COALESCE",
    "RESOURCE_SCHEDULERS",
]

PROTOCOLS = ("h2", "h3")
ORIGIN_PROTOCOLS = ("h1", "h2", "h3")  # per origin (LoadParams.origins): h1 = HTTP/1.1, 6 connections
COALESCE = ("origin", "site")
RESOURCE_SCHEDULERS = ("none", "chromium")
# How the browser came to HTTP/3: by an Alt-Svc (deployment; Chromium then knows the host
# supports priorities) or forced by a flag (the lab's --origin-to-force-quic-on: it does not).
H3_DISCOVERY = ("alt-svc", "forced")
# Parse/CPU delay before a parent's references are found (seconds), by the parent's type.
# Modelling choices of the order of Lantern's 10 ms CPU-task threshold.
DEFAULT_PARSE_DELAY_S = (("document", 0.005), ("stylesheet", 0.002), ("script", 0.010))


@dataclass(frozen=True)
class LoadParams:
    """The network and browser parameters of one page load (units in the names)."""

    protocol: str = "h2"  # h2 over TCP, h3 over QUIC
    rtt_s: float = 0.100
    bandwidth_bps: float | None = 10e6
    loss: str = "0"
    seed: int = 1
    tls: bool = True  # h2 over TCP: TLS 1.3 adds one RTT to a cold connection
    dns_s: float = 0.0  # DNS lookup before a cold connection
    coalesce: str = "site"  # "origin" or "site" (see ``browser.client``'s docstring)
    parse_delay_s: tuple = DEFAULT_PARSE_DELAY_S
    queue_bytes: int | None = None
    cc: str = "reno"
    idle_timeout_s: float = 30.0
    scheduler: str = "urgency"  # model server: urgency (RFC 9218), round-robin or fifo
    push_urgency: int = 3  # RFC 9218 urgency of pushed responses (model server)
    resource_scheduler: str = "none"  # "chromium": delayable requests held (see ``browser.client``'s docstring)
    h3_discovery: str = "alt-svc"  # H3_DISCOVERY; "forced": HTTP/3 hosts never known to support priorities
    # Per-origin conditions, where they differ from the load's: (origin, rtt_s, protocol,
    # setup_s) with rtt_s >= the load's rtt_s (the rest is the server's distance, past the
    # shared access link), protocol h1/h2/h3 and setup_s the time before its connections
    # open (DNS, and handshake time beyond what the transport models pay).
    origins: tuple = ()

    def __post_init__(self) -> None:
        adopt_network(self)  # the network part: handed over checked, or checked here
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol {self.protocol!r} (choose h2 or h3)")
        if self.coalesce not in COALESCE:
            raise InputError(f"unknown coalescing rule {self.coalesce!r} (choose origin or site)")
        if self.dns_s < 0:
            raise InputError(f"DNS time must be >= 0, got {self.dns_s}")
        if self.scheduler not in ("urgency", "round-robin", "fifo"):
            raise InputError(f"unknown scheduler {self.scheduler!r} (choose urgency, round-robin or fifo)")
        if self.resource_scheduler not in RESOURCE_SCHEDULERS:
            raise InputError(
                f"unknown resource scheduler {self.resource_scheduler!r} (choose {' or '.join(RESOURCE_SCHEDULERS)})"
            )
        if self.h3_discovery not in H3_DISCOVERY:
            raise InputError(f"unknown HTTP/3 discovery {self.h3_discovery!r} (choose {' or '.join(H3_DISCOVERY)})")
        if not 0 <= self.push_urgency <= 7:
            raise InputError(f"push urgency must be 0..7 (RFC 9218), got {self.push_urgency}")
        for origin, rtt_s, protocol, setup_s in self.origins:
            if rtt_s < self.rtt_s or setup_s < 0 or protocol not in ORIGIN_PROTOCOLS:
                raise InputError(
                    f"bad conditions for {origin}: RTT {rtt_s} (at least {self.rtt_s}), "
                    f"protocol {protocol!r} ({', '.join(ORIGIN_PROTOCOLS)}), setup {setup_s}"
                )

    @property
    def network(self):
        """The network part (``net.conditions.Network``), checked once."""
        return self.__dict__["_network"]

    def origin(self, origin: str) -> tuple[float, str, float]:
        """(RTT, protocol, set-up time) of ``origin``'s connections."""
        return self._by_origin.get(origin) or (self.rtt_s, self.protocol, self.dns_s)

    @functools.cached_property
    def _by_origin(self) -> dict:  # a page may have thousands of origins: no scan per request
        return {o: (rtt_s, protocol, setup_s) for o, rtt_s, protocol, setup_s in reversed(self.origins)}

    def parse_delay(self, resource_type: str) -> float:
        """Seconds a parent of ``resource_type`` takes to parse before its children are discovered."""
        return self._parse_delays.get(resource_type, 0.0)

    @functools.cached_property
    def _parse_delays(self) -> dict:  # asked once per resource of the load: the dict made once
        return dict(self.parse_delay_s)

    def to_dict(self) -> dict:
        """The parameters as plain values (parse delays as ``type=s`` text, origins as their count)."""
        d = asdict(self)
        d["parse_delay_s"] = ",".join(f"{k}={v:g}" for k, v in self.parse_delay_s)
        if not self.origins:
            del d["origins"]
        else:
            d["origins"] = len(self.origins)
        return d


@dataclass(frozen=True)
class ServerPlan:
    """What the server does for each resource's request: its think time, the Link values of
    a 103 (navigation only) and the resources it pushes on that request."""

    think_s: dict = field(default_factory=dict)  # index -> seconds (default 0)
    hints: tuple[bytes, ...] = ()  # Link values of a 103 on the document's request
    pushes: tuple[int, ...] = ()  # resources pushed on the document's stream

    def think(self, index: int) -> float:
        """Seconds the server thinks before answering resource ``index``."""
        return self.think_s.get(index, 0.0)


@dataclass(frozen=True)
class HeldScripts:
    """The parser-blocking scripts each resource's discovery waits for (HTML: the parser
    stops at a synchronous script until it has run), as a prefix of one shared order:
    resource ``i`` waits for ``order[:prefix[i]]``.  One list and one length per resource,
    so a page of n resources and m scripts costs n + m, not n x m."""

    order: tuple = ()  # the scripts, in the order they are waited for
    prefix: dict = field(default_factory=dict)  # resource -> how many of ``order`` it waits for (> 0)

    def held(self, index: int) -> tuple:
        """The scripts resource ``index`` waits for."""
        return self.order[: self.prefix.get(index, 0)]

    def __contains__(self, index: int) -> bool:
        return index in self.prefix


def connection_key(origin: str, document_origin: str, coalesce: str) -> str:
    """The connection a request goes on: its origin, or the document's connection for every
    host of the document's site (the last two labels of the host name) with ``site``."""
    if coalesce == "site" and _site(origin) == _site(document_origin):
        return document_origin
    return origin


def _site(origin: str) -> str:
    host = origin.split("://", 1)[-1].split(":", 1)[0]
    return ".".join(host.split(".")[-2:])


_LINK = re.compile(rb"^\s*<([^>]*)>\s*(.*)$")


def parse_link(value: bytes) -> tuple[str, set[str]] | None:
    """``<url>; rel=preload; as=style`` -> (url, {"preload"}) (RFC 8288 section 3)."""
    m = _LINK.match(value)
    if not m:
        return None
    rels: set[str] = set()
    for param in m.group(2).split(b";"):
        name, _, val = param.strip().partition(b"=")
        if name.strip().lower() == b"rel":
            rels.update(v.decode("latin-1").lower() for v in val.strip().strip(b'"').split())
    return m.group(1).decode("latin-1"), rels


# A load is a stall, not a slow load, when it has not ended after this many times what its
# bytes take at the access bandwidth, plus a round trip and set-up per resource and every
# server and discovery time one after the other (all of which bound a load that progresses),
# and 10 idle timeouts more: a fixed 300 s called a 10,000-resource page at 10 Mbit/s a stall.
DEADLINE_FACTOR = 4


def load_deadline_s(
    graph: PageGraph, params: LoadParams, plan: ServerPlan, discovery_s: dict | None = None
) -> tuple[float, str]:
    """The virtual time by which a load of ``graph`` that progresses has ended, and how it was set."""
    page_bytes = sum(r.body_bytes + 1024 for r in graph.resources)  # 1 KB of headers and framing each
    trip_s = max([params.rtt_s + params.dns_s] + [rtt_s + setup_s for _, rtt_s, _, setup_s in params.origins])
    transfer_s = 0.0 if params.bandwidth_bps is None else page_bytes * 8 / params.bandwidth_bps
    trips_s = (len(graph) + 1) * (trip_s + max((v for _, v in params.parse_delay_s), default=0.0))
    waits_s = sum(plan.think_s.values()) + sum((discovery_s or {}).values())
    bw = "no bandwidth limit" if params.bandwidth_bps is None else f"{params.bandwidth_bps / 1e6:g} Mbit/s"
    return (
        10 * params.idle_timeout_s + DEADLINE_FACTOR * (transfer_s + trips_s + waits_s),
        f"{page_bytes:,} bytes at {bw}, {len(graph)} round trips of up to {trip_s * 1000:.0f} ms",
    )
