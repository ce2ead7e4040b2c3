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

__all__ = ["tag_share", "mention_end_by_spelling"]

# What may stand before a relative spelling: it must not be the tail of a longer path or URL.
_BEFORE_RELATIVE = "\"'=( \t\n"


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
    for root, forms in _suffix_groups(_spellings(url, document_url)):
        end = _first_end(text, root, forms, best)
        if end is not None:
            best = end if best is None else min(best, end)
    return None if best is None else best / len(text)


def mention_end_by_spelling(text: str, url: str, document_url: str) -> int | None:
    """Where ``url``'s first mention in ``text`` ends, by the rule's definition: each spelling
    searched on its own, the earliest end kept (``tag_share`` finds the same end with one
    search per family of spellings; tests and ``benchmarks/bench_doctext.py`` hold it to this)."""
    best = None
    for form in _spellings(url, document_url):
        relative = not form.startswith(("/", "http:", "https:"))
        i = text.find(form)
        while i > 0 and relative and text[i - 1] not in _BEFORE_RELATIVE:
            i = text.find(form, i + 1)
        if i >= 0:
            best = i + len(form) if best is None else min(best, i + len(form))
    return best


def _suffix_groups(forms: list[str]) -> list[tuple[str, list[str]]]:
    """``forms`` grouped under the shortest of them each one ends with: every mention of a
    form ends where a mention of its group's root does, so one search of the root finds them
    all (a URL's absolute, scheme-relative, root-relative and relative spellings end alike)."""
    groups: list[tuple[str, list[str]]] = []
    for form in sorted(forms, key=len):
        for root, members in groups:
            if form.endswith(root):
                members.append(form)
                break
        else:
            groups.append((form, [form]))
    return groups


def _first_end(text: str, root: str, forms: list[str], before: int | None) -> int | None:
    """The end of the first mention of any of ``forms`` (each ending with ``root``) that ends
    before ``before`` (None: anywhere), a relative one standing alone; None if there is none."""
    i = text.find(root)
    while i >= 0:
        end = i + len(root)
        if before is not None and end >= before:
            return None
        for form in forms:
            start = end - len(form)
            if start < 0 or not text.startswith(form, start):
                continue
            relative = not form.startswith(("/", "http:", "https:"))
            if not relative or start == 0 or text[start - 1] in _BEFORE_RELATIVE:
                return end
        i = text.find(root, i + 1)
    return None
