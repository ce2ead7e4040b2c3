"""The rebuilt site's templates: the tags and script statements that make Chromium find a
resource the way the recorded page did (by the parser, from a script, after a delay).
Written by hand: markup for ``site.rebuild``."""

from __future__ import annotations

import json

__all__ = ["insert_js", "delayed", "parser_tag"]


def _js_str(url: str) -> str:
    return json.dumps(url)


def insert_js(kind: str, url: str, cls: str) -> str:
    """Statements that make the browser fetch ``url`` as ``kind`` from a script."""
    u = _js_str(url)
    if kind == "script":
        return (
            f'var s = document.createElement("script"); s.src = {u}; s.async = true; '
            f"(document.head || document.documentElement).appendChild(s);"
        )
    if kind == "stylesheet":
        return (
            f'var l = document.createElement("link"); l.rel = "stylesheet"; l.href = {u}; '
            f"(document.head || document.documentElement).appendChild(l);"
        )
    if kind == "image":
        return f"var i = new Image(); i.src = {u};"
    if kind == "document":
        return (
            f'var f = document.createElement("iframe"); f.src = {u}; '
            f"(document.body || document.documentElement).appendChild(f);"
        )
    if kind == "font":
        return f'new FontFace("{cls}", "url(" + {u} + ")").load().catch(function () {{}});'
    # The body is read: Chromium reports a fetch finished only once its body is consumed.
    return f"fetch({u}).then(function (r) {{ return r.arrayBuffer(); }}).catch(function () {{}});"


def delayed(stmt: str, delay_s: float) -> str:
    """Script statement ``stmt`` run ``delay_s`` after the script runs (at once when 0)."""
    ms = int(round(max(delay_s, 0.0) * 1000))
    if ms <= 0:
        return f"(function () {{ {stmt} }})();\n"
    return f"setTimeout(function () {{ {stmt} }}, {ms});\n"


def after_load(stmt: str, delay_s: float) -> str:
    """Script statement ``stmt`` run ``delay_s`` after the window's load event (after the script
    runs, when that event has already fired): a request that started after the page's load in
    the recording, which the load event did not wait for, does not delay it in the rebuild
    either (HTML: the load event waits for what was asked before it fires)."""
    go = delayed(stmt, delay_s).strip()
    return (
        "(function () { var go = function () { " + go + " }; "
        'if (document.readyState === "complete") go(); else window.addEventListener("load", go); })();\n'
    )


def parser_tag(kind: str, url: str, blocking: bool) -> tuple[str, str]:
    """(``head``/``body``, the tag the parser finds ``url`` by)."""
    u = url.replace("&", "&amp;").replace('"', "&quot;")
    if kind == "stylesheet":
        return ("head" if blocking else "body"), f'<link rel="stylesheet" href="{u}">'
    if kind == "script":
        return ("head", f'<script src="{u}"></script>') if blocking else ("body", f'<script async src="{u}"></script>')
    if kind == "image":
        return "body", f'<img src="{u}" width="160" height="90" alt="">'
    if kind == "font":
        return "head", f'<link rel="preload" href="{u}" as="font" crossorigin>'
    if kind == "document":
        return "body", f'<iframe src="{u}" width="320" height="180"></iframe>'
    return "body", f"<script>{insert_js(kind, url, '')}</script>"
