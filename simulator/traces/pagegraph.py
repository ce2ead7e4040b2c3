"""A page as a dependency graph, built from a trace.  Written by hand.

Nodes are the page's exchanges from the navigation on; an edge ``parent -> child`` means
the browser can only discover ``child`` once ``parent`` has arrived (and been parsed or
run).

**The navigation** starts at the first URL the browser asked for: the page's URL when the
producer wrote one (WebPageTest's ``_URL``) and it is on the page, else the first exchange
that is a document or a 3xx whose redirect chain ends at one.  A 301/302 chain at the start
(``http://`` to ``https://``, to ``www.``) is kept: each hop is a request the browser made,
and the main document ("the document") is the end of the chain.  Exchanges before the
navigation are not part of this load.

**Edges**, in order:

1. Redirects: a 3xx with a ``location`` (or HAR ``redirectURL``) is the parent of the
   exchange for the URL it points to.
2. Initiators (Chrome's ``_initiator`` object, WebPageTest's and chrome-har's initiator URL):
   the initiator's URL is the parent.  An initiator URL not on the page falls back to the
   document.
3. The fallback, when the page has no initiators at all (Firefox, older DevTools exports):
   the document is the parent of every other exchange, except fonts, whose parent is the
   page's first stylesheet (fonts are found by CSS).

A cycle in the initiators is bad input (one line naming the URLs).

**Render-blocking** (what must arrive before the first render): the document, and the
stylesheets and synchronous scripts its parser found before its body ended.  Per
resource, the first rule that applies decides, and ``render_blocking_reason`` says which:

- In an iframe (its nearest document ancestor is not the page's): does not block the page,
  whatever Chrome's ``_renderBlocking`` says of it for its own frame.
- Chrome's ``_renderBlocking`` when the producer wrote it: ``blocking`` blocks; anything
  else (``non_blocking``, ``in_body_parser_blocking``, ``potentially_blocking``...) does not.
- Not a stylesheet or script, not found by the document (another parent), or inserted by
  a script (initiator type ``script``): does not block.
- A priority (``_priority``): Chrome gives render-blocking stylesheets and the parser-
  blocking scripts of the head ``VeryHigh``/``High``; async, deferred, late-body and print
  resources get ``Medium`` or lower and do not block.
- No priority: blocks when its request started no later than the first image (or media,
  or frame) the document's parser asked for: the parser meets the head's stylesheets and
  scripts before the body's images (Chrome's own priority rule draws the same line).  With
  no times, every stylesheet and script the document references is taken as blocking.
  HAR cannot tell an async script from a synchronous one here: the rule over-counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

from ..errors import InputError
from .model import Exchange, HeaderList, Trace, header_value

__all__ = ["Resource", "PageGraph", "page_graph", "page_ids", "RENDER_BLOCKING_PRIORITIES", "LOAD_EVENT_TYPES"]

RENDER_BLOCKING_PRIORITIES = ("VeryHigh", "High")
# The types of request a document's load event waits for (HTML's "delay the load event":
# frames, stylesheets, scripts, fonts, images, media, and Chrome's "other", its favicon
# aside).  XHR/fetch, beacons, event streams and web sockets do not delay it.
LOAD_EVENT_TYPES = ("document", "stylesheet", "script", "font", "image", "media", "other")


@dataclass(frozen=True)
class Resource:
    """One resource of the page.  ``index`` 0 is the navigation request."""

    index: int
    exchange: int  # the trace exchange it came from
    url: str
    origin: str  # scheme://authority
    resource_type: str  # document, stylesheet, script, image, font, fetch, ...
    body_bytes: int  # the body's bytes on the wire: what transfer takes
    parent: int | None
    render_blocking: bool
    priority: str | None
    status: int
    wait_s: float | None  # HAR timings.wait (server time + one RTT of the capture)
    request_headers: HeaderList
    response_headers: HeaderList
    content_bytes: int | None = None  # decoded size, when it differs from body_bytes
    render_blocking_reason: str = ""
    resource_type_from: str | None = None
    http_version: str | None = None
    start_s: float | None = None  # when the capture's request started (trace clock)
    timings: dict | None = None  # the capture's HAR timings (ms)
    pushed: bool = False  # the server pushed it in the capture (Exchange.pushed)
    internal: bool = False  # a redirect the browser made itself (Exchange.internal): never fetched
    # blocks its own document's first render: ``render_blocking``, or for a resource in an
    # iframe what the rules say of it for that frame (the lab's rebuild puts it in that head)
    blocks_own_document: bool = False
    # the capture's response ended after the page's measured load event, which waits for every
    # resource that delays it: a load-event handler (or a timer) asked for it, so that load
    # event never waited for it, whatever its type
    after_load_event: bool = False
    # the capture asked for it after the page's measured load event, not from that event's
    # handlers (they run before the browser's onLoad): a timer or a response asked for it.  On
    # a slower network it may be asked for before the load event fires, which then waits for
    # it (HTML: the event waits for what delays it and was asked for before it): ``load_event_s``
    asked_after_load: bool = False
    initiator_type: str | None = None  # the capture's: parser / script / preload / other
    # a document's text when the capture kept it (``Exchange.document_text``): where its tags are
    document_text: str | None = field(default=None, repr=False)
    # an image in the viewport when first laid out (the page's ``viewport_images``); None when
    # not an image or the capture did not record the viewport
    in_viewport: bool | None = None

    @property
    def authority(self) -> str:
        """The ``host[:port]`` of the resource's origin."""
        return self.origin.split("://", 1)[-1]

    @property
    def scheme(self) -> str:
        """The scheme of the resource's origin."""
        return self.origin.split("://", 1)[0]

    @property
    def path(self) -> str:
        """The ``:path`` of the request: path and query of the URL."""
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    @property
    def delays_load_event(self) -> bool:
        """Whether the page's load event waits for this request (``LOAD_EVENT_TYPES``, and
        not asked for by that load event's handlers: ``after_load_event``)."""
        return self.resource_type in LOAD_EVENT_TYPES and not self.after_load_event and not self.asked_after_load

    @property
    def decoded_bytes(self) -> int:
        """Bytes of the body after content decoding (``body_bytes`` when no other size is known)."""
        return self.body_bytes if self.content_bytes is None else self.content_bytes


@dataclass
class PageGraph:
    """The resources of one page load and who discovered whom, from initiators or a fallback rule."""

    resources: list[Resource]
    source: str | None
    page: str | None
    edges_from: str  # "initiators" or "fallback"
    document: int = 0  # index of the main document (end of the redirect chain)
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
        """The resources that resource ``index`` discovered."""
        return self._children[index]

    def by_url(self) -> dict[str, int]:
        """URL -> first resource with that URL."""
        out: dict[str, int] = {}
        for r in self.resources:
            out.setdefault(r.url, r.index)
        return out

    def depth(self, index: int) -> int:
        """Discovery steps from the navigation to resource ``index``."""
        d = 0
        while self.resources[index].parent is not None:
            index = self.resources[index].parent
            d += 1
        return d

    @property
    def origins(self) -> list[str]:
        """The origins of the page's resources, in order of first appearance."""
        return list(dict.fromkeys(r.origin for r in self.resources))

    @property
    def render_blocking(self) -> list[int]:
        """Indices of the render-blocking resources."""
        return [r.index for r in self.resources if r.render_blocking]

    @property
    def redirects(self) -> list[int]:
        """The navigation's redirect hops before the document."""
        return list(range(self.document)) if self.document else []

    def subgraph(self, keep) -> "PageGraph":
        """The page with only the resources in ``keep`` (and their ancestors, so every kept
        resource can still be discovered), renumbered in order."""
        wanted = set()
        for i in keep:
            while i is not None and i not in wanted:
                wanted.add(i)
                i = self.resources[i].parent
        order = sorted(wanted)
        new = {old: n for n, old in enumerate(order)}
        resources = []
        for old in order:
            r = self.resources[old]
            parent = None if r.parent is None else new[r.parent]
            # Resources are frozen: one whose numbers stay is shared, not copied (a page's
            # load-event graph keeps most resources where they were).
            resources.append(r if r.index == new[old] and r.parent == parent else _renumbered(r, new[old], parent))
        return PageGraph(
            resources=resources,
            source=self.source,
            page=self.page,
            edges_from=self.edges_from,
            document=new[self.document],
        )

    def summary(self) -> dict:
        """Resources, origins, render-blocking count, edge source, deepest discovery chain, body bytes."""
        return {
            "resources": len(self.resources),
            "origins": len(self.origins),
            "render_blocking": len(self.render_blocking),
            "edges_from": self.edges_from,
            "max_depth": max(self.depth(r.index) for r in self.resources),
            "bytes": sum(r.body_bytes for r in self.resources),
        }


def _renumbered(r: Resource, index: int, parent: int | None) -> Resource:
    """``dataclasses.replace(r, index=index, parent=parent)`` in a sixth of its time (a
    20,000-resource page renumbers thousands): a ``Resource`` is its fields alone (no
    ``__post_init__``, every field an argument of ``__init__``), so the copy is its fields'
    values with the two changed."""
    new = object.__new__(type(r))
    fields = new.__dict__
    fields.update(r.__dict__)
    fields["index"], fields["parent"] = index, parent
    return new


def page_ids(trace: Trace) -> list[str | None]:
    """The pages of ``trace`` in order (``[None]`` when its exchanges name none)."""
    pages = list(dict.fromkeys(e.page for e in trace.exchanges if e.page is not None))
    return pages or [None]


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
        return _without_fragment(e.url)
    h = e.request_headers or ()
    scheme = (header_value(h, b":scheme") or b"https").decode("latin-1")
    authority = (header_value(h, b":authority") or b"").decode("latin-1")
    path = (header_value(h, b":path") or b"/").decode("latin-1")
    if not authority and e.origin:
        return e.origin.rstrip("/") + path
    return f"{scheme}://{authority}{path}"


def _without_fragment(url: str) -> str:
    """A URL as requested: the fragment never goes on the wire (RFC 9110 section 4.2.4)."""
    if "#" not in url:
        return url
    return urlunsplit(urlsplit(url)._replace(fragment=""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _is_document(e: Exchange) -> bool:
    if e.resource_type == "document":
        return True
    ctype = header_value(e.response_headers, b"content-type") or b""
    return e.resource_type is None and ctype.startswith(b"text/html")


def _is_redirect(e: Exchange) -> bool:
    return 300 <= (e.status or 0) < 400 and _redirect_target(e) is not None


def _redirect_target(e: Exchange) -> str | None:
    if e.redirect_url:
        return _without_fragment(e.redirect_url)
    location = header_value(e.response_headers, b"location")
    if location and e.url:
        return _without_fragment(urljoin(e.url, location.decode("latin-1")))
    return None


def _navigation_start(exchanges: list[Exchange], urls: list[str], page_url: str | None) -> int | None:
    """The index of the navigation's first request (see the module docstring)."""
    if page_url:
        wanted = _without_fragment(page_url)
        hit = next((i for i, u in enumerate(urls) if u == wanted), None)
        if hit is not None:
            return hit
    first_index: dict[str, int] = {}
    for i, u in enumerate(urls):
        first_index.setdefault(u, i)
    for i, e in enumerate(exchanges):
        node, seen = i, set()
        while _is_redirect(exchanges[node]) and node not in seen:  # follow the chain
            seen.add(node)
            target = first_index.get(_redirect_target(exchanges[node]))
            if target is None:
                break
            node = target
        if _is_document(exchanges[node]) and not _is_redirect(exchanges[node]):
            return i
    return next((i for i, e in enumerate(exchanges) if _is_document(e)), None)


def page_graph(trace: Trace, page: str | None = None) -> PageGraph:
    """The dependency graph of one page of ``trace`` (its first page by default)."""
    page, exchanges = _page_exchanges(trace, page)
    where = f"page {page}" if page else None
    page_url = next((p.url for p in trace.pages if p.id == page), None)
    viewport = next((p.viewport_images for p in trace.pages if p.id == page), None)
    viewport = None if viewport is None else frozenset(_without_fragment(u) for u in viewport)
    urls = [_url(e) for e in exchanges]
    start = _navigation_start(exchanges, urls, page_url)
    if start is None:
        raise InputError(
            "the page has no document (no exchange of resource type 'document' or text/html)",
            path=trace.source,
            where=where,
        )
    exchanges, urls = exchanges[start:], urls[start:]
    statuses = [e.status for e in exchanges]  # a property that looks through the response's fields
    first_index: dict[str, int] = {}
    for i, u in enumerate(urls):
        first_index.setdefault(u, i)

    # Redirects: a 3xx is the parent of the exchange for the URL it points to.
    redirect_parent: dict[int, int] = {}
    for i, e in enumerate(exchanges):
        if 300 <= (statuses[i] or 0) < 400 and _redirect_target(e) is not None:  # _is_redirect(e)
            target = next((j for j in range(i + 1, len(urls)) if urls[j] == _redirect_target(e)), None)
            if target is not None and target not in redirect_parent:
                redirect_parent[target] = i
    document = 0
    while True:  # follow the navigation's redirect chain to the main document
        nxt = next((t for t, p in redirect_parent.items() if p == document), None)
        if nxt is None:
            break
        document = nxt

    have_initiators = any(e.initiator or e.initiator_type in ("parser", "script", "preload") for e in exchanges[1:])
    first_css = next((i for i, e in enumerate(exchanges) if e.resource_type == "stylesheet"), None)
    parents: list[int | None] = []
    for i, e in enumerate(exchanges):
        if i == 0:
            parent = None
        elif i in redirect_parent:
            parent = redirect_parent[i]
        elif have_initiators:
            parent = first_index.get(_without_fragment(e.initiator)) if e.initiator else None
            if parent is None or parent == i:
                parent = document
        elif e.resource_type == "font" and first_css is not None and first_css != i:
            parent = first_css
        else:
            parent = document
        parents.append(parent)
    _check_acyclic(parents, urls, trace.source, where)

    body_starts = [
        e.start_s
        for i, e in enumerate(exchanges)
        if parents[i] == document
        and e.start_s is not None
        and i > document
        and (e.resource_type in ("image", "media") or _is_document(e))
    ]
    head_end_s = min(body_starts) if body_starts else None
    # Each resource's frame: its nearest ancestor that is a document (the navigation's hops count
    # as the page's).  Parents are acyclic (checked above); each resource's frame is found once
    # and shared down its chain, so a deep initiator chain costs linear time, not its square.
    frames: list[int | None] = [None] * len(exchanges)
    known = [False] * len(exchanges)
    for i in range(len(exchanges)):
        chain, j = [], i
        while not known[j]:
            p = parents[j]
            if p is None or p <= document or _is_document(exchanges[p]):
                frames[j], known[j] = (None if p is None else document if p <= document else p), True
                break
            chain.append(j)
            j = p
        for k in chain:
            frames[k], known[k] = frames[j], True
    resources = []
    new_resource = object.__new__
    for i, e in enumerate(exchanges):
        if i <= document:
            rtype = "document"  # the navigation and its redirect hops
        else:
            rtype = "document" if _is_document(e) else (e.resource_type or "other")
        blocking, reason = _render_blocking(i, e, rtype, parents[i], document, head_end_s)
        own_document = blocking
        if frames[i] not in (None, document):
            # HTML: a stylesheet or script blocks the rendering of its own document; an iframe's
            # (Chrome's _renderBlocking says "blocking" for it too) does not hold the page's.
            blocking, reason = False, "in a frame (blocks that frame's document, not the page)"
        wait_ms = (e.timings or {}).get("wait")
        # Resource(index=i, ...) with every field given, made as _renumbered makes its
        # copies (the frozen __init__'s object.__setattr__ per field cost a 20,000-resource
        # page a tenth of a second): the fields in their declared order, as __init__ sets them.
        r = new_resource(Resource)
        r.__dict__.update(
            {
                "index": i,
                "exchange": e.index,
                "url": urls[i],
                "origin": e.origin or _origin(urls[i]),
                "resource_type": rtype,
                "body_bytes": int(e.response_body_bytes or 0),
                "parent": parents[i],
                "render_blocking": blocking,
                "priority": e.priority,
                "status": statuses[i] or 200,
                "wait_s": None if not isinstance(wait_ms, (int, float)) or wait_ms < 0 else float(wait_ms) / 1000.0,
                "request_headers": e.request_headers or (),
                "response_headers": e.response_headers or ((b":status", b"200"),),
                "content_bytes": e.response_content_bytes,
                "render_blocking_reason": reason,
                "resource_type_from": e.resource_type_from,
                "http_version": e.http_version,
                "start_s": e.start_s,
                "timings": e.timings,
                "pushed": e.pushed,
                "internal": e.internal,
                "blocks_own_document": own_document,
                "after_load_event": False,
                "asked_after_load": False,
                "initiator_type": e.initiator_type,
                "document_text": e.document_text,
                "in_viewport": urls[i] in viewport if viewport is not None and rtype == "image" else None,
            }
        )
        resources.append(r)
    return PageGraph(
        resources=resources,
        source=trace.source,
        page=page,
        edges_from="initiators" if have_initiators else "fallback",
        document=document,
    )


def _render_blocking(
    i: int, e: Exchange, rtype: str, parent: int | None, document: int, head_end_s: float | None
) -> tuple[bool, str]:
    """(blocks the first render, the rule that decided; see the module docstring)."""
    if i == document:
        return True, "the document"
    if i < document:
        return False, "a redirect before the document"
    if e.render_blocking is not None and rtype in ("stylesheet", "script"):
        return e.render_blocking == "blocking", f"_renderBlocking {e.render_blocking}"
    if rtype not in ("stylesheet", "script"):
        return False, f"a {rtype}"
    if parent != document:
        return False, "not found by the document's parser"
    if e.initiator_type == "script":
        return False, "inserted by a script"
    if e.priority is not None:
        return e.priority in RENDER_BLOCKING_PRIORITIES, f"_priority {e.priority}"
    if e.start_s is None:
        return True, "found by the document's parser (no priority or times: assumed blocking)"
    if head_end_s is None or e.start_s <= head_end_s:
        return True, "requested before the document's first image (in the head)"
    return False, "requested after the document's first image (in the body)"


def _check_acyclic(parents: list[int | None], urls: list[str], source, where) -> None:
    state = [0] * len(parents)  # 0 unseen, 1 on the current walk, 2 known to reach the root
    for start in range(len(parents)):
        walk = []
        node = start
        while node is not None and state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = parents[node]
        if node is not None and state[node] == 1:
            cycle = walk[walk.index(node) :] + [node]
            raise InputError(
                "the initiators form a cycle: " + " -> ".join(urls[i] for i in cycle), path=source, where=where
            )
        for n in walk:
            state[n] = 2
