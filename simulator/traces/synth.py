"""Seeded synthetic page loads (format ``"synthetic"``).

``generate(pages=1, seed=0, **params) -> Trace`` builds a browsing session on one
site: ``pages`` page loads, each a document plus its sub-resources from first-party
and third-party origins, with Chrome-like HTTP/2 request header lists and realistic
response header lists.  All randomness comes from one ``random.Random(seed)``
instance, so a seed always gives the same trace.  Host names use the reserved
``.example`` top-level domain (RFC 2606).

Parameters and where their defaults come from.  "Approximately" marks a figure we
rounded; "modelling choice" marks a value no source gave us directly.

``requests_median`` = 70, ``requests_sigma`` = 0.45
    Requests per page, log-normal.  The median page made about 71 requests on
    desktop and 66 on mobile (HTTP Archive, Web Almanac 2024, Page Weight chapter,
    https://almanac.httparchive.org/en/2024/page-weight); we use approximately 70.
    The spread (sigma) is a modelling choice.  ``requests`` fixes the count instead (up to
    20,000: the scale benchmark's largest page).
``type_mix``
    Share of sub-resource requests per type.  Web Almanac 2024 Page Weight: the
    median desktop page loads about 24 JavaScript and 18 image requests of 71
    (approximately 0.34 and 0.25).  Web Almanac 2020 CSS chapter: the median page
    has 6 remote stylesheets (approximately 0.08).  Fonts (0.05), iframes (0.02)
    and fetch/XHR/beacons (the remaining 0.26) are modelling choices.
``size_medians``, ``size_sigma`` = 1.0
    Response body bytes per type, log-normal.  Medians are the Web Almanac 2024 Page
    Weight per-type medians divided by the per-type request counts above:
    images 1,054 KB / 18 = approximately 58 KB; JavaScript 613 KB / 24 =
    approximately 25 KB; CSS 78 KB / 6 = approximately 13 KB; fonts 131 KB / 3 =
    approximately 44 KB (3 font files is a modelling choice); HTML 18 KB per
    document.  XHR/fetch (1.5 KB) and beacons (empty) and the sigma are modelling
    choices.
``cookie_median`` = 36, ``cookie_sigma`` = 0.98, ``cookie_site_share`` = 0.84
    Length of one cookie's name=value, log-normal: median 36 bytes, 95th
    percentile 181 bytes for first-party cookies (HTTP Archive, June 2020 crawl,
    P. Calvano, "An Analysis of Cookie Sizes on the Web", 2020); sigma =
    ln(181/36)/1.645 = approximately 0.98.  83.9% of home pages use cookies (same
    source), so the site sets cookies with probability approximately 0.84.
    Cookies per jar (``site_cookies`` 4-12, ``third_party_cookies`` 0-4) are
    modelling choices; third parties set 79% of all cookies (same source), which is
    why most third-party hosts carry a jar.
``third_parties_median`` = 27, ``third_party_share`` = 0.4
    Third-party origins: the median page in the top million loads 27 third parties
    (Web Almanac 2024, Third Parties chapter,
    https://almanac.httparchive.org/en/2024/third-parties), capped at half the
    page's third-party requests so that each third party serves at least two.
    The share of requests going to third parties is a modelling choice; requests
    spread over third parties with Zipf weights (modelling choice).
``third_party_zipf_s`` = 1.0
    The Zipf exponent of that spread: third party ``k`` (from 1) is picked with weight
    ``1 / k**s``.  With 1.0 the tail is long and few of many third parties are used;
    a lower exponent spreads requests more evenly, so a page with ``origins`` set
    high really reaches about that many origins (traces/README.md: the many-origins
    page).  Modelling choice.
``think_time_median_s`` = 20, ``think_time_sigma`` = 1.0
    Time between page loads, log-normal: individual browsing behaviour is well
    approximated by log-normal distributions (Meiss et al., "What's in a Session",
    ACM Hypertext 2009); the median and sigma are modelling choices.
``ttfb_median_s`` = 0.3, ``spacing_ms`` = 20
    Within a page: the document's time to first byte and the mean gap between
    sub-resource starts (exponential), in discovery order (styles and scripts,
    then fonts, images, then fetches).  Modelling choices.

The 2024 Almanac figures were read from a summary of the chapters, not recomputed (see
traces/README.md).

Header lists follow Chrome 120 on Windows (Fetch metadata ``sec-fetch-*``, client
hints, ``priority`` per RFC 9218, ``referer`` per the default
strict-origin-when-cross-origin policy) and common server behaviour (``date``,
``etag``, ``cache-control``, CDN headers).  Shared site assets are requested on the
first page only (cached afterwards), as a browser would.  The fixed tables those header lists,
host names and paths take their values from (user agent, ``accept`` and ``priority`` per
destination, content types, servers, third-party stems, words) are in ``synthtables``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

from ..errors import InputError
from .model import Exchange, Page, Trace
from .synthtables import (
    ACCEPT,
    CHROME_PRIORITY,
    CONTENT_TYPE,
    DEST,
    IMAGE_TYPES,
    RFC9218,
    SEC_CH_UA,
    SERVERS,
    TEXT_TYPES,
    THIRD_PARTY_STEMS,
    UA,
    WORDS,
)

__all__ = ["SynthParams", "generate", "MIN_REQUESTS", "MAX_REQUESTS", "MAX_ASKED_REQUESTS"]

# A drawn page has 5 to 400 requests (the drawn count is clipped to this range).  A count
# asked for (``requests``, ``trace synth --requests``) is honoured up to 20,000, the largest
# page the scale benchmark (``workbench bench scale``) loads; outside 5..20,000 it is
# refused, not clipped in silence.
MIN_REQUESTS, MAX_REQUESTS = 5, 400
MAX_ASKED_REQUESTS = 20_000

TYPES = ("script", "image", "stylesheet", "font", "iframe", "fetch")


@dataclass(frozen=True)
class SynthParams:
    """The distributions a synthetic session draws from: requests, types, sizes, cookies, third parties, timing."""

    requests_median: float = 70.0
    requests_sigma: float = 0.45
    requests: int | None = None
    type_mix: dict = field(
        default_factory=lambda: {
            "script": 0.34,
            "image": 0.25,
            "stylesheet": 0.08,
            "font": 0.05,
            "iframe": 0.02,
            "fetch": 0.26,
        }
    )
    size_medians: dict = field(
        default_factory=lambda: {
            "document": 18_000,
            "script": 25_000,
            "image": 58_000,
            "stylesheet": 13_000,
            "font": 44_000,
            "iframe": 18_000,
            "fetch": 1_500,
            "ping": 0,
        }
    )
    size_sigma: float = 1.0
    cookie_median: float = 36.0
    cookie_sigma: float = 0.98
    cookie_site_share: float = 0.84
    site_cookies: tuple = (4, 12)
    third_party_cookies: tuple = (0, 4)
    third_parties_median: int = 27
    third_party_share: float = 0.4
    third_party_zipf_s: float = 1.0  # Zipf exponent over third parties (1.0: weights 1/k)
    origins: int | None = None  # fix the number of third-party origins
    think_time_median_s: float = 20.0
    think_time_sigma: float = 1.0
    ttfb_median_s: float = 0.3
    spacing_ms: float = 20.0
    site: str = "news-site.example"
    started: str = "2024-06-01T09:00:00+00:00"


@dataclass
class _Host:
    name: str
    server: str
    cdn_header: str | None
    jar: list  # cookie crumbs "name=value"
    third_party: bool
    alt_svc: bool


class _Gen:
    def __init__(self, rng: random.Random, p: SynthParams):
        self.rng, self.p = rng, p
        self.started = datetime.fromisoformat(p.started)

    # -- small helpers ---------------------------------------------------------------
    def lognormal(self, median: float, sigma: float) -> float:
        return median * math.exp(self.rng.gauss(0.0, sigma)) if median > 0 else 0.0

    def token(self, n: int, alphabet="0123456789abcdef") -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def word(self) -> str:
        return self.rng.choice(WORDS)

    def crumb(self, third_party: bool) -> str:
        size = max(3, round(self.lognormal(self.p.cookie_median, self.p.cookie_sigma)))
        name = self.rng.choice(
            (
                "_ga",
                "_gid",
                "sid",
                "uid",
                "_fbp",
                "consent",
                "ab",
                "pref",
                "lang",
                "tz",
                "_gcl_au",
                "cto_bundle",
                "IDE",
                "NID",
                "__cf_bm",
                "session",
                "visitor",
            )
        )
        if third_party and self.rng.random() < 0.5:
            name = name.lstrip("_").upper()
        name += "_" + self.token(2) if self.rng.random() < 0.3 else ""
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
        return f"{name}={self.token(max(1, size - len(name) - 1), alphabet)}"

    def host(self, name: str, third_party: bool, jar: list | None = None) -> _Host:
        server, cdn = self.rng.choice(SERVERS)
        if jar is None:
            lo, hi = self.p.third_party_cookies
            jar = [self.crumb(True) for _ in range(self.rng.randint(lo, hi))]
        return _Host(name, server, cdn, jar, third_party, self.rng.random() < 0.6)

    # -- the session -----------------------------------------------------------------
    def session(self, pages: int) -> Trace:
        p, rng = self.p, self.rng
        lo, hi = p.site_cookies
        site_jar = [self.crumb(False) for _ in range(rng.randint(lo, hi))] if rng.random() < p.cookie_site_share else []
        www = self.host(f"www.{p.site}", False, site_jar)
        static = self.host(f"static.{p.site}", False, site_jar)  # same site: cookies scoped to the site
        api = self.host(f"api.{p.site}", False, site_jar)
        first_requests = p.requests or round(self.lognormal(p.requests_median, p.requests_sigma))
        n3p = (
            p.origins
            if p.origins is not None
            else min(
                round(self.lognormal(p.third_parties_median, 0.5)),
                max(1, int(first_requests * p.third_party_share) // 2),
            )
        )
        names = []
        for k in range(n3p):
            stem = THIRD_PARTY_STEMS[k % len(THIRD_PARTY_STEMS)]
            suffix = "" if k < len(THIRD_PARTY_STEMS) else str(k // len(THIRD_PARTY_STEMS) + 1)
            names.append(f"{rng.choice(('cdn', 'www', 'static', 'api', 'collect', 's'))}.{stem}{suffix}.example")
        third = [self.host(n, True) for n in names]
        zipf_s = p.third_party_zipf_s
        zipf = [1.0 / (k + 1) ** zipf_s for k in range(len(third))]  # s = 1.0: exactly 1/k, as before

        self.exchanges: list[Exchange] = []
        self.transfer: list[int] = []
        self.etags: dict[str, str] = {}
        shared = {
            t: [f"/assets/{d}/{self.word()}.{self.token(8)}" for _ in range(rng.randint(2, 5))]
            for t, d in (("script", "js"), ("stylesheet", "css"), ("font", "fonts"))
        }
        page_list, t, prev_url = [], 0.0, None
        for k in range(pages):
            count = (
                first_requests if k == 0 else (p.requests or round(self.lognormal(p.requests_median, p.requests_sigma)))
            )
            if p.requests is None:
                count = max(MIN_REQUESTS, min(count, MAX_REQUESTS))
            path = "/" if k == 0 else f"/{self.word()}/{self.word()}-{self.word()}-{rng.randint(10**7, 10**8 - 1)}"
            page_id = f"page_{k + 1}"
            page_list.append(Page(id=page_id, title=f"https://{www.name}{path}", start_s=round(t, 3)))
            self.page(page_id, count, t, www, static, api, third, zipf, path, prev_url, shared, first=(k == 0))
            prev_url = f"https://{www.name}{path}"
            t = self.exchanges[-1].start_s + self.lognormal(p.think_time_median_s, p.think_time_sigma)
        for i, e in enumerate(self.exchanges):
            e.index = i
        meta = {
            "generator": "simulator.traces.synth",
            "params": _describe(p),
            "started": self.started.isoformat(),
            "transfer_sizes": self.transfer,
        }
        return Trace(exchanges=self.exchanges, format="synthetic", pages=page_list, meta=meta)

    def page(self, page_id, count, t0, www, static, api, third, zipf, path, prev_url, shared, first):
        p, rng = self.p, self.rng
        page_url = f"https://{www.name}{path}"
        ttfb = self.lognormal(p.ttfb_median_s, 0.5)
        # The document itself.
        self.emit(
            page_id,
            "document",
            www,
            path,
            t0,
            page_url=None,
            referer=prev_url,
            site="same-origin" if prev_url else "none",
            initiator=(None, "other"),
            wait=ttfb,
        )
        # Sub-resources: types from the mix, in discovery order.
        kinds = list(p.type_mix)
        weights = [p.type_mix[k] for k in kinds]
        subs = [rng.choices(kinds, weights)[0] for _ in range(count - 1)]
        phase = {"stylesheet": 0, "script": 0, "font": 1, "iframe": 2, "image": 2, "fetch": 3}
        subs.sort(key=lambda kind: phase.get(kind, 3) + rng.random() * 1.5)
        start = t0 + ttfb + self.lognormal(0.05, 0.5)
        scripts_seen: list[str] = []
        pending_shared = {k: list(v) for k, v in shared.items()} if first else {}
        for kind in subs:
            start += rng.expovariate(1000.0 / p.spacing_ms)
            third_party = third and rng.random() < p.third_party_share
            if third_party:
                host = rng.choices(third, zipf)[0]
            elif kind == "fetch":
                host = api
            elif kind == "iframe":
                host = www
            else:
                host = static
            if kind == "fetch" and third_party and rng.random() < 0.5:
                kind = "ping"
            req_path = self.path_for(kind, host, pending_shared)
            if kind in ("fetch", "ping", "script") and scripts_seen and rng.random() < 0.6:
                initiator = (rng.choice(scripts_seen), "script")
            else:
                initiator = (page_url, "parser")
            url = self.emit(
                page_id,
                kind,
                host,
                req_path,
                start,
                page_url=page_url,
                referer=page_url,
                site=None,
                initiator=initiator,
                wait=self.lognormal(0.06, 0.8),
            )
            if kind == "script":
                scripts_seen.append(url)

    def path_for(self, kind: str, host: _Host, pending_shared: dict) -> str:
        rng = self.rng
        if not host.third_party and pending_shared.get(kind):
            return pending_shared[kind].pop() + {"script": ".js", "stylesheet": ".css", "font": ".woff2"}[kind]
        if kind == "script":
            if host.third_party:
                return rng.choice(
                    (
                        f"/gtag/js?id=G-{self.token(10, 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789')}",
                        f"/sdk/v{rng.randint(1, 4)}/loader.js",
                        f"/widget/{self.token(6)}/main.min.js",
                        f"/tag/{self.token(12)}.js",
                    )
                )
            return f"/assets/js/{self.word()}-{self.token(4)}.{self.token(8)}.js"
        if kind == "stylesheet":
            return f"/assets/css/{self.word()}.{self.token(8)}.css"
        if kind == "font":
            family = rng.choice(("inter", "roboto", "merriweather", "source-serif"))
            return f"/fonts/{family}-{rng.choice(('regular', 'bold', 'italic'))}-{self.token(6)}.woff2"
        if kind == "image":
            w = rng.choice((160, 320, 480, 640, 800, 1200))
            ext = rng.choice(IMAGE_TYPES)[1]
            if host.third_party:
                return f"/img/{self.token(16)}.{ext}?w={w}"
            return (
                f"/images/{rng.randint(2019, 2024)}/{rng.randint(1, 12):02d}/"
                f"{self.word()}-{self.word()}-{self.token(6)}-{w}x{w * 9 // 16}.{ext}"
            )
        if kind == "iframe":
            return f"/embed/{self.token(11, 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789')}"
        if kind == "ping":
            return (
                f"/collect?v=2&tid=G-{self.token(10, 'ABCDEFGHJKLMNPQRSTUVWXYZ0123456789')}&cid="
                f"{rng.randint(10**8, 10**9)}.{rng.randint(10**8, 10**9)}&_p={rng.randint(10**9, 10**10)}"
                f"&en=page_view"
            )
        return (
            f"/v1/{self.word()}/{rng.choice(('items', 'comments', 'recommendations', 'config'))}"
            f"?id={rng.randint(1, 99999)}"
        )

    def emit(self, page_id, kind, host: _Host, path, start, *, page_url, referer, site, initiator, wait) -> str:
        rng = self.rng
        url = f"https://{host.name}{path}"
        method = "POST" if kind == "ping" else "GET"
        page_host = page_url.split("/")[2] if page_url else host.name
        if site is None:
            if host.name == page_host:
                site = "same-origin"
            elif host.third_party:
                site = "cross-site"
            else:
                site = "same-site"
        mode = {"document": "navigate", "iframe": "navigate", "font": "cors", "fetch": "cors", "ping": "no-cors"}.get(
            kind, "no-cors"
        )
        req = [(":method", method), (":scheme", "https"), (":authority", host.name), (":path", path)]
        if kind == "ping":
            req.append(("content-length", str(rng.randint(0, 80))))
        req += [("sec-ch-ua", SEC_CH_UA), ("sec-ch-ua-mobile", "?0"), ("sec-ch-ua-platform", '"Windows"')]
        if kind == "document":
            req.append(("upgrade-insecure-requests", "1"))
        req += [("user-agent", UA), ("accept", ACCEPT[kind])]
        if mode == "cors" and site != "same-origin":
            req.append(("origin", f"https://{page_host}"))
        req += [("sec-fetch-site", site), ("sec-fetch-mode", mode)]
        if kind == "document":
            req.append(("sec-fetch-user", "?1"))
        req.append(("sec-fetch-dest", DEST[kind]))
        if referer:
            # Default referrer policy strict-origin-when-cross-origin: full URL same-origin, else the origin.
            req.append(("referer", referer if site == "same-origin" else "https://" + referer.split("/")[2] + "/"))
        req += [("accept-encoding", "gzip, deflate, br"), ("accept-language", "en-US,en;q=0.9")]
        if host.jar and mode != "cors" or host.jar and site == "same-origin":
            req.append(("cookie", "; ".join(host.jar)))
        req.append(("priority", RFC9218[kind]))

        # Response.
        size = 0 if kind == "ping" else max(40, round(self.lognormal(self.p.size_medians[kind], self.p.size_sigma)))
        status = "204" if kind == "ping" else "200"
        when = self.started + timedelta(seconds=start + wait)
        resp = [(":status", status), ("date", format_datetime(when.astimezone(timezone.utc), usegmt=True))]
        if kind == "image":
            ctype = next(c for c, e in IMAGE_TYPES if path.split("?")[0].endswith(e))
        else:
            ctype = CONTENT_TYPE[kind]
        if kind != "ping":
            resp.append(("content-type", ctype))
        compressed = kind in TEXT_TYPES and size > 200
        wire = size
        if compressed:
            encoding = "br" if rng.random() < 0.5 else "gzip"
            wire = max(20, size // rng.choice((3, 4, 5)))
            resp.append(("content-encoding", encoding))
        resp.append(("content-length", str(wire)))
        resp.append(("server", host.server))
        if kind in ("document", "iframe"):
            resp.append(("cache-control", "private, no-cache, max-age=0"))
            resp.append(("strict-transport-security", "max-age=31536000; includeSubDomains"))
            resp.append(("x-frame-options", "SAMEORIGIN"))
        elif kind in ("fetch", "ping"):
            resp.append(("cache-control", "no-store"))
        else:
            resp.append(
                (
                    "cache-control",
                    "public, max-age=31536000, immutable"
                    if not host.third_party
                    else f"public, max-age={rng.choice((300, 900, 3600, 86400))}",
                )
            )
            etag = self.etags.setdefault(url, f'"{self.token(rng.choice((16, 32)))}"')
            resp.append(("etag", etag))
            last = self.started - timedelta(days=rng.randint(1, 400), seconds=rng.randint(0, 86399))
            resp.append(("last-modified", format_datetime(last, usegmt=True)))
            resp.append(("age", str(rng.randint(0, 86400))))
        if compressed:
            resp.append(("vary", "Accept-Encoding"))
        if mode == "cors" or (host.third_party and kind in ("script", "font")):
            resp.append(("access-control-allow-origin", "*" if host.third_party else f"https://{page_host}"))
        resp.append(("x-content-type-options", "nosniff"))
        if host.cdn_header == "cf-ray":
            resp.append(("cf-ray", f"{self.token(16)}-{rng.choice(('FRA', 'CDG', 'AMS', 'LHR'))}"))
        elif host.cdn_header:
            resp.append(("x-cache", rng.choice(("Hit from cloudfront", "Miss from cloudfront"))))
            resp.append(
                (
                    host.cdn_header,
                    self.token(56, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") + "==",
                )
            )
        if host.alt_svc:
            resp.append(("alt-svc", 'h3=":443"; ma=86400'))
        # Some responses refresh a cookie: the next requests carry the new value.
        if host.jar and kind in ("document", "fetch", "ping") and rng.random() < 0.3:
            k = rng.randrange(len(host.jar))
            host.jar[k] = self.crumb(host.third_party) if rng.random() < 0.5 else host.jar[k]
            crumb = host.jar[k]
            resp.append(
                (
                    "set-cookie",
                    f"{crumb}; Path=/; Domain={host.name.split('.', 1)[1]}; "
                    f"Max-Age={rng.choice((1800, 86400, 31536000))}; Secure; SameSite=Lax",
                )
            )

        timings = {
            "blocked": round(self.lognormal(1.5, 0.8), 3),
            "dns": -1,
            "connect": -1,
            "ssl": -1,
            "send": round(self.lognormal(0.15, 0.5), 3),
            "wait": round(wait * 1000, 3),
            "receive": round(wire / 5000.0 + self.lognormal(0.5, 0.5), 3),
        }  # ~5 MB/s
        if not any(e.origin == f"https://{host.name}" for e in self.exchanges):
            timings["dns"] = round(self.lognormal(20, 0.6), 3)
            timings["connect"] = round(self.lognormal(40, 0.5), 3)
            timings["ssl"] = round(self.lognormal(25, 0.5), 3)
        enc = lambda hs: tuple((n.encode(), v.encode()) for n, v in hs)  # noqa: E731
        self.exchanges.append(
            Exchange(
                index=len(self.exchanges),
                request_headers=enc(req),
                response_headers=enc(resp),
                # The body's bytes on the wire (coded) and its decoded size (HAR bodySize and content.size).
                request_body_bytes=int(dict(req).get("content-length", 0)),
                response_body_bytes=wire,
                response_content_bytes=size if size != wire else None,
                start_s=round(start, 3),
                origin=f"https://{host.name}",
                connection=host.name,
                page=page_id,
                priority=CHROME_PRIORITY[kind],
                resource_type={"stylesheet": "stylesheet", "ping": "other", "iframe": "document"}.get(kind, kind),
                http_version="h2",
                initiator=initiator[0],
                initiator_type=initiator[1],
                url=url,
                timings=timings,
            )
        )
        self.transfer.append(wire + sum(len(n) + len(v) for n, v in resp) // 3)
        return url


def _describe(p: SynthParams) -> dict:
    return {
        f.name: getattr(p, f.name)
        for f in fields(p)
        if f.name not in ("type_mix", "size_medians") and getattr(p, f.name) is not None
    }


def generate(pages: int = 1, seed: int = 0, **params) -> Trace:
    """A synthetic browsing session of ``pages`` page loads; ``params`` override ``SynthParams``."""
    names = {f.name for f in fields(SynthParams)}
    unknown = sorted(set(params) - names)
    if unknown:
        raise InputError(f"unknown synthetic-trace parameter(s): {', '.join(unknown)}.")
    if pages < 1:
        raise InputError(f"pages must be at least 1, not {pages}.")
    p = replace(SynthParams(), **params)
    if p.requests is not None and not MIN_REQUESTS <= p.requests <= MAX_ASKED_REQUESTS:
        raise InputError(
            f"requests per page must be {MIN_REQUESTS} to {MAX_ASKED_REQUESTS:,} (the generator's "
            f"page sizes), not {p.requests}."
        )
    if not 0.0 <= p.third_party_share <= 1.0:
        raise InputError(f"the third-party share must be in [0, 1], not {p.third_party_share}.")
    if not 0.0 <= p.third_party_zipf_s <= 10.0:
        raise InputError(f"the third-party Zipf exponent must be in [0, 10], not {p.third_party_zipf_s}.")
    trace = _Gen(random.Random(seed), p).session(pages)
    trace.meta["seed"] = seed
    trace.meta["pages"] = pages
    return trace
