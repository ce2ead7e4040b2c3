"""One page load of a rebuilt site (``simulator.lab.site``) in a real Chromium, written as a HAR.

``python -m simulator.lab.load SITE_DIR --proto h2|h3 --out HAR [--timeout 60s]`` starts
headless Chromium (``simulator.capture.browser``: playwright, the system Chromium, the HAR
1.2 built from DevTools' ``Network.*`` events) with every host of the site mapped to its
address (``--host-resolver-rules``; any other name does not resolve), the site leaf's SPKI
hash trusted, and for ``h3`` QUIC forced for every https origin (``--origin-to-force-quic-on``:
Chromium would otherwise learn HTTP/3 only from an ``Alt-Svc`` after a first TCP visit,
RFC 9114 3.1.1).  The page is done at its ``load`` event once no request has been in flight
for the site's longest script delay (plus a quiet margin), or at the timeout.

The HAR's page has ``pageTimings.onLoad`` (ms after the navigation request) and, from a
``PerformanceObserver`` added to every document before its own scripts
(``page.add_init_script``), ``_firstContentfulPaint`` and ``_largestContentfulPaint``
(ms after the page's time origin; -1 when the page painted none), and the page's
``_viewportImages``: the URLs of the top document's ``<img>`` elements in the viewport when
first laid out (an ``IntersectionObserver``), the images Blink raises to High at layout,
which a fast load's priorities cannot show (they arrived before it).  Exit 0; a page that
does not load (navigation error, no load event, an error status for the document) or a bad
site folder: one line on stderr, exit 2.  Hand-written here: the flags and the paint and viewport script.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from urllib.parse import urlsplit

from ..errors import InputError
from ..units import parse_duration
from .site import RebuiltSite, authority_of

__all__ = ["H3_DISCOVERY", "lab_chromium_args", "load_page", "main", "PAINT_OBSERVER_JS"]

PROTOCOLS = ("h2", "h3")
QUIET_S = 0.5
# How this Chromium reaches HTTP/3, in the page-load model's words (``LoadParams.h3_discovery``),
# for predicting the lab: forced by ``--origin-to-force-quic-on``, so it never learns that an
# HTTP/3 host supports priorities (no HTTP/2 to it, no Alt-Svc from it) and its network service
# holds the host's delayable requests all load long (``browser.scheduling``).
H3_DISCOVERY = "forced"

PAINT_OBSERVER_JS = """
(() => {
  const lab = window.__labPaint = {fcp: -1, lcp: -1};
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.name === "first-contentful-paint") lab.fcp = e.startTime;
    }).observe({type: "paint", buffered: true});
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) lab.lcp = e.startTime;
    }).observe({type: "largest-contentful-paint", buffered: true});
  } catch (e) {}
  if (window !== window.top) return;  // the viewport is the top document's
  // Each <img>'s first intersection notice comes with the first rendering after it is in the
  // document: in the viewport then is what Blink's layout raises (ResourceFetcher: visible
  // images High).
  const seen = new WeakSet(), visible = lab.viewport = [];
  try {
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (seen.has(e.target)) continue;
        seen.add(e.target);
        if (e.isIntersecting && e.target.src) visible.push(e.target.src);
      }
    });
    const watch = (node) => {
      if (node.nodeType !== 1) return;
      if (node.tagName === "IMG") io.observe(node);
      for (const img of node.getElementsByTagName("img")) io.observe(img);
    };
    new MutationObserver((records) => {
      for (const r of records) for (const n of r.addedNodes) watch(n);
    }).observe(document, {childList: true, subtree: true});
  } catch (e) {}
})();
"""
PAINT_TIMINGS_JS = """() => {
  const lab = window.__labPaint || {fcp: -1, lcp: -1};
  const r = (v) => v < 0 ? -1 : Math.round(v * 1000) / 1000;
  return {_firstContentfulPaint: r(lab.fcp), _largestContentfulPaint: r(lab.lcp),
          _viewportImages: lab.viewport || []};
}"""


def lab_chromium_args(site: RebuiltSite, proto: str, netlog: str | None = None) -> list[str]:
    """Chromium flags for a lab load: the site's resolver map, its SPKI pin, QUIC forced per
    origin for h3; with ``netlog``, Chromium writes its NetLog there (what its schedulers and
    sockets did, e.g. a held request's ``RESOURCE_SCHEDULER_REQUEST_STARTED`` trigger)."""
    from ..capture.browser import QUIET_ARGS

    rules = [f"MAP {host} {addr}" for host, addr in site.hosts.items()] + ["MAP * ~NOTFOUND"]
    args = [
        f"--ignore-certificate-errors-spki-list={site.spki_sha256_b64}",
        *QUIET_ARGS,
        f"--host-resolver-rules={', '.join(rules)}",
        # Cross-site frames in the page's own process: their requests reach the page's
        # DevTools session (an out-of-process frame reports to a target of its own); no
        # HTTPS-Upgrades: an http:// page is asked for over http, as recorded.
        "--disable-features=IsolateOrigins,site-per-process,HttpsUpgrades",
        "--disable-site-isolation-trials",
    ]
    if netlog:
        args += [f"--log-net-log={os.path.abspath(netlog)}", "--net-log-capture-mode=Default"]
    if proto == "h3":
        quic = []
        for origin in site.origins:
            if origin.startswith("https://"):
                host, port = authority_of(origin)
                quic.append(f"{host}:{port}")
        args += ["--enable-quic", f"--origin-to-force-quic-on={','.join(dict.fromkeys(quic))}"]
    else:
        args += ["--disable-quic"]
    return args


async def load_page(site: RebuiltSite, proto: str, timeout_s: float = 60.0, netlog: str | None = None) -> dict:
    """The HAR of one load of ``site`` in Chromium (with its NetLog written to ``netlog``);
    ``InputError`` when the page does not load."""
    from ..capture.browser import browse, chromium_path

    if proto not in PROTOCOLS:
        raise InputError(f"--proto must be one of {', '.join(PROTOCOLS)}, not {proto!r}.")
    if chromium_path() is None:
        raise InputError("Chromium is not installed at /usr/bin/chromium (make system-deps).")
    try:
        har = await browse(
            site.page_url,
            proto=proto,
            spki_sha256_b64=site.spki_sha256_b64,
            timeout_s=timeout_s,
            quiet_s=QUIET_S + site.settle_s,
            launch_args=lab_chromium_args(site, proto, netlog),
            init_script=PAINT_OBSERVER_JS,
            page_timings_js=PAINT_TIMINGS_JS,
            idle_first=True,  # a cold browser's start-up would slow the page's first requests
        )
    except InputError:
        raise
    except Exception as exc:  # playwright's navigation errors: the page did not load
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"the page did not load: {first}", path=site.page_url) from None
    page = har["log"]["pages"][0]
    if "onLoad" not in page["pageTimings"]:
        raise InputError("the page did not load: no load event before the timeout.", path=site.page_url)
    doc = next((e for e in har["log"]["entries"] if e["request"]["url"] == site.page_url), None)
    final, seen = doc, set()
    while (
        final is not None
        and 300 <= final["response"]["status"] < 400
        and final["response"]["redirectURL"]
        and id(final) not in seen
    ):
        seen.add(id(final))
        nxt = final["response"]["redirectURL"]
        final = next((e for e in har["log"]["entries"] if e["request"]["url"] == nxt and id(e) not in seen), None)
    if final is None or not 200 <= final["response"]["status"] < 400:
        status = final["response"]["status"] if final else "no response"
        raise InputError(f"the page did not load: the document answered {status}.", path=site.page_url)
    page["_URL"] = site.page_url
    # The images in the viewport at their first layout, as the page's own field (not a time).
    # (none written when the page's script did not answer: not known, not none in view)
    viewport = page["pageTimings"].pop("_viewportImages", None)
    if isinstance(viewport, list):
        page["_viewportImages"] = list(dict.fromkeys(viewport))
    har["log"]["comment"] = f"lab load of {site.source or site.page_url} over {proto}"
    return har


def main(argv=None) -> int:
    """The command line: load SITE_DIR once, write the HAR."""
    ap = argparse.ArgumentParser(prog="python -m simulator.lab.load", description=__doc__.split("\n\n")[0])
    ap.add_argument("site", metavar="SITE_DIR", help="a folder written by RebuiltSite.write")
    ap.add_argument("--proto", required=True, choices=PROTOCOLS, help="h2 or h3 (QUIC forced for every https origin)")
    ap.add_argument("--out", required=True, metavar="HAR", help="the HAR file to write")
    ap.add_argument("--timeout", default="60s", help="give up on the page after this long (default 60s)")
    ap.add_argument("--netlog", default=None, metavar="FILE", help="also have Chromium write its NetLog to FILE")
    args = ap.parse_args(argv)
    try:
        timeout_s = parse_duration(args.timeout, require_unit=True)
        if timeout_s <= 0:
            raise InputError(f"--timeout must be above zero, not {args.timeout!r}.")
        site = RebuiltSite.read(args.site)
        har = asyncio.run(load_page(site, args.proto, timeout_s, args.netlog))
        tmp = f"{args.out}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(har, f, indent=1)
        os.replace(tmp, args.out)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {args.out}: cannot write the HAR ({exc.strerror}).", file=sys.stderr)
        return 2
    entries = har["log"]["entries"]
    versions = sorted({e["response"]["httpVersion"] for e in entries if e["response"]["httpVersion"]})
    print(
        f"wrote {len(entries)} entries ({', '.join(versions) or 'no responses'}) of "
        f"{urlsplit(site.page_url).netloc} to {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
