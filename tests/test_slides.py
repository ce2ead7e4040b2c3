"""``workbench slides``: an offline reveal.js deck, checked in headless Chromium.

The browser test loads a copy of the deck with a small probe script in front of
everything else; the probe records every error (script errors, ``console.error``,
resources that fail to load) and, after the page has loaded, writes what it sees
(reveal.js ready, number of slides, images loaded) into the DOM, which
``chromium --dump-dom`` prints.  A screenshot of the first slide with a figure is kept
(in the test's tmp folder and as ``out/slides-first-figure.png``).
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from simulator.cli import main
from simulator.report.slides import build_slides, external_urls

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    params = code("LOSS = '0'\nSEED = 1")
    params.metadata["tags"] = ["parameters"]
    shown = code("print('shown code', LOSS)")
    shown.metadata["tags"] = ["show"]
    table = code("import pandas as pd\npd.DataFrame({'scheme': ['hpack', 'qpack'], 'blocked': [3, 1]})")
    table.metadata["tags"] = ["show-output"]
    skipped = md("## Backstage\n\nnot for the audience")
    skipped.metadata["tags"] = ["skip-slides"]
    nb.cells = [
        md("# A tiny deck\n\nIntro text."),
        params,
        md("## One HOL run\n\nA paragraph. ![remote](https://example.com/remote.png)"),
        code(
            "from pathlib import Path\nfrom simulator.studies import hol\nfrom simulator.traces import load\n"
            "from simulator.report import plots\nimport matplotlib.pyplot as plt\n"
            f"trace = load({str(ROOT / 'traces' / 'synthetic-page.har')!r})\n"
            "r = hol.run(trace, hol.HolParams(loss=LOSS, seed=SEED))\n"
            "hidden_marker_in_code = 1\n"
            "fig, ax = plt.subplots(figsize=(6, 3.5))\nplots.hol_cdf(r.blocks, ax, title=f'loss {LOSS}');"
        ),
        md("More words on the same slide."),
        shown,
        skipped,
        md("## Two figures"),
        code(
            "for col in ('blocked', 'ratio'):\n"
            "    fig, ax = plt.subplots(figsize=(5, 3))\n"
            "    plots.scheme_bars(r.summary, col, ax)\n"
            "plt.show()"
        ),
        table,
    ]
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    d = tmp_path_factory.mktemp("slides")
    nb = _notebook(d / "tiny.ipynb")
    result = build_slides(nb, d / "deck", parameters={"LOSS": "0.02"})
    return result


def test_deck_structure_and_figures(deck):
    page = deck.index.read_text()
    # title, "One HOL run", its figure, the text after the figure, the shown code, the two
    # figures of "Two figures" (a heading alone makes no slide: it titles them), the shown table
    assert deck.slides == 8
    assert page.count("<section") == 8
    assert len(deck.figures) == 3 and deck.figure_slides == [2, 5, 6]
    assert page.count("<h3>Two figures</h3>") == 3
    for png in deck.figures:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    assert "shown code" in page and "print(&#x27;shown code&#x27;, LOSS)" in page
    assert "hidden_marker_in_code" not in page  # code is hidden unless tagged
    assert "Backstage" not in page  # skip-slides
    assert "loss 0.02" not in page and "<table" in page  # parameters injected; table shown
    assert "More words on the same slide." in page


def test_deck_is_offline(deck):
    page = deck.index.read_text()
    assert external_urls(page) == []
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page)
    assert "example.com" not in page  # a remote image becomes its alt text
    for css in deck.index.parent.rglob("*.css"):
        assert external_urls(css.read_text(errors="replace")) == [], css
    assert (deck.index.parent / "revealjs" / "dist" / "reveal.js").exists()


PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) { window.__errors.push("load failed: " + (t.src || t.href)); }
  else { window.__errors.push("error: " + (e.message || String(e))); }
}, true);
window.addEventListener("unhandledrejection", function (e) { window.__errors.push("rejection: " + e.reason); });
(function () {
  var orig = console.error;
  console.error = function () {
    window.__errors.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return orig.apply(console, arguments);
  };
})();
window.addEventListener("load", function () {
  setTimeout(function () {
    var imgs = Array.prototype.slice.call(document.querySelectorAll(".reveal .slides img"));
    var loaded = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
    var ready = !!(window.Reveal && Reveal.isReady && Reveal.isReady());
    var out = document.createElement("pre");
    out.id = "__probe";
    out.textContent = JSON.stringify({ready: ready, slides: ready ? Reveal.getTotalSlides() : -1,
                                      images: imgs.length, loaded: loaded, errors: window.__errors});
    document.body.appendChild(out);
  }, 1000);
});
</script>
"""


def _chromium(*args, profile: Path, timeout: int = 60) -> subprocess.CompletedProcess:
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
        "--window-size=1280,720",
        "--virtual-time-budget=5000",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def _probe(deck, tmp_path):
    page = deck.index.read_text()
    probe_page = deck.index.with_name("probe.html")
    probe_page.write_text(page.replace("<head>", "<head>\n" + PROBE, 1))
    proc = _chromium("--dump-dom", probe_page.as_uri(), profile=tmp_path / "profile-dom")
    m = re.search(r'<pre id="__probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"no probe output; chromium said:\n{proc.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1))), proc.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make system-deps)")
def test_deck_renders_in_headless_chromium(deck, tmp_path):
    status, log = _probe(deck, tmp_path)
    assert status["ready"], status
    assert status["slides"] == deck.slides
    assert status["images"] == len(deck.figures) and status["loaded"] == status["images"], status
    assert status["errors"] == [], status["errors"]
    console = [ln for ln in log.splitlines() if "CONSOLE" in ln and "probe.html" in ln]
    assert not [ln for ln in console if "rror" in ln], console

    first = deck.figure_slides[0]
    shot = tmp_path / "slides-first-figure.png"
    proc = _chromium(f"--screenshot={shot}", f"{deck.index.as_uri()}#/{first}", profile=tmp_path / "profile-shot")
    assert shot.exists() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[:2] == (720, 1280) and pixels.std() > 0.05  # a figure, not a blank page
    keep = ROOT / "out"
    keep.mkdir(exist_ok=True)
    shutil.copy2(shot, keep / "slides-first-figure.png")


def test_slides_cli_errors_are_one_line(tmp_path, capsys):
    code = main(["slides", str(tmp_path / "missing.ipynb"), "-o", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no such notebook" in err
    nb = _notebook(tmp_path / "tiny.ipynb")
    code = main(["slides", str(nb), "-o", str(tmp_path / "d"), "-p", "NOPE", "1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "unknown parameter(s) NOPE" in err


def test_stored_outputs_without_pdf_get_a_converted_pdf(deck, tmp_path):
    """--no-execute: figures come from the stored outputs; a PNG-only figure gets a PDF page."""
    nb = nbformat.v4.new_notebook()
    png = deck.figures[0].read_bytes()
    import base64

    cell = nbformat.v4.new_code_cell("fig")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}
        )
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# Stored"), cell]
    path = tmp_path / "stored.ipynb"
    nbformat.write(nb, path)
    result = build_slides(path, tmp_path / "deck", execute=False)
    assert result.slides == 2 and len(result.figures) == 1
    assert result.figures[0].with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make system-deps)")
def test_hol_notebook_deck_renders(tmp_path):
    result = build_slides(ROOT / "notebooks" / "01-hol-blocking.ipynb", tmp_path / "deck", parameters={"SEEDS": [1]})
    assert len(result.figures) >= 5
    status, _ = _probe(result, tmp_path)
    assert status["ready"] and status["slides"] == result.slides and status["errors"] == []
    assert status["loaded"] == status["images"] == len(result.figures)


def test_kernel_waits_cannot_miss_a_queued_reply():
    """A ZeroMQ socket signals edge-triggered; when the poller misses the edge, a long poll
    sleeps with the reply queued.  ``poll_in_slices`` checks without blocking at least every
    slice, so a queued message is taken within one slice, not at the cell timeout."""
    import asyncio
    import time
    from queue import Empty

    from simulator.report.execute import poll_in_slices

    class MissedEdge:
        def __init__(self):
            self.queue = []

        async def get_msg(self, timeout=None):
            if timeout == 0:
                if self.queue:
                    return self.queue.pop(0)
                raise Empty
            await asyncio.sleep(timeout)  # the wake-up never comes: sleep it out
            raise Empty

    async def scenario():
        channel = MissedEdge()
        poll_in_slices(channel, slice_s=0.05)
        loop = asyncio.get_running_loop()
        loop.call_later(0.1, channel.queue.append, {"msg": "execute_reply"})
        t0 = time.monotonic()
        msg = await channel.get_msg(timeout=30)
        took = time.monotonic() - t0
        with pytest.raises(Empty):
            await channel.get_msg(timeout=0.12)  # nothing queued: Empty at the deadline
        return msg, took

    msg, took = asyncio.run(scenario())
    assert msg == {"msg": "execute_reply"} and took < 5


def _build_failing(tmp_path, name: str, cell: str, timeout_s: int, capsys) -> list[str]:
    """``workbench slides`` on a notebook of a parameters cell and ``cell``: its status must
    be 2 and no deck written; returns the lines it printed on stderr."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from simulator.cli import main

    nb = new_notebook(
        cells=[new_code_cell("X = 1", metadata={"tags": ["parameters"]}), new_code_cell(cell)],
        metadata={"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    )
    path = tmp_path / name
    nbformat.write(nb, path)
    assert main(["slides", str(path), "-o", str(tmp_path / "deck"), "--timeout", str(timeout_s)]) == 2
    assert not (tmp_path / "deck").exists()
    return capsys.readouterr().err.strip().splitlines()


def test_a_cell_timeout_is_one_line_naming_the_cell(tmp_path, capsys):
    # 15 s, not less: on a loaded machine the first cell (a fresh kernel) can take seconds
    err = _build_failing(tmp_path, "slow.ipynb", "import time; time.sleep(300)", 15, capsys)
    assert len(err) == 1 and "cell 2 of the notebook did not finish within 15 s" in err[0]


def test_a_kernel_that_dies_is_one_line(tmp_path, capsys):
    """A kernel killed mid-run (here it exits on its own) ends the build with one line and
    status 2, not nbclient's traceback and a second one from its clean-up."""
    err = _build_failing(tmp_path, "dies.ipynb", "import os; os._exit(9)", 60, capsys)
    assert len(err) == 1 and "kernel died" in err[0] and "dies.ipynb" in err[0], err


def test_a_path_parameter_is_relative_to_where_the_user_is(tmp_path, monkeypatch):
    """``-p RESULTS_DIR results/`` names the user's folder, not one beside the notebook."""
    from simulator.report.commands import _value

    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    assert _value("'results/'") == str(tmp_path / "results")
    assert _value("results") == str(tmp_path / "results")
    assert _value("not-here/") == "not-here/" and _value("3") == 3


def test_results_sit_on_the_slide_that_cites_them(tmp_path):
    """A cell tagged show-output puts its printed result under the text that cites it when
    both fit; a heading with nothing under it makes no slide (the title slide excepted)."""
    from simulator.report.slides import write_deck

    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    result = code("print('answer', 6 * 7)")
    result.metadata["tags"] = ["show-output"]
    result.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="answer 42\n"),
        nbformat.v4.new_output("stream", name="stderr", text="progress 100%\n"),
    ]
    nb = nbformat.v4.new_notebook(
        cells=[
            md("# Title alone"),
            md("## Result\n\nThe run below says 42."),
            result,
            md("## Empty heading"),
            md("## Next\n\nMore text."),
        ]
    )
    deck = write_deck(nb, tmp_path / "deck", source=tmp_path / "cites.ipynb", executed=False)
    sections = re.findall(r"<section\b.*?</section>", deck.index.read_text(), re.S)
    assert deck.slides == len(sections) == 3
    assert "Title alone" in sections[0]
    assert "says 42" in sections[1] and "answer 42" in sections[1] and "progress" not in sections[1]
    assert "Empty heading" not in "".join(sections) and "More text." in sections[2]


def test_long_text_continues_on_slides_of_the_same_title(tmp_path):
    """About 3,000 characters of paragraphs and list items (over 1,000 px of text at the
    deck's sizes) go on two or more slides, split between blocks, each under the title."""
    from simulator.report.slides import write_deck

    para = "A sentence of about sixty characters that fills a line. " * 8
    text = "## Long\n\n" + "\n\n".join([para] * 3) + "\n\n" + "\n".join(f"- item {i}: {para[:200]}" for i in range(5))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Deck"), nbformat.v4.new_markdown_cell(text)])
    deck = write_deck(nb, tmp_path / "deck", source=tmp_path / "long.ipynb", executed=False)
    sections = re.findall(r"<section\b.*?</section>", deck.index.read_text(), re.S)[1:]
    assert len(sections) >= 2
    assert all("Long</h" in s for s in sections)
    assert "".join(sections).count("<li>") == 5 and sum(s.count("<ul>") for s in sections) <= 2


def test_slide_style_draws_the_same_figure_for_a_slide():
    """In the slide style a figure takes the slide's figure area whatever size the notebook
    asks for, and its smallest font is 13 pt (18 px at the slide's 100 px per inch); outside
    it, the notebook's size and matplotlib's fonts."""
    import matplotlib.pyplot as plt

    from simulator.report import plots

    with plots.slide_style():
        fig, _ = plots.subplots(1, 2, size=(3, 2))
        assert tuple(fig.get_size_inches()) == plots.SLIDE_FIGSIZE
        assert min(plt.rcParams[k] for k in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize")) >= 13
        plt.close(fig)
    fig, _ = plots.subplots(1, 2, size=(3, 2))
    assert tuple(fig.get_size_inches()) == (3, 2) and not plots.slides_on()
    plt.close(fig)


def test_waterfall_rows_say_what_they_are():
    """Row names: short type, host without www and TLD, the path's end without build
    fingerprints; rows that would read the same get more of their path."""
    from simulator.report.waterfall import row_labels

    labels = row_labels(
        [
            "https://www.news-site.example/",
            "https://static.news-site.example/assets/js/culture.1f0ac8df.js",
            "https://collect.tagmanager.example/sdk/v4/loader.js",
            "https://collect.tagmanager.example/sdk/v1/loader.js",
            "https://api.analytics.example/gtag/js?id=G-1",
        ],
        ["document", "script", "script", "script", "script"],
    )
    assert labels == [
        "doc news-site/",
        "js static.news-site/culture.js",
        "js collect.tagmanager/v4/loader.js",
        "js collect.tagmanager/v1/loader.js",
        "js api.analytics/gtag/js",
    ]
    assert len(set(labels)) == len(labels)


def test_a_refused_notebook_leaves_no_deck_folder(tmp_path, capsys):
    """A notebook with nothing to show is refused in one line, and the deck folder this
    run would have made (with an empty figures/) is not left behind."""
    nb = tmp_path / "empty.ipynb"
    nb.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    assert main(["slides", str(nb), "-o", str(tmp_path / "deck"), "--no-execute"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "deck").exists()


_GOOD_CELL = {"cell_type": "markdown", "metadata": {}, "source": "# Title\n\ntext", "id": "m1"}


def _figure_cell(png_b64: str) -> dict:
    return {
        "cell_type": "code",
        "metadata": {},
        "source": "fig",
        "execution_count": 1,
        "id": "c1",
        "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": png_b64}}],
    }


BROKEN_NOTEBOOKS = {
    "source a number": [{**_GOOD_CELL, "source": 5}],
    "output of no known type": [_GOOD_CELL, {**_figure_cell(""), "outputs": [{"output_type": "zzz"}]}],
    "stream text a number": [
        _GOOD_CELL,
        {**_figure_cell(""), "outputs": [{"output_type": "stream", "name": "stdout", "text": 5}]},
    ],
    "tags a string": [{**_GOOD_CELL, "metadata": {"tags": "skip-slides"}}],
    "code cell without outputs": [{"cell_type": "code", "metadata": {"tags": ["show"]}, "source": "x", "id": "c"}],
    "figure not base64": [_GOOD_CELL, _figure_cell("!!!not base64")],
    "figure not a PNG": [_GOOD_CELL, _figure_cell("aGVsbG8=")],
}


@pytest.mark.parametrize("kind", sorted(BROKEN_NOTEBOOKS))
@pytest.mark.parametrize("deck_exists", [False, True], ids=["new deck", "deck folder there"])
def test_a_broken_notebook_is_one_line_and_leaves_nothing(tmp_path, capsys, kind, deck_exists):
    """A notebook the nbformat 4 schema refuses (which nbformat's reader takes with a
    warning), or whose figure is not a base64 PNG, is one line naming the file and exit 2,
    not a traceback half-way through the deck; no deck folder or figures/ of this run is left."""
    nb = tmp_path / "broken.ipynb"
    nb.write_text(json.dumps({"cells": BROKEN_NOTEBOOKS[kind], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    out = tmp_path / "deck"
    if deck_exists:
        out.mkdir()
    assert main(["slides", str(nb), "-o", str(out), "--no-execute"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(nb) in err and "Traceback" not in err, err
    assert not (out / "figures").exists() and (not out.exists() if not deck_exists else True)
