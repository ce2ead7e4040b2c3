"""Fidelity: the page-load model against measured page loads.  Written by hand.

The question a reviewer asks first: does a simulated page load look like the real one?
For every page of a HAR with a measured ``onLoad``, the conditions of that load are
inferred from the HAR (``conditions``: per-origin RTT, server times, set-up times, the
path's bandwidth, the protocol of each origin, the browser's discovery delays), the page
graph (``traces.pagegraph``) is loaded on the page-load model (``simulator.browser``, over
the TCP and QUIC models; HTTP/1.1 origins get six connections), and the simulated onLoad
is compared with the measured one.  Nothing observed is fed back as a result: the model
gets the graph, sizes and conditions, never when a request started or ended.

The load event waits for the resources the document's load was delaying (HTML's "delay
the load event": documents, stylesheets, scripts, fonts, images, media): those of the page
that the browser asked for before the measured onLoad.  The XHR/fetch it asked for before
then are loaded too (they share the network) but the load event does not wait for them,
nor for a request that ended after the measured onLoad (the event's own handlers asked for
it: a browser's onLoad comes after they ran, so it starts just before); later requests are
left out.

Reference: Lighthouse's simulator (Lantern) reports Spearman's rho 0.81 and a mean
absolute percentage error of 23% for first contentful paint against real loads (its
published accuracy over 300 URLs); ``workbench fidelity`` prints the same two figures.

The repeat view (WebPageTest's second load of a page) is predicted from the first view:
the same graph and conditions with a browser cache after RFC 9111 (a response fresh by its
``Cache-Control: max-age`` or ``Expires`` is served from the cache; a stale one with a
validator, ``ETag`` or ``Last-Modified``, is revalidated with a 304 of no body; the rest is
fetched again).
"""

from .cli import add_arguments, params_from_args
from .conditions import PROTOCOL_CHOICES, PageConditions, infer_conditions
from .study import (
    LOAD_EVENT_TYPES,
    FidelityParams,
    FidelityResult,
    cache_after,
    har_paths,
    load_event_graph,
    run,
    run_paths,
    simulate_page,
    summarize,
)

__all__ = [
    "FidelityParams",
    "FidelityResult",
    "run",
    "run_paths",
    "simulate_page",
    "LOAD_EVENT_TYPES",
    "load_event_graph",
    "cache_after",
    "har_paths",
    "summarize",
    "PageConditions",
    "infer_conditions",
    "PROTOCOL_CHOICES",
    "add_arguments",
    "params_from_args",
]
