"""Every notebook's deck, read as a workshop audience reads it: headless Chromium at 1280x720.

The deck is written from the notebook's run that ``test_notebooks.py`` checks
(``notebook_runs``: each notebook runs once per test session).  A probe script in front
of the page waits for the deck's own fitting (text shrinks to at most ``FIT_FLOOR``) and
writes, per slide, what it measured into the DOM that ``chromium --dump-dom`` prints.
The test fails on

* a slide whose content is taller or wider than the 1280x720 canvas, or a code or output
  box whose content is cut (wider than the box);
* a slide with a heading and nothing else (the deck's title slide excepted);
* text rendered below ``MIN_TEXT_PX``, and a figure whose smallest text is below
  ``MIN_FIGURE_TEXT_PX`` as drawn on the slide: the figure's PDF (the same figure, vector)
  gives its font sizes in points and its width in points, the slide its width in pixels,
  so a font of F pt is F x (shown width px / PDF width pt) px tall.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from notebook_runs import NOTEBOOKS, executed
from simulator.report.slides import SLIDE_H, SLIDE_W, write_deck

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MIN_TEXT_PX = 14.0  # slide text (prose 26 px, tables and code 19 px, before any fitting)
MIN_FIGURE_TEXT_PX = 14.0  # the smallest label of a figure, as shown on the slide

PROBE = """<script>
window.addEventListener("load", function () {
  var tries = 0;
  function measure() {
    var fitted = !!document.documentElement.getAttribute("data-slides-fitted");
    if (!fitted && tries++ < 200) { setTimeout(measure, 50); return; }
    var slides = Array.prototype.map.call(document.querySelectorAll(".reveal .slides > section"), function (s, i) {
      var display = s.style.display;
      s.style.display = "block";
      var heads = s.querySelectorAll("h1, h2, h3, h4, h5, h6");
      var body = Array.prototype.filter.call(s.children, function (e) { return !/^H[1-6]$/.test(e.tagName); });
      var content = body.some(function (e) {
        return (e.textContent || "").trim() || e.tagName === "IMG" || e.querySelector("img, table, svg"); });
      var sizes = [];
      Array.prototype.forEach.call(s.querySelectorAll("*"), function (e) {
        var text = Array.prototype.some.call(e.childNodes, function (n) {
          return n.nodeType === 3 && n.textContent.trim(); });
        if (text) { sizes.push(parseFloat(getComputedStyle(e).fontSize)); }
      });
      var cut = Array.prototype.filter.call(s.querySelectorAll("pre, code, .output"), function (e) {
        return e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1; }).length;
      var images = Array.prototype.map.call(s.querySelectorAll("img"), function (im) {
        return {src: im.getAttribute("src"), width: im.offsetWidth, height: im.offsetHeight,
                loaded: im.complete && im.naturalWidth > 0}; });
      var out = {index: i, title: heads.length ? heads[0].textContent : (s.textContent || "").trim().slice(0, 40),
                 height: s.scrollHeight, width: s.scrollWidth, heading_only: heads.length > 0 && !content,
                 min_text_px: sizes.length ? Math.min.apply(null, sizes) : null, cut: cut, images: images};
      s.style.display = display;
      return out;
    });
    var pre = document.createElement("pre");
    pre.id = "__deck";
    pre.textContent = JSON.stringify({fitted: fitted, slides: slides});
    document.body.appendChild(pre);
  }
  measure();
});
</script>
"""


def pdf_text(pdf: Path) -> tuple[float, list[float]]:
    """(page width in pt, the font sizes in pt of every text the PDF draws): matplotlib
    writes each text as ``/F1 13 Tf`` in Flate-compressed content streams."""
    data = pdf.read_bytes()
    box = re.search(rb"/MediaBox\s*\[\s*([-\d.]+)\s+[-\d.]+\s+([-\d.]+)", data)
    sizes: list[float] = []
    for m in re.finditer(rb"stream\r?\n(.*?)endstream", data, re.S):
        try:
            content = zlib.decompressobj().decompress(m.group(1))  # trailing EOL bytes are ignored
        except zlib.error:
            content = m.group(1)
        sizes += [float(x) for x in re.findall(rb"/[\w.+-]+\s+([\d.]+)\s+Tf\b", content)]
    return float(box.group(2)) - float(box.group(1)), sizes


def test_pdf_text_reads_matplotlib_font_sizes(tmp_path):
    """The legibility check reads what matplotlib wrote: a 10 pt and a 20 pt label."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 2))
    ax = fig.add_subplot()
    ax.set_xlabel("ten", fontsize=10)
    ax.set_title("twenty", fontsize=20)
    fig.savefig(tmp_path / "f.pdf")
    width_pt, sizes = pdf_text(tmp_path / "f.pdf")
    assert width_pt == pytest.approx(4 * 72) and 10.0 in sizes and 20.0 in sizes


def measure_deck(index: Path, profile: Path) -> dict:
    """Load the deck with the probe in headless Chromium (1280x720) and return its report."""
    page = index.read_text(encoding="utf-8")
    probe = index.with_name("probe.html")
    probe.write_text(page.replace("<head>", "<head>\n" + PROBE, 1), encoding="utf-8")
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        "--mute-audio",
        f"--user-data-dir={profile}",
        f"--window-size={SLIDE_W},{SLIDE_H}",
        "--virtual-time-budget=20000",
        "--dump-dom",
        probe.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    m = re.search(r'<pre id="__deck">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"no probe output; chromium said:\n{proc.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1)))


def deck_problems(report: dict, deck_dir: Path) -> list[str]:
    """Every way the measured deck fails its audience, one line each."""
    problems = []
    if not report["fitted"]:
        problems.append("the deck's fitting script never finished")
    for s in report["slides"]:
        where = f"slide {s['index'] + 1} ({s['title'].strip()[:50]!r})"
        if s["height"] > SLIDE_H or s["width"] > SLIDE_W:
            problems.append(f"{where}: content {s['width']}x{s['height']} px on a {SLIDE_W}x{SLIDE_H} slide")
        if s["cut"]:
            problems.append(f"{where}: {s['cut']} code or output box(es) cut off")
        if s["heading_only"] and s["index"] > 0:
            problems.append(f"{where}: a heading and nothing else")
        if s["min_text_px"] is not None and s["min_text_px"] < MIN_TEXT_PX:
            problems.append(f"{where}: text at {s['min_text_px']:.1f} px (below {MIN_TEXT_PX:g} px)")
        for img in s["images"]:
            if not img["loaded"]:
                problems.append(f"{where}: {img['src']} did not load")
                continue
            pdf = (deck_dir / img["src"]).with_suffix(".pdf")
            width_pt, sizes = pdf_text(pdf)
            if not sizes:  # a raster figure (no text to measure)
                continue
            smallest = min(sizes) * img["width"] / width_pt
            if smallest < MIN_FIGURE_TEXT_PX:
                problems.append(
                    f"{where}: {img['src']} shown {img['width']}x{img['height']} px, its smallest text "
                    f"{min(sizes):g} pt drawn at {smallest:.1f} px (below {MIN_FIGURE_TEXT_PX:g} px)"
                )
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_deck_reads_at_1280x720(path, tmp_path, tmp_path_factory):
    nb = executed(path, tmp_path_factory)
    if CHROMIUM is None:
        pytest.skip("chromium not installed (make system-deps): the decks are not rendered")
    result = write_deck(nb, tmp_path / "deck", source=path)
    report = measure_deck(result.index, tmp_path / "profile")
    assert len(report["slides"]) == result.slides
    problems = deck_problems(report, result.index.parent)
    assert not problems, f"{path.name}: {len(problems)} problem(s) on its deck:\n" + "\n".join(problems)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make system-deps)")
def test_the_check_finds_what_a_deck_gets_wrong(tmp_path):
    """A deck with a code slide too long even at FIT_FLOOR and a figure with 8 pt labels on a
    16x9 in canvas (7.8 px on the slide) fails; a long text, split over slides, passes."""
    import base64
    import io

    import nbformat
    from matplotlib.figure import Figure

    fig = Figure(figsize=(16, 9))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=8)
    ax.set_xlabel("x", fontsize=8)
    data = {}
    for fmt, mime in (("png", "image/png"), ("pdf", "application/pdf")):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=100)
        data[mime] = base64.b64encode(buf.getvalue()).decode()
    data["text/plain"] = "<Figure>"
    long_code = nbformat.v4.new_code_cell("\n".join(f"line_{i} = {i}" for i in range(70)))
    long_code.metadata["tags"] = ["show"]
    figure = nbformat.v4.new_code_cell("fig")
    figure.outputs = [nbformat.v4.new_output("display_data", data=data)]
    words = " ".join(f"word{i}." if i % 12 == 11 else f"word{i}" for i in range(700))
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A deck with faults\n\nIntro."),
            nbformat.v4.new_markdown_cell(f"## Much text\n\n{words}\n\n- {words[:900]}\n- {words[:900]}"),
            nbformat.v4.new_markdown_cell("## A long listing"),
            long_code,
            nbformat.v4.new_markdown_cell("## A small-lettered figure"),
            figure,
        ]
    )
    result = write_deck(nb, tmp_path / "deck", source=tmp_path / "faults.ipynb", executed=False)
    report = measure_deck(result.index, tmp_path / "profile")
    problems = deck_problems(report, result.index.parent)
    text_slides = [s for s in report["slides"] if s["title"].startswith("Much text")]
    assert len(text_slides) >= 2  # the text went on to further slides
    assert [p for p in problems if "A long listing" in p and "on a 1280x720 slide" in p], problems
    assert [p for p in problems if "A small-lettered figure" in p and "drawn at 7.8 px" in p], problems
    assert len(problems) == 2, problems
