"""Real local HTTP/2 (TLS) and HTTP/3 servers on loopback for ``workbench capture``.

``hypercorn`` (built on ``h2`` and ``aioquic``) serves a page set over HTTP/2 over TLS 1.3
(ALPN ``h2`` only) or HTTP/3 (QUIC on UDP, with the same port number on TCP for the
fallback).  The page set is a folder (``site_from_dir``) or a synthetic page generated
from ``simulator.traces.synth`` (``site_from_synth``): its sub-resources become real
HTML/CSS/JS/image/font files of the sizes the generator drew (images valid PNGs,
``images``), referenced so that a browser discovers them the way the trace says
(stylesheets, parser scripts, images, fonts and iframes from the document;
script-initiated scripts and fetches from the script that initiated them).

The certificate is generated here for every run (ECDSA P-256, self-signed, SAN
IP:127.0.0.1, ``cryptography``); its SubjectPublicKeyInfo hash is what the browser is
told to trust (``spki_sha256_b64``).  hypercorn reads it from files, so it lives in a
temporary folder that ``LocalServer`` removes on exit.

The ASGI app can send, per RFC 8297, a 103 Early Hints response with ``Link: rel=preload``
for the document's render-blocking resources before the document (``early_hints``); h2
server push of the same set (``push``; RFC 9113 8.4: only if the client's
SETTINGS_ENABLE_PUSH allows it, which Chromium's does not, hypercorn then skips it); and a
``server-timing`` trailer section (``trailers``; RFC 9113 8.1) on HTTP/2 when the request
carries ``TE: trailers``, never on HTTP/3, whose trailers hypercorn 0.18 breaks (an empty
DATA frame after them).  Every response, hint, push offer and trailer section is recorded in
``LocalServer.log`` (what the app sent; a push offer is only what the app asked for), for
tests and the capture's metadata.

Servers bind only 127.0.0.1 on ephemeral ports.  Hand-written here: the ASGI app, the
site generator's HTML/CSS/JS templates and the port pairing; TLS, HTTP/2, QUIC and
HTTP/3 are the libraries'.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import hashlib
import ipaddress
import mimetypes
import os
import random
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import InputError
from ..traces.synth import MAX_REQUESTS as SYNTH_MAX_REQUESTS, MIN_REQUESTS as SYNTH_MIN_REQUESTS
from .images import image

__all__ = ["Site", "site_from_dir", "site_from_synth", "LocalServer", "make_certificate"]

PROTOCOLS = ("h2", "h3")
SYNTH_MIN, SYNTH_MAX = SYNTH_MIN_REQUESTS, SYNTH_MAX_REQUESTS  # the generator's page sizes


# ---------------------------------------------------------------------------- sites


@dataclass
class Site:
    """A page set: URL path -> (content type, body bytes); the page is ``/``."""

    files: dict[str, tuple[str, bytes]]
    source: str  # the folder, or "synth:N:seed"
    render_blocking: list[str] = field(default_factory=list)  # paths hinted / pushed

    def get(self, path: str) -> tuple[str, bytes] | None:
        """The (content type, body) served at URL path ``path`` (``/`` is ``/index.html``), or None."""
        if path == "/" or path == "":
            path = "/index.html"
        return self.files.get(path)


def site_from_dir(folder: str) -> Site:
    """Every file under ``folder`` (which needs an ``index.html``), served at its relative path."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("is not a folder.", path=str(folder))
    if not (root / "index.html").is_file():
        raise InputError("has no index.html.", path=str(folder))
    files = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts):
            ctype = mimetypes.guess_type(p.name)[0] or "application/octet-stream"
            if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
                ctype += "; charset=utf-8"
            files["/" + p.relative_to(root).as_posix()] = (ctype, p.read_bytes())
    html = files["/index.html"][1].decode("utf-8", "replace")
    blocking = [path for path in files if path.endswith(".css") and f"{path.lstrip('/')}" in html]
    return Site(files=files, source=str(folder), render_blocking=blocking)


def comment_filler(rng: random.Random, size: int, start: str, end: str) -> bytes:
    """``size`` bytes of whole comment lines ``start TOKEN end`` (seeded tokens: not very
    compressible), then spaces: never a line cut short, which could leave e.g. a lone ``/``
    in a script."""
    out, n = [], 0
    while True:
        chunk = f"{start}{rng.getrandbits(64):016x}{end}"
        if n + len(chunk) > size:
            break
        out.append(chunk)
        n += len(chunk)
    return ("".join(out) + " " * max(size - n, 0)).encode()


def _filler(rng: random.Random, size: int, line: str) -> bytes:
    """``size`` bytes of ``line TOKEN`` comment lines (``comment_filler``)."""
    return comment_filler(rng, size, f"{line} ", "\n")


def _pad(prefix: bytes, rng: random.Random, size: int, line: str) -> bytes:
    """``prefix`` then filler up to ``size`` bytes in all (more only if the prefix is longer)."""
    return prefix + _filler(rng, size - len(prefix), line)


def site_from_synth(requests: int, seed: int = 0) -> Site:
    """One synthetic page (``simulator.traces.synth``, ``requests`` requests, no third
    parties) turned into files on one origin, each of its drawn size."""
    from ..traces.synth import generate

    if not SYNTH_MIN <= requests <= SYNTH_MAX:
        raise InputError(
            f"--synth must be between {SYNTH_MIN} and {SYNTH_MAX} requests "
            f"(the generator's page sizes), not {requests}."
        )
    trace = generate(pages=1, seed=seed, requests=requests, third_party_share=0.0)
    rng = random.Random(seed)
    doc, subs = trace.exchanges[0], trace.exchanges[1:]
    doc_url = doc.url
    by_url, refs = {}, {}
    for e in subs:
        kind = e.resource_type or "fetch"
        parts = urlsplit(e.url)
        path = unquote(parts.path)
        by_url[e.url] = (kind, path, e)
        refs[e.url] = parts.path + (f"?{parts.query}" if parts.query else "")  # as the page names it

    head, body = [], []
    script_children: dict[str, list[tuple[str, str]]] = {}
    blocking = []
    for url, (kind, path, e) in by_url.items():
        parent = e.initiator if e.initiator in by_url else doc_url
        if parent != doc_url and by_url[parent][0] == "script":
            script_children.setdefault(parent, []).append((kind, refs[url]))
            continue
        if kind == "stylesheet":
            head.append(f'<link rel="stylesheet" href="{refs[url]}">')
            blocking.append(path)
        elif kind == "script":
            head.append(f'<script src="{refs[url]}"></script>')
            blocking.append(path)
        elif kind == "font":
            head.append(f'<link rel="preload" href="{refs[url]}" as="font" type="font/woff2" crossorigin>')
        elif kind == "image":
            body.append(f'<img src="{refs[url]}" width="160" height="90" alt="">')
        elif kind == "document":  # an iframe
            body.append(f'<iframe src="{refs[url]}" width="320" height="180"></iframe>')
        else:  # fetch: from an inline script, the parser's document
            body.append(f'<script>fetch("{refs[url]}").catch(() => 0);</script>')

    files = {}
    for url, (kind, path, e) in by_url.items():
        size = max(e.response_body_bytes, 16)
        if kind == "stylesheet":
            ctype, data = "text/css; charset=utf-8", _pad(b"body { margin: 0 }\n", rng, size, "/* css */")
        elif kind == "script":
            lines = []
            for ck, cp in script_children.get(url, ()):
                if ck == "script":
                    lines.append(
                        f'(function () {{ var s = document.createElement("script"); s.src = "{cp}"; '
                        f"document.head.appendChild(s); }})();"
                    )
                else:
                    lines.append(f'fetch("{cp}").catch(function () {{}});')
            head_js = ("\n".join(lines) + "\n").encode()
            ctype, data = "application/javascript; charset=utf-8", _pad(head_js, rng, size, "// js")
        elif kind == "font":
            ctype, data = "font/woff2", rng.randbytes(size)
        elif kind == "image":
            ctype = next((v.decode() for n, v in e.response_headers or () if n == b"content-type"), "image/png")
            data = image(size, rng.randrange(1 << 32))  # decodable: a browser stops reading what is not
        elif kind == "document":
            ctype, data = "text/html; charset=utf-8", _pad(b"<!doctype html><p>frame</p>\n", rng, size, "<!-- html -->")
        else:
            ctype, data = "application/json", b'{"items": []}' + b" " * max(0, size - 13)
        files[path] = (ctype, data)
    page = (
        '<!doctype html>\n<html><head><meta charset="utf-8"><title>synthetic page</title>\n'
        + "\n".join(head)
        + "\n</head><body>\n<h1>synthetic page</h1>\n"
        + "\n".join(body)
        + "\n"
    )
    page_bytes = page.encode()
    page_bytes += _filler(rng, doc.response_body_bytes - len(page_bytes) - 16, "<!-- doc -->") + b"</body></html>\n"
    files["/index.html"] = ("text/html; charset=utf-8", page_bytes)
    return Site(files=files, source=f"synth:{requests}:seed={seed}", render_blocking=blocking)


# ---------------------------------------------------------------------------- certificate


def make_certificate(host: str = "127.0.0.1") -> tuple[bytes, bytes, str]:
    """A fresh self-signed ECDSA P-256 certificate for ``host``: (cert PEM, key PEM,
    base64 SHA-256 of its SubjectPublicKeyInfo, for Chromium's SPKI allow-list)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        base64.b64encode(hashlib.sha256(spki).digest()).decode(),
    )


# ---------------------------------------------------------------------------- the ASGI app


def _link(path: str) -> bytes:
    dest = "style" if path.endswith(".css") else "script" if path.endswith(".js") else "fetch"
    return f"<{path}>; rel=preload; as={dest}".encode()


async def lifespan(receive, send) -> None:
    """The ASGI lifespan protocol of an app with nothing to start or stop."""
    while True:
        msg = await receive()
        if msg["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif msg["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class _App:
    def __init__(self, site: Site, log: list, *, early_hints: bool, push: bool, trailers: bool, think_s: float):
        self.site, self.log = site, log
        self.early_hints, self.push, self.trailers, self.think_s = early_hints, push, trailers, think_s

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        if scope["type"] != "http":
            return
        path = scope["path"]
        version = scope["http_version"]
        ext = scope.get("extensions") or {}
        record = {
            "path": path,
            "method": scope["method"],
            "http_version": version,
            "early_hints": [],
            "push_offered": [],
            "trailers": None,
        }
        self.log.append(record)
        found = self.site.get(path)
        is_document = path in ("/", "/index.html")
        if is_document and found is not None:
            # RFC 8297: the 103 goes out before the server has the final response ready.
            if self.early_hints and "http.response.early_hint" in ext and self.site.render_blocking:
                links = [_link(p) for p in self.site.render_blocking]
                await send({"type": "http.response.early_hint", "links": links})
                record["early_hints"] = [x.decode() for x in links]
            if self.push and "http.response.push" in ext:
                for p in self.site.render_blocking:
                    await send({"type": "http.response.push", "path": p, "headers": []})
                    # Offered to hypercorn: it sends the PUSH_PROMISE only if the client's
                    # SETTINGS_ENABLE_PUSH allows it (RFC 9113 8.4); Chromium's does not.
                    record["push_offered"].append(p)
            if self.think_s > 0:
                await asyncio.sleep(self.think_s)  # the server's think time (wall clock: a real server)
        te_trailers = any(n == b"te" and v.strip().lower() == b"trailers" for n, v in scope["headers"])
        # RFC 9113 8.1 trailers on HTTP/2 only; hypercorn 0.18 breaks them on HTTP/3.
        send_trailers = (
            self.trailers and version == "2" and te_trailers and "http.response.trailers" in ext and found is not None
        )
        if found is None:
            status, ctype, body = 404, "text/plain", b"not found\n"
        else:
            status, (ctype, body) = 200, found
        headers = [
            (b"content-type", ctype.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-cache" if is_document else b"public, max-age=3600"),
        ]
        if send_trailers:
            headers.append((b"trailer", b"server-timing"))
        record["status"] = status
        record["body_bytes"] = len(body)
        await send({"type": "http.response.start", "status": status, "headers": headers, "trailers": send_trailers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
        if send_trailers:
            trailer = [(b"server-timing", b'app;desc="capture"')]
            await send({"type": "http.response.trailers", "headers": trailer, "more_trailers": False})
            record["trailers"] = [(n.decode(), v.decode()) for n, v in trailer]


# ---------------------------------------------------------------------------- the server


def _paired_sockets(want_udp: bool, attempts: int = 20) -> tuple[socket.socket, socket.socket | None]:
    """A TCP socket on an ephemeral 127.0.0.1 port and, for HTTP/3, a UDP socket on the
    same port number (Chromium's forced-QUIC origin is host:port for both)."""
    for _ in range(attempts):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tcp.bind(("127.0.0.1", 0))
        if not want_udp:
            return tcp, None
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            udp.bind(("127.0.0.1", tcp.getsockname()[1]))
        except OSError:
            tcp.close()
            udp.close()
            continue
        return tcp, udp
    raise OSError("no free TCP+UDP port pair on 127.0.0.1")


class LocalServer:
    """``async with LocalServer(site, "h2"|"h3", ...) as srv:`` serves ``site`` at
    ``srv.origin`` until the block ends; ``srv.log`` lists what it sent."""

    def __init__(
        self,
        site: Site,
        proto: str,
        *,
        early_hints: bool = False,
        push: bool = False,
        trailers: bool = False,
        think_s: float = 0.0,
        startup_timeout_s: float = 10.0,
    ):
        if proto not in PROTOCOLS:
            raise InputError(f"--proto must be one of {', '.join(PROTOCOLS)}, not {proto!r}.")
        self.site, self.proto = site, proto
        self.log: list[dict] = []
        self.app = _App(site, self.log, early_hints=early_hints, push=push, trailers=trailers, think_s=think_s)
        self.startup_timeout_s = startup_timeout_s
        self.port = None
        self.spki_sha256_b64 = None
        self._tmp = None
        self._task = None
        self._stop = None
        self._restore = None

    @property
    def origin(self) -> str:
        """The served origin, ``https://127.0.0.1:<port>``."""
        return f"https://127.0.0.1:{self.port}"

    async def __aenter__(self) -> "LocalServer":
        from hypercorn.asyncio.run import worker_serve
        from hypercorn.config import Config, Sockets
        from hypercorn.utils import wrap_app

        loop = asyncio.get_running_loop()
        previous = loop.get_exception_handler()

        def quiet_cancel(loop, context):
            # Connections hypercorn cancels at shutdown report their CancelledError through
            # asyncio's callback logging; that is the normal end of a served connection.
            if isinstance(context.get("exception"), asyncio.CancelledError):
                return
            if previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(quiet_cancel)
        self._restore = lambda: loop.set_exception_handler(previous)
        cert, key, self.spki_sha256_b64 = make_certificate()
        self._tmp = tempfile.mkdtemp(prefix="workbench-capture-")
        try:
            for name, data in (("cert.pem", cert), ("key.pem", key)):
                fd = os.open(os.path.join(self._tmp, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            config = Config()
            config.certfile = os.path.join(self._tmp, "cert.pem")
            config.keyfile = os.path.join(self._tmp, "key.pem")
            config.alpn_protocols = ["h2"]  # HTTP/2 only over TCP: no silent HTTP/1.1
            config.accesslog = None
            config.errorlog = None
            config.graceful_timeout = 1.0
            config.include_server_header = True
            tcp, udp = _paired_sockets(self.proto == "h3")
            self.port = tcp.getsockname()[1]
            for s in (tcp, udp):
                if s is not None:
                    s.setblocking(False)
            if udp is not None:
                config._set_quic_addresses([udp])  # hypercorn's own alt-svc for the QUIC port
            sockets = Sockets([tcp], [], [udp] if udp is not None else [])
            self._stop = asyncio.Event()
            self._task = asyncio.ensure_future(
                worker_serve(
                    wrap_app(self.app, config.wsgi_max_body_size, "asgi"),
                    config,
                    sockets=sockets,
                    shutdown_trigger=self._stop.wait,
                )
            )
            await self._wait_listening()
        except BaseException:
            await self._close()
            raise
        return self

    async def _wait_listening(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout_s
        while loop.time() < deadline:
            if self._task.done():
                self._task.result()  # raises the server's startup error
                raise RuntimeError("the local server stopped during start-up")
            try:
                _, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", self.port), 1.0)
                w.close()
                with contextlib.suppress(Exception):
                    await w.wait_closed()
                return
            except (OSError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)
        raise RuntimeError(
            f"the local server did not listen on 127.0.0.1:{self.port} within {self.startup_timeout_s} s"
        )

    async def _close(self) -> None:
        try:
            if self._task is not None:
                self._stop.set()
                try:
                    await asyncio.wait_for(self._task, 5.0)
                except asyncio.TimeoutError:
                    self._task.cancel()
                    with contextlib.suppress(BaseException):
                        await self._task
                except Exception:
                    pass
        finally:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
            if self._restore is not None:
                await asyncio.sleep(0)  # let cancelled connections report first
                self._restore()
                self._restore = None

    async def __aexit__(self, *exc) -> None:
        await self._close()
