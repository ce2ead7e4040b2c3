"""The push study's policies as what the server does: the push set, the 103 Early Hints
(``rel=preload`` for the render-blocking sub-resources, ``rel=preconnect`` for the other
connections they need), and the think times (a ``pageload.ServerPlan``)."""

from __future__ import annotations

from ...errors import InputError
from ...traces.pagegraph import PageGraph
from ..pageload import ServerPlan
from ..pageload.client import connection_key

__all__ = ["POLICIES", "push_count", "pushable", "server_plan"]

POLICIES = ("none", "push", "hints", "push+hints", "hints-cdn")
_AS = {"stylesheet": "style", "script": "script", "font": "font", "image": "image", "fetch": "fetch",
       "document": "document"}


def push_count(push_set: str) -> int | None:
    """None for the named sets and lists, N for ``largest:N``."""
    if push_set in ("render-blocking", "all"):
        return None
    name, _, n = push_set.partition(":")
    if name == "largest" and n.isdigit() and int(n) > 0:
        return int(n)
    if name == "list" and n.split():
        return None
    raise InputError(f"unknown push set {push_set!r} (choose render-blocking, all, largest:N or list:URL URL ...)")


def pushable(graph: PageGraph, coalesce: str) -> list[int]:
    """Sub-resources the document's connection is authoritative for (RFC 9113 section 8.4:
    only for the same authority or one the connection may carry), each URL once."""
    doc = graph[graph.document]
    key = connection_key(doc.origin, doc.origin, coalesce)
    seen, out = set(), []
    for r in graph.resources:
        if r.index in (0, graph.document) or r.status != 200 or r.url in seen:
            continue
        seen.add(r.url)
        if connection_key(r.origin, doc.origin, coalesce) == key:
            out.append(r.index)
    return out


def server_plan(graph: PageGraph, policy: str, params) -> ServerPlan:
    """What the server does under ``policy``: think times, the pushes, the 103 preload/preconnect Link values."""
    doc = graph[graph.document]
    think = {r.index: params.asset_think_s for r in graph.resources}
    think[graph.document] = params.think_s if params.think_s is not None else (doc.wait_s or 0.0)
    if policy == "none" or (policy == "hints-cdn" and not params.edge_seen):
        return ServerPlan(think_s=think)
    blocking = [i for i in graph.render_blocking if i != graph.document]
    pushes: list[int] = []
    if policy in ("push", "push+hints"):
        candidates = pushable(graph, params.coalesce)
        n = push_count(params.push_set)
        if params.push_set == "render-blocking":
            pushes = [i for i in candidates if graph[i].render_blocking]
        elif params.push_set == "all":
            pushes = candidates
        elif params.push_set.startswith("list:"):
            pushes = _listed(graph, candidates, params.push_set[len("list:"):].split())
        else:
            pushes = sorted(candidates, key=lambda i: (-graph[i].body_bytes, i))[:n]
    hints: list[bytes] = []
    if policy in ("hints", "push+hints", "hints-cdn"):
        doc_key = connection_key(doc.origin, doc.origin, params.coalesce)
        preconnect: dict[str, None] = {}
        for i in blocking:
            r = graph[i]
            if i in pushes:
                continue
            hints.append(f"<{r.url}>; rel=preload; as={_AS.get(r.resource_type, 'fetch')}".encode())
            key = connection_key(r.origin, doc.origin, params.coalesce)
            if key != doc_key:
                preconnect.setdefault(key, None)
        hints += [f"<{k}>; rel=preconnect".encode() for k in preconnect]
    return ServerPlan(think_s=think, hints=tuple(hints), pushes=tuple(pushes))


def _listed(graph: PageGraph, candidates: list[int], urls: list[str]) -> list[int]:
    """An explicit push list: each URL must be on the page and pushable (RFC 9113 section
    8.4: only what the document's connection is authoritative for)."""
    by_url = {graph[i].url: i for i in candidates}
    on_page = graph.by_url()
    out = []
    for url in dict.fromkeys(urls):
        if url not in on_page:
            raise InputError(f"cannot push {url}: it is not a resource of the page", path=graph.source)
        if url not in by_url:
            raise InputError(f"cannot push {url}: the document's connection is not authoritative for it "
                             f"(RFC 9113 section 8.4), or it is the document or not a 200", path=graph.source)
        out.append(by_url[url])
    return out

