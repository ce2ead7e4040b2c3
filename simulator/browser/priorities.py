"""What browsers say about each request's priority, per resource type: RFC 9218 urgency and
incremental (the ``Priority`` field, HTTP/3 and, from Chromium, HTTP/2 too) and the RFC 7540
tree placement each builds on HTTP/2.  Written by hand from the browsers' own sources and
documents (cited per profile); ``chromium`` is checked against a real capture's wire
``priority`` fields and DevTools ``_priority`` (tests/test_browser_priorities.py).

A profile is a function ``profile(graph, protocol) -> (signals, updates)``: per resource
index its ``PrioritySignal``, and the reprioritizations it sends once the page has laid
out (RFC 9218 section 7: PRIORITY_UPDATE; HTTP/2's PRIORITY frame): the largest image,
the LCP candidate, boosted as the browser finds it in the viewport.  The page graph
has no layout, so "in the viewport" is modelled as "the largest image of the page".

- ``chromium`` (Blink ``ResourceFetcher`` priorities, net ``RequestPriority``;
  ``ConvertRequestPriorityToQuicPriority``: HIGHEST..IDLE give urgency 0..4; Blink's
  ``ShouldLoadIncremental``: everything incremental except stylesheets, scripts and
  fonts): the document and stylesheets urgency 0, fonts, fetches and parser-blocking
  scripts 1, the first five images 2 (Chromium's boost of the first few images), other
  images 3, async/deferred and script-inserted scripts 3.  On HTTP/2 the tree is a chain:
  each stream exclusively under the youngest open stream of the same or a more urgent
  priority (``Http2PriorityDependencies``), weight 256 - 255/7 x urgency (rounded down,
  plus one: ``Spdy3PriorityToHttp2Weight``).  The LCP image is boosted to urgency 1.
- ``firefox`` (Firefox 132+, netwerk/docs/http/prioritization.md): document 0
  incremental, stylesheets and blocking scripts 2, async/deferred scripts and fonts 3,
  fetches and others 4, images 5 incremental; the LCP image to 3 ("about to be
  rendered").  On HTTP/2 its placeholder tree (``PLACEHOLDER_TREES["firefox"]``): the
  document under urgent-start, stylesheets and blocking scripts under leader, other
  scripts under other, the rest under follower (which hangs under leader); each stream's
  weight 21 - its nsISupportsPriority (-20..20): 41 the document, 31 fonts, 11 images.
- ``safari``: weights only on HTTP/2 (every stream under the root, none exclusive:
  document 255, stylesheets, scripts and fonts 24, fetches and others 16, images 8, as
  the 2018-2020 measurements of Safari reported them); on HTTP/3 its load priorities
  (very high: document and stylesheets; high: scripts and fonts; medium: fetches; low:
  images) as urgency 0..3, never incremental.  Not checked against a capture here.
- ``trace``: what the trace itself recorded in each request's ``Priority`` field (no
  tree); a malformed field is bad input.
"""

from __future__ import annotations

from typing import Callable

from ..errors import InputError
from ..http.priority import CHAIN, ROOT, PrioritySignal, parse_priority_field

__all__ = [
    "PROFILES",
    "profile_names",
    "browser_signals",
    "trace_priority",
    "lcp_candidate",
    "CHROMIUM_DEVTOOLS_URGENCY",
    "chromium_weight",
]

# DevTools' names of Chromium's net priorities (HAR ``_priority``) and their urgency.
CHROMIUM_DEVTOOLS_URGENCY = {"VeryHigh": 0, "High": 1, "Medium": 2, "Low": 3, "VeryLow": 4}
CHROMIUM_BOOSTED_IMAGES = 5


def chromium_weight(urgency: int) -> int:
    """Chromium's HTTP/2 weight for a SPDY priority (= the urgency): 256 for 0 ... 1 for 7."""
    return int(255 / 7 * (7 - urgency)) + 1


def lcp_candidate(graph) -> int | None:
    """The page's largest image (by body bytes): its LCP candidate for the model."""
    images = [r for r in graph.resources if r.resource_type == "image" and r.body_bytes > 0]
    return max(images, key=lambda r: (r.body_bytes, -r.index)).index if images else None


def _blocking_script(graph, r) -> bool:
    return r.resource_type == "script" and r.render_blocking and r.parent == graph.document


def chromium(graph, protocol: str):
    """Chromium's signals per resource and its LCP image's boost (the module docstring gives the sources)."""
    signals, images = {}, 0
    for r in graph.resources:
        t = r.resource_type
        if r.index == graph.document:
            u, inc = 0, True
        elif t == "stylesheet":
            u, inc = 0, False
        elif t == "font":
            u, inc = 1, False
        elif t == "script":
            u, inc = (1 if _blocking_script(graph, r) else 3), False
        elif t == "image":
            images += 1
            u, inc = (2 if images <= CHROMIUM_BOOSTED_IMAGES else 3), True
        elif t in ("fetch", "xhr", "other", "document"):
            u, inc = 1, True
        else:
            u, inc = 3, True
        signals[r.index] = _signal(protocol, u, inc, parent=CHAIN, weight=chromium_weight(u), exclusive=True)
    updates = {}
    lcp = lcp_candidate(graph)
    if lcp is not None and signals[lcp].urgency > 1:
        updates[lcp] = _signal(protocol, 1, True, parent=CHAIN, weight=chromium_weight(1), exclusive=True)
    return signals, updates


_FIREFOX = {  # type -> (urgency, incremental, placeholder group, nsISupportsPriority)
    "stylesheet": (2, False, "leader", 0),
    "font": (3, False, "follower", -10),
    "image": (5, True, "follower", 10),
    "fetch": (4, False, "follower", 0),
    "xhr": (4, False, "follower", 0),
}


def firefox(graph, protocol: str):
    """Firefox's signals per resource (urgency, or its placeholder tree on HTTP/2) and its LCP image's update."""
    signals = {}
    for r in graph.resources:
        t = r.resource_type
        if r.index == graph.document:
            u, inc, group, prio = 0, True, "urgent-start", -20
        elif t == "script":
            u, inc, group, prio = (2, False, "leader", 0) if _blocking_script(graph, r) else (3, False, "other", 0)
        else:
            u, inc, group, prio = _FIREFOX.get(t, (4, False, "follower", 0))
        signals[r.index] = _signal(protocol, u, inc, parent=group, weight=21 - prio, tree="firefox")
    updates = {}
    lcp = lcp_candidate(graph)
    if lcp is not None:
        updates[lcp] = _signal(protocol, 3, True, parent="follower", weight=31, tree="firefox")
    return signals, updates


_SAFARI = {"stylesheet": (0, 24), "script": (1, 24), "font": (1, 24), "fetch": (2, 16), "xhr": (2, 16), "image": (3, 8)}


def safari(graph, protocol: str):
    """Safari's signals per resource: weights under the root on HTTP/2, urgency 0-3 on HTTP/3; no updates."""
    signals = {}
    for r in graph.resources:
        u, w = (0, 255) if r.index == graph.document else _SAFARI.get(r.resource_type, (2, 16))
        signals[r.index] = _signal(protocol, u, False, parent=ROOT, weight=w)
    return signals, {}


def trace_priority(r) -> tuple[int, bool] | None:
    """(urgency, incremental) of resource ``r``'s recorded ``Priority`` request field, or None."""
    for name, value in r.request_headers:
        if name.lower() in (b"priority", "priority"):
            try:
                return parse_priority_field(value)
            except ValueError as exc:
                raise InputError(
                    f"malformed Priority field {value!r} on the request for {r.url} (RFC 9218 section 5): {exc}"
                ) from None
    return None


def trace(graph, protocol: str):
    """The ``Priority`` field each request of the trace recorded (RFC 9218 section 5); no updates."""
    signals = {}
    for r in graph.resources:
        found = trace_priority(r)
        if found is not None:
            signals[r.index] = PrioritySignal(urgency=found[0], incremental=found[1])
    return signals, {}


def _signal(protocol: str, urgency: int, incremental: bool, **tree) -> PrioritySignal:
    """The RFC 9218 signals, and on HTTP/2 the tree placement too (HTTP/3 has no tree)."""
    if protocol != "h2":
        return PrioritySignal(urgency=urgency, incremental=incremental)
    return PrioritySignal(urgency=urgency, incremental=incremental, **tree)


PROFILES: dict[str, Callable] = {"chromium": chromium, "firefox": firefox, "safari": safari, "trace": trace}


def profile_names() -> tuple[str, ...]:
    """Every browser profile's name, in the table's order."""
    return tuple(PROFILES)


def browser_signals(graph, browser: str, protocol: str, *, reprioritize: bool = True) -> tuple[tuple, tuple]:
    """((index, signal), ...) and the updates ((index, signal), ...) of ``browser`` on ``graph``.
    Every recorded ``Priority`` field of the trace is checked first (bad input if malformed)."""
    if browser not in PROFILES:
        raise InputError(f"unknown browser profile {browser!r} (choose from {', '.join(PROFILES)})")
    for r in graph.resources:
        trace_priority(r)
    signals, updates = PROFILES[browser](graph, protocol)
    return tuple(sorted(signals.items())), (tuple(sorted(updates.items())) if reprioritize else ())
