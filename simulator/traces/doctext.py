"""Where in a document's text the parser meets a URL.  Written by hand.

A HAR that kept a document's body (``content.text``: DevTools' export "with content", the
lab's captures) says where each tag the parser found was.  A parser reads a document as its
bytes come (HTML 13.2: the tokenizer runs on the input stream as it arrives), so a child's
tag near the top is found with the first bytes that hold it, whatever the document's size.

``tag_share`` gives the share of the document's text read once the URL's first mention is
read whole, in any of the spellings a document may use for it: absolute, scheme-relative,
root-relative or relative to the document, with HTML's ``&amp;`` for ``&``.  A mention is
not known to be the tag the parser found (a URL written in a comment or a script string
counts too): the first one is taken, which is the earliest the parser could have found it.
"""

from __future__ import annotations

import posixpath
from urllib.parse import urlsplit

__all__ = ["tag_share"]


def _spellings(url: str, document_url: str) -> list[str]:
    """The ways a document at ``document_url`` may write ``url`` (longest first)."""
    parts = urlsplit(url)
    doc = urlsplit(document_url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    out = [url, f"//{parts.netloc}{path}"]
    if (parts.scheme, parts.netloc) == (doc.scheme, doc.netloc):
        out.append(path)
        base = posixpath.dirname(doc.path or "/")
        rel = posixpath.relpath(parts.path or "/", base or "/") if parts.path else ""
        if rel and not rel.startswith("../") and rel != ".":
            out.append(rel + (f"?{parts.query}" if parts.query else ""))
    spelled = []
    for s in out:
        for form in (s, s.replace("&", "&amp;")):
            if form and form not in spelled:
                spelled.append(form)
    return spelled


def tag_share(text: str, url: str, document_url: str) -> float | None:
    """The share of ``text`` (a document at ``document_url``) read once ``url``'s first
    mention is whole, in [0, 1]; None when the text does not mention it."""
    if not text or not url:
        return None
    best = None
    for form in _spellings(url, document_url):
        i = text.find(form)
        # A relative spelling must stand alone: not the tail of a longer path or another URL.
        relative = not form.startswith(("/", "http:", "https:"))
        while i > 0 and relative and text[i - 1] not in "\"'=( \t\n":
            i = text.find(form, i + 1)
        if i >= 0:
            end = i + len(form)
            best = end if best is None else min(best, end)
    return None if best is None else best / len(text)
