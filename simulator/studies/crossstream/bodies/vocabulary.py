"""The fixed web vocabularies every generated site shares (syllables for its lexicon, English
filler, JavaScript verbs and statement templates, CSS properties and blocks, ARIA states,
locales) and the site lexicon with Zipf-distributed draws: the words of ``site.py``'s
generator, by hand (modelling choices, listed in ``traces/README.md``)."""

from __future__ import annotations

import math
import random
from bisect import bisect_left

_SYLLABLES = ("ka", "lo", "mi", "ra", "ten", "bo", "vi", "sa", "nor", "el", "tu", "pa", "ri", "gan", "de",
              "zu", "fen", "ol", "mar", "is", "ko", "lun", "ve", "ta", "sol", "ber", "ni", "qua", "dor", "ex",
              "li", "mo", "ste", "ar", "pin", "cu", "ha", "yo", "wen", "ju")
_ENGLISH = ("the", "and", "with", "for", "your", "new", "best", "our", "free", "shipping", "quality", "made",
            "from", "design", "easy", "to", "use", "in", "stock", "order", "today", "get", "more", "all",
            "is", "this", "that", "each", "every", "day", "perfect", "home", "fits", "size", "color", "light",
            "classic", "soft", "durable", "premium", "materials", "care", "return", "within", "days")
_VERBS = ("get", "set", "update", "render", "handle", "fetch", "format", "validate", "create", "remove",
          "toggle", "init", "load", "parse", "build", "apply", "track", "compute", "show", "hide")
_CSS_PROPS = (
    ("display", ("block", "flex", "grid", "inline-block", "none")),
    ("position", ("relative", "absolute", "sticky")),
    ("margin", ("0", "0 auto", "1rem 0", "0 0 .5rem", "8px")),
    ("padding", ("0", ".5rem 1rem", "1rem", "12px 16px", "4px 8px")),
    ("font-size", ("12px", "14px", "1rem", "1.25rem", ".875rem", "2rem")),
    ("font-weight", ("400", "500", "600", "700")),
    ("line-height", ("1.2", "1.4", "1.5", "20px")),
    ("color", ("#333", "#222", "#fff", "#6b7280", "#0a58ca", "inherit")),
    ("background-color", ("#fff", "#f8f9fa", "#111827", "transparent", "#e5e7eb")),
    ("border", ("0", "1px solid #ddd", "1px solid #e5e7eb", "2px solid currentColor")),
    ("border-radius", ("4px", "8px", "50%", ".25rem")),
    ("width", ("100%", "auto", "50%", "320px")),
    ("max-width", ("1200px", "100%", "640px")),
    ("align-items", ("center", "flex-start", "stretch")),
    ("justify-content", ("space-between", "center", "flex-end")),
    ("gap", ("8px", "1rem", "16px 24px")),
    ("text-decoration", ("none", "underline")),
    ("transition", ("all .2s ease", "opacity .3s", "transform .15s ease-in-out")),
    ("cursor", ("pointer", "default")),
    ("overflow", ("hidden", "auto")),
    ("z-index", ("1", "10", "100", "1000")),
    ("box-shadow", ("0 1px 2px rgba(0,0,0,.05)", "0 4px 12px rgba(0,0,0,.1)", "none")),
    ("opacity", ("0", ".5", "1")),
    ("grid-template-columns", ("repeat(4,1fr)", "repeat(auto-fill,minmax(240px,1fr))", "1fr 2fr")),
)
_CSS_BLOCKS = ("header", "nav", "card", "product", "button", "footer", "grid", "modal", "form", "badge",
               "price", "banner", "menu", "search", "cart", "rating", "tabs", "hero", "list", "toast")
_JS_TEMPLATES = (
    "const {a} = {b}.filter(({c}) => {c}.{f} !== undefined);",
    "if (!{a} || {a}.length === 0) {{ return null; }}",
    "const {a} = await fetch(`/api/v1/{w}?id=${{{b}}}`).then((r) => r.json());",
    "{a}.forEach(({c}) => {{ {c}.{f} = {fn}({c}, {b}); }});",
    "document.querySelector('.{cls}').classList.toggle('is-{w}', {a});",
    "const {a} = Object.assign({{}}, {b}, {{ {f}: {n} }});",
    "for (let i = 0; i < {a}.length; i += 1) {{ {b}.push({a}[i].{f}); }}",
    "return {a}.reduce((sum, {c}) => sum + {c}.{f} * {n}, 0);",
    "window.dispatchEvent(new CustomEvent('{w}:{w2}', {{ detail: {a} }}));",
    "this.{f} = typeof {a} === 'string' ? {a}.trim() : String({a});",
    "console.warn('[{w}] {fn} failed', {a});",
    "const {a} = new Intl.NumberFormat('{locale}', {{ style: 'currency', currency: '{cur}' }});",
    "el.setAttribute('aria-{aria}', {a} ? 'true' : 'false');",
    "try {{ localStorage.setItem('{w}', JSON.stringify({a})); }} catch (e) {{ {b} = null; }}",
    "const {a} = {b} > {n} ? Math.min({b}, {n2}) : {n};",
)
_JS_PROLOGUE = "'use strict';\n\n"
_ARIA = ("expanded", "hidden", "pressed", "selected", "busy")
_LOCALES = (("de-DE", "EUR"), ("en-US", "USD"), ("fr-FR", "EUR"), ("en-GB", "GBP"))


class _Words:
    """The site lexicon with Zipf-distributed draws."""

    def __init__(self, rng: random.Random, n: int, s: float) -> None:
        seen: dict[str, None] = {}
        while len(seen) < n:
            w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
            seen.setdefault(w, None)
        self.words = list(seen)
        weights = [1.0 / (k + 1) ** s for k in range(n)]
        total = sum(weights)
        self.cum = []
        acc = 0.0
        for w in weights:
            acc += w / total
            self.cum.append(acc)

    def draw(self, rng: random.Random) -> str:
        i = bisect_left(self.cum, rng.random())
        # the last cumulative weight can round just below 1.0
        return self.words[i] if i < len(self.words) else self.words[-1]


def _camel(parts: list[str]) -> str:
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def _lognormal(rng: random.Random, median: float, sigma: float, cap: int) -> int:
    return int(min(cap, max(400, median * math.exp(rng.gauss(0.0, sigma)))))
