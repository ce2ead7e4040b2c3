"""The browser's HTTP cache at the start of a page load.  Written by hand.

``cold``: empty (a first view).  ``warm``: every sub-resource is fresh in the cache (a
repeat view); the navigation itself is never served from the cache, as browsers
revalidate the main document.  A number ``P`` in [0, 1]: each sub-resource is cached
with probability ``P``, drawn from the load's own seeded stream.  Or an explicit set
of URLs: ``list:URL URL ...`` (each must be a sub-resource of the page).
"""

from __future__ import annotations

import random

from ..errors import InputError
from ..units import parse_number
from ..traces.pagegraph import PageGraph

__all__ = ["ClientCache", "parse_cache"]


def parse_cache(spec: str) -> str:
    """Check a ``--cache`` value (``cold``, ``warm``, a probability or ``list:URL URL ...``);
    returns it normalised."""
    text = str(spec).strip()
    if text.startswith("list:"):
        if not text[len("list:") :].split():
            raise InputError("cache list:... names no URL (give list:URL URL ...)")
        return text
    text = text.lower()
    if text in ("cold", "warm"):
        return text
    try:
        p = parse_number(text, "cache hit probability")  # ASCII digits: float() also takes "٠.٥"
    except InputError:
        raise InputError(
            f"cache must be cold, warm, a hit probability in [0, 1] or list:URL URL ..., got {spec!r}"
        ) from None
    if not 0.0 <= p <= 1.0:
        raise InputError(f"cache hit probability must be in [0, 1], got {spec!r}")
    return repr(p)


class ClientCache:
    """The set of URLs the browser has fresh at the start of the load."""

    def __init__(self, urls=()) -> None:
        self.urls: frozenset[str] = frozenset(urls)

    @classmethod
    def for_page(cls, graph: PageGraph, spec: str, rng: random.Random) -> "ClientCache":
        """The cache for ``spec``: cold, warm, ``list:URL ...``, or a per-resource probability drawn with ``rng``."""
        spec = parse_cache(spec)
        subresources = [r.url for r in graph.resources if r.index != graph.document and r.index != 0]
        if spec == "cold":
            return cls()
        if spec == "warm":
            return cls(subresources)
        if spec.startswith("list:"):
            urls = spec[len("list:") :].split()
            for url in urls:
                if url not in subresources:
                    raise InputError(f"cannot cache {url}: it is not a sub-resource of the page", path=graph.source)
            return cls(urls)
        p = float(spec)
        # One draw per resource in page order, so the same seed caches the same set.
        return cls(url for url in subresources if rng.random() < p)

    def has(self, url: str) -> bool:
        """True when ``url`` is fresh in the cache (the browser does not request it)."""
        return url in self.urls

    def __len__(self) -> int:
        return len(self.urls)
