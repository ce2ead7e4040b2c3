"""The page-load network over the real stacks: ``h2`` over the TCP model, ``aioquic``
HTTP/3 over the simulated link (``simulator.stacks``).  Written by hand.

One session (a real client and a real server) per connection key, opened when the
browser first needs it, all on one shared access path as in ``http.network``.  The server
side is ``stacks.endpoint.Endpoint``: 103 and pushes at once, the final response after the
spec's think time.  The browser's callbacks come from ``Recorder.listener``.

Differences that are the stacks' own, not the model's:
- h2 runs over the TCP model's three-way handshake and, with ``tls`` (the default), the
  real TLS 1.3 handshake and records (``stacks.tls``); the model runs the same TCP
  handshake and TLS flights of the sizes OpenSSL writes, as byte counts
  (``http.network``).  ``tls=False``: cleartext HTTP/2 with prior knowledge on both.
- aioquic has no CANCEL_PUSH: a push is cancelled with STOP_SENDING once its stream
  exists (its response headers arrived), RFC 9114 section 4.6 and RFC 9000 section 3.5.
- aioquic's client announces MAX_PUSH_ID once; it is set high enough here for the
  pushes a plan makes.
- Pushed bytes of a cancelled push: over h3 the client counts what still arrives until
  the server's RESET_STREAM; h2 drops DATA for a stream the client reset without an
  event, so there the count is what the server wrote (all of it: h2 writes into TCP at
  once, as the h2 stack over the TCP model does).
"""

from __future__ import annotations

from ..engine import Simulator
from ..net.conditions import handing_over
from ..net.transport import timer_counts
from ..stacks.common import ExchangeSpec, Recorder, StackParams

__all__ = ["StackNetwork"]


class StackNetwork:
    """The page-load network over the real h2 and aioquic stacks: one session per connection key."""

    def __init__(self, sim: Simulator, params, listener, *, server_end=None) -> None:
        self.sim, self.params, self.listener = sim, params, listener
        # The h2 server's class (``stacks.h2.H2Session``'s ``server_end``), e.g. one with a
        # scheduler of ``http.priority`` (``http.priority_stacks``); None: the stack's own.
        self.server_end = server_end
        self.path = params.network.path(sim, name="access")
        with handing_over(params.network):
            self.stack_params = StackParams(stack=params.protocol, rtt_s=params.rtt_s,
                                            bandwidth_bps=params.bandwidth_bps, loss=params.loss, seed=params.seed,
                                            queue_bytes=params.queue_bytes, cc=params.cc,
                                            idle_timeout_s=params.idle_timeout_s, max_push_id=1000,
                                            tls=params.tls or params.protocol == "h3")
        self.recorder = Recorder(sim)
        self.recorder.listener = self
        self.sessions: dict[str, object] = {}
        self.push_rows: list[dict] = []
        self._push_key: dict[int, int] = {}           # id(row) -> push key (lookups only)
        self._cancel_pending: set[int] = set()
        self._connect_at: dict[str, float] = {}

    def _session_cls(self):
        if self.params.protocol == "h2":
            from ..stacks.h2 import H2Session
            return H2Session
        from ..stacks.h3 import H3Session
        return H3Session

    def connect(self, key: str, **_ignored):
        """The session for ``key``, made now if new (after ``dns_s`` the first time).  The
        model backend's ``protocol`` / ``setup`` keywords do not apply: the stack is the
        load's protocol and times its own set-up."""
        session = self.sessions.get(key)
        if session is None:
            if self.params.dns_s and key not in self._connect_at:
                self._connect_at[key] = self.sim.now + self.params.dns_s
                self.sim.call_later(self.params.dns_s, self.connect, key)
                return None
            n = len(self.sessions)
            own = {"server_end": self.server_end} if self.server_end is not None else {}
            session = self._session_cls()(self.sim, self.path, self.stack_params, self.recorder, key,
                                          name=f"{self.params.protocol}{n}", **own)
            self.sessions[key] = session
        return session

    def fetch(self, key: str, spec: ExchangeSpec) -> None:
        """Send the request ``spec`` on ``key``'s session (once its DNS time has passed)."""
        session = self.connect(key)
        if session is None:                        # DNS still running
            self.sim.call_at(self._connect_at[key], self.fetch, key, spec)
            return
        row = self.recorder.new_row(kind="request", exchange=spec.index, origin=key,
                                    path=dict(spec.request_headers).get(b":path", b"").decode("latin-1"),
                                    start_s=self.sim.now, expected_body_bytes=spec.response_body_bytes)
        # After the session's own start-up events of this instant (aioquic's connect).
        self.sim.call_soon(session.request, spec, row)

    def cancel_push(self, push_key: int) -> None:
        """Cancel a push: reset its stream now, or when its response headers arrive (h3 has no CANCEL_PUSH here)."""
        row = self.push_rows[push_key]
        if row["stream_id"] >= 0:
            self._reset(row)
        else:
            self._cancel_pending.add(push_key)

    def reprioritize(self, index: int, signal) -> None:
        """The client sends a PRIORITY_UPDATE for resource ``index``'s response now (RFC 9218
        section 7.1: frame type 0x10 on stream 0 of HTTP/2; section 7.2: type 0xF0700 on the
        control stream of HTTP/3, written by ``http.priority_stacks_h3`` as aioquic has no API)."""
        if self.params.protocol == "h2":
            from ..http.priority_stacks import PRIORITY_UPDATE_FRAME, priority_update_payload

            def send(session, sid):
                session.client.send_extension_frame(PRIORITY_UPDATE_FRAME, priority_update_payload(sid, signal))
        else:
            from ..http.priority_stacks_h3 import send_priority_update

            def send(session, sid):
                send_priority_update(session.client, sid, signal)
        for session in self.sessions.values():
            for sid, (spec, _row) in list(session.client_rows.items()):
                if spec is not None and spec.index == index and isinstance(sid, int):
                    send(session, sid)

    def _reset(self, row: dict) -> None:
        end = self.sessions[row["origin"]].client
        end._write_reset(row["stream_id"])
        end.flush()
        self.recorder.end(row, reset="client")

    def push_bytes(self, push_key: int) -> int:
        """Pushed body bytes that crossed the path: what the client received, or for h2 what
        the server wrote (h2 hands it all to TCP at once, and drops DATA on a stream the
        client has reset without reporting it)."""
        row = self.push_rows[push_key]
        received = int(row["body_bytes"])
        if self.params.protocol == "h2" and row["stream_id"] >= 0:
            written = self.sessions[row["origin"]].server.data_bytes_written.get(row["stream_id"], 0)
            return max(received, written)
        return received

    # -- Recorder.listener ----------------------------------------------------------------
    def informational(self, row: dict, headers) -> None:
        """A 1xx arrived: hand its Link values to the browser."""
        self.listener.on_informational(row["exchange"], [v for n, v in headers if n == b"link"])

    def push_promised(self, row: dict, headers) -> None:
        """A push promise arrived: give it a push key and tell the browser its URL."""
        key = len(self.push_rows)
        self.push_rows.append(row)
        self._push_key[id(row)] = key
        h = dict(headers)
        url = (h.get(b":scheme", b"https").decode("latin-1") + "://" + h.get(b":authority", b"").decode("latin-1")
               + h.get(b":path", b"/").decode("latin-1"))
        self.listener.on_push_promise(key, url)

    def push_headers(self, row: dict) -> None:
        """A pushed response's headers arrived: reset the stream if its push was cancelled before it existed."""
        key = self._push_key.get(id(row))
        if key in self._cancel_pending:
            self._cancel_pending.discard(key)
            self._reset(row)

    def ended(self, row: dict) -> None:
        """A response ended (not by reset): tell the browser its request or push is complete."""
        if row["reset"]:
            return
        if row["kind"] == "request":
            self.listener.on_response_complete(row["exchange"])
        else:
            self.listener.on_push_complete(self._push_key[id(row)])

    def check(self) -> None:
        """Let every session check its own state."""
        for session in self.sessions.values():
            session.check()

    def stats(self) -> dict:
        """Sessions opened and packets sent and lost (or dropped) on the access path."""
        links = (self.path.forward.stats, self.path.reverse.stats)
        return {"connections": len(self.sessions),
                "packets_sent": sum(s.packets_sent for s in links),
                "packets_lost": sum(s.packets_lost + s.packets_dropped for s in links),
                **timer_counts(session.stats() for session in self.sessions.values())}
