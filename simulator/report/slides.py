"""Notebook -> reveal.js deck that works offline (``workbench slides NOTEBOOK -o DIR``).

The deck is ``DIR/index.html`` plus, beside it:

* ``revealjs/``: reveal.js (script, CSS, the ``white`` theme and its fonts, licence) copied
  from the installed ``sphinx_revealjs`` package, never a CDN.  The page loads nothing
  from outside ``DIR`` (``external_urls`` checks every ``src``/``href`` that loads);
* ``figures/fig-NN.png`` and ``figures/fig-NN.pdf``: every figure of the notebook.

Slide structure:

* a markdown cell that starts with a heading starts a new slide; one without a heading
  joins the current slide (after a figure or code slide: a new slide under the same title);
* text that would not fit a 1280x720 slide continues on a new slide under the same title,
  split between paragraphs or list items (``_markdown_blocks`` estimates each block's
  height from the deck's CSS); what is still a little too tall is shrunk in the browser,
  to no less than ``FIT_FLOOR`` of its size (``_FIT_SCRIPT``);
* a heading with nothing under it makes no slide of its own: it titles the figures and
  outputs that follow (the deck's first slide excepted);
* every figure (an ``image/png`` output) becomes its own slide, titled with the heading
  of the section it belongs to; an Explore panel (``report.explore``) is one output that
  holds its live widget and its figure at the default values: the figure becomes the
  slide, with the panel's caption (the values drawn, the controls) under it;
* code cells are hidden; a code cell tagged ``show`` becomes a slide with its code and its
  outputs, one tagged ``show-output`` shows its outputs (tables, text) without the code;
  a cell tagged ``skip-slides`` (markdown or code) is left out, figures included.

Running the notebook (nbclient, the parameters, the set-up cell, one-line errors) is
``execute.execute_notebook``.  Figures as PDF: when the notebook is executed here (the
default), a first hidden cell
makes the inline matplotlib backend emit every figure as PNG *and* PDF
(``set_matplotlib_formats("png", "pdf")``), so the PDF is the real vector figure, and
turns on the slide style of ``simulator.report.plots`` (figures sized for the slide,
fonts legible on it).  With
``execute=False`` (stored outputs) a figure without a stored PDF is converted from its PNG
(a raster PDF page of the same pixel size, drawn with matplotlib).

Parameters follow papermill: ``parameters={"SEEDS": [1]}`` adds a cell after the one
tagged ``parameters`` that overrides them.
"""

from __future__ import annotations

import base64
import html
import math
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..outfiles import write_output
from .execute import INJECTED_TAG, SETUP_TAG, _tags, execute_notebook, read_notebook

__all__ = [
    "build_slides",
    "write_deck",
    "execute_notebook",
    "SlidesResult",
    "external_urls",
    "reveal_assets_dir",
    "SLIDE_W",
    "SLIDE_H",
    "FIT_FLOOR",
]

THEME = "white"  # its fonts are bundled (some other themes @import Google Fonts)


@dataclass
class SlidesResult:
    """A written deck: its ``index.html``, how many slides, and each figure's PNG and slide."""

    index: Path
    slides: int
    figures: list[Path] = field(default_factory=list)  # PNGs; each has a PDF beside it
    figure_slides: list[int] = field(default_factory=list)  # 0-based slide index of each figure
    executed: bool = True

    def __str__(self) -> str:
        return (
            f"{self.index}: {self.slides} slides, {len(self.figures)} figures "
            f"(PNG and PDF in {self.index.parent / 'figures'})"
        )


def reveal_assets_dir() -> Path:
    """reveal.js as shipped inside the installed sphinx-revealjs package."""
    try:
        import sphinx_revealjs
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError("slides need the 'sphinx-revealjs' package (it ships reveal.js).") from None
    root = Path(sphinx_revealjs.__file__).resolve().parent / "_static" / "revealjs"
    if not (root / "dist" / "reveal.js").exists():  # pragma: no cover
        raise InputError(f"reveal.js not found under {root}.")
    return root


def _copy_assets(out: Path) -> None:
    src = reveal_assets_dir()
    dst = out / "revealjs"
    if dst.exists():
        shutil.rmtree(dst)
    (dst / "dist" / "theme" / "fonts").mkdir(parents=True)
    for name in ("reveal.js", "reveal.css", "reset.css"):
        shutil.copy2(src / "dist" / name, dst / "dist" / name)
    shutil.copy2(src / "dist" / "theme" / f"{THEME}.css", dst / "dist" / "theme" / f"{THEME}.css")
    shutil.copytree(
        src / "dist" / "theme" / "fonts" / "source-sans-pro", dst / "dist" / "theme" / "fonts" / "source-sans-pro"
    )
    if (src / "LICENSE").exists():
        shutil.copy2(src / "LICENSE", dst / "LICENSE")


# ---------------------------------------------------------------------------------------
# Deck

_ANCHOR = re.compile(r'<a class="anchor-link" href="#[^"]*">[^<]*</a>')
_HEADING = re.compile(r"^\s*(#{1,6})\s+(.*?)\s*#*\s*$")
_IMG = re.compile(r"<img\b[^>]*>", re.I)
_EXTERNAL_SRC = re.compile(r'\bsrc\s*=\s*["\'](?:[a-z][a-z0-9+.-]*:)?//', re.I)
_ALT = re.compile(r'\balt\s*=\s*"([^"]*)"', re.I)
_SCRIPT = re.compile(r"<script\b.*?</script>", re.I | re.S)


def _markdown_html(text: str) -> str:
    from nbconvert.filters import markdown2html

    out = _ANCHOR.sub("", markdown2html(text))

    # offline: an image from the web becomes its alt text
    def offline(m: re.Match) -> str:
        tag = m.group(0)
        if not _EXTERNAL_SRC.search(tag):
            return tag
        alt = _ALT.search(tag)
        return alt.group(1) if alt else "[image]"

    return _IMG.sub(offline, out)


def _plain(markdown_line: str) -> str:
    text = re.sub(r"[`*_]", "", markdown_line)
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip()


def _png_to_pdf(png: Path, pdf: Path) -> None:
    """A PDF page showing ``png`` at its pixel size (72 px per inch of page)."""
    import matplotlib

    matplotlib.use("Agg", force=False) if not matplotlib.get_backend().lower().startswith("module://") else None
    from matplotlib.figure import Figure
    import matplotlib.image as mpimg

    img = mpimg.imread(png)
    h, w = img.shape[:2]
    fig = Figure(figsize=(w / 100, h / 100), dpi=100)
    fig.figimage(img, 0, 0)
    fig.savefig(pdf, dpi=100)


def _write_figure(data: dict, png: Path, pdf: Path, where: str, source) -> None:
    """An output's figure as ``png`` and ``pdf``; an image that is not base64 PNG (PDF) is one
    ``InputError`` naming the cell, not a traceback half-way through the deck."""
    try:
        image = base64.b64decode(_join(data["image/png"]), validate=True)
        if not image.startswith(b"\x89PNG\r\n\x1a\n"):  # the PNG signature (RFC 2083 section 3.1)
            raise ValueError("not a PNG image")
        png.write_bytes(image)
        if "application/pdf" in data:
            document = base64.b64decode(_join(data["application/pdf"]), validate=True)
            if not document.startswith(b"%PDF-"):
                raise ValueError("not a PDF document")
            pdf.write_bytes(document)
        else:
            _png_to_pdf(png, pdf)
    except (ValueError, SyntaxError, OSError) as exc:  # binascii.Error is a ValueError; PIL says SyntaxError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{where}: the figure cannot be read ({first[:160]}).", path=str(source)) from None


def external_urls(page: str) -> list[str]:
    """Every URL the page would load from outside its folder (``src=``, ``<link href=``,
    CSS ``url(...)``/``@import``), absolute or protocol-relative."""
    urls = re.findall(r'\bsrc\s*=\s*["\']((?:[a-z][a-z0-9+.-]*:)?//[^"\']*)', page, re.I)
    for tag in re.findall(r"<link\b[^>]*>", page, re.I):
        urls += re.findall(r'\bhref\s*=\s*["\']((?:[a-z][a-z0-9+.-]*:)?//[^"\']*)', tag, re.I)
    urls += re.findall(r'url\(\s*["\']?((?:[a-z][a-z0-9+.-]*:)?//[^)"\']*)', page, re.I)
    urls += re.findall(r'@import\s+["\']((?:[a-z][a-z0-9+.-]*:)?//[^"\']*)', page, re.I)
    return [u for u in urls if not u.lower().startswith("data:")]


SLIDE_W, SLIDE_H = 1280, 720  # the deck's canvas (reveal.js scales it to the screen)
FIT_FLOOR = 0.75  # the browser shrinks an overfull slide's text to no less than this

_CSS = """
.reveal .slides { text-align: left; }
.reveal h1, .reveal h2, .reveal h3 { text-transform: none; }
.reveal h1 { font-size: 1.3em; } .reveal h2 { font-size: 1.05em; } .reveal h3 { font-size: 0.9em; }
.reveal section p, .reveal section li { font-size: 0.62em; line-height: 1.35; }
.reveal section li p, .reveal section li li { font-size: 1em; }
.reveal section.title-slide p { font-size: 0.55em; }
.reveal section.figure-slide { text-align: center; }
.reveal section.figure-slide h3 { margin-bottom: 8px; }
.reveal section.figure-slide img { max-width: 100%; max-height: 630px; margin: 0 auto; border: 0; box-shadow: none; }
.reveal section.figure-slide.with-caption img { max-height: 560px; }
.reveal section.figure-slide p.caption { font-size: 0.45em; margin: 0 auto; max-width: 90%; text-align: center; }
.reveal pre { width: 100%; font-size: 0.45em; box-shadow: none; }
.reveal pre code { max-height: none; padding: 0.6em; background: #f6f8fa; color: #222; }
.reveal .output { font-size: 0.5em; overflow: visible; margin: 12px 0; }
.reveal pre.output { line-height: 1.3; white-space: pre-wrap; }
.reveal .output table { margin: 0; }
.reveal .output th, .reveal .output td { padding: 0.15em 0.5em; font-size: 0.9em; }
"""

# Shrink what still overflows a slide (the split below estimates heights; fonts differ a
# little): each section's font size steps down by 5% until it fits or reaches FIT_FLOOR.
# Sections reveal.js has hidden are shown for the measurement.  Runs once the fonts are
# loaded and reveal.js is ready; sets data-slides-fitted on <html> when done.
_FIT_SCRIPT = """
(function () {
  var W = %(w)d, H = %(h)d, FLOOR = %(floor)s;
  function overfull(s) {
    if (s.scrollHeight > H || s.scrollWidth > W) { return true; }
    return Array.prototype.some.call(s.querySelectorAll("pre, .output"), function (e) {
      return e.scrollWidth > e.clientWidth + 1; });
  }
  function fit(s) {
    var display = s.style.display;
    s.style.display = "block";
    var scale = 1;
    while (overfull(s) && scale - 0.05 >= FLOOR - 1e-9) {
      scale = Math.round((scale - 0.05) * 100) / 100;
      s.style.fontSize = scale + "em";
    }
    if (scale < 1) { s.setAttribute("data-fit", String(scale)); }
    s.style.display = display;
  }
  function fitAll() {
    Array.prototype.forEach.call(document.querySelectorAll(".reveal .slides > section:not(.figure-slide)"), fit);
    if (Reveal.layout) { Reveal.layout(); }
    document.documentElement.setAttribute("data-slides-fitted", "1");
  }
  var fonts = document.fonts ? document.fonts.ready : Promise.resolve();
  var ready = new Promise(function (done) { if (Reveal.isReady()) { done(); } else { Reveal.on("ready", done); } });
  Promise.all([fonts, ready]).then(fitAll);
})();
""" % {"w": SLIDE_W, "h": SLIDE_H, "floor": FIT_FLOOR}

# Estimated heights (px on the 1280x720 canvas) from the CSS above and reveal.js's white
# theme (42 px base font, 20 px block margins); measured in Chromium: a line of body text
# holds about 105 characters (100 in a list item).
_BUDGET_PX = SLIDE_H - 30
_TEXT_LINE_PX = 0.62 * 42 * 1.35
_TITLE_LINE_PX = 0.55 * 42 * 1.35
_BLOCK_MARGIN_PX = 20
_HEADING_PX = {1: 1.3 * 42, 2: 1.05 * 42, 3: 0.9 * 42}
_OUTPUT_LINE_PX = 0.5 * 42 * 1.3
_TABLE_ROW_PX = 0.5 * 42 * 0.9 * 1.6
_LIST_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def _heading_px(level: int, text: str) -> float:
    size = _HEADING_PX.get(level, 0.9 * 42)
    per_line = max(1, int(SLIDE_W / (0.52 * size)))
    return math.ceil(max(1, len(text)) / per_line) * size * 1.2 + _BLOCK_MARGIN_PX


def _text_px(text: str, *, chars_per_line: int, line_px: float) -> float:
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", re.sub(r"[`*_]", "", " ".join(text.split())))
    return math.ceil(max(1, len(plain)) / chars_per_line) * line_px


def _markdown_blocks(text: str, *, title: bool = False) -> list[tuple[str, float, bool]]:
    """Split markdown into blocks that may go on different slides: (markdown, estimated
    height in px, is a heading).  Paragraphs, list items, fenced code and tables are kept
    whole; a list item's separator is kept, so items of one list stay one list."""
    blocks: list[tuple[str, float, bool]] = []
    lines = text.splitlines()
    i = 0
    line_px = _TITLE_LINE_PX if title else _TEXT_LINE_PX
    cpl = 118 if title else 105
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = _HEADING.match(line)
        if m:
            blocks.append((line, _heading_px(len(m.group(1)), m.group(2)), True))
            i += 1
            continue
        if line.lstrip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            body = lines[i : j + 1]
            blocks.append(("\n".join(body), max(1, len(body) - 2) * 0.45 * 42 * 1.2 + 30 + _BLOCK_MARGIN_PX, False))
            i = j + 1
            continue
        if line.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            blocks.append(("\n".join(lines[i:j]), (j - i) * _TEXT_LINE_PX + _BLOCK_MARGIN_PX, False))
            i = j
            continue
        if _LIST_ITEM.match(line):
            j = i + 1  # the item's continuation lines are indented
            while (
                j < len(lines)
                and lines[j].strip()
                and (lines[j].startswith((" ", "\t")))
                and not _LIST_ITEM.match(lines[j])
            ):
                j += 1
            item = "\n".join(lines[i:j])
            first_of_list = not blocks or not _LIST_ITEM.match(blocks[-1][0])
            h = _text_px(_LIST_ITEM.sub("", item), chars_per_line=cpl - 5, line_px=line_px)
            blocks.append((item, h + (_BLOCK_MARGIN_PX if first_of_list else 0), False))
            i = j
            continue
        j = i + 1
        while (
            j < len(lines)
            and lines[j].strip()
            and not _HEADING.match(lines[j])
            and not _LIST_ITEM.match(lines[j])
            and not lines[j].lstrip().startswith(("```", "|"))
        ):
            j += 1
        para = "\n".join(lines[i:j])
        for piece in _sentence_groups(para, chars=int(cpl * (_BUDGET_PX - 120) / line_px)):
            blocks.append((piece, _text_px(piece, chars_per_line=cpl, line_px=line_px) + _BLOCK_MARGIN_PX, False))
        i = j
    return blocks


def _sentence_groups(para: str, *, chars: int) -> list[str]:
    """A paragraph too long for one slide, cut between sentences into pieces of at most
    ``chars`` characters (a sentence longer than that is a piece of its own)."""
    if len(para) <= chars:
        return [para]
    pieces, current = [], ""
    for sentence in re.split(r"(?<=[.!?:;])\s+", " ".join(para.split())):
        if current and len(current) + 1 + len(sentence) > chars:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


def _output_px(parts_text: list[tuple[str, str]]) -> float:
    """Estimated height of a cell's shown outputs: ("text", s) or ("html", s) items."""
    h = 0.0
    for kind, body in parts_text:
        if kind == "html":
            h += (body.count("<tr") + 1) * _TABLE_ROW_PX + 24
        else:
            h += max(1, body.rstrip("\n").count("\n") + 1) * _OUTPUT_LINE_PX + 24
    return h


def _render(nb, out: Path, title_fallback: str, source=None) -> tuple[list[str], list[Path], list[int], str]:
    figures_dir = out / "figures"
    if figures_dir.exists():
        shutil.rmtree(figures_dir)
    figures_dir.mkdir(parents=True)
    slides: list[str] = []
    current: list[str] | None = None  # HTML parts of the slide being built
    height = 0.0  # its estimated height (px)
    has_body = False  # it holds more than a heading
    section_title = ""
    deck_title = ""
    figures: list[Path] = []
    figure_slides: list[int] = []

    def flush() -> None:
        nonlocal current, has_body
        # a heading with nothing under it titles the figures that follow, not a slide of its own
        if current and (has_body or not slides):
            cls = ' class="title-slide"' if not slides else ""
            slides.append(f"<section{cls}>\n" + "\n".join(current) + "\n</section>")
        current, has_body = None, False

    def continuation() -> None:
        nonlocal current, height
        current = [f"<h3>{html.escape(section_title)}</h3>"] if section_title else []
        height = _HEADING_PX[3] * 1.2 + _BLOCK_MARGIN_PX if section_title else 0.0

    for index, cell in enumerate(nb.cells):
        tags = _tags(cell)
        if SETUP_TAG in tags or INJECTED_TAG in tags or "skip-slides" in tags:
            continue
        if cell.cell_type == "markdown":
            blocks = _markdown_blocks(cell.source, title=not slides)
            pending: list[str] = []
            last_was_item = False

            def put_pending() -> None:
                if pending and current is not None:
                    current.append(_markdown_html("\n\n".join(pending)))
                pending.clear()

            for n, (block, h, is_heading) in enumerate(blocks):
                if is_heading and n == 0:
                    flush()
                    current, height = [], 0.0
                    section_title = _plain(_HEADING.match(block).group(2))
                    deck_title = deck_title or section_title
                elif current is None:  # text after a figure or code slide: a continuation slide
                    continuation()
                elif has_body and height + h > _BUDGET_PX:  # full: the rest on a new slide, same title
                    put_pending()
                    flush()
                    continuation()
                    last_was_item = False
                item = bool(_LIST_ITEM.match(block))
                if pending and item and last_was_item:
                    pending[-1] += "\n" + block  # the next item of the same list
                else:
                    pending.append(block)
                last_was_item = item
                height += h
                has_body = has_body or not is_heading
            put_pending()
            continue
        if cell.cell_type != "code":
            continue
        show_code = "show" in tags
        show_output = show_code or "show-output" in tags
        parts: list[str] = []
        sized: list[tuple[str, str]] = []
        if show_code:
            parts.append(f'<pre><code class="language-python">{html.escape(cell.source)}</code></pre>')

        def emit_parts() -> None:
            """The outputs met so far (in order) onto the slide that cites them, or their own."""
            nonlocal height
            if not parts:
                return
            need = _output_px(sized)
            if not show_code and current is not None and has_body and height + need <= _BUDGET_PX:
                current.extend(parts)  # the result on the slide whose text cites it
                height += need
            else:
                flush()
                head = f"<h3>{html.escape(section_title)}</h3>\n" if section_title else ""
                slides.append("<section>\n" + head + "\n".join(parts) + "\n</section>")
            parts.clear()
            sized.clear()

        for number, o in enumerate(cell.get("outputs", [])):
            data = o.get("data", {})
            if "image/png" in data:
                emit_parts()
                flush()
                n = len(figures) + 1
                png = figures_dir / f"fig-{n:02d}.png"
                pdf = png.with_suffix(".pdf")
                _write_figure(data, png, pdf, f"cell {index + 1}, output {number + 1}", source)
                figures.append(png)
                figure_slides.append(len(slides))
                alt = html.escape(f"{section_title} (figure {n})" if section_title else f"figure {n}")
                head = f"<h3>{html.escape(section_title)}</h3>\n" if section_title else ""
                # an Explore panel (report.explore) carries a caption: the values drawn, the controls
                caption = (o.get("metadata", {}).get("explore") or {}).get("caption")
                cap = f'<p class="caption">{html.escape(caption)}</p>\n' if caption else ""
                kind = "figure-slide with-caption" if caption else "figure-slide"
                slides.append(
                    f'<section class="{kind}" data-figure="{n}">\n{head}'
                    f'<img src="figures/{png.name}" alt="{alt}">\n{cap}</section>'
                )
                continue
            if not show_output:
                continue
            if o.get("output_type") == "stream":
                if o.get("name") == "stderr":
                    continue  # warnings and progress bars are not results
                parts.append(f'<pre class="output">{html.escape(o.get("text", ""))}</pre>')
                sized.append(("text", o.get("text", "")))
            elif "text/html" in data:
                body = _SCRIPT.sub("", _join(data["text/html"]))
                parts.append(f'<div class="output">{body}</div>')
                sized.append(("html", body))
            elif "text/plain" in data and "application/vnd.jupyter.widget-view+json" not in data:
                parts.append(f'<pre class="output">{html.escape(_join(data["text/plain"]))}</pre>')
                sized.append(("text", _join(data["text/plain"])))
        emit_parts()
    flush()
    return slides, figures, figure_slides, deck_title or title_fallback


def _join(v) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


def build_slides(
    notebook: str | Path,
    out_dir: str | Path,
    *,
    parameters: dict | None = None,
    execute: bool = True,
    timeout: int = 600,
) -> SlidesResult:
    """Build the offline reveal.js deck of ``notebook`` in ``out_dir`` (see the module doc)."""
    path = Path(notebook)
    if path.is_dir():
        raise InputError("is a folder, not a notebook.", path=str(path))
    if not path.is_file():
        raise InputError("no such notebook.", path=str(path))
    if execute:
        nb = execute_notebook(path, parameters, timeout=timeout)
    else:
        if parameters:
            raise InputError("parameters need the notebook to be executed (drop --no-execute).", path=str(path))
        nb = read_notebook(path)
    return write_deck(nb, out_dir, source=path, executed=execute)


def write_deck(nb, out_dir: str | Path, *, source: str | Path, executed: bool = True) -> SlidesResult:
    """The deck of an already executed notebook ``nb`` (read from ``source``) in ``out_dir``;
    a notebook refused half-way leaves no folder this call created (an empty ``figures/``)."""
    out = Path(out_dir)
    created = not out.exists()
    had_figures = (out / "figures").exists()
    try:
        return _write_deck(nb, out, source=source, executed=executed)
    except InputError:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        elif not had_figures and (out / "figures").is_dir():
            shutil.rmtree(out / "figures", ignore_errors=True)  # this call's figures, half the deck's
        raise


def _write_deck(nb, out: Path, *, source: str | Path, executed: bool) -> SlidesResult:
    path = Path(source)
    out.mkdir(parents=True, exist_ok=True)
    slides, figures, figure_slides, title = _render(nb, out, path.stem, path)
    if not slides:
        raise InputError(
            "has nothing to put on slides (no markdown, no figures, no cell tagged 'show').", path=str(path)
        )
    _copy_assets(out)
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<meta name="generator" content="workbench slides">
<title>{html.escape(title)}</title>
<link rel="stylesheet" href="revealjs/dist/reset.css">
<link rel="stylesheet" href="revealjs/dist/reveal.css">
<link rel="stylesheet" href="revealjs/dist/theme/{THEME}.css">
<style>{_CSS}</style>
</head>
<body>
<div class="reveal">
<div class="slides">
{chr(10).join(slides)}
</div>
</div>
<script src="revealjs/dist/reveal.js"></script>
<script>
Reveal.initialize({{ hash: true, width: {SLIDE_W}, height: {SLIDE_H}, margin: 0.04, center: false,
                     transition: "none", controls: true, progress: true, slideNumber: "c/t" }});
</script>
<script>{_FIT_SCRIPT}</script>
</body>
</html>
"""
    leaks = external_urls(page)
    if leaks:  # e.g. an HTML output that loads from the web: refuse rather than ship it
        raise InputError(
            f"the deck would load external URLs ({', '.join(leaks[:3])}); tag the cell 'skip-slides'.", path=str(path)
        )
    index = out / "index.html"
    write_output(index, page.encode("utf-8"))
    return SlidesResult(
        index=index, slides=len(slides), figures=figures, figure_slides=figure_slides, executed=executed
    )
