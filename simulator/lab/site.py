"""A HAR's page rebuilt as a real multi-origin site, for the lab's real servers and browser.

``rebuild(har)`` reads the page's dependency graph (``traces.pagegraph``) and the server
and browser times the fidelity study infers (``studies.fidelity.conditions``), and writes a
site that makes a real Chromium ask for the same URLs, found the same way:

* **Addresses.** Every host of the page gets its own address, in order of first appearance:
  the RFC 5737 documentation ranges 198.51.100.0/24, then 203.0.113.0/24 (192.0.2.0/24 is
  the lab link's own).  ``addresses="loopback"`` maps them to 127.0.1.N instead (tests on
  one machine); a dict sets them by hand.  Origins of one host (http and https, other
  ports) share its address: the browser's resolver maps names, not origins.
* **Certificates.** One test CA (ECDSA P-256) signs one leaf whose SANs cover every host
  (``cryptography``); the browser is told to trust the leaf's SubjectPublicKeyInfo hash.
* **Responses.** Each at its recorded status, content type and content coding, after its
  recorded server time (``think_s``: HAR ``wait`` less the origin's RTT).  A 3xx keeps its
  ``Location`` to the recorded next URL.  Bodies have the recorded bytes on the wire: a
  ``gzip``/``br`` body is text whose compressed size is searched to the recorded one (a
  seeded mix of random-token comment lines, which barely compress, and one repeated comment
  line, which compresses to almost nothing, to the recorded decoded length); see
  ``bodies.SIZE_TOLERANCE`` for how close.  The wire size is ``_transferSize`` less the header
  bytes when the HAR's ``bodySize`` is the decoded size of a coded body, else ``bodySize``.
* **Discovery.** Documents, stylesheets and scripts are generated so that Chromium finds
  each resource from its recorded parent: a document's parser by tag (link rel=stylesheet,
  script src, img, iframe, font preload; other types by an inline script's ``fetch``), a
  stylesheet by ``url()`` (@import, @font-face used by an element, background images), a
  script by creating the element or fetching after the recorded discovery delay
  (``setTimeout``).  Resources inserted by an inline script (initiator ``script`` with the
  document as parent) come from an inline script the same way.  One a script asked for after
  the page's load event in the recording is asked for after the rebuilt page's load event,
  as long after it as recorded (or its discovery delay, if shorter): the recorded load did
  not wait for it, so the rebuilt one at another link does not either.  Text bodies are padded with
  comment lines as capture's ``_filler`` does.

Written by hand: the address plan, the templates (``markup``) and ``rebuild_fidelity`` (the size search is
``bodies``, the certificates ``certs``).
TLS, HTTP and compression are the libraries' (``cryptography``, ``zlib``, ``brotli``).
The site's bodies are deterministic for a seed; the keys and the certificate validity
(from the wall clock: a real TLS server needs a current certificate) are not.
"""

from __future__ import annotations

import gzip
import ipaddress
import json
import random
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import InputError
from .bodies import SIZE_TOLERANCE, coded_image, image, sized_text, tolerance
from .certs import make_ca_and_leaf
from .markup import after_load, delayed, insert_js, parser_tag

__all__ = [
    "Response",
    "RebuiltSite",
    "rebuild",
    "rebuild_fidelity",
    "address_plan",
    "make_ca_and_leaf",
    "SIZE_TOLERANCE",
    "DOCUMENTATION_RANGES",
    "origin_of",
    "authority_of",
]

DOCUMENTATION_RANGES = ("198.51.100.0/24", "203.0.113.0/24")  # RFC 5737 section 3 (192.0.2.0/24: the link)
LOOPBACK_RANGE = "127.0.1.0/24"
# (bodies.SIZE_TOLERANCE: a body the coding cannot bring that close to its recorded size, or
# one whose markup alone is larger, is reported by ``size_report``.)
SITE_FILE = "site.json"
_TEXT_TYPES = ("document", "stylesheet", "script", "fetch", "xhr")


# ---------------------------------------------------------------------------- names


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` with the default port left out, host lower-case."""
    p = urlsplit(url)
    host = (p.hostname or "").lower()
    port = p.port
    if port is None or port == {"https": 443, "http": 80}.get(p.scheme):
        return f"{p.scheme}://{_bracket(host)}"
    return f"{p.scheme}://{_bracket(host)}:{port}"


def authority_of(url: str) -> tuple[str, int]:
    """(host, port) of ``url``, with the scheme's default port (443 https, 80 http)."""
    p = urlsplit(url)
    return (p.hostname or "").lower(), p.port or (443 if p.scheme == "https" else 80)


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _path(url: str) -> str:
    p = urlsplit(url)
    return (p.path or "/") + (f"?{p.query}" if p.query else "")


def address_plan(hosts: list[str], addresses="documentation") -> dict[str, str]:
    """host -> address, in the order given: RFC 5737 ranges, ``"loopback"`` (127.0.1.N) or a dict."""
    if isinstance(addresses, dict):
        missing = [h for h in hosts if h not in addresses]
        if missing:
            raise InputError(f"the address plan has no address for {', '.join(missing)}.")
        return {h: str(ipaddress.ip_address(addresses[h])) for h in hosts}
    if addresses == "loopback":
        pool = [str(a) for a in list(ipaddress.ip_network(LOOPBACK_RANGE).hosts())]
    elif addresses == "documentation":
        pool = [str(a) for net in DOCUMENTATION_RANGES for a in ipaddress.ip_network(net).hosts()]
    else:
        raise InputError(f"addresses must be 'documentation', 'loopback' or a host -> address map, not {addresses!r}.")
    if len(hosts) > len(pool):
        raise InputError(f"the page has {len(hosts)} hosts, more than the {len(pool)} addresses of the plan.")
    return dict(zip(hosts, pool))


# ---------------------------------------------------------------------------- the site


@dataclass
class Response:
    """One response of the rebuilt site, as the server sends it."""

    url: str
    status: int
    content_type: str
    body: bytes  # as sent: coded when content_encoding is set
    content_encoding: str | None = None
    location: str | None = None
    think_s: float = 0.0  # server time before the response (wall clock)
    resource_type: str = "other"
    recorded_wire_bytes: int = 0  # what the HAR says went on the wire
    recorded_decoded_bytes: int = 0

    @property
    def path(self) -> str:
        """The ``:path`` the browser asks for."""
        return _path(self.url)

    def decoded(self) -> bytes:
        """The body after content decoding (RFC 9110 section 8.4)."""
        if self.content_encoding == "gzip":
            return gzip.decompress(self.body)
        if self.content_encoding == "br":
            import brotli

            return brotli.decompress(self.body)
        return self.body


@dataclass
class RebuiltSite:
    """A page as a real site: its URL, host -> address, per origin the responses by path, the TLS material."""

    page_url: str
    hosts: dict[str, str]
    origins: dict[str, dict[str, Response]]
    tls: dict
    settle_s: float = 0.0  # the longest script delay: how long a loader waits after load
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def spki_sha256_b64(self) -> str:
        """The leaf's SPKI hash for Chromium's allow-list."""
        return self.tls["spki_sha256_b64"]

    def listeners(self) -> list[tuple[str, str, int]]:
        """(scheme, address, port) for every origin, in order."""
        out = []
        for origin in self.origins:
            host, port = authority_of(origin)
            item = (urlsplit(origin).scheme, self.hosts[host], port)
            if item not in out:
                out.append(item)
        return out

    def response(self, scheme: str, authority: str, path: str) -> Response | None:
        """The response for a request, or None (the server answers 404)."""
        origin = origin_of(f"{scheme}://{authority}/")
        return self.origins.get(origin, {}).get(path)

    def size_report(self) -> list[dict]:
        """Per response: recorded and rebuilt bytes on the wire (the body as sent)."""
        return [
            {
                "url": r.url,
                "encoding": r.content_encoding,
                "recorded_wire_bytes": r.recorded_wire_bytes,
                "wire_bytes": len(r.body),
                "recorded_decoded_bytes": r.recorded_decoded_bytes,
            }
            for rs in self.origins.values()
            for r in rs.values()
        ]

    def write(self, folder) -> None:
        """The site as files: ``site.json``, ``bodies/N`` and ``tls/{ca,cert,key}.pem``."""
        root = Path(folder)
        (root / "bodies").mkdir(parents=True, exist_ok=True)
        (root / "tls").mkdir(exist_ok=True)
        origins, n = {}, 0
        for origin, rs in self.origins.items():
            rows = []
            for r in rs.values():
                name = f"bodies/{n:05d}"
                (root / name).write_bytes(r.body)
                row = {k: v for k, v in asdict(r).items() if k != "body"}
                row["body_file"] = name
                rows.append(row)
                n += 1
            origins[origin] = rows
        for name in ("ca", "cert", "key"):
            (root / "tls" / f"{name}.pem").write_text(self.tls[f"{name}_pem"])
        meta = {
            "page_url": self.page_url,
            "hosts": self.hosts,
            "origins": origins,
            "settle_s": self.settle_s,
            "spki_sha256_b64": self.spki_sha256_b64,
            "source": self.source,
            "notes": self.notes,
        }
        (root / SITE_FILE).write_text(json.dumps(meta, indent=1))

    @classmethod
    def read(cls, folder) -> "RebuiltSite":
        """A site written by ``write``; a folder that is not one is an ``InputError``."""
        root = Path(folder)
        if not (root / SITE_FILE).is_file():
            raise InputError(
                f"is not a rebuilt site (no {SITE_FILE}; write one with RebuiltSite.write).", path=str(folder)
            )
        try:
            meta = json.loads((root / SITE_FILE).read_text())
            tls = {f"{n}_pem": (root / "tls" / f"{n}.pem").read_text() for n in ("ca", "cert", "key")}
            tls["spki_sha256_b64"] = meta["spki_sha256_b64"]
            origins = {}
            for origin, rows in meta["origins"].items():
                rs = {}
                for row in rows:
                    row = dict(row)
                    body = (root / row.pop("body_file")).read_bytes()
                    r = Response(body=body, **row)
                    rs.setdefault(r.path, r)
                origins[origin] = rs
            return cls(
                page_url=meta["page_url"],
                hosts=meta["hosts"],
                origins=origins,
                tls=tls,
                settle_s=float(meta.get("settle_s", 0.0)),
                source=meta.get("source"),
                notes=list(meta.get("notes") or ()),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"is not a readable rebuilt site ({type(exc).__name__}: {exc}).", path=str(folder)
            ) from None


# ---------------------------------------------------------------------------- rebuild


def _coding(headers) -> str | None:
    for n, v in headers or ():
        if n == b"content-encoding":
            v = v.decode("latin-1").strip().lower()
            return v if v in ("gzip", "br") else None
    return None


def _ctype(headers, kind: str) -> str:
    for n, v in headers or ():
        if n == b"content-type":
            return v.decode("latin-1")
    return {
        "document": "text/html; charset=utf-8",
        "stylesheet": "text/css; charset=utf-8",
        "script": "application/javascript; charset=utf-8",
        "image": "image/png",
        "font": "font/woff2",
        "fetch": "application/json",
        "xhr": "application/json",
    }.get(kind, "application/octet-stream")


def _load_graph(har):
    from ..traces import load
    from ..traces.pagegraph import page_graph

    trace = load(str(har)) if not hasattr(har, "exchanges") else har
    src = trace.source or str(har)
    if trace.format != "har":
        raise InputError(f"is a {trace.format} trace, not a HAR: the lab rebuilds HAR pages only.", path=src)
    if not trace.pages:
        raise InputError(
            "has no pages: the lab rebuilds one page load, and a HAR without log.pages names none.", path=src
        )
    if not trace.exchanges and trace.meta.get("not_on_network"):
        raise InputError(
            "has only data: (or other non-network) entries: no request goes to a server to rebuild.", path=src
        )
    if not trace.exchanges:
        raise InputError("has no entries: there is no request to rebuild.", path=src)
    if not any((e.url or "").startswith(("http://", "https://")) for e in trace.exchanges):
        raise InputError("has only data: (or other non-http) URLs: no request goes to a server to rebuild.", path=src)
    graph = page_graph(trace)
    if not graph[0].url.startswith(("http://", "https://")):
        raise InputError(f"the page's navigation is to {graph[0].url[:60]!r}, not an http(s) URL.", path=src)
    return trace, graph


def _wire_sizes(trace, graph) -> dict[int, tuple[int, int | None]]:
    """resource -> (bytes on the wire, decoded bytes or None when unknown)."""
    from ..traces.model import raw_size

    transfer = trace.meta.get("transfer_sizes") or []
    overheads = []
    for r in graph.resources:
        ts = transfer[r.exchange] if r.exchange < len(transfer) else None
        if ts and not _coding(r.response_headers) and ts > r.decoded_bytes > 0:
            overheads.append(ts - r.decoded_bytes)
    overhead = statistics.median(overheads) if overheads else None
    out = {}
    for r in graph.resources:
        wire, decoded = r.body_bytes, r.decoded_bytes
        ts = transfer[r.exchange] if r.exchange < len(transfer) else None
        if _coding(r.response_headers) and ts and wire >= decoded and ts < wire:
            # bodySize is the decoded size here; _transferSize less the header bytes is the wire.
            head = overhead if overhead is not None else raw_size(r.response_headers) + 32
            wire = max(int(ts - head), 1)
        out[r.index] = (wire, decoded if decoded > wire else None)
    return out


def _page_conditions(trace, graph):
    """The page's start and the conditions ``infer_conditions`` reads from its HAR."""
    from ..studies.fidelity.conditions import infer_conditions

    page_start = next((p.start_s for p in trace.pages if p.id == graph.page), None)
    return page_start, infer_conditions(graph, page_start)


def _served_think_s(graph, cond) -> dict[str, float]:
    """URL -> the server time (s) the rebuilt site sends its response after: the one inferred
    for the URL's first resource (a URL is served once)."""
    out: dict[str, float] = {}
    for r in graph.resources:
        out.setdefault(r.url, round(float(cond.think_s.get(r.index, 0.0)), 6))
    return out


def served_server_times(har) -> dict[str, float]:
    """URL -> the server time (s) the lab's server waits before each response of ``har``'s
    rebuilt page (``rebuild``'s, without building the site)."""
    trace, graph = _load_graph(har)
    return _served_think_s(graph, _page_conditions(trace, graph)[1])


def rebuild(har, *, addresses="documentation", seed: int = 0, tls: dict | None = None) -> RebuiltSite:
    """The page of ``har`` (a path or a loaded HAR trace) as a ``RebuiltSite`` (see the module docstring)."""
    trace, graph = _load_graph(har)
    page_start, cond = _page_conditions(trace, graph)
    think_s = _served_think_s(graph, cond)
    resources = [r for r in graph.resources if r.url.startswith(("http://", "https://"))]
    hosts = list(dict.fromkeys(authority_of(r.url)[0] for r in resources))
    plan = address_plan(hosts, addresses)
    tls = tls or make_ca_and_leaf(hosts)
    sizes = _wire_sizes(trace, graph)
    notes = []

    by_index = {r.index: r for r in resources}
    first_of_url: dict[str, int] = {}
    for r in resources:
        first_of_url.setdefault(r.url, r.index)
    kind = {r.index: r.resource_type for r in resources}

    # Who finds whom: per parent, its children in recorded order, and how.
    parser_children: dict[int, list[int]] = {}  # parent document -> tags
    inline_children: dict[int, list[int]] = {}  # parent document -> inline-script insertions
    css_children: dict[int, list[int]] = {}
    script_children: dict[int, list[int]] = {}
    redirect_to: dict[int, str] = {}
    main_doc = graph.document
    for r in resources:
        if r.index in (0,) or first_of_url[r.url] != r.index:
            continue
        p = r.parent if r.parent in by_index else main_doc
        if 300 <= by_index[p].status < 400:
            redirect_to[p] = r.url
            continue
        pk = kind[p]
        initiated_by_script = trace.exchanges[r.exchange].initiator_type == "script"
        if pk == "document" and not (300 <= by_index[p].status < 400):
            (inline_children if initiated_by_script else parser_children).setdefault(p, []).append(r.index)
        elif pk == "stylesheet":
            css_children.setdefault(p, []).append(r.index)
        elif pk == "script":
            script_children.setdefault(p, []).append(r.index)
        else:
            notes.append(f"{r.url}: its parent is a {pk}, which cannot fetch; the document's parser finds it")
            parser_children.setdefault(main_doc, []).append(r.index)
    # Every redirect hop points at its recorded next URL even when that URL came earlier.
    for r in resources:
        if 300 <= r.status < 400 and r.index not in redirect_to:
            nxt = trace.exchanges[r.exchange].redirect_url
            if nxt:
                redirect_to[r.index] = nxt

    css_classes = [(i, kind[i]) for kids in css_children.values() for i in kids if kind[i] in ("font", "image")]
    markers = "".join(
        f'<span class="lab-r{i}">lab</span>'
        if k == "font"
        else f'<div class="lab-r{i}" style="width:8px;height:8px"></div>'
        for i, k in css_classes
    )
    settle_s = 0.0
    page = next((p for p in trace.pages if p.id == graph.page), None)
    load_at = None if page is None or page.on_load_s is None or page_start is None else page_start + page.on_load_s

    def delay(i: int) -> float:
        return float(cond.discovery_s.get(i, 0.0))

    def asked(i: int) -> str:
        """The statement that asks for script-found resource ``i``, at its recorded time."""
        stmt = insert_js(kind[i], by_index[i].url, f"lab-r{i}")
        started = by_index[i].start_s
        if load_at is not None and started is not None and started > load_at:
            return after_load(stmt, min(delay(i), started - load_at))
        return delayed(stmt, delay(i))

    def document_text(r) -> str:
        head, body = [], []
        for c in parser_children.get(r.index, ()):
            cr = by_index[c]
            where, tag = parser_tag(kind[c], cr.url, cr.blocks_own_document)
            (head if where == "head" else body).append(tag)
        inline = "".join(asked(c) for c in inline_children.get(r.index, ()))
        if inline:
            body.append(f"<script>\n{inline}</script>")
        title = "rebuilt page" if r.index == main_doc else "rebuilt frame"
        return (
            '<!doctype html>\n<html><head><meta charset="utf-8"><title>'
            + title
            + "</title>\n"
            + "\n".join(head)
            + "\n</head><body>\n<h1>"
            + title
            + "</h1>\n<p>"
            + "lab text " * 12
            + "</p>\n"
            + "\n".join(body)
            + "\n"
            + markers
            + "\n</body></html>\n"
        )

    def css_text(r) -> str:
        imports, rules = [], []
        for c in css_children.get(r.index, ()):
            u = json.dumps(by_index[c].url)
            if kind[c] == "stylesheet":
                imports.append(f"@import url({u});")
            elif kind[c] == "font":
                rules.append(
                    f'@font-face {{ font-family: "lab-r{c}"; src: url({u}); }}\n'
                    f'.lab-r{c} {{ font-family: "lab-r{c}"; }}'
                )
            else:
                rules.append(f".lab-r{c} {{ background-image: url({u}); }}")
        return "\n".join(imports + ["body { margin: 0 }"] + rules) + "\n"

    def js_text(r) -> str:
        nonlocal settle_s
        lines = []
        for c in script_children.get(r.index, ()):
            lines.append(asked(c))
            settle_s = max(settle_s, delay(c))
        return "".join(lines)

    origins: dict[str, dict[str, Response]] = {}
    for r in resources:
        if first_of_url[r.url] != r.index:
            continue
        k = kind[r.index]
        wire, decoded = sizes[r.index]
        coding = _coding(r.response_headers)
        if coding == "br" and r.url.startswith("http:"):
            coding = "gzip"  # Chromium offers br only over https (its Accept-Encoding)
            notes.append(f"{r.url}: br over http sent as gzip (Chromium does not accept br without TLS)")
        location = redirect_to.get(r.index) if 300 <= r.status < 400 else None
        body_seed = seed * 1_000_003 + r.index
        if r.status in (204, 304) or (r.status < 200) or 300 <= r.status < 400 and wire == 0:
            body = b""
            coding = None if not body else coding
        elif k == "document" or (k == "other" and r.index == main_doc):
            body = sized_text(document_text(r), "document", body_seed, wire, decoded, coding)
        elif k == "stylesheet":
            body = sized_text(css_text(r), "stylesheet", body_seed, wire, decoded, coding)
        elif k == "script":
            body = sized_text(js_text(r), "script", body_seed, wire, decoded, coding)
        elif k == "image" and "svg" not in _ctype(r.response_headers, k):
            # decodable, coded or not: Chromium stops reading an image it cannot decode
            body = coded_image(wire, body_seed, coding) if coding else image(wire, body_seed)
        elif coding or k in _TEXT_TYPES:
            body = sized_text("", "script", body_seed, wire, decoded, coding)
        else:
            body = random.Random(body_seed).randbytes(wire)
        if not body:
            coding = None
        if abs(len(body) - wire) > tolerance(wire) and body:
            notes.append(f"{r.url}: {len(body)} bytes on the wire, recorded {wire}")
        origin = origin_of(r.url)
        origins.setdefault(origin, {})[_path(r.url)] = Response(
            url=r.url,
            status=r.status,
            content_type=_ctype(r.response_headers, k),
            body=body,
            content_encoding=coding,
            location=location,
            think_s=think_s[r.url],
            resource_type=k,
            recorded_wire_bytes=wire,
            recorded_decoded_bytes=decoded or wire,
        )
    settle_s = max([settle_s] + [delay(c) for kids in inline_children.values() for c in kids])
    return RebuiltSite(
        page_url=graph[0].url,
        hosts=plan,
        origins=origins,
        tls=tls,
        settle_s=round(settle_s, 6),
        source=trace.source,
        notes=notes,
    )


# ---------------------------------------------------------------------------- the check


def rebuild_fidelity(original_har, lab_har) -> dict:
    """How much of the original page the lab load reproduced: the share of the original's
    requests whose URL the lab HAR has, and the share of its initiator edges (parent URL ->
    child URL, parents as ``PageGraph`` defines them) the lab's graph has too."""
    from ..traces import load
    from ..traces.pagegraph import page_graph

    orig = page_graph(original_har if hasattr(original_har, "resources") else load(str(original_har)))
    lab_trace = load(str(lab_har))
    lab = page_graph(lab_trace)
    lab_urls = {e.url for e in lab_trace.exchanges if e.url}
    lab_edges = {(lab[r.parent].url, r.url) for r in lab.resources if r.parent is not None}
    wanted = [r for r in orig.resources if r.url.startswith(("http://", "https://"))]
    edges = [(orig[r.parent].url, r.url) for r in wanted if r.parent is not None]
    missing_urls = [r.url for r in wanted if r.url not in lab_urls]
    missing_edges = [e for e in edges if e not in lab_edges]
    return {
        "requests": len(wanted),
        "urls_found": len(wanted) - len(missing_urls),
        "url_share": (len(wanted) - len(missing_urls)) / len(wanted) if wanted else 1.0,
        "edges": len(edges),
        "edges_found": len(edges) - len(missing_edges),
        "edge_share": (len(edges) - len(missing_edges)) / len(edges) if edges else 1.0,
        "missing_urls": missing_urls,
        "missing_edges": [f"{a} -> {b}" for a, b in missing_edges],
    }
