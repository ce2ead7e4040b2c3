"""Serve a rebuilt site (``simulator.lab.site``) from every origin's own address.

``python -m simulator.lab.serve SITE_DIR --proto h2|h3`` binds, for every origin of the
site, its host's address and port (443 for https, 80 for http, or the recorded port):
https over TLS 1.3 with ALPN ``h2`` only (RFC 9113 3.2), and for ``h3`` also QUIC on the
same UDP port (RFC 9114 3.1; the browser is forced onto it, the TCP listener stays as the
fallback); http origins are served in clear (HTTP/1.1, RFC 9112).  It prints one line
``ready`` when every listener is up, serves until SIGTERM or SIGINT and exits 0.  A bad
site folder or a listener that cannot be bound: one line on stderr, exit 2.

The server is ``hypercorn`` (``h2``, ``aioquic``), one process for every origin: the app
picks the site's response by the request's scheme and ``Host`` (``:authority``), sleeps
the recorded server time (wall clock: the lab measures, it does not simulate), and sends
status, content type, content coding and the prepared body; ``Location`` on a 3xx; 404
for what the page does not define.  Responses allow any origin (``access-control-allow-
origin: *``) so cross-origin fetches and fonts load as they did on the recorded page, and
say ``cache-control: no-store`` so every lab load is a first view.  Hand-written here: the
app and the listener plan.

103 Early Hints (``--hints FILE``, policy ``hints`` of ``lab-load``): on the document's
request the app sends one 103 (RFC 8297 section 2) whose Link values are the file's (the push
study's ``early_hints`` of the page: preload for the render-blocking sub-resources, preconnect
for the other origins), at once, before the document's server time; Chromium follows only the
first 103 of a navigation.  Chromium fetches a 103's preloads into its HTTP cache and the page
then takes them from there, so the hinted responses are sent cacheable (``max-age``) instead of
``no-store``; every load has a fresh profile, so nothing carries over.  ``--document-think
100ms`` replaces the document's recorded server time, the time the 103 has to act in.
``--log FILE`` appends one JSON line per response (the request's arrival, the 103's and the
response's start on the monotonic clock, the request's ``Priority`` field) for the lab to check
what the browser did before the final response and what it signalled.

``--scheduler NAME`` (a scheduler of the priorities study, ``http.priority``): the servers send
their responses' bytes in the order it picks, with the signals the browser sent
(``lab.schedule``); without it, in their own order (``SERVER_SCHEDULER``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import json
import signal
import socket
import sys
import tempfile
import time

from ..errors import InputError
from .site import RebuiltSite

__all__ = ["SiteApp", "serve", "main"]

PROTOCOLS = ("h2", "h3")
# The servers' congestion control (the models' --cc): named, not the system default, so that the
# lab's senders and the models' run the same algorithm (NewReno or CUBIC; the kernel's default
# on this kind of machine is BBR, which the models do not have).
CONGESTION_CONTROLS = ("reno", "cubic")
CONGESTION_CONTROL = "cubic"
# The order the servers send their responses' bytes in, as the page-load model's
# ``LoadParams.scheduler`` names it, for predicting the lab: hypercorn's HTTP/2 follows the
# browser's priorities (its RFC 7540 tree, which Chromium's exclusive chain makes an order by
# urgency); its HTTP/3 is aioquic, which sends its streams round-robin, a packet's worth each,
# whatever their priority (``QuicConnection._write_application``'s stream queue).
SERVER_SCHEDULER = {"h2": "urgency", "h3": "round-robin"}
# The UDP payload of the HTTP/3 server's datagrams: aioquic's ``QuicConfiguration.max_datagram_size``
# default, which hypercorn keeps (RFC 9000 section 14's least); aioquic does no path MTU
# discovery, so every packet it sends is at most this.  The QUIC model's default is 1252.
QUIC_DATAGRAM_BYTES = 1200
# What the HTTP/2 server commits to its socket beyond the TCP window, (windows, bytes): hypercorn
# writes each response's frames as they come ready, in that order; Linux keeps about one
# window unsent in the socket's buffer (``tcp_sndbuf_expand``: twice the window's segments), and
# asyncio's TLS transport pauses hypercorn's writes only once its high-water mark waits above
# it (``asyncio.constants.FLOW_CONTROL_HIGH_WATER_SSL_WRITE``, in KiB: 512; measured with ``ss``
# in ``lab shell``: 0.5-0.6 MB ahead of the wire).  A document that comes ready after its 103's
# preloads queues behind them.  Over HTTP/3 aioquic builds each packet from its streams' buffers
# in turn, so what it holds does not queue in one order.
H2_SEND_AHEAD = (1, asyncio.constants.FLOW_CONTROL_HIGH_WATER_SSL_WRITE * 1024)
# Its TLS is OpenSSL's (Python's ``ssl``), which cuts a write into records of 16 KiB: Chromium
# reads a document's first tags only once the record that holds them is whole, where over
# HTTP/3 they come with the first packet (measured: at 300 ms a 12 KB document's children
# were asked for at its end over HTTP/2, 20 ms after its first byte over HTTP/3).


def model_servers(protocol: str, trace=None) -> dict:
    """The fidelity study's ``FidelityParams`` fields that make the model's servers send as the
    lab's do over ``protocol`` (h2 or h3); with ``trace`` (a HAR of the rebuilt page) their
    certificate chain too: the lab's, naming the trace's hosts (``certs.chain_der_bytes``)."""
    from .certs import chain_der_bytes
    from .site import authority_of

    hosts = () if trace is None else tuple(dict.fromkeys(authority_of(e.url)[0] for e in trace if e.url))
    return {
        **({"server_cert_chain_bytes": chain_der_bytes(hosts)} if hosts else {}),
        "server_scheduler": SERVER_SCHEDULER[protocol],
        "quic_datagram_bytes": QUIC_DATAGRAM_BYTES,
        **({"server_send_ahead": H2_SEND_AHEAD, "server_tls_full_records": True} if protocol == "h2" else {}),
    }


def _available_cc() -> str:
    try:
        with open("/proc/sys/net/ipv4/tcp_available_congestion_control", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "(unknown)"


def _quic_configuration(cc: str, qlog: str | None = None) -> None:
    """hypercorn makes each QUIC connection's configuration itself: have it name ``cc``
    (aioquic's ``congestion_control_algorithm``) and, with ``qlog`` (a folder), log every
    connection there as it goes (``lab.qlog``; this process serves the lab only)."""
    import functools

    import hypercorn.protocol.quic as hypercorn_quic
    from aioquic.quic.configuration import QuicConfiguration

    logger = {}
    if qlog is not None:
        from .qlog import StreamingQlog

        logger["quic_logger"] = StreamingQlog(qlog)
    hypercorn_quic.QuicConfiguration = functools.partial(QuicConfiguration, congestion_control_algorithm=cc, **logger)


HINTED_CACHE_CONTROL = b"max-age=600"  # a 103's preload must be reusable from the HTTP cache


class SiteApp:
    """The ASGI app of a rebuilt site; ``log`` lists (scheme, authority, path, status) served.

    ``hints``: ``{"document_url": URL, "links": [Link value, ...]}``, the 103 sent on that
    document's request; ``document_think_s`` replaces the document's recorded server time;
    ``timeline``: a text file to append one JSON line per response to."""

    def __init__(
        self, site: RebuiltSite, *, hints: dict | None = None, document_think_s: float | None = None, timeline=None
    ):
        self.site = site
        self.log: list[tuple[str, str, str, int]] = []
        self.hints = hints if hints and hints.get("links") else None
        self.document_url = (hints or {}).get("document_url") or site.page_url
        self.document_think_s = document_think_s
        self.timeline = timeline
        self._preloads = {url for url, rel in map(_link_target, (self.hints or {}).get("links", ())) if rel}
        self._by_address = {}
        for origin in site.origins:
            from .site import authority_of

            host, port = authority_of(origin)
            self._by_address.setdefault((site.hosts[host], port), origin.split("://", 1)[1])

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            from ..capture.server import lifespan

            return await lifespan(receive, send)
        if scope["type"] != "http":
            return
        arrived = time.monotonic()
        hinted_at = None
        authority = next((v.decode("latin-1") for n, v in scope["headers"] if n == b"host"), None)
        if authority is None:  # no Host: the listener's own origin
            server = scope.get("server") or ("", 0)
            authority = self._by_address.get((server[0], server[1]), "")
        path = scope.get("raw_path", b"").decode("latin-1") or scope["path"]
        if scope.get("query_string") and "?" not in path:
            path += "?" + scope["query_string"].decode("latin-1")
        r = self.site.response(scope["scheme"], authority, path)
        headers = [
            (b"access-control-allow-origin", b"*"),
            (b"timing-allow-origin", b"*"),
            (b"cache-control", b"no-store"),
        ]
        if r is None:
            status, body = 404, b"not found\n"
            headers.append((b"content-type", b"text/plain"))
        else:
            think_s = r.think_s
            if r.url == self.document_url:
                if self.hints is not None and "http.response.early_hint" in (scope.get("extensions") or {}):
                    # RFC 8297 section 2: the 103 goes out before the server has the final response.
                    await send(
                        {
                            "type": "http.response.early_hint",
                            "links": [v.encode("latin-1") for v in self.hints["links"]],
                        }
                    )
                    hinted_at = time.monotonic()
                if self.document_think_s is not None:
                    think_s = self.document_think_s
            if think_s > 0:
                await asyncio.sleep(think_s)
            if r.url in self._preloads:
                headers[-1] = (b"cache-control", HINTED_CACHE_CONTROL)
            status, body = r.status, r.body
            headers.append((b"content-type", r.content_type.encode("latin-1")))
            if r.content_encoding and body:
                headers.append((b"content-encoding", r.content_encoding.encode()))
            if r.location:
                headers.append((b"location", r.location.encode("latin-1")))
        no_body = status in (204, 304) or status < 200
        if not no_body:
            headers.append((b"content-length", str(len(body)).encode()))
        self.log.append((scope["scheme"], authority, path, status))
        if self.timeline is not None:
            self.timeline.write(
                json.dumps(
                    {
                        "url": r.url if r is not None else f"{scope['scheme']}://{authority}{path}",
                        "status": status,
                        "http_version": scope.get("http_version"),
                        "priority": next((v.decode("latin-1") for n, v in scope["headers"] if n == b"priority"), None),
                        "arrived_s": arrived,
                        "early_hints_s": hinted_at,
                        "response_s": time.monotonic(),
                    }
                )
                + "\n"
            )
            self.timeline.flush()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if no_body else body, "more_body": False})


def _link_target(value: str) -> tuple[str, bool]:
    """A Link value's target URL and whether it is a preload (RFC 8288 section 3)."""
    target, _, params = value.partition(";")
    rels = [p.split("=", 1)[1].strip().strip('"') for p in params.split(";") if p.strip().startswith("rel=")]
    return target.strip().lstrip("<").rstrip(">"), any("preload" in r.split() for r in rels)


def _bind(kind: int, address: str, port: int, cc: str = CONGESTION_CONTROL) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    s = socket.socket(family, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if kind == socket.SOCK_STREAM:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            # The kernel sender's congestion control, named on the listener (accepted
            # connections inherit it): the system default may be another (BBR here).
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        except OSError as exc:
            s.close()
            raise InputError(
                f"cannot use TCP congestion control {cc!r} ({exc.strerror}); the kernel lists "
                f"{_available_cc()} and naming one not in tcp_allowed_congestion_control needs "
                f"root."
            ) from None
    try:
        s.bind((address, port))
    except OSError as exc:
        s.close()
        proto = "TCP" if kind == socket.SOCK_STREAM else "UDP"
        raise InputError(
            f"cannot listen on {proto} {address}:{port} ({exc.strerror}); the address must be "
            f"on an interface of this namespace and ports below 1024 need root."
        ) from None
    s.setblocking(False)
    return s


async def serve(
    site: RebuiltSite,
    proto: str,
    stop: asyncio.Event,
    on_ready=None,
    *,
    app: SiteApp | None = None,
    cc: str = CONGESTION_CONTROL,
    qlog: str | None = None,
) -> SiteApp:
    """Serve ``site`` over ``proto`` until ``stop`` is set; ``on_ready()`` once every listener is up;
    ``app``: the site's app when it is not the plain one (103 hints, a document think time);
    ``cc``: the congestion control of the server's TCP (the kernel's) and QUIC (aioquic's) senders;
    ``qlog``: a folder for the QUIC connections' qlog (one ``.sqlog`` each)."""
    from hypercorn.asyncio.run import worker_serve
    from hypercorn.config import Config, Sockets
    from hypercorn.utils import wrap_app

    if proto not in PROTOCOLS:
        raise InputError(f"--proto must be one of {', '.join(PROTOCOLS)}, not {proto!r}.")
    if cc not in CONGESTION_CONTROLS:
        raise InputError(f"--cc must be one of {', '.join(CONGESTION_CONTROLS)}, not {cc!r}.")
    _quic_configuration(cc, qlog)
    secure, insecure, quic = [], [], []
    app = app if app is not None else SiteApp(site)
    with tempfile.TemporaryDirectory(prefix="workbench-lab-") as tmp:
        try:
            for scheme, address, port in site.listeners():
                if scheme == "https":
                    secure.append(_bind(socket.SOCK_STREAM, address, port, cc))
                    if proto == "h3":
                        quic.append(_bind(socket.SOCK_DGRAM, address, port))
                else:
                    insecure.append(_bind(socket.SOCK_STREAM, address, port, cc))
        except BaseException:
            for s in secure + insecure + quic:
                s.close()
            raise
        for name, text in (("chain.pem", site.tls["cert_pem"] + site.tls["ca_pem"]), ("key.pem", site.tls["key_pem"])):
            fd = os.open(os.path.join(tmp, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        config = Config()
        config.certfile = os.path.join(tmp, "chain.pem")
        config.keyfile = os.path.join(tmp, "key.pem")
        config.alpn_protocols = ["h2"]  # HTTP/2 only over TLS: no silent HTTP/1.1
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 1.0
        loop = asyncio.get_running_loop()
        previous = loop.get_exception_handler()

        def quiet_cancel(loop, context):
            # Connections hypercorn cancels at shutdown report their CancelledError here.
            if not isinstance(context.get("exception"), asyncio.CancelledError):
                (previous or (lambda lp, c: lp.default_exception_handler(c)))(loop, context)

        loop.set_exception_handler(quiet_cancel)
        task = asyncio.ensure_future(
            worker_serve(
                wrap_app(app, config.wsgi_max_body_size, "asgi"),
                config,
                sockets=Sockets(secure, insecure, quic),
                shutdown_trigger=stop.wait,
            )
        )
        try:
            await _wait_listening([s.getsockname()[:2] for s in secure + insecure], task)
            await warm_up(site, proto)
            if on_ready is not None:
                on_ready()
            await task
        finally:
            stop.set()
            if not task.done():
                try:
                    await asyncio.wait_for(task, 5.0)
                except (asyncio.TimeoutError, Exception):
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
            await asyncio.sleep(0)
            loop.set_exception_handler(previous)
    return app


WARM_UP_PATH = "/.well-known/lab-warm-up"  # answered 404: no page defines it


async def warm_up(site: RebuiltSite, proto: str, timeout_s: float = 10.0) -> None:
    """One real request to every https listener before the server says ``ready``: HTTP/2 over
    TLS 1.3 (and HTTP/3 over QUIC with ``h3``), from inside this namespace.  A real site's
    server is warm; without this, the first page load would also pay the server process's
    lazy imports and first TLS and QUIC handshakes, on its first connection only."""
    for scheme, address, port in site.listeners():
        if scheme != "https":
            continue
        host = next(h for h, a in site.hosts.items() if a == address)
        await asyncio.wait_for(_h2_request(address, port, host), timeout_s)
        if proto == "h3":
            await asyncio.wait_for(_h3_request(address, port, host), timeout_s)


async def _h2_request(address: str, port: int, host: str) -> None:
    import ssl

    import h2.config
    import h2.connection
    import h2.events

    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the lab's own server, on its own address
    ctx.set_alpn_protocols(["h2"])
    reader, writer = await asyncio.open_connection(address, port, ssl=ctx, server_hostname=host)
    try:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.send_headers(
            1,
            [(":method", "GET"), (":scheme", "https"), (":authority", host), (":path", WARM_UP_PATH)],
            end_stream=True,
        )
        writer.write(conn.data_to_send())
        done = False
        while not done:
            data = await reader.read(65536)
            if not data:
                break
            for event in conn.receive_data(data):
                done = done or isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset))
            writer.write(conn.data_to_send())
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _h3_request(address: str, port: int, host: str) -> None:
    import ssl

    from aioquic.asyncio import connect
    from aioquic.asyncio.protocol import QuicConnectionProtocol
    from aioquic.h3.connection import H3_ALPN, H3Connection
    from aioquic.h3.events import DataReceived, HeadersReceived
    from aioquic.quic.configuration import QuicConfiguration

    ended = asyncio.Event()

    class Client(QuicConnectionProtocol):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.h3 = H3Connection(self._quic)

        def quic_event_received(self, event):
            for ev in self.h3.handle_event(event):
                if isinstance(ev, (HeadersReceived, DataReceived)) and ev.stream_ended:
                    ended.set()

    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE, server_name=host)
    async with connect(address, port, configuration=config, create_protocol=Client) as client:
        stream_id = client._quic.get_next_available_stream_id()
        client.h3.send_headers(
            stream_id,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", host.encode()),
                (b":path", WARM_UP_PATH.encode()),
            ],
            end_stream=True,
        )
        client.transmit()
        await ended.wait()


async def _wait_listening(addresses, task, timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    for address, port in addresses:
        deadline = loop.time() + timeout_s
        while True:
            if task.done():
                task.result()
                raise RuntimeError("the server stopped during start-up")
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection(address, port), 1.0)
                w.close()
                with contextlib.suppress(Exception):
                    await w.wait_closed()
                break
            except (OSError, asyncio.TimeoutError):
                if loop.time() > deadline:
                    raise RuntimeError(f"no listener on {address}:{port} within {timeout_s} s") from None
                await asyncio.sleep(0.05)


def main(argv=None) -> int:
    """The command line: serve SITE_DIR until SIGTERM/SIGINT."""
    ap = argparse.ArgumentParser(prog="python -m simulator.lab.serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("site", metavar="SITE_DIR", help="a folder written by RebuiltSite.write")
    ap.add_argument("--proto", required=True, choices=PROTOCOLS, help="h2 (HTTP/2 over TLS) or h3 (also QUIC)")
    ap.add_argument(
        "--hints",
        default=None,
        metavar="FILE",
        help='JSON {"document_url": URL, "links": [...]}: send one 103 with these Link values on it',
    )
    ap.add_argument(
        "--document-think",
        default=None,
        metavar="DURATION",
        help="the document's server time instead of the recorded one, e.g. 100ms",
    )
    ap.add_argument("--log", default=None, metavar="FILE", help="append one JSON line per response here")
    ap.add_argument(
        "--cc",
        default=CONGESTION_CONTROL,
        choices=CONGESTION_CONTROLS,
        help="the congestion control of the server's TCP and QUIC senders (default cubic)",
    )
    ap.add_argument(
        "--scheduler",
        default=None,
        metavar="NAME",
        help="send in the order this scheduler of the priorities study picks (default: the servers' own)",
    )
    ap.add_argument(
        "--qlog", default=None, metavar="DIR", help="write each QUIC connection's qlog here (DIR/ODCID.sqlog)"
    )
    args = ap.parse_args(argv)

    async def run(timeline) -> None:
        site = RebuiltSite.read(args.site)
        if args.scheduler is not None:
            from .schedule import install

            install(args.scheduler, args.proto)
        hints = None
        if args.hints:
            try:
                with open(args.hints, encoding="utf-8") as f:
                    hints = json.load(f)
                if not isinstance(hints, dict) or not all(isinstance(v, str) for v in hints.get("links", [])):
                    raise ValueError("not an object with a list of Link strings")
            except (OSError, ValueError) as exc:
                raise InputError(f"is not a readable hints file ({exc}).", path=args.hints) from None
        think_s = None
        if args.document_think is not None:
            from ..units import parse_duration

            think_s = parse_duration(args.document_think, require_unit=True)
            if not 0 <= think_s <= 60:
                raise InputError(f"--document-think must be in [0, 60] s, not {args.document_think!r}.")
        app = SiteApp(site, hints=hints, document_think_s=think_s, timeline=timeline)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await serve(
            site, args.proto, stop, on_ready=lambda: print("ready", flush=True), app=app, cc=args.cc, qlog=args.qlog
        )

    try:
        if args.log:
            with open(args.log, "a", encoding="utf-8") as timeline:
                asyncio.run(run(timeline))
        else:
            asyncio.run(run(None))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
