"""The priorities study: which response a server sends next, and what the page shows
first.  One page load per (browser profile, scheduler) on the page-load model, with the
same seed: the browser's signals (``http.browser_priorities``: RFC 9218 urgency and
incremental, RFC 7540 tree placement on HTTP/2, the LCP image's PRIORITY_UPDATE after
layout) and the server's scheduler (``http.priority``), compared on onLoad and on visual
metrics estimated from the resources' ready times (``metrics``)."""

from .metrics import visual_metrics
from .study import PrioritiesParams, PrioritiesResult, run, run_seeds

__all__ = ["PrioritiesParams", "PrioritiesResult", "run", "run_seeds", "visual_metrics"]
