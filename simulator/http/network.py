"""HTTP connections over the transport models (TCP for HTTP/1.1 and h2, QUIC for h3): the
network of the page-load model and of the replay model (``http.model_replay``), so
that both put HTTP on the models the same way.  Written by hand.

One shared access path (the client's bottleneck: every connection of the load shares
its bandwidth, queue and loss stream; ``own_paths=True``: a path per connection, as the
replay gives each origin), one ``TcpConnection`` or ``QuicConnection`` per connection
key (an HTTP/1.1 origin's connections: up to six, a request bound to the first free,
as a browser's socket pool keeps them, ``http.h1_pool``).  HTTP is modelled by sizes:
header blocks are sized as the real ``hpack`` encoder writes them
(``http.header_sizes.HeaderBlockSizer``: its choices and its dynamic table, one per
connection and direction, checked against hpack), frames add their headers (HTTP/2 9 bytes,
RFC 9113 section 4.1; HTTP/3 about 3, RFC 9114 section 7.1), requests carry their bodies,
and bodies are padding of their size, written as slices of one shared block
(``net.transport.write_padding``), so memory follows what is in flight.

Server behaviour, as the real stacks' (``stacks.endpoint.Endpoint``): when a request has
arrived the server sends at once its 103 (RFC 8297) and, for each push, a PUSH_PROMISE
on the request stream (RFC 9113 section 8.4.1 / RFC 9114 section 7.2.5: frame header,
promised stream or push id, header block) followed by the pushed response on a stream
of its own; ``think_s`` later the final response.

Response bodies and the order of the writer (``net.writer.ResponseWriter``) decide who
gets the connection (``scheduler``): ``urgency`` (RFC 9218: the lowest urgency first,
from the request's ``priority`` field, default 3; round-robin among equals, a packet's
worth per turn), ``round-robin``
(aioquic's stream rotation), or ``fifo`` (request order, as the h2 stack writes).  With
``urgency`` and ``round-robin`` the server writes as the transport drains, so a cancelled
push stops where it is: over TCP it keeps at most a congestion window written but not yet
acknowledged (at least two packets); over QUIC the endpoint pulls a packet's worth from
the rotation each time a packet may leave (``QuicEndpoint.on_send_ready``), as aioquic
builds packets from its streams' send buffers at send time.  With ``fifo`` each
response goes to the transport whole when it is ready, as the h2 stack hands everything
to TCP at once: a cancel cannot take back what was written.
With ``send_ahead=(windows, bytes)`` an HTTP/2 server over TCP commits that much more to its
socket than the window (``net.writer``'s ``ahead_windows`` and ``ahead_bytes``: a kernel's send
buffer and a server's own), sent in the order written: a response that comes ready later
queues behind what was committed before it, as behind a real server's buffers.
With ``tls_full_records`` the browser reads a response over TLS and TCP a whole record at a time
(records of 16 KiB, as OpenSSL writes a server's large buffer; RFC 8446 section 5.2: a record is
authenticated as a whole), so a child whose tag came early is found at its record's end; else as each
segment arrives (the one-segment records of dynamic record sizing).  Over QUIC, as each packet does.
With ``ModelNetwork(priorities=plan)`` (an ``http.priority.PriorityPlan``) a scheduler of
``http.priority`` picks the stream of every chunk instead, from each resource's signals
(RFC 9218 urgency and incremental, RFC 7540 tree placement), on every h2 and h3 connection.

Cancelling a push: the client writes a 13-byte RST_STREAM (HTTP/2) or STOP_SENDING
(QUIC, about the same size; sent once the pushed stream's first bytes have arrived, as
the aioquic client must, having no CANCEL_PUSH) on a fresh stream; the server stops the
pushed stream when that arrives.  What the server wrote of a pushed response until then
crosses the path anyway (the transport delivers what it was handed), so a push's bytes
are what the server wrote; the load runs on after the page is done until every push is
settled (written in full, or its cancel reached the server), as the cancel of a push for
a cached resource often lands after the page has loaded.

With ``linux_tcp`` (fidelity) TCP runs as a Linux server runs it (``net.tcp_window``): the
window in segments, grown only while it limits the sender, ACKs riding on data, and the
server's writes leaving at once as segments of their own (TCP_NODELAY), so OpenSSL's two
session tickets, the SETTINGS and their ACK take three of its ten first segments, and CUBIC
leaves slow start by HyStart (``cc.LinuxHyStart``) before a deep queue fills; but not to
``one_flight_servers`` (origins whose recorded first response shows a larger first flight).
Without it (push, coalescing, the replay model) TCP counts bytes, as under the stacks.
An origin in ``open_before`` (fidelity: a capture whose navigation reused a connection) has
its HTTP/2 or HTTP/3 connection open when the load begins: no handshake, no preface, a fresh
window.

Connection set-up, as the stacks pay it (after ``dns_s``): TCP runs its three-way
handshake (the client's bytes leave when the SYN-ACK arrives); with ``tls`` the TLS 1.3
full handshake follows as TCP bytes (ClientHello, the server's flight once all of it has
arrived, the client's Finished: one more round trip, RFC 8446 section 2) and every write
costs 22 bytes per record of up to 16 KiB; then the h2 connection preface and SETTINGS
(their bytes as the ``h2`` library writes them with the h2 stack's settings, each end's
SETTINGS ACK when the peer's bytes first arrive).  Header blocks over TCP are encoded
after h2's own normalisation, so with ``tls=False`` the model writes the h2 stack's bytes
at the h2 stack's instants and the two agree to the packet.  QUIC runs the QUIC model's
handshake (its server flight of aioquic's CRYPTO bytes, ``http.handshake``) with
aioquic's behaviours: 1 ms ACK delay, initial RTT 100 ms, lost data resent in its
stream's turn, exit from slow start on a rising RTT (``slow_start_rtt_exit``) and a
probe timeout that declares resent handshake datagrams lost (``pto_declares_lost``: from
200 ms RTT on, twice its initial RTT, no RTT sample from the handshake, so the first
window leaves unpaced, as aioquic's); requests wait in the client's send queue until the
handshake completes.  With ``lab_quic`` (fidelity) the client is Chromium: its ClientHello
comes in two shuffled pieces, which aioquic answers with a PING whose ACK gives the server
its RTT sample at any RTT (``chromium_client_hello``).  The servers' pacer is woken
``ASYNCIO_PACER_LATE_S`` late, as under hypercorn, and sends two packets per wake-up.
With ``connect_jobs`` a browser races connections to a new HTTP/2 origin over TLS
(``http.connect_jobs``: one per waiting request, and a backup after 250 ms), the first up carrying
the origin's requests; ``cert_chain_bytes`` (the servers' chain) and ``tls_client`` (the stacks'
OpenSSL or Chromium) size the TLS flights (``http.handshake.flights``).
A browser model that times handshakes itself (``ModelNetwork.connect(..., setup=...)``,
``studies.coalescing``) gets transports without a handshake of their own, usable after
its ``setup``.

The connections' server side (the mixin ``_ServerSide``), a stream's record on the client
(``_Incoming``) and ``urgency`` are in ``http.network_server``, re-exported here where public.

The fast path of ``_Conn._client_data`` (a chunk that only counts its bytes and meets marks)
has a C twin, ``simulator.http._network.ClientData`` (also hand-written), used when it is
built; the method stays the reference, and ``tests/test_page_size_cost.py`` checks that page
loads agree with and without it.  ``WORKBENCH_PURE_PYTHON=1`` selects the reference;
``WORKBENCH_NETWORK_EXT`` loads the extension from another build (``make asan``).
"""

from __future__ import annotations

import os

from h2.utilities import normalize_outbound_headers

from .._extension import load_extension
from ..engine import Simulator
from ..net.link import DelayedPath
from ..net.transport import TransportConfig, timer_counts, write_padding
from ..net.writer import response_writer
from ..stacks.common import ExchangeSpec
from ..stacks.tls import session_ticket_bytes, sni_name
from .connection import transport_for
from .framing import H2_FRAME_HEADER_BYTES, sized_body_bytes, sized_section_frame_bytes
from .handshake import TlsOverTcp, flights, tls_record_bytes
from .priority import make_scheduler, scheduled_writer
from .network_server import DEFAULT_URGENCY, _add_mark, _Incoming, _Pushes, _ServerSide, record_end, urgency
from .header_sizes import H2_SETTINGS_ACK_BYTES, HeaderBlockSizer, h1_header_bytes, h2_preface_bytes
from .connect_jobs import ConnectJobs
from .h1_pool import H1_CONNECTIONS_PER_ORIGIN, H1Pool

__all__ = ["ModelNetwork", "SCHEDULERS", "urgency", "AIOQUIC_ACK_DELAY_S", "H1_CONNECTIONS_PER_ORIGIN"]

AIOQUIC_ACK_DELAY_S = 0.001  # aioquic's QuicConnection._ack_delay (K_GRANULARITY)
# How late an aioquic server on an asyncio loop (the lab's hypercorn) wakes its pacer: the
# median of its qlog's paced wake-ups at 300 ms (0.6-1.9 ms); any lateness sends pairs.
ASYNCIO_PACER_LATE_S = 0.0007

_RESET_BYTES = H2_FRAME_HEADER_BYTES + 4  # RST_STREAM: frame header + error code (RFC 9113 section 6.4)
SCHEDULERS = ("urgency", "round-robin", "fifo")
_PLAIN = {tuple}


def _load_native():
    """The C twin of ``_Conn._client_data``'s fast path, or None (not built, or the reference asked for)."""
    if os.environ.get("WORKBENCH_PURE_PYTHON", "") not in ("", "0"):
        return None
    return load_extension("simulator.http._network", "WORKBENCH_NETWORK_EXT")


_NATIVE = _load_native()
_H3_KEY = "h3"  # an h3 block's memo key is (_H3_KEY, headers): never an h2 key (a tuple of fields)


class _Conn(_ServerSide):
    """One HTTP connection over a transport model: its set-up and client side here, its
    server side in ``_ServerSide`` (``http.network_server``)."""

    def __init__(
        self,
        net: "ModelNetwork",
        key: str,
        number: int,
        protocol: str | None = None,
        setup: float | None = None,
        opens_at_s: float | None = None,
    ) -> None:
        self.net, self.key, self.number = net, key, number
        sim, params = net.sim, net.params
        self.sim = sim
        self.origin = key.split("#", 1)[0]  # an HTTP/1.1 pool names its connections origin#k
        rtt_s, origin_protocol, setup_s = params.origin(self.origin)
        if opens_at_s is not None:  # another connect job of the origin: its name is resolved then
            setup_s = max(0.0, opens_at_s - sim.now)
        self.opens_at_s = sim.now + setup_s  # when its transport opens (DNS done)
        protocol = protocol or origin_protocol
        self.h1 = protocol == "h1"  # HTTP/1.1: one exchange at a time, text headers
        self.transport = "quic" if protocol == "h3" else "tcp"
        self.version = "h1" if self.h1 else "h3" if self.transport == "quic" else "h2"
        self.path = net.new_path(number) if net.own_paths else net.path_for(rtt_s)
        self.t = None
        self.h1_up = False  # HTTP/1.1: set up (TCP's handshake, and TLS's), so it can take a request
        self._h1_up_on_tcp = False  # ... which a cleartext one is when TCP's handshake is done
        self.tls_handshake: TlsOverTcp | None = None  # over TCP with ``tls``, while it runs
        self.tls_stream: int | None = None  # the TLS handshake's bytes (TCP stream label)
        self.h2_control: tuple[int, int] | None = None  # h2: the client's and server's SETTINGS (labels)
        self._settings_acked = [False, False]  # h2: client, server sent its SETTINGS ACK
        self.accepting = False  # requests may be handed to the transport
        self._waiting: list[ExchangeSpec] = []  # requests made before that
        self.request_encoder, self.response_encoder = HeaderBlockSizer(), HeaderBlockSizer()
        self.incoming: dict[int, _Incoming] = {}
        self.requests: dict[int, ExchangeSpec] = {}  # client stream -> spec (both ends in one process)
        self.cancels: dict[int, int] = {}  # client stream carrying a cancel -> pushed stream
        self.cancelled: set[int] = set()
        self._cancel_on_arrival: set[int] = set()  # h3 pushes to cancel when their stream exists
        self._client_quiet = False  # _client_data's fast path applies (_quiet())
        self.written: dict[int, int] = {}  # bytes the server has written per stream
        # The writer (net.writer): per urgency level a rotation of responses; made with the transport.
        self.scheduler = params.scheduler
        self.writer = None
        self._chunk_bytes = 1460 if self.transport == "tcp" else net.max_datagram_bytes - 40
        # Open before the load began (``ModelNetwork(open_before=...)``): through its handshakes
        # and preface already, a fresh window (Linux restarts it after an idle RTO, RFC 5681 4.1).
        self.warm = setup is None and not self.h1 and self.origin in net.open_before
        self.own_setup = setup is None and not self.warm
        # TLS follows the scheme: an http:// origin's connections are cleartext.
        self.tls = (
            self.transport == "tcp"
            and params.tls
            and (self.own_setup or self.warm)
            and not self.origin.startswith("http:")
        )
        if self.h1:
            self.scheduler = "fifo"  # one response at a time on an HTTP/1.1 connection
        # A scheduler of http.priority (``ModelNetwork(priorities=...)``) decides each chunk's stream.
        self.prioritized = net.priorities is not None and not self.h1
        if self.prioritized:
            self.scheduler = net.priorities.scheduler
        # QUIC: the endpoint pulls a packet's worth at send time (the writer's ``pull``).
        self.pull = self.transport == "quic" and (self.prioritized or self.scheduler != "fifo")
        if setup is not None:
            # A browser model that times DNS and handshakes itself (studies.coalescing): a
            # transport without a handshake of its own, usable after ``setup`` seconds.
            self._open(handshake=False)
            sim.call_later(setup, self._accept)
        elif self.warm:
            self._open(handshake=False)
            sim.call_later(0.0, self._accept)
        elif setup_s:
            sim.call_later(setup_s, self._open)
        else:
            self._open()

    def _open(self, handshake: bool = True) -> None:
        """Open the transport connection with its own handshake, as the stacks' are: TCP's
        three-way handshake (and with ``tls`` the TLS 1.3 flights as TCP bytes), or QUIC's
        handshake model."""
        sim, params, number = self.sim, self.net.params, self.number
        # The transport as every HTTP connection over the models gets it (``connection.transport_for``).
        if self.transport == "tcp":
            linux = self.net.linux_tcp and self.origin not in self.net.one_flight_servers
            self.t = transport_for(
                sim,
                self.path,
                "h2",
                TransportConfig(cc=params.cc, cwnd_in_packets=linux, hystart=linux),
                name=f"tcp{number}",
                handshake=handshake and self.net.tcp_handshake,
            )
            if linux:
                self.t.server.nodelay = True  # as HTTP/2 servers set TCP_NODELAY
        else:
            lab = self.net.lab_quic
            config = TransportConfig(
                cc=params.cc,
                initial_rtt_s=0.1,  # aioquic's initial RTT
                max_datagram_bytes=self.net.max_datagram_bytes,
                pacer_late_s=ASYNCIO_PACER_LATE_S if lab else 0.0,
            )
            # As http.model_replay: aioquic's 1 ms ACK delay, its pacing (the model's
            # default), lost data resent in its stream's turn, and the handshake's datagrams
            # (requests wait in the client's send queue until the handshake completes).
            self.t = transport_for(
                sim,
                self.path,
                "h3",
                config,
                name=f"quic{number}",
                handshake=handshake,
                ack_delay_s=AIOQUIC_ACK_DELAY_S,
                retransmit_in_turn=True,
                slow_start_rtt_exit=True,
                pto_declares_lost=True,
                chromium_client_hello=lab,
                server_flight_bytes=self.net.flights(self.origin).quic_server_crypto,
            )
        if self.prioritized:
            self.writer = scheduled_writer(
                self.t.server,
                self._chunk_bytes,
                self.written,
                self._written_in_full,
                fill_on_ack=self.transport == "tcp",
                scheduler=make_scheduler(self.scheduler),
                qlog=self.net.priorities.qlog_trace(self.key, sim, self.transport),
            )
        else:
            self.writer = response_writer(
                self.t.server,
                self._chunk_bytes,
                self.written,
                self._written_in_full,
                fill_on_ack=self.transport == "tcp",
            )
        if self.transport == "tcp" and any(self.net.send_ahead) and not self.h1:
            self.writer.ahead_windows, self.writer.ahead_bytes = self.net.send_ahead
        self.t.server.on_stream_acked = self.writer.on_stream_acked
        if self.pull:
            # A packet's worth per call: the writer's own (C for the C QUIC endpoint, a scheduler's too).
            self.t.server.on_send_ready = self.writer.pull
        self.t.client.on_data = self._client_data if _NATIVE is None else _NATIVE.ClientData(self, self._client_data)
        if self.h1 and not self.tls and handshake and self.transport == "tcp" and self.net.tcp_handshake:
            self._h1_up_on_tcp = True
            self.t.client.on_established = self._h1_ready
        self.t.server.on_data = self._server_data
        self._quiet()
        if not handshake:
            return
        if self.transport == "tcp":
            # The h2 server's SETTINGS and WINDOW_UPDATE (RFC 9113 section 3.4), written at
            # once as the h2 stack does; TCP sends them when the handshake completes.
            # HTTP/1.1 has no preface (RFC 9112).
            self.h2_control = None if self.h1 else (self.t.client.open_stream(), self.t.server.open_stream())
            self._quiet()
            if self.tls:
                # TLS 1.3 (RFC 8446 section 2), flights of the sizes the real stack's OpenSSL
                # writes for this origin's SNI; the requests right after the client's Finished,
                # the server's SETTINGS once that is in (no 0.5-RTT data).
                self.tls_handshake = TlsOverTcp(
                    self.t, self.net.flights(self.origin), self._accept, None if self.h1 else self._server_settings
                )
                self.tls_stream = self.tls_handshake.stream_id
                return
            if not self.h1:  # cleartext HTTP/2: the preface at once; cleartext HTTP/1.1: nothing
                self.t.server.write(self.h2_control[1], b"s" * h2_preface_bytes(False))
        self._accept()

    def _server_settings(self) -> None:
        if getattr(self.t.server, "nodelay", False):
            # OpenSSL's two session tickets (RFC 8446 4.6.1) after the client's Finished: a write of their own.
            self.t.server.write(self.tls_stream, b"t" * session_ticket_bytes())
        self.t.server.write(self.h2_control[1], b"s" * self._records(h2_preface_bytes(False)))

    def _accept(self) -> None:
        """From now on requests go to the transport (over h2 after the client's preface)."""
        if self.net.jobs is not None and not self.net.jobs.done(self):
            return  # a connect job that lost the race: set up, idle (``http.connect_jobs``)
        self.accepting = True
        if self.net.on_connected is not None:
            self.net.on_connected(self.key, self.version)
        if self.transport == "tcp" and self.own_setup and not self.h1:
            self.t.client.write(self.h2_control[0], b"p" * self._records(h2_preface_bytes(True)))
        waiting, self._waiting = self._waiting, []
        for spec in waiting:
            self.request(spec)
        if self.h1 and not self._h1_up_on_tcp:
            self._h1_ready()

    def _h1_ready(self) -> None:
        """HTTP/1.1: the connection is set up; it takes the origin's next waiting request."""
        self.h1_up = True
        self.net.h1_pool.ready(self)

    # -- client -----------------------------------------------------------------------
    def request(self, spec: ExchangeSpec) -> None:
        if not self.accepting:
            current = self.net.conns.get(self.key, self)
            if current is not self:  # another connect job won the race since
                current.request(spec)
                return
            self._waiting.append(spec)
            return
        sid = self.t.client.open_stream()
        self.requests[sid] = spec
        inc = self.incoming[sid] = _Incoming(index=spec.index)
        if self.net.on_response_start is not None:
            inc.marks.append((1, self.net.on_response_start, (spec.index,)))
        if self.net.response_marks is not None:
            whole = self.tls and self.transport == "tcp" and self.net.tls_full_records
            for mark in self.net.response_marks(spec.index):
                _add_mark(inc, record_end(mark) if whole else mark)
        block = self._block(self.request_encoder, spec.request_headers)
        body = self._body_wire_bytes(spec.request_body_bytes)
        # A request body is written as slices of a shared block (``write_padding``): a body
        # declared at gigabytes costs what is in flight, not its size.
        write_padding(self.t.client, sid, self._records(block + self._frame + body), end=True, fill=b"q")

    def cancel(self, pushed_sid: int) -> None:
        if self.transport == "quic" and not self.incoming[pushed_sid].received:
            # As the aioquic client must (it has no CANCEL_PUSH, RFC 9114 section 7.2.3):
            # STOP_SENDING once the pushed stream exists, i.e. its first bytes arrived.
            self._cancel_on_arrival.add(pushed_sid)
            self._quiet()
            return
        sid = self.t.client.open_stream()
        self.cancels[sid] = pushed_sid
        self.t.client.write(sid, b"c" * self._records(_RESET_BYTES), end=True)

    def _quiet(self) -> None:
        """Whether a chunk of a response or push in flight can only count its bytes and meet
        marks: the server's SETTINGS are acknowledged (or there are none), no cancel waits."""
        self._client_quiet = (self.h2_control is None or self._settings_acked[0]) and not self._cancel_on_arrival

    def _client_data(self, stream_id: int, data: bytes, end: bool, time_s: float) -> None:
        inc = self.incoming.get(stream_id)  # None on the TLS and SETTINGS streams
        if inc is not None and not end and self._client_quiet:
            # Most chunks: what the general path below does with them, in fewer steps.
            inc.received += len(data)
            marks = inc.marks
            while marks and marks[0][0] <= inc.received:
                _, callback, args = marks.popleft()
                callback(*args)
            return
        if stream_id == self.tls_stream:
            self.tls_handshake.client_data(len(data))
            return
        if self.h2_control is not None and not self._settings_acked[0]:
            self._settings_acked[0] = True  # the server's SETTINGS came first (RFC 9113 6.5.3)
            self._quiet()
            self.t.client.write(self.h2_control[0], b"a" * self._records(H2_SETTINGS_ACK_BYTES))
        if stream_id == (self.h2_control or (None, None))[1]:
            return
        inc = self.incoming.get(stream_id)
        if inc is None:
            return
        inc.received += len(data)
        if stream_id in self._cancel_on_arrival:
            self._cancel_on_arrival.discard(stream_id)
            self._quiet()
            self.cancel(stream_id)
        marks = inc.marks
        while marks and (end or marks[0][0] <= inc.received):  # the end meets a record's end past it
            _, callback, args = marks.popleft()
            callback(*args)
        if end and not inc.ended:
            inc.ended = True
            if inc.push_key is None:
                if self.h1:
                    self.net.h1_pool.idle(self)
                self.net.listener.on_response_complete(inc.index)
            elif inc.promised:
                self.net.listener.on_push_complete(inc.push_key)

    def _promise_arrived(self, pushed_sid: int, url: str) -> None:
        inc = self.incoming[pushed_sid]
        inc.promised = True
        self.net.listener.on_push_promise(inc.push_key, url)
        if inc.ended:
            self.net.listener.on_push_complete(inc.push_key)

    def _block(self, encoder: HeaderBlockSizer, headers) -> int:
        """Bytes of a header block.  Over TCP as the h2 stack encodes it: the ``h2`` library's
        normalisation first (short cookies and credentials never indexed, RFC 7541 section
        7.1.3), so the sizes are the stack's own.  HTTP/1.1: the header section as text."""
        if self.h1:
            return h1_header_bytes(headers)
        if type(headers) is not tuple:
            headers = tuple(headers)
        # Memoized for plain tuples only: h2 keeps a HeaderTuple's class (never-indexed or
        # not), and an equal plain tuple must not share its cache entry.
        plain = set(map(type, headers)) <= _PLAIN
        if self.transport == "tcp":
            if plain:
                return encoder.h2_block_size(headers)
            headers = tuple(normalize_outbound_headers(headers, None))
        elif plain:  # h3: no normalisation; its own keys (an h2 key is a tuple of fields)
            return encoder.block_size((_H3_KEY, headers), headers)
        return encoder.encoded_size(headers)

    @property
    def _frame(self) -> int:
        """Bytes of the frame header that carries a header block (none in HTTP/1.1)."""
        return sized_section_frame_bytes(self.version)

    def _body_wire_bytes(self, body: int) -> int:
        return sized_body_bytes(self.version, body)  # framing's size accounting

    def _records(self, nbytes: int) -> int:
        """``nbytes`` written at once, as TLS 1.3 records of up to 16 KiB over TCP with ``tls``."""
        return tls_record_bytes(nbytes) if self.tls else nbytes


class ModelNetwork(_Pushes):
    """Connections over the transport models for one page load (see the module docstring)."""

    def __init__(
        self,
        sim: Simulator,
        params,
        listener,
        *,
        own_paths: bool = False,
        max_datagram_bytes: int = TransportConfig.max_datagram_bytes,
        tcp_handshake: bool = True,
        priorities=None,
        linux_tcp: bool = False,
        lab_quic: bool = False,
        one_flight_servers=frozenset(),
        open_before=frozenset(),
        send_ahead: tuple[int, int] = (0, 0),
        tls_full_records: bool = False,
        connect_jobs: str | None = None,
        cert_chain_bytes: int | None = None,
        tls_client: str = "stack",
    ) -> None:
        self.sim, self.params, self.listener = sim, params, listener
        # HTTP/2 origins' racing connections, as a browser opens them (``http.connect_jobs``).
        self.jobs = None if connect_jobs is None else ConnectJobs(self, connect_jobs)
        # The servers' certificate chain (DER bytes; None: the stacks') and the TLS client's flights.
        self.cert_chain_bytes, self.tls_client = cert_chain_bytes, tls_client
        if min(send_ahead) < 0:
            raise ValueError(f"send_ahead must be (windows, bytes) >= 0, got {send_ahead}")
        if any(send_ahead) and priorities is not None:
            raise ValueError("send_ahead is for the servers' own order (a scheduling server keeps only the window)")
        self.send_ahead = send_ahead
        self.tls_full_records = tls_full_records  # a response's bytes readable a whole TLS record at a time
        self.priorities = priorities  # an http.priority.PriorityPlan: its scheduler on every h2/h3 connection
        self.path = params.network.path(sim, name="access")
        self.conns: dict[str, _Conn] = {}
        self._paths: dict[float, object] = {params.rtt_s: self.path}
        self.h1_pool = H1Pool(self)  # HTTP/1.1 origins' connections and waiting requests
        self.push_urgency = getattr(params, "push_urgency", DEFAULT_URGENCY)
        self.own_paths, self.max_datagram_bytes, self.tcp_handshake = own_paths, max_datagram_bytes, tcp_handshake
        self.linux_tcp = linux_tcp  # TCP as a Linux server runs it (module docstring), but to
        self.one_flight_servers = one_flight_servers  # these origins
        self.lab_quic = lab_quic  # QUIC between Chromium and aioquic on an event loop (module docstring)
        self.open_before = open_before  # origins whose (h2/h3) connection was open before the load began
        self.on_response_start = getattr(listener, "on_response_start", None)
        self.on_connected = getattr(listener, "on_connected", None)  # (key, "h1"/"h2"/"h3"): usable
        # The browser's byte offsets into a response to be called at (children found while it streams in).
        self.response_marks = getattr(listener, "response_marks", None)
        self.unsettled: set = set()  # pushes neither written in full nor stopped by a cancel

    def connect(self, key: str, *, protocol: str | None = None, setup: float | None = None) -> _Conn:
        """The connection ``key``, opened now if new: over ``protocol`` (default the load's)
        and usable after ``setup`` seconds (default: the transports' own handshakes), for a browser
        model that times DNS and handshakes itself (``studies.coalescing``)."""
        conn = self.conns.get(key)
        if conn is None:
            conn = self.conns[key] = _Conn(self, key, len(self.conns), protocol, setup)
        return conn

    def flights(self, origin: str):
        """The TLS handshake's sizes to ``origin`` (``http.handshake.flights``)."""
        return flights(sni_name(origin), self.cert_chain_bytes, self.tls_client)

    def new_path(self, number: int):
        """A path of its own for connection ``number``."""
        return self.params.network.path(self.sim, name=f"path{number}")

    def path_for(self, rtt_s: float):
        """The path to a server ``rtt_s`` away: the access path, or through it and farther."""
        path = self._paths.get(rtt_s)
        if path is None:
            path = self._paths[rtt_s] = DelayedPath(self.path, rtt_s - self.params.rtt_s)
        return path

    def fetch(self, key: str, spec: ExchangeSpec) -> None:
        """Send the request of ``spec`` on connection ``key`` (HTTP/1.1: on a free connection of the origin)."""
        # After the connections' own start-up events of this instant (a new connection's
        # SYN or Initial), as stack_net hands requests to the stacks: on the shared link,
        # who goes first at one instant is who is served first.
        if self.params.origin(key)[1] == "h1":
            self.h1_pool.fetch(key, spec)
            return
        conn = self.connect(key)
        if self.jobs is not None:
            self.jobs.requested(conn)
        self.sim.call_soon(conn.request, spec)

    def reprioritize(self, index: int, signal) -> None:
        """The client sends a PRIORITY_UPDATE for resource ``index``'s response now (RFC 9218
        section 7; its few bytes not modelled): the server's scheduler has the new signals
        a one-way delay later (connections with a scheduler of ``http.priority`` only)."""
        for conn in self.conns.values():
            for sid, spec in conn.requests.items():
                if spec.index == index and conn.prioritized and conn.writer is not None:
                    one_way_s = self.params.origin(conn.origin)[0] / 2
                    self.sim.call_later(one_way_s, conn.writer.update, sid, signal)

    def check(self) -> None:
        """The models never give up; the run loop's deadline catches a load that cannot end."""

    def release(self) -> None:
        """Break the cycles of every connection whose transport can (QUIC's ``release``): the
        load is over and read, so what they held is freed by reference counts, not by a collection."""
        for conn in self.conns.values():
            release = getattr(conn.t, "release", None)
            if release is not None:
                release()

    def stats(self) -> dict:
        """Connections opened, packets sent and lost (queue drops included) on the shared path,
        and the transports' retransmission timer counts (``transport.TIMER_KEYS``)."""
        links = (self.path.forward.stats, self.path.reverse.stats)
        every = [*self.conns.values(), *(self.jobs.idle() if self.jobs is not None else ())]  # idle jobs' too
        return {
            "connections": len(self.conns),
            "packets_sent": sum(s.packets_sent for s in links),
            "packets_lost": sum(s.packets_lost + s.packets_dropped for s in links),
            # (a transport with ``timer_stats``, QUIC's, gives those counts alone)
            **timer_counts(getattr(c.t, "timer_stats", c.t.stats)() for c in every if c.t is not None),
        }
