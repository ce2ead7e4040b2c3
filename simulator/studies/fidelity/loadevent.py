"""Which requests of a recorded page its load event waits for (``load_event_graph``), read
from the HAR as the fidelity study reads it; see ``docs/studies/fidelity.md``, "The load
event" and "Requests asked for after onLoad".

Written by hand: HTML's "delay the load event" rules, as a HAR shows their outcome.
"""

from __future__ import annotations

from dataclasses import replace

from ...traces.pagegraph import PageGraph
from .conditions import resource_times

__all__ = ["load_event_graph", "HAR_RESOLUTION_S"]

HAR_RESOLUTION_S = 0.001  # HAR 1.2 writes times in milliseconds


def load_event_graph(
    graph: PageGraph,
    on_load_s: float,
    page_start_s: float | None,
    times: list | None = None,
    *,
    elsewhere: bool = False,
) -> PageGraph:
    """The requests the page made before its measured onLoad (see the module docstring): those
    the load event waited for (``Resource.delays_load_event``) and the XHR/fetch beside them,
    which shared the network with them.  One that ended after the measured onLoad did not
    delay it (``Resource.after_load_event``): the load event's own handlers asked for it.
    One asked for after the measured onLoad is left out, but for a load ``elsewhere`` (on
    another network or server) one a timer may have asked for is kept (``Resource.asked_after_load``):
    there it can be asked for before the load event, which then waits for it.  On the recorded
    network the recording says it came after: the model's own error must not pull it in.
    ``times``: a list to which the result's ``conditions.resource_times`` is appended when
    they were made here (``infer_conditions`` then reads them instead of making them again)."""
    # A pushed response came with the document, whenever the producer wrote its entry.
    keep = [
        r.index
        for r in graph.resources
        if r.index <= graph.document
        or r.pushed
        or r.start_s is None
        or page_start_s is None
        or r.start_s - page_start_s < on_load_s
    ]
    if page_start_s is None:
        return graph.subgraph(keep)
    # HTML fires the load event once every resource that delays it is in, and a browser's
    # onLoad (Chromium's Page.loadEventFired) comes after the event's handlers have run: what
    # they asked for starts just before it and ends after it.  Past HAR's millisecond
    # resolution, so that a rounded end is never read as one.
    on_load_at = page_start_s + on_load_s + HAR_RESOLUTION_S
    starts, ends = resource_times(graph)
    before = set()  # those, and their ancestors: each can still be discovered
    for i in keep:
        while i is not None and i not in before:
            before.add(i)
            i = graph[i].parent
    after = {
        i
        for i in before
        if i > graph.document and not graph[i].pushed and (end := ends[i]) is not None and end > on_load_at
    }
    # Asked for after onLoad by a resource that arrived before it (not one the load event's
    # handlers asked for), or as such a request's redirect: a timer may have asked for it.  What
    # a resource that itself came after onLoad asked for is left out: nothing places it.
    late: set = set()
    for r in graph.resources if elsewhere else ():  # parents come before their children
        if r.index in before or r.parent is None or _browsers_own(graph, r):
            continue
        parent = graph[r.parent]
        if (r.parent in before and r.parent not in after) or (r.parent in late and _redirects(parent)):
            late.add(r.index)
    kept = sorted(before | late)  # a late one's parent is in one of the two: no ancestor is added
    sub = graph.subgraph(kept)
    if times is not None:  # the flags set below change no resource's start or end
        times.append(({n: starts[old] for n, old in enumerate(kept)}, {n: ends[old] for n, old in enumerate(kept)}))
    if not after and not late:
        return sub
    new = {old: n for n, old in enumerate(kept)}
    after, late = {new[i] for i in after}, {new[i] for i in late}
    return replace(
        sub,
        resources=[
            replace(r, after_load_event=True)
            if r.index in after
            else replace(r, asked_after_load=True)
            if r.index in late
            else r
            for r in sub.resources
        ],
    )


def _redirects(r) -> bool:
    """A redirect (3xx, or one the browser made itself): its next request is the same fetch."""
    return 300 <= r.status < 400 or r.internal


def _browsers_own(graph: PageGraph, r) -> bool:
    """Asked for by the browser itself (initiator "other": a favicon), not by the page nor as a
    redirect's next request: the page's load event waits for it on no network."""
    return r.initiator_type == "other" and (r.parent is None or not _redirects(graph[r.parent]))
