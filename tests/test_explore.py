"""The Explore panels' helper (``simulator.report.explore``) without a browser: newest
values only (a generation counter drops results superseded during their run), debounced
bursts, errors as one line, the trace picker, the static figure for slides, and every
study's panel at its defaults."""

from __future__ import annotations

import base64
import threading
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from simulator.errors import InputError
from simulator.report import explore, panels
from simulator.report.explore import Explorer, Inputs, LatestOnly, Options, Several, Slider, Switch

ROOT = Path(__file__).resolve().parent.parent


# -- LatestOnly: the update queue -------------------------------------------------------


def test_burst_of_changes_runs_once_with_the_last_values():
    ran, shown = [], []
    q = LatestOnly(lambda job: ran.append(job) or job * 10, lambda g, ok, v: shown.append((g, ok, v)), debounce_s=1.0)
    for job in (1, 2, 3):
        q.submit(job)
    assert q.wait(10)
    assert ran == [3] and shown == [(3, True, 30)]
    assert q.generation == 3 and q.dropped == 0
    q.close()


def test_result_superseded_during_its_run_is_dropped_and_newest_runs_next():
    started, release = threading.Event(), threading.Event()
    ran, shown = [], []

    def work(job):
        ran.append(job)
        if job == "slow":
            started.set()
            assert release.wait(10)
        return job

    q = LatestOnly(work, lambda g, ok, v: shown.append((g, v)), debounce_s=0.0)
    q.submit("slow")
    assert started.wait(10)
    q.submit("stale")  # both arrive while "slow" runs: only the newest is kept
    q.submit("newest")
    release.set()
    assert q.wait(10)
    assert ran == ["slow", "newest"]
    assert shown == [(3, "newest")]  # "slow" (generation 1) dropped, "stale" never ran
    assert q.dropped == 1 and q.ran == [1, 3] and q.published == [3]
    q.close()


def test_errors_are_published_and_the_worker_lives_on():
    shown = []

    def work(job):
        if job == "bad":
            raise InputError("no such file.", path="x.har")
        return job

    q = LatestOnly(work, lambda g, ok, v: shown.append((ok, v)), debounce_s=0.0)
    q.submit("bad")
    assert q.wait(10)
    q.submit("good")
    assert q.wait(10)
    assert shown[0][0] is False and str(shown[0][1]) == "x.har: no such file."
    assert shown[1] == (True, "good")
    q.close()


def test_busy_indicator_only_for_slow_runs():
    busy, seen = [], threading.Event()

    def work(job):
        if job == "slow":  # runs until the indicator has shown
            assert seen.wait(30)

    def on_busy(generation, elapsed_s):
        busy.append((generation, elapsed_s))
        seen.set()

    q = LatestOnly(work, lambda g, ok, v: None, debounce_s=0.0, busy_after_s=1.0, on_busy=on_busy)
    q.submit("fast")
    assert q.wait(30)
    assert busy == []
    q.submit("slow")
    assert q.wait(30)
    assert busy and busy[0][0] == 2 and busy[0][1] >= 1.0
    q.close()


def test_busy_tick_never_lands_after_the_result_it_announced():
    """A tick that has begun when the run ends finishes before the result is published:
    otherwise its "running..." overwrites the status and stays (seen in JupyterLab)."""
    order, ticking = [], threading.Event()

    def work(job):
        assert ticking.wait(30)  # the run ends while a tick is under way

    def on_busy(generation, elapsed_s):
        ticking.set()
        threading.Event().wait(0.3)  # a slow status write
        order.append("busy")

    q = LatestOnly(work, lambda g, ok, v: order.append("publish"), debounce_s=0.0, busy_after_s=0.05, on_busy=on_busy)
    q.submit("slow")
    assert q.wait(30)
    threading.Event().wait(0.5)  # a tick left running would append now
    assert order[-1] == "publish", order
    q.close()


# -- Explorer on a toy study ----------------------------------------------------------------


def _toy(tmp_path=None, **kw):
    controls = {
        "rtt_ms": Slider("RTT", 10, 400, 10, 100, unit="ms"),
        "loss": Slider("loss", 0.0, 0.05, 0.01, 0.02, percent=True),
        "scheme": Options("scheme", ("hpack", "qpack"), "qpack"),
        "policies": Several("policies", ("push", "hints"), ("push",)),
        "tls": Switch("TLS", True),
    }

    def run(v, trace):
        return {"values": v, "trace": trace}

    def draw(r, v, fig):
        ax = fig.subplots()
        ax.plot([0, 1], [0, v["rtt_ms"]])
        ax.set_title(f"RTT {v['rtt_ms']} on {r['trace']}")
        return pd.DataFrame({"rtt_ms": [v["rtt_ms"]], "trace": [str(r["trace"])]})

    def load(path):
        text = Path(path).read_text()
        if not text.startswith("ok"):
            raise InputError("not a toy trace.", path=path, where="line 1")
        return text.strip()

    inputs = Inputs(load, suffixes=(".har",), builtin={"built-in": "B"}, default="built-in")
    return Explorer("Toy", controls, run, draw, inputs=inputs, debounce_s=0.0, **kw)


def test_defaults_drawn_at_once_and_caption_names_every_control():
    ex = _toy()
    assert ex.default_view.png[:8] == b"\x89PNG\r\n\x1a\n"
    assert ex.default_view.table["rtt_ms"].tolist() == [100]
    caption = ex.caption()
    for label in ("RTT", "loss", "scheme", "policies", "TLS", "input"):
        assert label in caption
    assert "RTT 100 ms" in caption and "loss 2%" in caption


def test_widgets_redraw_figure_and_table_on_a_control_move():
    ex = _toy()
    root = ex.widget()
    assert "wb-explore" in root._dom_classes
    png0, table0 = ex._widgets["figure"].value, ex._widgets["table"].value
    ex._widgets["control:rtt_ms"].value = 300  # as the front-end would set it
    assert ex.wait(10)
    assert ex.values["rtt_ms"] == 300 and ex.view.values["rtt_ms"] == 300
    assert ex._widgets["figure"].value != png0 and ex._widgets["table"].value != table0
    assert "300" in ex._widgets["table"].value
    assert "updated in" in ex._widgets["status"].value
    # a multi-choice control: its check boxes
    several = ex._widgets["control:policies"]
    several._wb_boxes[1].value = True
    assert ex.wait(10)
    assert ex.view.values["policies"] == ("push", "hints")


def test_change_keeps_widgets_in_step_and_runs_once():
    ex = _toy()
    ex.widget()
    ex.change(rtt_ms=50, scheme="hpack")
    assert ex.wait(10)
    assert ex._widgets["control:rtt_ms"].value == 50 and ex._widgets["control:scheme"].value == "hpack"
    assert ex.queue.ran == [ex.queue.generation]  # the synced widgets did not submit again
    with pytest.raises(KeyError):
        ex.change(nope=1)


def test_trace_picker_bad_file_gives_one_line_and_keeps_the_figure(tmp_path):
    ex = _toy()
    ex.widget()
    png0 = ex._widgets["figure"].value
    bad = tmp_path / "bad.har"
    bad.write_text("nope")
    ex._widgets["path"].value = str(bad)
    assert ex.wait(10)
    status = ex._widgets["status"].value
    assert f"{bad}: line 1: not a toy trace." in status and "\n" not in status
    assert ex._widgets["figure"].value == png0 and ex.errors == [f"{bad}: line 1: not a toy trace."]
    ex._widgets["path"].value = str(tmp_path / "missing.har")
    assert ex.wait(10)
    assert ex.errors[-1] == f"{tmp_path / 'missing.har'}: no such file or folder."
    good = tmp_path / "good.har"
    good.write_text("ok-trace")
    ex._widgets["path"].value = str(good)
    assert ex.wait(10)
    assert ex.view.table["trace"].tolist() == ["ok-trace"] and ex._widgets["figure"].value != png0


def test_bundled_traces_are_offered():
    ex = _toy()
    choices = ex.sources.choices()
    assert choices[0] == "built-in"
    assert "synthetic-page.har" in choices and "har-real/http_http2-chrome.har" in choices
    assert not [c for c in choices if c.endswith(".qif")]


def test_static_bundle_carries_the_default_figure_and_a_caption():
    ex = _toy()
    data, meta = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert base64.b64decode(data["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"
    assert base64.b64decode(data["application/pdf"])[:5] == b"%PDF-"
    assert meta["explore"]["caption"] == ex.caption() == data["text/plain"]
    ex.change(rtt_ms=300)
    assert ex.wait(10)
    assert ex._repr_mimebundle_()[0]["image/png"] == data["image/png"]  # the slide keeps the defaults


def test_unexpected_error_shows_its_type_in_one_line():
    assert explore.error_line(ZeroDivisionError("division by zero\nmore")) == "ZeroDivisionError: division by zero"
    assert explore.error_line(InputError("bad.", path="p")) == "p: bad."


# -- the studies' panels ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(panels.PANELS))
def test_study_panel_at_defaults_and_after_one_move(name):
    ex = panels.PANELS[name]()
    assert ex.default_view.png[:4] == b"\x89PNG" and len(ex.default_view.table)
    first = next(iter(ex.controls))
    spec = ex.controls[first]
    moved = (
        spec.max
        if isinstance(spec, Slider) and ex.values[first] != spec.max
        else ([v for _, v in spec.pairs()][-1] if isinstance(spec, Options) else spec.min)
    )
    view = ex.render({**ex.values, first: moved}, ex.source)
    assert view.values[first] == moved
    assert not view.table.equals(ex.default_view.table)


@pytest.mark.parametrize("name", list(panels.PANELS))
def test_study_panel_reads_a_bundled_har_from_its_picker(name):
    """Every panel whose picker offers HARs runs on one (here the bundled captured page):
    the picker's loader is the study's own input path, not a stale import."""
    ex = panels.PANELS[name]()
    if ex.sources is None or "captured-h2-page.har" not in ex.sources.choices():
        pytest.skip(f"the {name} panel offers no HAR input")
    view = ex.render(ex.values, "captured-h2-page.har")
    assert view.png[:4] == b"\x89PNG" and len(view.table) and view.source == "captured-h2-page.har"


def test_crossstream_panel_delta_schemes_use_their_own_library():
    """RFC 9842: dcb is Brotli with a dictionary, dcz Zstandard: the library control does not apply."""
    ex = panels.crossstream_panel()
    view = ex.render({**ex.values, "scheme": "dcz", "library": "zlib", "level": 3}, ex.source)
    assert view.table.loc["dcz", "attacker requests"] > 0 and "dcz" in view.table.index


def test_coalescing_topology_sharing_rules():
    """RFC 9113 section 9.1.1: with one address per host the IP rule never coalesces."""
    from simulator.studies import coalescing as co
    from simulator.browser import page_graph
    from simulator.traces import load

    graph = page_graph(load(ROOT / "traces" / "synthetic-page.har"))
    params = co.CoalescingParams(modes=("none", "ip"))
    topo = co.topology_for(graph, params)
    apart = panels.shaped_topology(topo, "per-host", "drawn")
    assert len({a for s in apart.servers.values() for a in s.addresses}) == len(apart.servers)
    assert co.run(graph, replace(params, topology=apart)).summary.loc["ip", "coalesced_requests"] == 0
    own = panels.shaped_topology(topo, "drawn", "per-site")
    assert all(len(s.san) == 2 for s in own.servers.values())
    for s in own.servers.values():  # ORIGIN names only hosts the certificate covers
        assert all(co.cert_covers(s.san, h) for h in (s.announces or ()))


def test_slides_turn_an_explore_panel_into_its_default_figure_with_a_caption(tmp_path):
    """``workbench slides`` runs the notebook headless (nbclient): the panel's output holds the
    widget view and the static figure; the deck shows the figure and the caption, no widget."""
    import nbformat

    from simulator.report.slides import build_slides

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Demux\n\nIntro."),
        nbformat.v4.new_markdown_cell("## Explore: streams and windows\n\nEach change runs the model once."),
        nbformat.v4.new_code_cell("from simulator.report.panels import demux_panel\n\ndemux_panel()"),
    ]
    path = tmp_path / "explore.ipynb"
    nbformat.write(nb, path)
    result = build_slides(path, tmp_path / "deck")
    page = result.index.read_text()
    assert len(result.figures) == 1 and result.slides == 3
    assert 'class="figure-slide with-caption"' in page and "<h3>Explore: streams and windows</h3>" in page
    assert "Live in JupyterLab: streams, stream window, server interleaving, RTT." in page
    assert "VBox(" not in page and "widget-view" not in page
    assert result.figures[0].with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"


# -- every control over its range; every table within the output area ----------------------


def _range(spec, default):
    """The values a user would move a control through: a slider's ends, its default and
    two steps between (on its grid); every option; each check box flipped; both switch states."""
    if isinstance(spec, Slider):
        n = round((spec.max - spec.min) / spec.step)
        steps = {0, n, n // 3, (2 * n) // 3}
        points = {spec.min + k * spec.step for k in steps} | {default}
        return sorted(round(p, 9) for p in points)
    if isinstance(spec, Options):
        return [v for _, v in spec.pairs()]
    if isinstance(spec, Several):
        return [tuple(o for o in spec.options if (o in default) != (o == flip)) for flip in spec.options]
    if isinstance(spec, Switch):
        return [default, not default]
    raise TypeError(spec)


@pytest.mark.parametrize("name", list(panels.PANELS))
def test_every_control_move_changes_the_panel_or_says_why(name):
    """Each control moved over its range, one at a time from the defaults, in steps as a
    user would: every move changes the figure's data or the table (titles left out: they
    name the values), or the panel says why it cannot act (its notes: the status line,
    or the control disabled), or the study refuses the values in one line.  Every table
    seen fits the output area (``explore.TABLE_BUDGET_PX``)."""
    ex = panels.PANELS[name]()
    silent, wide = [], []
    for control, spec in ex.controls.items():
        previous = ex.default_view
        for value in _range(spec, ex.values[control]):
            if value == previous.values[control]:
                continue
            values = {**ex.values, control: value}
            try:
                view = ex.render(values, ex.source)
            except InputError:
                continue  # the panel's status shows the study's one-line refusal
            line, kind = explore.update_line(view, previous, {n: c.label for n, c in ex.controls.items()})
            if kind == "unexplained":
                silent.append(f"{control}: {spec.text(previous.values[control])} -> {spec.text(value)}")
            elif kind == "explained":
                assert f"{spec.label}: " in line  # the reason names the control as the panel shows it
            width = explore.table_min_width_px(view.table)
            if width > explore.TABLE_BUDGET_PX:
                wide.append(f"{control}={spec.text(value)}: {width:.0f} px")
            previous = view
    assert not silent, f"{name}: moves that change nothing and do not say why: {silent}"
    assert not wide, f"{name}: tables wider than {explore.TABLE_BUDGET_PX} px: {wide}"


@pytest.mark.parametrize("name", list(panels.PANELS))
def test_default_table_fits_the_output_area(name):
    """A table at least as wide as its longest words (``table_min_width_px``, calibrated
    on 02's old table: 1,214 px measured in JupyterLab) fits a 964 px output area with a
    margin; its columns are named for a reader (no study column names with underscores)."""
    ex = panels.PANELS[name]()
    table = ex.default_view.table
    assert explore.table_min_width_px(table) <= explore.TABLE_BUDGET_PX
    assert not [c for c in table.columns if "_" in str(c)], list(table.columns)


def test_table_width_estimate_matches_the_measured_old_table():
    """The estimate against the issue's measure: 02's old table (raw column names) was
    1,214 px wide in JupyterLab; the estimate is within 5% of it."""
    old = pd.DataFrame(
        [[2.017298, 3.412562, 0.0, 0.0, 0, 0, 0, 0, 0.189725]],
        columns=[
            "render_blocking_s",
            "onload_s",
            "gain_render_blocking_s",
            "gain_onload_s",
            "pushes_promised",
            "pushes_used",
            "bytes_wasted",
            "hinted_fetches",
            "think_s",
        ],
        index=pd.Index(["push+hints"], name="policy"),
    )
    assert abs(explore.table_min_width_px(old) - 1214) < 0.05 * 1214


def test_unexplained_no_change_is_not_reported_as_updated():
    """A move that changes neither the figure's data nor the table is not "updated"."""
    ex = _toy()
    view = ex.render({**ex.values, "scheme": "hpack"}, ex.source)  # the toy draws RTT only
    line, kind = explore.update_line(view, ex.default_view)
    assert kind == "unexplained" and "updated" not in line and "no change" in line


def test_inert_control_is_disabled_with_its_reason():
    """A control a panel's notes call off is disabled, its reason on the notes line; on
    again once it can act."""
    ex = _toy(
        notes=lambda v, r: {"tls": explore.Inert("the toy never encrypts", off=True)} if v["rtt_ms"] < 200 else {}
    )
    ex.widget()
    assert ex._widgets["control:tls"].disabled and "the toy never encrypts" in ex._widgets["notes"].value
    ex.change(rtt_ms=300)
    assert ex.wait(10)
    assert not ex._widgets["control:tls"].disabled and ex._widgets["notes"].value == ""


def test_fidelity_bandwidth_scale_is_off_without_a_measured_bandwidth():
    """08: a HAR whose timings give no bandwidth: the bandwidth scale cannot act, says so
    and leaves the table and the figure as they were."""
    ex = panels.fidelity_panel()
    assert "bw_scale" in ex.default_view.off
    view = ex.render({**ex.values, "bw_scale": 4.0}, ex.source)
    line, kind = explore.update_line(view, ex.default_view)
    assert kind == "explained" and "measured no bandwidth" in line


def test_push_panel_hints_cdn_hints_once_the_edge_has_seen_the_page():
    """02: hints-cdn sends 103 Early Hints (RFC 8297) only from an edge that has seen the
    page; on its first request it hints nothing, like none."""
    ex = panels.push_panel()
    values = {**ex.values, "policies": ("hints", "hints-cdn")}
    first = ex.render({**values, "edge_seen": False}, ex.source).table
    seen = ex.render({**values, "edge_seen": True}, ex.source).table
    assert first.loc["hints-cdn", "hinted fetches"] == 0
    assert seen.loc["hints-cdn", "hinted fetches"] == seen.loc["hints", "hinted fetches"] > 0


def test_figure_relaid_out_for_a_new_input(monkeypatch):
    """07: after a live update switches the input to the 102-origin page (wider tick
    labels) the figure is laid out again: every axes' labels stay inside the figure and
    clear of the next axes (the live figure used to keep the first input's layout)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    ex = panels.coalescing_panel()
    drawn = []
    png = explore._png
    monkeypatch.setattr(explore, "_png", lambda fig, dpi: drawn.append(fig) or png(fig, dpi))
    ex.change(source="synthetic-many-origins.har")
    assert ex.wait(60) and ex.view.source == "synthetic-many-origins.har"
    fig = drawn[-1]
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    boxes = [ax.get_tightbbox(renderer) for ax in fig.axes]
    assert all(b.x0 >= -1 and b.x1 <= fig.bbox.width + 1 for b in boxes)
    for box, nxt in zip(boxes, boxes[1:]):
        assert box.x1 <= nxt.x0 + 1
