"""HTTP/1.1 connections as a browser's socket pool keeps them (Chromium's ClientSocketPool):
up to six per origin, one exchange at a time on each (no pipelining: RFC 9112 section 9.3.2
allows it, browsers do not use it), and a request bound to a connection only when one is free.

An idle connection that is set up (TCP's handshake, and TLS's for https) takes the next waiting
request.  While more requests wait than connections are being set up, new ones are opened, and
whichever is free first, a new one set up or one whose response has ended, takes the head of
the queue; the others stay in the pool, idle, for later requests.  So a request found while the
document's response still arrives goes on the document's connection once that is free, a round
trip before a new connection could carry it, as the lab's Chromium does at 300 ms.  A host's
first connection still in its TCP handshake after 250 ms gets a backup connect attempt beside
it (``BACKUP_CONNECT_S``), whose connection waits in the pool once up.

Written by hand: the browser's pool is part of the page-load model, not of a protocol library.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..stacks.common import ExchangeSpec
    from .network import ModelNetwork, _Conn

__all__ = ["H1Pool", "H1_CONNECTIONS_PER_ORIGIN", "BACKUP_CONNECT_S"]

H1_CONNECTIONS_PER_ORIGIN = 6  # as browsers open (HTML's fetch model leaves it to them)
# A host's first connection whose TCP handshake has not completed after this long gets a second
# connect attempt beside it (Chromium's ClientSocketPool::kMaxConnectRetryIntervalMs, Firefox's
# network.http.connection-retry-timeout): the one that loses the race stays in the pool, idle.
BACKUP_CONNECT_S = 0.250


class H1Pool:
    """The HTTP/1.1 origins' connections of one ``ModelNetwork`` and their waiting requests."""

    def __init__(self, net: ModelNetwork) -> None:
        self.net = net
        self.pools: dict[str, list[_Conn]] = {}  # origin -> its connections, in opening order
        self.busy: set[str] = set()  # keys of connections with an exchange
        self.queue: dict[str, deque] = {}  # origin -> requests waiting for a connection

    def fetch(self, origin: str, spec: ExchangeSpec) -> None:
        """A request for ``origin``: it waits for the first connection free."""
        self.queue.setdefault(origin, deque()).append(spec)
        self._next(origin)

    def ready(self, conn: _Conn) -> None:
        """``conn`` is set up: it takes the origin's next waiting request, in this event (as a
        connection sends a request it was holding once its handshake is done)."""
        if conn in self.pools.get(conn.origin, ()):  # else its opener assigns it
            self._next(conn.origin, at_once=True)

    def idle(self, conn: _Conn) -> None:
        """``conn``'s response has ended: it takes the origin's next waiting request."""
        self.busy.discard(conn.key)
        self._next(conn.origin)

    def _next(self, origin: str, at_once: bool = False) -> None:
        queue = self.queue.get(origin)
        if not queue:
            return
        net = self.net
        pool = self.pools.setdefault(origin, [])
        self._assign(pool, queue, at_once)
        setting_up = sum(1 for c in pool if not c.h1_up)
        while len(queue) > setting_up and len(pool) < H1_CONNECTIONS_PER_ORIGIN:
            conn = net.connect(f"{origin}#{len(pool)}", protocol="h1")
            pool.append(conn)
            if len(pool) == 1 and conn.own_setup and net.tcp_handshake:
                net.sim.call_later(BACKUP_CONNECT_S, self._backup, origin, conn)
            setting_up += not conn.h1_up
        self._assign(pool, queue, at_once)

    def _assign(self, pool: list, queue: deque, at_once: bool) -> None:
        """The waiting requests, in order, to the pool's idle connections that are set up; at
        once, or after the events of this instant (as requests are handed to connections)."""
        for conn in pool:
            if not queue:
                return
            if conn.h1_up and conn.key not in self.busy:
                self.busy.add(conn.key)
                if at_once:
                    conn.request(queue.popleft())
                else:
                    self.net.sim.call_soon(conn.request, queue.popleft())

    def _backup(self, origin: str, first: _Conn) -> None:
        """The backup connect attempt of a host's first connection (``BACKUP_CONNECT_S``): only
        while its TCP handshake is still running (Chromium starts none once the transport is
        up, TLS aside, and waits another interval while the name resolves)."""
        pool = self.pools[origin]
        if first.t is None:  # still before its handshake (DNS): Chromium waits another interval
            self.net.sim.call_later(BACKUP_CONNECT_S, self._backup, origin, first)
            return
        if first.t.client.established or len(pool) >= H1_CONNECTIONS_PER_ORIGIN:
            return
        pool.append(self.net.connect(f"{origin}#{len(pool)}", protocol="h1"))
        self._next(origin)
