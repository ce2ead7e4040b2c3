"""A page as a dependency graph, built from a trace.  Written by hand.

Nodes are the page's exchanges (the document first); an edge ``parent -> child`` means
the browser can only discover ``child`` once ``parent`` has arrived (and been parsed or
run).  Where the edges come from, in order:

1. Redirects: a 3xx response with a ``location`` is the parent of the exchange for the
   URL it points to (the main document at the end of a redirect chain is "the document").
2. HAR initiators (Chrome's ``_initiator``): ``parser`` and ``script`` initiators name
   the URL of the parent; a ``preload`` initiator names the document that preloaded it.
   An initiator URL not on the page falls back to the document.
3. The fallback, when the trace has no initiators at all: the document is the parent of
   every other exchange, except fonts, whose parent is the page's first stylesheet
   (fonts are found by CSS).  So everything is discovered after the document's body
   arrived, by resource type (the client model adds a parse delay per type).

A cycle in the initiators is bad input (one line naming the URLs).

Render-blocking (what must arrive before the first render): the document, and the
stylesheets and parser-blocking scripts it references directly.  Chrome gives those
``VeryHigh``/``High`` priority; a script at ``Medium`` or lower is async/deferred and
does not block.  HAR does not say "in the head", so this is an approximation, stated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from ...errors import InputError
from ...traces.model import Exchange, HeaderList, Trace, header_value

__all__ = ["Resource", "PageGraph", "page_graph", "RENDER_BLOCKING_PRIORITIES"]

RENDER_BLOCKING_PRIORITIES = (None, "VeryHigh", "High")
_DOCUMENT_TYPES = ("document",)


@dataclass(frozen=True)
class Resource:
    """One resource of the page.  ``index`` 0 is the navigation request."""

    index: int
    exchange: int                    # the trace exchange it came from
    url: str
    origin: str                      # scheme://authority
    resource_type: str               # document, stylesheet, script, image, font, fetch, ...
    body_bytes: int
    parent: int | None
    render_blocking: bool
    priority: str | None
    status: int
    wait_s: float | None             # HAR timings.wait (server time + one RTT of the capture)
    request_headers: HeaderList
    response_headers: HeaderList

    @property
    def authority(self) -> str:
        return self.origin.split("://", 1)[-1]

    @property
    def path(self) -> str:
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@dataclass
class PageGraph:
    resources: list[Resource]
    source: str | None
    page: str | None
    edges_from: str                  # "initiators" or "fallback"
    document: int = 0                # index of the main document (end of the redirect chain)
    _children: dict[int, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._children = {r.index: [] for r in self.resources}
        for r in self.resources:
            if r.parent is not None:
                self._children[r.parent].append(r.index)

    def __len__(self) -> int:
        return len(self.resources)

    def __getitem__(self, index: int) -> Resource:
        return self.resources[index]

    def children(self, index: int) -> list[int]:
        return self._children[index]

    def by_url(self) -> dict[str, int]:
        """URL -> first resource with that URL."""
        out: dict[str, int] = {}
        for r in self.resources:
            out.setdefault(r.url, r.index)
        return out

    def depth(self, index: int) -> int:
        d = 0
        while self.resources[index].parent is not None:
            index = self.resources[index].parent
            d += 1
        return d

    @property
    def origins(self) -> list[str]:
        return list(dict.fromkeys(r.origin for r in self.resources))

    @property
    def render_blocking(self) -> list[int]:
        return [r.index for r in self.resources if r.render_blocking]

    def summary(self) -> dict:
        return {"resources": len(self.resources), "origins": len(self.origins),
                "render_blocking": len(self.render_blocking), "edges_from": self.edges_from,
                "max_depth": max(self.depth(r.index) for r in self.resources),
                "bytes": sum(r.body_bytes for r in self.resources)}


def _page_exchanges(trace: Trace, page: str | None) -> tuple[str | None, list[Exchange]]:
    exchanges = [e for e in trace.exchanges if e.request_headers is not None or e.url is not None]
    if not exchanges:
        raise InputError("the trace has no requests, so no page to load", path=trace.source)
    pages = list(dict.fromkeys(e.page for e in exchanges if e.page is not None))
    if page is None:
        page = pages[0] if pages else None
    elif page not in pages:
        raise InputError(f"no page {page!r} in the trace (pages: {', '.join(pages) or 'none'})", path=trace.source)
    if page is not None:
        exchanges = [e for e in exchanges if e.page == page]
    return page, sorted(exchanges, key=lambda e: (e.start_s or 0.0, e.index))


def _url(e: Exchange) -> str:
    if e.url:
        return e.url
    h = e.request_headers or ()
    scheme = (header_value(h, b":scheme") or b"https").decode("latin-1")
    authority = (header_value(h, b":authority") or b"").decode("latin-1")
    path = (header_value(h, b":path") or b"/").decode("latin-1")
    if not authority and e.origin:
        return e.origin.rstrip("/") + path
    return f"{scheme}://{authority}{path}"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _is_document(e: Exchange) -> bool:
    if e.resource_type in _DOCUMENT_TYPES:
        return True
    ctype = header_value(e.response_headers, b"content-type") or b""
    return e.resource_type is None and ctype.startswith(b"text/html")


def page_graph(trace: Trace, page: str | None = None) -> PageGraph:
    """The dependency graph of one page of ``trace`` (its first page by default)."""
    page, exchanges = _page_exchanges(trace, page)
    where = f"page {page}" if page else None
    first_doc = next((i for i, e in enumerate(exchanges) if _is_document(e)), None)
    if first_doc is None:
        raise InputError("the page has no document (no exchange of resource type 'document' or text/html)",
                         path=trace.source, where=where)
    # The navigation starts at the first document; anything before it is not part of this load.
    exchanges = exchanges[first_doc:]
    urls = [_url(e) for e in exchanges]
    first_index: dict[str, int] = {}
    for i, u in enumerate(urls):
        first_index.setdefault(u, i)

    # Redirects: 3xx with a location, the target's parent is the redirect.
    redirect_parent: dict[int, int] = {}
    for i, e in enumerate(exchanges):
        status = e.status or 0
        location = header_value(e.response_headers, b"location")
        if 300 <= status < 400 and location:
            target = first_index.get(urljoin(urls[i], location.decode("latin-1")))
            if target is not None and target != i and target not in redirect_parent:
                redirect_parent[target] = i
    document = 0
    while True:            # follow the navigation's redirect chain to the main document
        nxt = next((t for t, p in redirect_parent.items() if p == document), None)
        if nxt is None:
            break
        document = nxt

    have_initiators = any(e.initiator or e.initiator_type in ("parser", "script", "preload")
                          for e in exchanges[1:])
    first_css = next((i for i, e in enumerate(exchanges) if e.resource_type == "stylesheet"), None)
    parents: list[int | None] = []
    for i, e in enumerate(exchanges):
        if i == 0:
            parent = None
        elif i in redirect_parent:
            parent = redirect_parent[i]
        elif have_initiators:
            parent = first_index.get(e.initiator) if e.initiator else None
            if parent is None or parent == i:
                parent = document
        elif e.resource_type == "font" and first_css is not None and first_css != i:
            parent = first_css
        else:
            parent = document
        parents.append(parent)
    _check_acyclic(parents, urls, trace.source, where)

    resources = []
    for i, e in enumerate(exchanges):
        rtype = "document" if i == document or _is_document(e) else (e.resource_type or "other")
        blocking = i == document or (parents[i] == document and (
            rtype == "stylesheet" or (rtype == "script" and e.priority in RENDER_BLOCKING_PRIORITIES)))
        wait_ms = (e.timings or {}).get("wait")
        resources.append(Resource(
            index=i, exchange=e.index, url=urls[i], origin=e.origin or _origin(urls[i]), resource_type=rtype,
            body_bytes=int(e.response_body_bytes or 0), parent=parents[i], render_blocking=blocking,
            priority=e.priority, status=e.status or 200,
            wait_s=None if wait_ms is None or wait_ms < 0 else float(wait_ms) / 1000.0,
            request_headers=e.request_headers or (), response_headers=e.response_headers or ((b":status", b"200"),)))
    return PageGraph(resources=resources, source=trace.source, page=page,
                     edges_from="initiators" if have_initiators else "fallback", document=document)


def _check_acyclic(parents: list[int | None], urls: list[str], source, where) -> None:
    state = [0] * len(parents)          # 0 unseen, 1 on the current walk, 2 known to reach the root
    for start in range(len(parents)):
        walk = []
        node = start
        while node is not None and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = parents[node]
        if node is not None and state[node] == 1:
            cycle = walk[walk.index(node):] + [node]
            raise InputError("the initiators form a cycle: " + " -> ".join(urls[i] for i in cycle),
                             path=source, where=where)
        for n in walk:
            state[n] = 2
