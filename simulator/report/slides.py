"""Notebook -> reveal.js deck that works offline (``workbench slides NOTEBOOK -o DIR``).

The deck is ``DIR/index.html`` plus, beside it:

* ``revealjs/``: reveal.js (script, CSS, the ``white`` theme and its fonts, licence) copied
  from the installed ``sphinx_revealjs`` package, never a CDN.  The page loads nothing
  from outside ``DIR`` (``external_urls`` checks every ``src``/``href`` that loads);
* ``figures/fig-NN.png`` and ``figures/fig-NN.pdf``: every figure of the notebook.

Slide structure:

* a markdown cell that starts with a heading starts a new slide; one without a heading
  joins the current slide (after a figure or code slide: a new slide under the same title);
* every figure (an ``image/png`` output) becomes its own slide, titled with the heading
  of the section it belongs to; an Explore panel (``report.explore``) is one output that
  holds its live widget and its figure at the default values: the figure becomes the
  slide, with the panel's caption (the values drawn, the controls) under it;
* code cells are hidden; a code cell tagged ``show`` becomes a slide with its code and its
  outputs, one tagged ``show-output`` shows its outputs (tables, text) without the code;
  a cell tagged ``skip-slides`` (markdown or code) is left out, figures included.

Figures as PDF: when the notebook is executed here (the default), a first hidden cell
makes the inline matplotlib backend emit every figure as PNG *and* PDF
(``set_matplotlib_formats("png", "pdf")``), so the PDF is the real vector figure.  With
``execute=False`` (stored outputs) a figure without a stored PDF is converted from its PNG
(a raster PDF page of the same pixel size, drawn with matplotlib).

Parameters follow papermill: ``parameters={"SEEDS": [1]}`` adds a cell after the one
tagged ``parameters`` that overrides them.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import html
import inspect
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

__all__ = ["build_slides", "SlidesResult", "external_urls", "reveal_assets_dir"]

SETUP_TAG = "workbench-slides-setup"
INJECTED_TAG = "injected-parameters"
THEME = "white"      # its fonts are bundled (some other themes @import Google Fonts)

_SETUP_SOURCE = """\
try:
    import simulator.report.plots  # noqa: F401  (it picks Agg outside Jupyter; the inline backend wins below)
except ImportError:
    pass
%matplotlib inline
from matplotlib_inline.backend_inline import set_matplotlib_formats as _wb_formats
_wb_formats("png", "pdf")
import matplotlib as _wb_mpl
_wb_mpl.rcParams["figure.dpi"] = 144     # sharp on a projector
del _wb_formats, _wb_mpl"""


@dataclass
class SlidesResult:
    index: Path
    slides: int
    figures: list[Path] = field(default_factory=list)      # PNGs; each has a PDF beside it
    figure_slides: list[int] = field(default_factory=list)  # 0-based slide index of each figure
    executed: bool = True

    def __str__(self) -> str:
        return (f"{self.index}: {self.slides} slides, {len(self.figures)} figures "
                f"(PNG and PDF in {self.index.parent / 'figures'})")


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
    shutil.copytree(src / "dist" / "theme" / "fonts" / "source-sans-pro",
                    dst / "dist" / "theme" / "fonts" / "source-sans-pro")
    if (src / "LICENSE").exists():
        shutil.copy2(src / "LICENSE", dst / "LICENSE")


# ---------------------------------------------------------------------------------------
# Execution


def _parameter_names(source: str) -> set[str]:
    names = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return names
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if isinstance(t, ast.Name):
                names.add(t.id)
    return names


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def inject_parameters(nb, parameters: dict, *, source: str = "notebook") -> None:
    """Papermill convention: a cell tagged ``injected-parameters`` after the ``parameters`` cell."""
    import nbformat

    if not parameters:
        return
    idx = next((i for i, c in enumerate(nb.cells) if "parameters" in _tags(c)), None)
    if idx is None:
        raise InputError("has no cell tagged 'parameters' to override.", path=source)
    known = _parameter_names(nb.cells[idx].source)
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise InputError(f"unknown parameter(s) {', '.join(unknown)} (the parameters cell sets "
                         f"{', '.join(sorted(known)) or 'nothing'}).", path=source)
    lines = ["# Injected parameters"] + [f"{k} = {v!r}" for k, v in parameters.items()]
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = [INJECTED_TAG]
    nb.cells.insert(idx + 1, cell)


POLL_SLICE_S = 0.5


def poll_in_slices(channel, slice_s: float = POLL_SLICE_S) -> None:
    """Make ``channel.get_msg(timeout)`` wait in slices of ``slice_s``, each after a check
    that does not block.

    A ZeroMQ socket's file descriptor signals edge-triggered: when the asyncio poller
    misses that edge, a long ``poll(timeout)`` sleeps with the kernel's reply already in
    the socket's queue, until the timeout (600 s per cell: ``workbench slides`` sat silent
    for ten minutes with every cell done, then nbclient interrupted the kernel and found
    the reply).  A non-blocking check at least every ``slice_s`` finds a queued message
    whether or not the edge was seen."""
    wait = channel.get_msg

    async def get_msg(timeout: float | None = None):
        from queue import Empty

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return await wait(timeout=0)               # a message already queued
            except Empty:
                pass
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise Empty
            try:
                return await wait(timeout=slice_s if left is None else min(slice_s, left))
            except Empty:
                continue

    channel.get_msg = get_msg


async def _maybe_await(value):
    return await value if inspect.isawaitable(value) else value


def _notebook_client(nb, timeout: int, path: Path):
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        """nbclient whose waits for the kernel's messages cannot miss a wake-up."""

        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            for channel in (kc.shell_channel, kc.iopub_channel):
                poll_in_slices(channel)
            return kc

        async def _async_cleanup_kernel(self):
            # jupyter_client's shutdown interrupts the kernel first, and an idle ipykernel
            # then logs "KeyboardInterrupt caught in kernel" on a build that went well: ask
            # it to shut down (the messaging protocol's shutdown_request) and give it a few
            # seconds to exit; the interrupt is left for a kernel that did not.
            km, kc = self.km, self.kc
            if km is not None and kc is not None and await _maybe_await(km.is_alive()):
                await _maybe_await(kc.shutdown())
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline and await _maybe_await(km.is_alive()):
                    await asyncio.sleep(0.05)
            await super()._async_cleanup_kernel()

    return _Client(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})


def execute_notebook(path: Path, parameters: dict | None = None, *, timeout: int = 600,
                     notebook_out: str | None = None):
    """Run a notebook top to bottom (nbclient) with figures as PNG + PDF outputs."""
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbformat.read(path, as_version=4)
    inject_parameters(nb, parameters or {}, source=str(path))
    setup = nbformat.v4.new_code_cell(_SETUP_SOURCE)
    setup.metadata["tags"] = [SETUP_TAG]
    nb.cells.insert(0, setup)
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)          # the inline backend draws the figures into the outputs
    tmp = None
    if notebook_out is None and "WORKBENCH_NOTEBOOK_OUT" not in env:
        tmp = tempfile.TemporaryDirectory(prefix="workbench-slides-")
        notebook_out = tmp.name
    if notebook_out is not None:
        env["WORKBENCH_NOTEBOOK_OUT"] = str(notebook_out)
    client = _notebook_client(nb, timeout, path)
    try:
        client.execute(env=env)
    except CellTimeoutError:
        # The cell that got no reply; the set-up cell put first makes indices count from 1.
        cell = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                     and "shell.execute_reply" not in c.get("metadata", {}).get("execution", {})), None)
        where = f"cell {cell} of the notebook" if cell else "a cell"
        raise InputError(f"{where} did not finish within {timeout} s (the kernel was stopped; "
                         "give more time with --timeout, or fewer parameters)", path=str(path)) from None
    except CellExecutionError as exc:
        first = next((ln for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("-")), "")
        ename = getattr(exc, "ename", "error")
        evalue = getattr(exc, "evalue", first)
        raise InputError(f"the notebook failed while running: {ename}: {evalue}", path=str(path)) from None
    finally:
        if tmp is not None:
            tmp.cleanup()
    return nb


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


def external_urls(page: str) -> list[str]:
    """Every URL the page would load from outside its folder (``src=``, ``<link href=``,
    CSS ``url(...)``/``@import``), absolute or protocol-relative."""
    urls = re.findall(r'\bsrc\s*=\s*["\']((?:[a-z][a-z0-9+.-]*:)?//[^"\']*)', page, re.I)
    for tag in re.findall(r"<link\b[^>]*>", page, re.I):
        urls += re.findall(r'\bhref\s*=\s*["\']((?:[a-z][a-z0-9+.-]*:)?//[^"\']*)', tag, re.I)
    urls += re.findall(r'url\(\s*["\']?((?:[a-z][a-z0-9+.-]*:)?//[^)"\']*)', page, re.I)
    urls += re.findall(r'@import\s+["\']((?:[a-z][a-z0-9+.-]*:)?//[^"\']*)', page, re.I)
    return [u for u in urls if not u.lower().startswith("data:")]


_CSS = """
.reveal .slides { text-align: left; }
.reveal h1, .reveal h2, .reveal h3 { text-transform: none; }
.reveal h1 { font-size: 1.6em; } .reveal h2 { font-size: 1.3em; } .reveal h3 { font-size: 1.0em; }
.reveal section p, .reveal section li { font-size: 0.62em; line-height: 1.35; }
.reveal section.title-slide p { font-size: 0.55em; }
.reveal section.figure-slide { text-align: center; }
.reveal section.figure-slide img { max-width: 100%; max-height: 590px; margin: 0.2em auto; border: 0; box-shadow: none; }
.reveal section.figure-slide.with-caption img { max-height: 520px; }
.reveal section.figure-slide p.caption { font-size: 0.45em; margin: 0 auto; max-width: 90%; text-align: center; }
.reveal pre { width: 100%; font-size: 0.45em; box-shadow: none; }
.reveal pre code { max-height: 560px; padding: 0.6em; background: #f6f8fa; color: #222; }
.reveal .output { font-size: 0.5em; overflow: auto; max-height: 600px; }
.reveal .output table { margin: 0; }
.reveal .output th, .reveal .output td { padding: 0.15em 0.5em; font-size: 0.9em; }
"""


def _render(nb, out: Path, title_fallback: str) -> tuple[list[str], list[Path], list[int], str]:
    figures_dir = out / "figures"
    if figures_dir.exists():
        shutil.rmtree(figures_dir)
    figures_dir.mkdir(parents=True)
    slides: list[str] = []
    current: list[str] | None = None      # markdown parts of the slide being built
    section_title = ""
    deck_title = ""
    figures: list[Path] = []
    figure_slides: list[int] = []

    def flush() -> None:
        nonlocal current
        if current:
            cls = ' class="title-slide"' if not slides else ""
            slides.append(f"<section{cls}>\n" + "\n".join(current) + "\n</section>")
        current = None

    for cell in nb.cells:
        tags = _tags(cell)
        if SETUP_TAG in tags or INJECTED_TAG in tags or "skip-slides" in tags:
            continue
        if cell.cell_type == "markdown":
            text = cell.source
            first = next((ln for ln in text.splitlines() if ln.strip()), "")
            m = _HEADING.match(first)
            if m:
                flush()
                current = []
                section_title = _plain(m.group(2))
                deck_title = deck_title or section_title
            elif current is None:   # text after a figure or code slide: a continuation slide
                current = [f"<h3>{html.escape(section_title)}</h3>"] if section_title else []
            current.append(_markdown_html(text))
            continue
        if cell.cell_type != "code":
            continue
        show_code = "show" in tags
        show_output = show_code or "show-output" in tags
        if show_code or show_output:
            parts = []
            if show_code:
                parts.append(f"<pre><code class=\"language-python\">{html.escape(cell.source)}</code></pre>")
            for o in cell.get("outputs", []):
                data = o.get("data", {})
                if o.get("output_type") == "stream":
                    parts.append(f"<pre class=\"output\">{html.escape(o.get('text', ''))}</pre>")
                elif "text/html" in data and "image/png" not in data:
                    parts.append(f"<div class=\"output\">{_SCRIPT.sub('', _join(data['text/html']))}</div>")
                elif "text/plain" in data and "image/png" not in data and \
                        "application/vnd.jupyter.widget-view+json" not in data:
                    parts.append(f"<pre class=\"output\">{html.escape(_join(data['text/plain']))}</pre>")
            if parts:
                flush()
                head = f"<h3>{html.escape(section_title)}</h3>\n" if section_title else ""
                slides.append("<section>\n" + head + "\n".join(parts) + "\n</section>")
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if "image/png" not in data:
                continue
            flush()
            n = len(figures) + 1
            png = figures_dir / f"fig-{n:02d}.png"
            pdf = png.with_suffix(".pdf")
            png.write_bytes(base64.b64decode(_join(data["image/png"])))
            if "application/pdf" in data:
                pdf.write_bytes(base64.b64decode(_join(data["application/pdf"])))
            else:
                _png_to_pdf(png, pdf)
            figures.append(png)
            figure_slides.append(len(slides))
            alt = html.escape(f"{section_title} (figure {n})" if section_title else f"figure {n}")
            head = f"<h3>{html.escape(section_title)}</h3>\n" if section_title else ""
            # an Explore panel (report.explore) carries a caption: the values drawn, the controls
            caption = (o.get("metadata", {}).get("explore") or {}).get("caption")
            cap = f"<p class=\"caption\">{html.escape(caption)}</p>\n" if caption else ""
            kind = "figure-slide with-caption" if caption else "figure-slide"
            slides.append(f"<section class=\"{kind}\" data-figure=\"{n}\">\n{head}"
                          f"<img src=\"figures/{png.name}\" alt=\"{alt}\">\n{cap}</section>")
    flush()
    return slides, figures, figure_slides, deck_title or title_fallback


def _join(v) -> str:
    return "".join(v) if isinstance(v, list) else str(v)


def build_slides(notebook: str | Path, out_dir: str | Path, *, parameters: dict | None = None,
                 execute: bool = True, timeout: int = 600) -> SlidesResult:
    """Build the offline reveal.js deck of ``notebook`` in ``out_dir`` (see the module doc)."""
    import nbformat

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
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as exc:
            raise InputError(f"not a readable notebook ({exc}).", path=str(path)) from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slides, figures, figure_slides, title = _render(nb, out, path.stem)
    if not slides:
        raise InputError("has nothing to put on slides (no markdown, no figures, no cell tagged 'show').",
                         path=str(path))
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
Reveal.initialize({{ hash: true, width: 1280, height: 720, margin: 0.04, center: false,
                     transition: "none", controls: true, progress: true, slideNumber: "c/t" }});
</script>
</body>
</html>
"""
    leaks = external_urls(page)
    if leaks:  # e.g. an HTML output that loads from the web: refuse rather than ship it
        raise InputError(f"the deck would load external URLs ({', '.join(leaks[:3])}); "
                         "tag the cell 'skip-slides'.", path=str(path))
    index = out / "index.html"
    tmp = out / ".index.html.tmp"
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, index)
    return SlidesResult(index=index, slides=len(slides), figures=figures, figure_slides=figure_slides,
                        executed=execute)
