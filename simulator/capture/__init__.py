"""Real captures: a real browser loads a page set from real local servers.

    workbench capture --site DIR | --synth N [--seed S] --proto h2|h3 --out trace.har
                      [--repeat-view] [--netlog FILE] [--early-hints] [--push] [--trailers]
                      [--think 0ms] [--timeout 60s]

``server.py`` serves the page set with ``hypercorn`` over HTTP/2 (TLS) or HTTP/3 on
127.0.0.1 (a fresh certificate per run); ``browser.py`` loads it in Debian's headless
``chromium`` under ``playwright`` with HTTP/3 forced for the local origin and builds a
HAR 1.2 (Chrome's ``_initiator``, ``_priority``, ``_resourceType``, ``_transferSize``,
``connection``, ``httpVersion`` from the negotiated protocol) from DevTools' ``Network``
events.  ``--netlog`` also keeps Chromium's NetLog.  The HAR loads with
``simulator.traces.load`` and feeds ``workbench hol``, ``replay`` and ``push``.

A capture is a measurement of a real browser and real servers on this machine's wall
clock, so it is not deterministic (the project's determinism rule is for simulations);
whatever is simulated from a captured HAR afterwards is.  The server's own record (what
it sent: statuses, 103 hints, pushes, trailer sections) goes into the HAR's
``log._server`` for provenance.
"""

from __future__ import annotations

import asyncio
import json
import os

from ..errors import InputError

__all__ = ["capture", "CaptureResult"]


class CaptureResult(dict):
    """``{"har": HAR dict, "server_log": [...], "origin": ..., "proto": ...}``."""


def _site(site_dir: str | None, synth: int | None, seed: int):
    from .server import site_from_dir, site_from_synth

    if (site_dir is None) == (synth is None):
        raise InputError("give exactly one of --site DIR or --synth N.")
    return site_from_dir(site_dir) if site_dir is not None else site_from_synth(synth, seed=seed)


def capture(
    *,
    proto: str,
    site_dir: str | None = None,
    synth: int | None = None,
    seed: int = 0,
    repeat_view: bool = False,
    netlog: str | None = None,
    early_hints: bool = False,
    push: bool = False,
    trailers: bool = False,
    think_s: float = 0.0,
    timeout_s: float = 60.0,
) -> CaptureResult:
    """Serve the page set, load it in Chromium, return the HAR and the server's record."""
    from .browser import browse, chromium_path
    from .server import PROTOCOLS, LocalServer

    if proto not in PROTOCOLS:
        raise InputError(f"--proto must be one of {', '.join(PROTOCOLS)}, not {proto!r}.")
    if netlog is not None and not os.path.isdir(os.path.dirname(os.path.abspath(netlog))):
        raise InputError("--netlog: its folder does not exist.", path=netlog)
    site = _site(site_dir, synth, seed)
    if chromium_path() is None:
        raise InputError("Chromium is not installed at /usr/bin/chromium (run `make system-deps`).")

    async def run():
        async with LocalServer(
            site, proto, early_hints=early_hints, push=push, trailers=trailers, think_s=think_s
        ) as srv:
            marks = []
            har = await asyncio.wait_for(
                browse(
                    srv.origin + "/",
                    proto=proto,
                    spki_sha256_b64=srv.spki_sha256_b64,
                    repeat_view=repeat_view,
                    netlog=netlog,
                    timeout_s=timeout_s,
                    on_view_start=lambda view: marks.append(len(srv.log)),
                ),
                timeout_s + 15.0,
            )
            _early_hint_fetches(har, srv.log[marks[-1] :])
            return CaptureResult(har=har, server_log=list(srv.log), origin=srv.origin, proto=proto)

    from playwright.async_api import Error as BrowserError
    from playwright.async_api import TimeoutError as BrowserTimeout

    try:
        result = asyncio.run(run())
    except (BrowserTimeout, asyncio.TimeoutError):
        raise InputError(f"the page set did not load over {proto} within the {timeout_s:g} s timeout.") from None
    except BrowserError as exc:  # the browser could not load the page set: one line, exit 2
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"Chromium could not load the page set over {proto} ({first}).") from None
    if netlog is not None:
        from .browser import apply_netlog_header_order, read_netlog

        doc = read_netlog(netlog)
        if doc is not None:
            apply_netlog_header_order(result["har"], doc)
    result["har"]["log"]["_server"] = {
        "software": "hypercorn",
        "proto": proto,
        "site": site.source,
        "early_hints": early_hints,
        "push": push,
        "trailers": trailers,
        "think_s": think_s,
        "repeat_view": repeat_view,
        "responses": result["server_log"],
    }
    return result


def _early_hint_fetches(har: dict, served: list[dict]) -> None:
    """Un-mark the cache hits that were really fetched over the network because of a 103.

    Chromium fetches what a 103 preloads outside the page's DevTools session; the parser's
    later request for it then shows as a cache hit (memory or disk).  The server's record of
    this view says what crossed the wire: a cache hit for a path the server served more often
    than the HAR's network entries show was such a fetch (``_fromEarlyHints``, its transfer
    size unknown to DevTools)."""
    from collections import Counter
    from urllib.parse import urlsplit

    served_paths = Counter(r["path"] for r in served)
    entries = har["log"]["entries"]
    on_wire = Counter(urlsplit(e["request"]["url"]).path for e in entries if not e.get("_fromCache"))
    for e in entries:
        path = urlsplit(e["request"]["url"]).path
        if e.get("_fromCache") and served_paths[path] > on_wire[path]:
            del e["_fromCache"]
            e["_fromEarlyHints"] = True
            e["response"]["_transferSize"] = -1
            on_wire[path] += 1


def write(har: dict, path: str) -> None:
    """The HAR, atomically (temporary file, then rename), one entry per line."""
    from ..traces._io import atomic_write

    log = dict(har["log"])
    entries = log.pop("entries")
    dump = lambda obj: json.dumps(obj, ensure_ascii=True, separators=(",", ":"))  # noqa: E731
    head = dump({"log": log})[:-2]
    body = ",\n".join(dump(e) for e in entries)
    atomic_write(str(path), f'{head},"entries":[\n{body}\n]}}}}\n'.encode("ascii"))
