"""A page-load model shared by the studies that need one (server push vs 103 Early Hints,
and later ones).  Written by hand: no maintained library simulates a browser's page load
at the frame level (Lighthouse's Lantern, the closest, has no push, no 103 and no
frames; its documentation, ``docs/lantern.md`` in GoogleChrome/lighthouse, gives its
accuracy against real loads: Spearman rho 0.81 and a mean absolute percentage error of
23% for first contentful paint over 300 URLs).

- the page itself is ``simulator.traces.pagegraph``'s dependency graph (HAR initiators,
  redirects, resource types, priorities, sizes, with documented fallbacks), re-exported here.
- ``cache``: the browser cache (cold, warm, a hit probability, an explicit set).
- ``client``: the browser: discovery, connections, the push cache, 103 handling,
  page-load metrics.  Sans-I/O: it talks to a network backend.
- the backend over the transport models (fast sweeps) is the HTTP layer's ``http.network``.
- ``stack_net``: the backend over the real ``h2`` / ``aioquic`` stacks.
- ``priorities``: what each browser signals about a request's priority (RFC 9218 urgency
  and incremental, the RFC 7540 tree it builds on HTTP/2, its reprioritizations).

The same ``load_page(graph, params, plan, backend=...)`` runs on either backend.
"""

from .cache import ClientCache
from .client import LoadParams, PageLoadResult, ServerPlan, load_page
from ..traces.pagegraph import PageGraph, Resource, page_graph

__all__ = [
    "PageGraph",
    "Resource",
    "page_graph",
    "ClientCache",
    "LoadParams",
    "ServerPlan",
    "PageLoadResult",
    "load_page",
]
