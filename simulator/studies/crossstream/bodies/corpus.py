"""Response bodies for the cross-stream compression study: the corpus (bodies of every
release), a reader and writer of a folder of real files, and what the generator makes.

Traces carry sizes, not bodies, so compression ratios need text from somewhere: a
generated site (``site.generate``), a folder of real files (``load_folder``), or a trace's
text responses given generated bodies (``site.corpus_from_trace``).

``load_folder(path)`` reads real files: files directly in the folder are release 0; each
sub-folder (sorted by name, e.g. ``v1/``, ``v2/``) is a later release, and files with the
same relative path across releases are versions of the same resource.  The type comes
from the extension (.html/.htm, .css, .js/.mjs, .json; others are skipped).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from ....errors import InputError

__all__ = ["Body", "Corpus", "BodyParams", "load_folder", "write_folder", "KINDS", "kind_for_content_type"]

# kind -> (content-type, Fetch request destination)
KINDS = {
    "html": ("text/html; charset=utf-8", "document"),
    "css": ("text/css", "style"),
    "js": ("application/javascript", "script"),
    "json": ("application/json", "empty"),
}
_EXTENSIONS = {".html": "html", ".htm": "html", ".css": "css", ".js": "js", ".mjs": "js", ".json": "json"}


def kind_for_content_type(content_type: str | None, url: str | None = None) -> str | None:
    """``html``, ``css``, ``js`` or ``json`` for a content type (else from the URL's extension), or None."""
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct in ("text/html", "application/xhtml+xml"):
        return "html"
    if ct == "text/css":
        return "css"
    if ct in ("application/javascript", "text/javascript", "application/x-javascript", "module"):
        return "js"
    if ct == "application/json" or ct.endswith("+json"):
        return "json"
    if url:
        return _EXTENSIONS.get(os.path.splitext(urlsplit(url).path)[1].lower())
    return None


@dataclass(frozen=True)
class Body:
    """One response body: ``resource`` names it across releases, ``url`` is this release's URL."""

    resource: str
    url: str
    kind: str
    release: int
    data: bytes
    secrets: tuple[tuple[int, int], ...] = ()  # [start, end) byte spans holding secrets

    @property
    def content_type(self) -> str:
        """The Content-Type this body is served with."""
        return KINDS[self.kind][0]

    @property
    def destination(self) -> str:
        """The request destination (Fetch) that loads it: ``document``, ``style``, ``script`` or ``empty``."""
        return KINDS[self.kind][1]

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` of ``url``."""
        u = urlsplit(self.url)
        return f"{u.scheme}://{u.netloc}"


@dataclass
class Corpus:
    """Bodies of every release, in fetch order within a release."""

    bodies: list[Body]
    source: str
    params: dict = field(default_factory=dict)

    def releases(self) -> list[list[Body]]:
        """The bodies grouped by release, releases in order."""
        out: dict[int, list[Body]] = {}
        for b in self.bodies:
            out.setdefault(b.release, []).append(b)
        return [out[r] for r in sorted(out)]

    @property
    def raw_bytes(self) -> int:
        """Bytes of all bodies, uncompressed."""
        return sum(len(b.data) for b in self.bodies)

    def content_hash(self) -> str:
        """SHA-256 (hex) over every body's identity, secrets and bytes."""
        h = hashlib.sha256()
        for b in self.bodies:
            h.update(f"{b.resource}|{b.url}|{b.kind}|{b.release}|{b.secrets}|".encode())
            h.update(hashlib.sha256(b.data).digest())
        return h.hexdigest()

    def __len__(self) -> int:
        return len(self.bodies)


# ---------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class BodyParams:
    """What the generator makes (sizes in bytes; see traces/README.md for sources)."""

    html_pages: int = 3
    css_files: int = 2
    js_files: int = 3
    json_files: int = 2
    releases: int = 3
    size_medians: dict = field(default_factory=lambda: {"html": 18_000, "css": 13_000, "js": 25_000, "json": 4_000})
    size_sigma: float = 0.5  # log-normal spread of a resource's size (modelling choice)
    max_bytes: int = 200_000
    lexicon_words: int = 700  # site-specific words
    zipf_s: float = 1.1  # word frequencies
    js_edit_share: float = 0.04  # share of JavaScript functions edited per release
    js_add_share: float = 0.02  # functions added per release (share of existing)
    css_edit_share: float = 0.05  # CSS rules edited per release
    price_change_share: float = 0.15  # products whose price or stock changes per release
    new_products: int = 3  # products added to the catalogue per release
    site: str = "shop.example"

    def __post_init__(self) -> None:
        for name in ("html_pages", "css_files", "js_files", "json_files"):
            if getattr(self, name) < 0:
                raise InputError(f"{name} must be >= 0")
        if self.releases < 1:
            raise InputError(f"releases must be at least 1, got {self.releases}")
        if self.html_pages + self.css_files + self.js_files + self.json_files == 0:
            raise InputError("the corpus would be empty: ask for at least one file")


# ---------------------------------------------------------------------------------------
# Real files


def load_folder(path: str | os.PathLike, *, origin: str = "https://www.site.example") -> Corpus:
    """A folder of real files (see the module docstring for the release layout)."""
    root = Path(path)
    if not root.exists():
        raise InputError("no such folder.", path=str(root))
    if not root.is_dir():
        raise InputError("is not a folder of bodies (give a directory).", path=str(root))
    releases = [root] + sorted(
        (d for d in root.iterdir() if d.is_dir() and not d.name.startswith(".")), key=lambda d: d.name
    )
    bodies: list[Body] = []
    for rel, folder in enumerate(releases):
        files = sorted(f for f in folder.rglob("*") if f.is_file() and not f.name.startswith("."))
        if folder == root:
            files = [f for f in files if f.parent == root]
        for f in files:
            kind = _EXTENSIONS.get(f.suffix.lower())
            if kind is None:
                continue
            try:
                data = f.read_bytes()
            except OSError as exc:
                raise InputError(f"cannot be read ({exc.strerror}).", path=str(f)) from None
            resource = "/" + f.relative_to(folder).as_posix()
            bodies.append(Body(resource, origin + resource, kind, rel, data))
    if not bodies:
        raise InputError("holds no .html, .css, .js or .json files.", path=str(root))
    # number the releases that hold files 0, 1, 2, ... (an empty root folder is allowed)
    used = sorted({b.release for b in bodies})
    renumber = {r: i for i, r in enumerate(used)}
    bodies = [replace(b, release=renumber[b.release]) for b in bodies]
    return Corpus(bodies=bodies, source=str(root), params={"folder": str(root)})


def write_folder(corpus: Corpus, path: str | os.PathLike) -> list[Path]:
    """Write a corpus as a folder ``load_folder`` reads back (release r in ``rNN/``)."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for b in corpus.bodies:
        rel = urlsplit(b.resource).path.lstrip("/") or "index"
        if rel.endswith("/") or not os.path.splitext(rel)[1]:
            rel = rel.rstrip("/") + "." + b.kind
        query = urlsplit(b.resource).query
        if query:
            stem, ext = os.path.splitext(rel)
            rel = f"{stem}-{query.replace('=', '-').replace('&', '-')}{ext}"
        target = root / f"r{b.release:02d}" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b.data)
        written.append(target)
    return written
