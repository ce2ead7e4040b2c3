"""The browser's connection pool of the coalescing study: between ``browser``'s page load and
a network backend, it picks each request's connection by the mode's rule, times DNS and
handshakes, and turns refused requests into 421s and retries (see the package docstring)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from ...frames.origin import ORIGIN_FRAME_TYPE, origin_frame_bytes, origin_frame_payload, parse_origin_frame
from ...net.transport import TIMER_KEYS
from ...browser import LoadParams
from .handshake import handshake
from .topology import Topology, cert_covers, host_of

if TYPE_CHECKING:  # .study imports this module: the parameters' class is for the annotation only
    from .study import CoalescingParams

__all__ = ["CoalescingPool"]


class _PoolConn:
    __slots__ = (
        "number",
        "key",
        "host",
        "origin",
        "address",
        "server",
        "protocol",
        "hs",
        "opened_s",
        "ready_s",
        "established",
        "origin_set",
        "refused",
        "waiters",
        "requests",
        "coalesced_hosts",
        "reason",
    )

    def __init__(self, number, host, origin, address, server, protocol, hs, opened_s, ready_s, reason):
        self.number, self.host, self.origin, self.address = number, host, origin, address
        self.key = f"c{number}:{host}"
        self.server, self.protocol, self.hs = server, protocol, hs
        self.opened_s, self.ready_s, self.reason = opened_s, ready_s, reason
        self.established = False
        self.origin_set: set[str] | None = None  # RFC 8336 section 2.3: uninitialised
        self.refused: set[str] = set()
        self.waiters: list = []
        self.requests = 0
        self.coalesced_hosts: set[str] = set()


class CoalescingPool:
    """Between ``browser.PageLoad`` (it calls ``fetch(origin, spec)``) and a network
    backend (it calls back ``on_response_complete`` ...): picks each request's connection
    by ``mode``, times DNS and handshakes, turns refused requests into 421s and retries."""

    def __init__(
        self, sim, params: LoadParams, listener, inner_cls, *, mode: str, topo: Topology, cp: CoalescingParams
    ) -> None:
        self.sim, self.params, self.listener = sim, params, listener
        self.mode, self.topo, self.cp = mode, topo, cp
        self.inner = inner_cls(sim, params, self)
        self.stack = cp.backend == "stacks"
        self.dns: dict[str, tuple[str, ...]] = {}
        self.dns_waiters: dict[str, list] = {}
        self.conns: list[_PoolConn] = []
        self.pending421: dict[int, tuple] = {}
        self.request_conn: dict[int, _PoolConn] = {}
        self.misdirected: dict[int, int] = {}
        self.altsvc: set[str] = set()
        if mode == "h3-altsvc" and cp.altsvc_cache == "warm":
            self.altsvc = {h for h, s in topo.servers.items() if s.h3}
        self.counters = {
            "dns_lookups": 0,
            "dns_skipped": 0,
            "coalesced_requests": 0,
            "misdirected_421": 0,
            "retries_421": 0,
            "origin_set_hits": 0,
            "origin_frames_received": 0,
        }
        self._skipped_hosts: set[str] = set()
        self._refuses: dict[tuple, bool] = {}

    # -- PageLoad's backend interface -------------------------------------------------
    def fetch(self, origin: str, spec) -> None:
        """Send a request for ``origin`` on the connection ``mode`` picks, after DNS and a handshake if needed."""
        self._route(origin, spec, own_only=False)

    def connect(self, origin: str) -> None:
        """A preconnect (103 hints; unused by this study): DNS and the origin's own connection."""

    def cancel_push(self, push_key) -> None:
        """Pass the push cancellation to the network backend."""
        self.inner.cancel_push(push_key)

    def push_bytes(self, push_key) -> int:
        """Bytes of the pushed response ``push_key``, from the network backend."""
        return self.inner.push_bytes(push_key)

    def check(self) -> None:
        """Let the network backend check its own state."""
        self.inner.check()

    # -- routing ------------------------------------------------------------------------
    def _route(self, origin: str, spec, own_only: bool) -> None:
        host = host_of(origin)
        if self.mode == "origin" and not own_only:
            for c in self.conns:
                # RFC 8336 section 2.4: in the Origin Set, certificate still checked, no DNS needed.
                if (
                    c.established
                    and c.origin_set is not None
                    and origin in c.origin_set
                    and host not in c.refused
                    and cert_covers(c.server.san, host)
                ):
                    if host not in self.dns and c.host != host:
                        self._skipped_hosts.add(host)
                    self.counters["origin_set_hits"] += c.host != host
                    self._send(c, origin, spec, announced=c.host != host)
                    return
        if host not in self.dns:
            self._lookup(host, self._route_resolved, origin, spec, own_only)
            return
        self._route_resolved(origin, spec, own_only)

    def _lookup(self, host: str, callback, *args) -> None:
        waiters = self.dns_waiters.get(host)
        if waiters is not None:
            waiters.append((callback, args))
            return
        self.dns_waiters[host] = [(callback, args)]
        self.counters["dns_lookups"] += 1
        self.sim.call_later(self.cp.dns_lookup_s, self._resolved, host)

    def _resolved(self, host: str) -> None:
        self.dns[host] = self.topo[host].addresses
        for callback, args in self.dns_waiters.pop(host):
            callback(*args)

    def _may_coalesce(self, c: _PoolConn, origin: str, host: str) -> bool:
        """RFC 9113 section 9.1.1 (+ RFC 8336 section 2.4 once an Origin Set exists)."""
        if host in c.refused or c.address not in self.dns[host]:
            return False
        if not c.established:
            return True  # its certificate is checked once the handshake ends
        if c.origin_set is not None and origin not in c.origin_set:
            return False  # RFC 8336 section 2.4: MUST NOT
        return cert_covers(c.server.san, host)

    def _route_resolved(self, origin: str, spec, own_only: bool) -> None:
        host = host_of(origin)
        coalesce = self.mode != "none" and not own_only
        for established in (True, False):
            own = next(
                (c for c in self.conns if c.established == established and c.host == host and host not in c.refused),
                None,
            )
            other = None
            if own is None and coalesce and (established or self.cp.wait_pending):
                other = next(
                    (
                        c
                        for c in self.conns
                        if c.established == established and c.host != host and self._may_coalesce(c, origin, host)
                    ),
                    None,
                )
            c = own or other
            if c is None:
                continue
            if established or (self.stack and c is own):
                # The real h2 stack takes a request for the connection's own origin at once
                # and sends it when TCP (and TLS) is up.
                self._send(c, origin, spec, announced=False)
            else:
                c.waiters.append((self._route_resolved, (origin, spec, own_only)))
            return
        c = self._open(origin, host, "retry-421" if own_only else "new")
        if self.stack:
            self._send(c, origin, spec, announced=False)
        else:
            c.waiters.append((self._route_resolved, (origin, spec, own_only)))

    def _open(self, origin: str, host: str, reason: str) -> _PoolConn:
        server = self.topo[host]
        protocol = "h2"
        if self.mode == "h3-altsvc" and server.h3 and host in self.altsvc:
            protocol = "h3"
        announces = server.announces if self.mode == "origin" else None
        frame = origin_frame_bytes([f"https://{h}" for h in announces]) if announces is not None else 0
        hs = handshake(protocol, server.san, frame, host=host, tls=self.cp.tls)
        setup = hs.setup_s(self.params.rtt_s, self.params.bandwidth_bps)
        c = _PoolConn(
            len(self.conns),
            host,
            origin,
            self.dns[host][0],
            server,
            protocol,
            hs,
            self.sim.now,
            self.sim.now + setup,
            reason,
        )
        self.conns.append(c)
        if self.stack:
            # The real h2 stack times its own set-up: the connection is usable for other
            # origins when the client has the server's SETTINGS, or its ORIGIN frame.
            c.ready_s = math.nan
            session = self.inner.connect(c.key)
            session.on_client_event = lambda event, c=c: self._client_event(c, event)
            if announces is not None:
                session.server.send_extension_frame(
                    ORIGIN_FRAME_TYPE, origin_frame_payload([f"https://{h}" for h in announces])
                )
            return c
        self.inner.connect(c.key, protocol=protocol, setup=setup)
        self.sim.call_at(c.ready_s, self._established, c)
        return c

    def _client_event(self, c: _PoolConn, event) -> None:
        """The real h2 client's RemoteSettingsChanged / UnknownFrameReceived (stacks backend)."""
        import h2.events

        expects_origin = self.mode == "origin" and c.server.announces is not None
        if isinstance(event, h2.events.UnknownFrameReceived):
            frame = event.frame
            # RFC 8336 section 2.2: stream 0 only; flags 0x1-0x8 unknown -> ignore the frame.
            if frame.type != ORIGIN_FRAME_TYPE or frame.stream_id != 0 or frame.flag_byte & 0xF:
                return
            origins = parse_origin_frame(frame.body)
            self.counters["origin_frames_received"] += 1
            if c.established:
                if c.origin_set is not None:
                    c.origin_set |= set(origins)
                return
            self._established(c, {c.origin} | set(origins))
        elif not c.established and not expects_origin:
            self._established(c)

    def _established(self, c: _PoolConn, origin_set: set[str] | None = None) -> None:
        c.established = True
        c.ready_s = self.sim.now
        if origin_set is not None:
            c.origin_set = origin_set
        elif self.mode == "origin" and c.server.announces is not None:
            # RFC 8336 section 2.3: the initial origin (SNI host) plus the frame's origins.
            c.origin_set = {c.origin} | {f"https://{h}" for h in c.server.announces}
            self.counters["origin_frames_received"] += 1
        waiters, c.waiters = c.waiters, []
        for callback, args in waiters:
            callback(*args)

    def _send(self, c: _PoolConn, origin: str, spec, *, announced: bool) -> None:
        host = host_of(origin)
        if c.host != host:
            p = self.cp.p421_announced if announced else self.cp.p421
            # One draw per (server, host), from its own seeded stream: every mode meets the same
            # servers, and a server that refuses a host refuses all of its requests.
            pair = (c.host, host, announced)
            refuses = self._refuses.get(pair)
            if refuses is None:
                refuses = self._refuses[pair] = self.sim.rng(f"421:{c.host}:{host}").random() < p
            if refuses:
                self.counters["misdirected_421"] += 1
                self.misdirected[spec.index] = self.misdirected.get(spec.index, 0) + 1
                self.pending421[spec.index] = (c, origin, spec)
                refused = replace(
                    spec,
                    response_headers=((b":status", b"421"), (b"content-length", b"0")),
                    response_body_bytes=0,
                    think_s=0.0,
                    early_hints=(),
                    pushes=(),
                )
                self.inner.fetch(c.key, refused)
                return
            self.counters["coalesced_requests"] += 1
            c.coalesced_hosts.add(host)
        c.requests += 1
        self.request_conn[spec.index] = c
        self.inner.fetch(c.key, spec)

    # -- the backend's callbacks ---------------------------------------------------------
    def on_response_complete(self, index: int) -> None:
        """A response finished: retry a 421 on the origin's own connection (RFC 8336 2.3), note Alt-Svc, pass it on."""
        pending = self.pending421.pop(index, None)
        if pending is not None:
            c, origin, spec = pending
            host = host_of(origin)
            c.refused.add(host)
            if c.origin_set is not None:
                c.origin_set.discard(origin)  # RFC 8336 section 2.3
            self.counters["retries_421"] += 1
            self._route(origin, spec, own_only=True)
            return
        c = self.request_conn.get(index)
        if c is not None and self.mode == "h3-altsvc":
            host = host_of(self.listener.graph[index].origin)
            if self.topo[host].h3:
                self.altsvc.add(host)  # RFC 7838: Alt-Svc on the response
        self.listener.on_response_complete(index)

    def on_informational(self, index, links) -> None:
        """Pass a 1xx response's links to the page load."""
        self.listener.on_informational(index, links)

    def on_push_promise(self, push_key, url) -> None:
        """Pass a push promise to the page load."""
        self.listener.on_push_promise(push_key, url)

    def on_push_complete(self, push_key) -> None:
        """Pass a completed push to the page load."""
        self.listener.on_push_complete(push_key)

    # -- results ---------------------------------------------------------------------------
    def stats(self) -> dict:
        """Connections and handshakes (rounds, bytes, certificates), routing counters, packets sent and lost."""
        inner = self.inner.stats()
        hs = [c.hs for c in self.conns]
        self.counters["dns_skipped"] = len(self._skipped_hosts - set(self.dns))
        return {
            "connections": len(self.conns),
            "handshakes": len(self.conns),
            "h2_connections": sum(c.protocol == "h2" for c in self.conns),
            "h3_connections": sum(c.protocol == "h3" for c in self.conns),
            "handshake_rtts": sum(h.rtts for h in hs),
            "handshake_bytes": sum(h.bytes for h in hs),
            "handshake_client_bytes": sum(h.client_bytes for h in hs),
            "handshake_server_bytes": sum(h.server_bytes for h in hs),
            "cert_bytes": sum(h.cert_bytes for h in hs),
            "origin_frame_bytes": sum(h.origin_frame_bytes for h in hs),
            "coalesced_origins": len({(c.number, h) for c in self.conns for h in c.coalesced_hosts}),
            **self.counters,
            "packets_sent": inner["packets_sent"],
            "packets_lost": inner["packets_lost"],
            **{k: inner.get(k, 0) for k in TIMER_KEYS},
        }

    def connection_rows(self) -> list[dict]:
        """One row per connection opened: host, protocol, why it opened, timing, handshake, origin set, requests."""
        return [
            {
                "connection": c.key,
                "host": c.host,
                "address": c.address,
                "protocol": c.protocol,
                "reason": c.reason,
                "opened_s": c.opened_s,
                "ready_s": c.ready_s,
                "handshake_rtts": c.hs.rtts,
                "handshake_bytes": c.hs.bytes,
                "cert_bytes": c.hs.cert_bytes,
                "san_names": len(c.server.san),
                "origin_frame_bytes": c.hs.origin_frame_bytes,
                "origin_set": -1 if c.origin_set is None else len(c.origin_set),
                "requests": c.requests,
                "coalesced_hosts": ",".join(sorted(c.coalesced_hosts)),
                "refused_hosts": ",".join(sorted(c.refused)),
            }
            for c in self.conns
        ]
