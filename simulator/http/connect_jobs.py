"""A browser's connect jobs for an HTTP/2 origin over TLS and TCP: several connections may race
to become the one that carries the origin's requests.  Written by hand: this is the browser's
socket pool, part of the page-load model, not of a protocol library.

What the lab's Chromium does on a fresh profile (its packet captures, one load of a rebuilt page):

- **One connect job per waiting request** (``"chromium"``).  Until a connection's ALPN has said
  the origin speaks HTTP/2, Chromium does not know it can multiplex, so each request waiting for
  the origin gets a TCP and TLS connection of its own, up to six (the socket pool's per-group
  limit, as for HTTP/1.1).  A page that finds four scripts of a new origin at once opens four.
- **A backup job** (``"chromium"`` and ``"backup"``).  If the origin's first connection is
  still in TCP's handshake ``BACKUP_CONNECT_S`` after it began (Chromium's
  ``kMaxConnectRetryIntervalMs``, Firefox's ``network.http.connection-retry-timeout``), one more
  connection is opened beside it, while requests wait and the limit allows.  On a bottleneck
  with a deep queue a SYN-ACK waits behind the queue, so most origins found mid-load get one.

The first connection whose TLS handshake completes carries every request (HTTP/2 multiplexes
them, RFC 9113 section 5); the others finish their handshakes (the client's Finished, the
server's session tickets and SETTINGS) and then stay idle.  Every one of them puts its
ClientHello, its server flight and its ACKs on the shared path: at 2 Mbit/s a page with forty
origins pays for about thirty more handshakes than it has connections.

A connection opened before the load (``open_before``), a browser model that times set-up
itself, HTTP/1.1 (``http.h1_pool`` keeps its own pool) and QUIC (one connection per origin:
Chromium's QUIC session factory joins the requests of one server) race nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .h1_pool import BACKUP_CONNECT_S, H1_CONNECTIONS_PER_ORIGIN

if TYPE_CHECKING:
    from .network import ModelNetwork, _Conn

__all__ = ["ConnectJobs", "CONNECT_JOBS"]

CONNECT_JOBS = ("chromium", "backup")
_FIRST_SPARE_NUMBER = 10_000  # spare connections' numbers (transport names), clear of the origins'


class _Group:
    """The connect jobs of one origin."""

    __slots__ = ("jobs", "unbound", "winner")

    def __init__(self, first: _Conn) -> None:
        self.jobs = [first]
        self.unbound = 0  # requests made before any job was done
        self.winner: _Conn | None = None


class ConnectJobs:
    """The racing connections of one ``ModelNetwork``'s HTTP/2 origins (module docstring)."""

    def __init__(self, net: ModelNetwork, mode: str) -> None:
        if mode not in CONNECT_JOBS:
            raise ValueError(f"connect_jobs must be one of {CONNECT_JOBS}, got {mode!r}")
        self.net, self.per_request = net, mode == "chromium"
        self.groups: dict[str, _Group] = {}
        self.spares: list[_Conn] = []  # every job but the origins' first, winners included

    @staticmethod
    def races(conn: _Conn) -> bool:
        """Whether ``conn`` sets itself up over TCP and TLS for HTTP/2 (module docstring)."""
        return conn.tls and conn.own_setup and not conn.h1 and conn.transport == "tcp" and conn.net.tcp_handshake

    def requested(self, conn: _Conn) -> None:
        """A request for ``conn``'s origin is made now."""
        group = self.groups.get(conn.key)
        if group is None:
            if not self.races(conn):
                return
            group = self.groups[conn.key] = _Group(conn)
            self.net.sim.call_later(BACKUP_CONNECT_S, self._backup, group)
        if group.winner is not None:
            return
        group.unbound += 1
        while self.per_request and len(group.jobs) < min(group.unbound, H1_CONNECTIONS_PER_ORIGIN):
            self._start(group)

    def _start(self, group: _Group) -> None:
        first = group.jobs[0]
        from .network import _Conn  # (network imports this module)

        # Its transport opens when the first's does (the origin's name resolved by then).
        job = _Conn(self.net, first.key, _FIRST_SPARE_NUMBER + len(self.spares), opens_at_s=first.opens_at_s)
        group.jobs.append(job)
        self.spares.append(job)

    def _backup(self, group: _Group) -> None:
        """The backup job: only while the first job's TCP handshake runs (Chromium starts none
        once the transport is up, TLS aside, and waits another interval while the name resolves)."""
        first = group.jobs[0]
        if first.t is None:
            self.net.sim.call_later(BACKUP_CONNECT_S, self._backup, group)
            return
        if group.winner is None and not first.t.client.established and len(group.jobs) < H1_CONNECTIONS_PER_ORIGIN:
            self._start(group)

    def done(self, conn: _Conn) -> bool:
        """``conn``'s TLS handshake is done on the client: True if it is the origin's connection
        from now on (the first done; the requests waiting on another job move to it), False if
        it stays idle."""
        group = self.groups.get(conn.key)
        if group is None or conn not in group.jobs:
            return True
        if group.winner is None:
            group.winner = conn
            current = self.net.conns[conn.key]
            if current is not conn:
                conn._waiting, current._waiting = current._waiting + conn._waiting, []
                self.net.conns[conn.key] = conn
        return group.winner is conn

    def idle(self) -> list[_Conn]:
        """The jobs that are no origin's connection (their transports count in the load's stats)."""
        return [c for g in self.groups.values() for c in g.jobs if c is not self.net.conns.get(c.key)]
