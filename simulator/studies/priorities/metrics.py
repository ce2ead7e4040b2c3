"""Visual metrics estimated from a page load's per-resource ready times.  Written by hand:
the page-load model has no renderer, so each metric is a floor or a proxy, said here:

- ``render_blocking_done_s``: the document, its stylesheets and parser-blocking scripts all
  ready: no first contentful paint can come earlier (its floor);
- ``lcp_estimate_s``: the largest image (by bytes) ready, and not before the first paint:
  Largest Contentful Paint when that image is the largest element (a text-only page: the
  first paint);
- ``speed_index_estimate_s``: Speed Index (the integral of 1 - visual completeness over
  time) with completeness rising in steps: the document's text at the first paint, each
  image when it is ready (not before the first paint), each weighing its bytes as a proxy
  for its area;
- ``onload_s``: every resource the load event waits for ready (not XHR/fetch), as the
  page-load model reports it.
"""

from __future__ import annotations

import math

import pandas as pd

from ...browser.priorities import lcp_candidate

__all__ = ["visual_metrics", "METRICS"]

METRICS = ("onload_s", "render_blocking_done_s", "lcp_estimate_s", "speed_index_estimate_s")


def visual_metrics(resources: pd.DataFrame, graph) -> dict:
    """The four metrics of one load (``resources``: ``PageLoadResult.resources``)."""
    ready = dict(zip(resources["index"], resources["ready_s"]))
    first_paint = max(ready[i] for i in graph.render_blocking) if graph.render_blocking else ready[graph.document]
    lcp = lcp_candidate(graph)
    lcp_s = max(first_paint, ready[lcp]) if lcp is not None else first_paint
    steps = [(first_paint, max(graph[graph.document].body_bytes, 1))]
    steps += [
        (max(first_paint, ready[r.index]), r.body_bytes)
        for r in graph.resources
        if r.resource_type == "image" and r.body_bytes > 0 and not math.isnan(ready[r.index])
    ]
    total = sum(w for _, w in steps)
    speed_index = first_paint + sum((t - first_paint) * w for t, w in steps) / total
    return {
        "onload_s": float(max(ready[r.index] for r in graph.resources if r.delays_load_event)),
        "render_blocking_done_s": float(first_paint),
        "lcp_estimate_s": float(lcp_s),
        "speed_index_estimate_s": float(speed_index),
    }
