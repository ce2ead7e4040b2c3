"""A seeded generator of a small web site (HTML, CSS, JavaScript, JSON) whose releases
evolve by small edits: the cross-stream study's default bodies.

The generator builds one site from a seeded ``random.Random``:

- a *site lexicon* (pseudo-words made of syllables, drawn with a Zipf law) for product
  names, identifiers, class names and prose, so two sites share the web's structure
  (tags, CSS properties, JavaScript keywords: the fixed vocabularies in ``vocabulary.py``) but not
  their words, as real sites do;
- HTML documents from one site template (head, navigation, footer) around per-page
  content (product cards, prose), with a per-response CSRF token in the logout link
  (a marked *secret* span);
- CSS rules (BEM-style selectors, common properties), JavaScript modules (functions
  built from statement templates; the vendor bundle "minified"), JSON API responses
  (arrays of product records, a session id marked secret);
- releases: each one edits a few units (a changed constant, a new function, a
  removed rule, prices and stock that moved, a product added), renames the hashed
  asset URLs (``app.<sha8>.js``) and leaves the rest as it was.

Every default is a field of ``BodyParams``; ``traces/README.md`` gives where each comes
from (size medians: the HTTP Archive Web Almanac, as in ``synth.py``; edit rates are
modelling choices).  The same seed gives the same bytes.

``corpus_from_trace(trace, ...)`` generates bodies for the text responses of a trace
(its URLs, content types and sizes): what ``workbench batch crossstream --traces``
uses, so a "trace" for this study is any trace file the loaders read.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import zlib
from dataclasses import asdict, replace
from urllib.parse import urlsplit

from ....errors import InputError
from ....traces.model import header_value
from .corpus import Body, BodyParams, Corpus, kind_for_content_type
from .vocabulary import (_ARIA, _CSS_BLOCKS, _CSS_PROPS, _ENGLISH, _JS_PROLOGUE, _JS_TEMPLATES, _LOCALES, _VERBS,
                         _Words, _camel, _lognormal)

__all__ = ["Site", "generate", "corpus_from_trace"]


# ---------------------------------------------------------------------------------------
# The site: units that evolve, rendered per release


class Site:
    """One generated site.  ``rng`` drives everything; ``render(release)`` gives the
    bodies of one release (the units are edited in place between releases)."""

    def __init__(self, rng: random.Random, params: BodyParams) -> None:
        self.rng, self.p = rng, params
        self.origin = f"https://www.{params.site}"
        self.words = _Words(rng, params.lexicon_words, params.zipf_s)
        self.catalogue = [self._product(i) for i in range(60)]
        self.nav = [self._title(2) for _ in range(7)]
        self.release = 0
        p = params
        self.css = [self._css_file(i, _lognormal(rng, p.size_medians["css"], p.size_sigma, p.max_bytes))
                    for i in range(p.css_files)]
        self.js = [self._js_file(i, _lognormal(rng, p.size_medians["js"], p.size_sigma, p.max_bytes))
                   for i in range(p.js_files)]
        self.pages = [(self._page_path(i), _lognormal(rng, p.size_medians["html"], p.size_sigma, p.max_bytes))
                      for i in range(p.html_pages)]
        self.apis = [(f"/api/v1/products?page={i + 1}",
                      _lognormal(rng, p.size_medians["json"], p.size_sigma, p.max_bytes)) for i in range(p.json_files)]

    # words ------------------------------------------------------------------------
    def w(self) -> str:
        """One word drawn from the site's Zipf vocabulary."""
        return self.words.draw(self.rng)

    def _title(self, n: int) -> str:
        return " ".join(self.w().capitalize() for _ in range(n))

    def sentence(self) -> str:
        """A sentence of 6 to 14 words, English and site vocabulary mixed."""
        r = self.rng
        parts = [r.choice(_ENGLISH) if r.random() < 0.55 else self.w() for _ in range(r.randint(6, 14))]
        return (" ".join(parts)).capitalize() + "."

    def _product(self, i: int) -> dict:
        r = self.rng
        return {"id": 1000 + i, "sku": f"{self.w()[:3].upper()}-{r.randint(1000, 9999)}", "name": self._title(2),
                "price": round(r.uniform(4, 240), 2), "in_stock": r.random() < 0.85,
                "rating": round(r.uniform(2.5, 5), 1),
                "tags": [self.w() for _ in range(r.randint(1, 4))], "summary": self.sentence()}

    def _page_path(self, i: int) -> str:
        return "/" if i == 0 else f"/{'category' if i % 2 else 'products'}/{self.w()}-{self.w()}"

    # CSS --------------------------------------------------------------------------
    def _css_rule(self) -> list:
        r = self.rng
        block = r.choice(_CSS_BLOCKS)
        sel = (f".{block}" + (f"__{self.w()}" if r.random() < 0.7 else "")
               + (f"--{self.w()}" if r.random() < 0.25 else ""))
        if r.random() < 0.2:
            sel += r.choice((":hover", ":focus", " > a", " .icon", "::before"))
        props = [[name, r.choice(values)] for name, values in r.sample(_CSS_PROPS, r.randint(2, 6))]
        return [sel, props]

    def _css_file(self, i: int, size: int) -> dict:
        rules = []
        name = "main" if i == 0 else ("vendor" if i == 1 else f"page-{self.w()}")
        unit = {"name": name, "rules": rules}
        length = 0                  # len(_render_css(unit)), kept as rules are added (re-rendering is quadratic)
        while length < size:
            rules.append(self._css_rule())
            length += len(self._css_rule_text(rules[-1]))
        return unit

    @staticmethod
    def _css_rule_text(rule: list) -> str:
        sel, props = rule
        return sel + " {\n" + "".join(f"  {k}: {v};\n" for k, v in props) + "}\n"

    @staticmethod
    def _render_css(unit: dict) -> str:
        return "".join(Site._css_rule_text(rule) for rule in unit["rules"])

    # JavaScript -------------------------------------------------------------------
    def _js_function(self) -> dict:
        r = self.rng
        name = _camel([r.choice(_VERBS), self.w(), self.w()] if r.random() < 0.5 else [r.choice(_VERBS), self.w()])
        args = [self.w() for _ in range(r.randint(0, 3))]
        body = [self._js_statement(args) for _ in range(r.randint(2, 7))]
        return {"name": name, "args": args, "body": body, "exported": r.random() < 0.4}

    def _js_statement(self, args: list) -> str:
        r = self.rng
        locale, cur = r.choice(_LOCALES)
        names = args or [self.w()]
        return r.choice(_JS_TEMPLATES).format(
            a=r.choice(names), b=r.choice(names + [self.w()]), c=self.w()[:4], f=self.w(),
            fn=_camel([r.choice(_VERBS), self.w()]),
            w=self.w(), w2=self.w(), n=r.randint(0, 500), n2=r.randint(500, 5000),
            cls=f"{r.choice(_CSS_BLOCKS)}__{self.w()}",
            aria=r.choice(_ARIA), locale=locale, cur=cur)

    def _js_file(self, i: int, size: int) -> dict:
        name = "app" if i == 0 else ("vendor" if i == 1 else f"chunk-{self.w()}")
        unit = {"name": name, "functions": [], "minified": name == "vendor"}
        fns = unit["functions"]
        # len(_render_js(unit)), kept as functions are added (re-rendering is quadratic)
        length = 1 if unit["minified"] else len(_JS_PROLOGUE)
        while length < size:
            fns.append(self._js_function())
            length += len(self._js_function_text(fns[-1], unit["minified"])) + (unit["minified"] and len(fns) > 1)
        return unit

    @staticmethod
    def _js_function_text(f: dict, minified: bool) -> str:
        if minified:
            return (f"function {f['name']}({','.join(f['args'])})"
                    f"{{{''.join(s.replace(' = ', '=').replace(', ', ',') for s in f['body'])}}}")
        head = ("export " if f["exported"] else "") + f"function {f['name']}({', '.join(f['args'])}) {{\n"
        return head + "".join(f"  {s}\n" for s in f["body"]) + "}\n\n"

    @staticmethod
    def _render_js(unit: dict) -> str:
        texts = [Site._js_function_text(f, unit["minified"]) for f in unit["functions"]]
        if unit["minified"]:
            return ";".join(texts) + "\n"
        return _JS_PROLOGUE + "".join(texts)

    # HTML and JSON ------------------------------------------------------------------
    def asset_urls(self) -> tuple[list[str], list[str]]:
        """The CSS and JS URLs of this release (content-hashed names), cached until the units change."""
        # Every page of a release links the same assets: render them once per release
        # (units change only in evolve(), which drops this; the key holds the units).
        key = (self.release, list(self.css), list(self.js))
        cached = getattr(self, "_assets", None)
        if cached is not None and cached[0][0] == key[0] and all(
                len(a) == len(b) and all(x is y for x, y in zip(a, b)) for a, b in zip(cached[0][1:], key[1:])):
            return list(cached[1][0]), list(cached[1][1])
        css = [self._asset_url("css", u["name"], self._render_css(u)) for u in self.css]
        js = [self._asset_url("js", u["name"], self._render_js(u)) for u in self.js]
        self._assets = (key, (css, js))
        return list(css), list(js)

    def _asset_url(self, ext: str, name: str, text: str) -> str:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        return f"{self.origin}/static/{ext}/{name}.{digest}.{ext}"

    def token(self, n: int = 32) -> str:
        """``n`` random hex digits (a CSRF or session token: a secret of the page)."""
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def html_page(self, path: str, size: int, *, csrf: str | None = None,
                  reflected: str | None = None) -> tuple[bytes, tuple]:
        """One HTML document of about ``size`` bytes; ``csrf`` goes into the logout link
        near the end (the secret span); ``reflected`` is echoed near the top, escaped
        as a server would (the attacker's injection point)."""
        r = self.rng
        css, js = self.asset_urls()
        title = self._title(2)
        head = ["<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
                f"<title>{title} | {self.p.site}</title>\n"]
        head += [f"<link rel=\"stylesheet\" href=\"{u}\">\n" for u in css]
        head += [f"<script defer src=\"{u}\"></script>\n" for u in js]
        head.append("</head>\n<body>\n<header class=\"header\">\n<nav class=\"nav\">\n<ul class=\"nav__list\">\n")
        head += [f"<li class=\"nav__item\"><a class=\"nav__link\" "
                 f"href=\"/category/{n.lower().replace(' ', '-')}\">{n}</a></li>\n"
                 for n in self.nav]
        head.append("</ul>\n<form class=\"search\" action=\"/search\">"
                    "<input class=\"search__input\" name=\"q\"></form>\n"
                    "</nav>\n</header>\n<main class=\"main\">\n")
        if reflected is not None:
            head.append(f"<p class=\"search__summary\">No results for <b>{html.escape(reflected)}</b></p>\n")
        body = []
        foot = ["</main>\n<footer class=\"footer\">\n<ul class=\"footer__links\">\n"]
        foot += [f"<li><a href=\"/help/{self.words.words[k]}\">{self.words.words[k].capitalize()}</a></li>\n"
                 for k in range(8)]
        foot.append("</ul>\n<p class=\"footer__account\">"
                    "<a class=\"footer__logout\" href=\"/account/logout?csrf_token=")
        tail = "\">Sign out</a></p>\n</footer>\n</body>\n</html>\n"
        fixed = len("".join(head)) + len("".join(foot)) + len(tail) + (len(csrf) if csrf else 0)
        products = self.catalogue
        start = r.randrange(len(products))
        k = 0
        while fixed + len("".join(body)) < size:
            if k % 5 == 4:
                body.append(f"<section class=\"prose\"><h2>{self._title(3)}</h2>"
                            f"<p>{' '.join(self.sentence() for _ in range(3))}</p></section>\n")
            else:
                pr = products[(start + k) % len(products)]
                stock = "In stock" if pr["in_stock"] else "Sold out"
                body.append(f"<article class=\"card product\" data-id=\"{pr['id']}\" data-sku=\"{pr['sku']}\">\n"
                            f"<h3 class=\"product__name\">"
                            f"<a href=\"/products/{pr['sku'].lower()}\">{pr['name']}</a></h3>\n"
                            f"<p class=\"product__summary\">{pr['summary']}</p>\n"
                            f"<span class=\"price\">&euro;{pr['price']:.2f}</span> "
                            f"<span class=\"badge\">{stock}</span>\n"
                            f"<span class=\"rating\" aria-label=\"{pr['rating']} out of 5\">{pr['rating']}</span>\n"
                            f"</article>\n")
            k += 1
        text_before = "".join(head) + "".join(body) + "".join(foot)
        secret = csrf or ""
        data = (text_before + secret + tail).encode()
        spans = ((len(text_before.encode()), len(text_before.encode()) + len(secret.encode())),) if csrf else ()
        return data, spans

    def json_api(self, path: str, size: int, *, session: str) -> tuple[bytes, tuple]:
        """A JSON API body of about ``size`` bytes with ``session`` in it; the body and the session's byte span."""
        page = _page_number(path)
        items = []
        prefix = '{"page":%d,"session":"' % page
        head_len = len(prefix) + len(session)
        k = (page - 1) * 7
        while True:
            pr = self.catalogue[k % len(self.catalogue)]
            items.append({"id": pr["id"], "sku": pr["sku"], "name": pr["name"], "price": pr["price"],
                          "currency": "EUR", "in_stock": pr["in_stock"], "rating": pr["rating"], "tags": pr["tags"]})
            k += 1
            rest = '","total":%d,"items":%s}' % (len(self.catalogue), json.dumps(items, separators=(",", ":")))
            if head_len + len(rest) >= size or k > 4 * len(self.catalogue):
                break
        data = (prefix + session + rest).encode()
        return data, ((len(prefix), len(prefix) + len(session)),)

    # releases -----------------------------------------------------------------------
    def render(self) -> list[Body]:
        """The bodies of the current release: pages, CSS, JS and API responses."""
        rel = self.release
        out = []
        for path, size in self.pages:
            data, spans = self.html_page(path, size, csrf=self.token())
            out.append(Body(path, self.origin + path, "html", rel, data, spans))
        for u in self.css:
            text = self._render_css(u)
            out.append(Body(f"/static/css/{u['name']}.css", self._asset_url("css", u["name"], text), "css", rel,
                            text.encode()))
        for u in self.js:
            text = self._render_js(u)
            out.append(Body(f"/static/js/{u['name']}.js", self._asset_url("js", u["name"], text), "js", rel,
                            text.encode()))
        for path, size in self.apis:
            data, spans = self.json_api(path, size, session=self.token(24))
            out.append(Body(path, self.origin + path, "json", rel, data, spans))
        return out

    def evolve(self) -> None:
        """One release's worth of small edits."""
        r, p = self.rng, self.p
        self.release += 1
        self._assets = None
        for unit in self.js:
            fns = unit["functions"]
            for _ in range(max(1, round(p.js_edit_share * len(fns)))):
                f = fns[r.randrange(len(fns))]
                f["body"][r.randrange(len(f["body"]))] = self._js_statement(f["args"])
            for _ in range(max(1, round(p.js_add_share * len(fns)))):
                fns.insert(r.randrange(len(fns) + 1), self._js_function())
            if len(fns) > 4 and r.random() < 0.5:
                del fns[r.randrange(len(fns))]
        for unit in self.css:
            rules = unit["rules"]
            for _ in range(max(1, round(p.css_edit_share * len(rules)))):
                rule = rules[r.randrange(len(rules))]
                k = r.randrange(len(rule[1]))
                name = rule[1][k][0]
                rule[1][k][1] = r.choice(dict(_CSS_PROPS)[name])
            rules.insert(r.randrange(len(rules) + 1), self._css_rule())
        for pr in self.catalogue:
            if r.random() < p.price_change_share:
                pr["price"] = round(pr["price"] * r.uniform(0.85, 1.15), 2)
                pr["in_stock"] = r.random() < 0.85
        self.catalogue += [self._product(len(self.catalogue) + i) for i in range(p.new_products)]
        if r.random() < 0.3:
            self.nav[r.randrange(len(self.nav))] = self._title(2)


def _page_number(path: str) -> int:
    """The page a JSON URL asks for: the integer after its last ``=`` (``?page=2``).

    Real URLs put anything there (``?callback=ajax%3A...``, ``?flag=false``, ``?q=``);
    those get a page derived from the path, so different APIs still get different
    items and the same URL always gets the same bytes."""
    if "=" in path:
        try:
            return int(path.rsplit("=", 1)[1])
        except ValueError:
            pass
        return 1 + zlib.crc32(path.encode("utf-8", "surrogatepass")) % 16
    return 1


def generate(seed: int = 1, **overrides) -> Corpus:
    """The bodies of ``releases`` releases of one generated site."""
    params = replace(BodyParams(), **overrides) if overrides else BodyParams()
    rng = random.Random(seed)
    site = Site(rng, params)
    bodies: list[Body] = []
    for rel in range(params.releases):
        if rel:
            site.evolve()
        bodies += site.render()
    d = asdict(params)
    return Corpus(bodies=bodies, source=f"generated:seed={seed}", params={"seed": seed, **d})


# ---------------------------------------------------------------------------------------
# From a trace


def corpus_from_trace(trace, *, seed: int = 1, releases: int = 3, max_bytes: int = 200_000) -> Corpus:
    """Generated bodies for a trace's text responses: same URLs, kinds and (capped) sizes.

    HTML and JSON responses come from the site template (with secrets), CSS and
    JavaScript from the generator's units; releases evolve them as ``generate`` does.
    """
    rng = random.Random(seed)
    params = BodyParams(html_pages=0, css_files=0, js_files=0, json_files=1, releases=releases, max_bytes=max_bytes)
    site = Site(rng, params)
    site.apis = []
    plan = []
    for e in trace.exchanges:
        ct = header_value(e.response_headers, b"content-type")
        kind = kind_for_content_type(ct.decode("latin-1") if ct else None, e.url)
        if kind is None or not e.url:
            continue
        # The decoded size: a body is generated as the server held it, before content coding.
        size = int(min(max(e.decoded_body_bytes or 0, 0) or params.size_medians[kind], max_bytes))
        plan.append((e.url, kind, max(size, 400)))
    if not plan:
        raise InputError("the trace has no HTML, CSS, JavaScript or JSON responses with URLs to give bodies to.",
                         path=trace.source)
    units = {}
    for url, kind, size in plan:
        if kind == "css":
            units[url] = site._css_file(len(units), size)
        elif kind == "js":
            units[url] = site._js_file(len(units), size)
    site.css = [u for u in units.values() if "rules" in u]
    site.js = [u for u in units.values() if "functions" in u]
    bodies: list[Body] = []
    for rel in range(releases):
        if rel:
            site.evolve()
        for url, kind, size in plan:
            resource = urlsplit(url).path + (("?" + urlsplit(url).query) if urlsplit(url).query else "")
            if kind == "html":
                data, spans = site.html_page(resource, size, csrf=site.token())
            elif kind == "json":
                data, spans = site.json_api(resource, size, session=site.token(24))
            elif kind == "css":
                data, spans = site._render_css(units[url]).encode(), ()
            else:
                data, spans = site._render_js(units[url]).encode(), ()
            bodies.append(Body(resource, url, kind, rel, data, spans))
    return Corpus(bodies=bodies, source=str(trace.source), params={"seed": seed, "releases": releases,
                                                                    "trace_hash": trace.content_hash()})

