"""The server of a page load, as policies: what it pushes, the 103 Early Hints it sends
(``rel=preload`` for the render-blocking sub-resources, ``rel=preconnect`` for the other
connections they need) and its think times (a ``browser.ServerPlan``).  The push study
compares the policies; fidelity and the lab's 103 check send the same hints.  Written by hand."""

from __future__ import annotations

from typing import Any, Callable

from ..errors import InputError
from ..traces.pagegraph import PageGraph
from .client import ServerPlan, connection_key

__all__ = ["POLICIES", "push_count", "pushable", "push_set", "early_hints", "server_plan"]

_AS = {
    "stylesheet": "style",
    "script": "script",
    "font": "font",
    "image": "image",
    "fetch": "fetch",
    "document": "document",
}


def push_count(push_set: str) -> int | None:
    """None for the named sets and lists, N for ``largest:N``."""
    if push_set in ("render-blocking", "all"):
        return None
    name, _, n = push_set.partition(":")
    if name == "largest" and n.isascii() and n.isdigit() and int(n) > 0:  # not "²" or "١"
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
    decide = POLICIES[policy]
    if isinstance(decide, str):
        import importlib

        decide = importlib.import_module(decide).policy
    pushes, hints = decide(graph, params)
    return ServerPlan(think_s=think, hints=tuple(hints), pushes=tuple(pushes))


def push_set(graph: PageGraph, params) -> list[int]:
    """The resources ``params.push_set`` names, of those the document's connection may push."""
    candidates = pushable(graph, params.coalesce)
    if params.push_set == "render-blocking":
        return [i for i in candidates if graph[i].render_blocking]
    if params.push_set == "all":
        return candidates
    if params.push_set.startswith("list:"):
        return _listed(graph, candidates, params.push_set[len("list:") :].split())
    return sorted(candidates, key=lambda i: (-graph[i].body_bytes, i))[: push_count(params.push_set)]


def early_hints(graph: PageGraph, params, pushed=()) -> list[bytes]:
    """A 103's Link values (RFC 8297): ``rel=preload`` for each render-blocking sub-resource not
    pushed, then ``rel=preconnect`` for the other connections they need."""
    doc = graph[graph.document]
    doc_key = connection_key(doc.origin, doc.origin, params.coalesce)
    hints: list[bytes] = []
    preconnect: dict[str, None] = {}
    for i in graph.render_blocking:
        r = graph[i]
        if i == graph.document or i in pushed:
            continue
        hints.append(f"<{r.url}>; rel=preload; as={_AS.get(r.resource_type, 'fetch')}".encode())
        key = connection_key(r.origin, doc.origin, params.coalesce)
        if key != doc_key:
            preconnect.setdefault(key, None)
    return hints + [f"<{k}>; rel=preconnect".encode() for k in preconnect]


def _push_and_hints(graph: PageGraph, params) -> tuple[list[int], list[bytes]]:
    pushes = push_set(graph, params)
    return pushes, early_hints(graph, params, pushes)


# A policy: (graph, params) -> (resources to push, the 103's Link values); none is no help.
# Adding one: a module whose ``policy`` it is, and one line here naming the module
# (imported when first asked for; ``docs/extending.md``).
POLICIES: dict[str, Callable[[PageGraph, Any], tuple[list[int], list[bytes]]] | str] = {
    "none": lambda graph, params: ([], []),
    "push": lambda graph, params: (push_set(graph, params), []),
    "hints": lambda graph, params: ([], early_hints(graph, params)),
    "push+hints": _push_and_hints,
    # a CDN edge sends hints only for a page it has seen before (``edge_seen``)
    "hints-cdn": lambda graph, params: ([], early_hints(graph, params) if params.edge_seen else []),
}


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
            raise InputError(
                f"cannot push {url}: the document's connection is not authoritative for it "
                f"(RFC 9113 section 8.4), or it is the document or not a 200",
                path=graph.source,
            )
        out.append(by_url[url])
    return out
