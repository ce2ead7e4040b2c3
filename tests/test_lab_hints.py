"""The push study's 103 Early Hints in the lab (``lab-load --policy hints``, ``workbench lab
validate-hints``) and the HTTP/3 against HTTP/2 sign check.

The statistics, the server's record and the model's prediction are checked without the lab;
the smoke test (one page at 20 ms, document think 100 ms, none against hints, one load each)
needs root, /dev/net/tun, the relay and Chromium, and skips with the reason where one is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from lab_needs import needs_lab

from simulator.lab import netns
from simulator.lab.hints import gain_stats, hint_plan, hint_timeline, predict_onload, within
from simulator.lab.protocols import h3_against_h2, pair_difference
from simulator.net.conditions import PathConditions
from simulator.traces import load
from simulator.traces.pagegraph import page_graph

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("lab")
WORKBENCH = [sys.executable, "-m", "simulator.cli"]
PAGE = ROOT / "traces/captured-h2-page.har"


# ------------------------------------------------------------------------------ statistics


def test_gain_is_difference_of_medians_and_floor_is_half_range_of_paired_gains():
    """Gain: median(none) - median(hints) = 1.1 - 0.9; the pairs (run i with run i) gain 0.2,
    0.3 and 0.1 s, so the gain moves by +-0.1 s from one pair of loads to the next."""
    s = gain_stats([1.0, 1.2, 1.1], [0.8, 0.9, 1.0])
    assert s["gain_s"] == pytest.approx(0.2)
    assert s["gain_percent"] == pytest.approx(100 * 0.2 / 1.1, abs=1e-3)
    assert s["pair_gains_s"] == pytest.approx([0.2, 0.3, 0.1])
    assert s["floor_s"] == pytest.approx(0.1)
    assert gain_stats([1.0], [0.7])["floor_s"] == 0.0  # one pair: no spread to measure
    # run 2 without hints is missing: runs 1 and 3 are the pairs
    assert gain_stats([1.0, 1.1], [0.8, 0.9, 1.0], [(1.0, 0.8), (1.1, 1.0)])["floor_s"] == pytest.approx(0.05)
    with pytest.raises(ValueError):
        gain_stats([], [1.0])


def test_a_hint_that_slows_the_page_is_a_negative_gain():
    assert gain_stats([1.0, 1.0], [1.1, 1.3])["gain_s"] == pytest.approx(-0.2)


def test_verdict_is_within_twenty_percent_or_within_the_floor():
    assert within(0.23, 0.20, 0.0) == {"within_tolerance": True, "within_floor": False, "ok": True}
    assert within(0.30, 0.20, 0.0)["ok"] is False  # 50% off, no floor to hide in
    assert within(0.30, 0.20, 0.12) == {"within_tolerance": False, "within_floor": True, "ok": True}
    assert within(0.02, 0.0, 0.01)["ok"] is False  # 20% of nothing is nothing
    assert within(-0.19, -0.2, 0.0)["within_tolerance"] is True  # a loss predicted as a loss


# ------------------------------------------------------------------------------ the 103's plan and record


def test_hint_plan_is_the_push_studys_early_hints_for_the_page():
    """RFC 8297 / the push study's policy ``hints``: preload for each render-blocking
    sub-resource of the page, preconnect for their other origins, on the document's URL."""
    from simulator.browser.server import early_hints
    from simulator.traces.pagegraph import page_graph

    trace = load(str(ROOT / "traces/synthetic-page.har"))
    plan = hint_plan(trace)
    graph = page_graph(trace)

    class P:
        coalesce = "origin"

    assert plan["links"] == [v.decode() for v in early_hints(graph, P())]
    assert plan["document_url"] == graph[graph.document].url
    preloads = [v for v in plan["links"] if "rel=preload" in v]
    assert len(preloads) == len([i for i in graph.render_blocking if i != graph.document])
    assert all("rel=preconnect" in v for v in plan["links"][len(preloads) :])


def test_timeline_counts_hinted_preloads_that_arrived_before_the_final_response():
    """RFC 8297 section 2: the 103 is useful only if the client acts before the final
    response; a preload asked for after the document's response started does not count."""
    plan = {
        "document_url": "https://a.example/",
        "links": [
            "<https://a.example/s.css>; rel=preload; as=style",
            "<https://a.example/j.js>; rel=preload; as=script",
            "<https://b.example>; rel=preconnect",
        ],
    }
    log = [
        {"url": "https://a.example/s.css", "arrived_s": 10.05, "early_hints_s": None, "response_s": 10.06},
        {"url": "https://a.example/", "arrived_s": 10.0, "early_hints_s": 10.001, "response_s": 10.1},
        {"url": "https://a.example/j.js", "arrived_s": 10.2, "early_hints_s": None, "response_s": 10.21},
    ]
    assert hint_timeline(log, plan) == {
        "early_hints_sent": True,
        "hinted_preloads": 2,
        "hinted_preloads_before_response": 1,
        "first_preload_after_103_s": 0.049,
    }
    no_103 = [dict(r, early_hints_s=None) for r in log]
    assert hint_timeline(no_103, plan)["early_hints_sent"] is False
    assert hint_timeline(no_103, plan)["hinted_preloads_before_response"] == 0


# ------------------------------------------------------------------------------ the model


def test_prediction_without_hints_or_think_is_fidelity_at_exactly():
    """``predict_onload`` with neither option is ``lab validate``'s prediction (``fidelity --at``)."""
    from simulator.lab.validate import _predict

    har = PAGE.read_text()
    expected, why, _ = _predict(har, str(PAGE), (0.1, 50e6, "0", None, "h2"), 1)
    assert why is None
    assert predict_onload(har, str(PAGE), PathConditions(rtt_s=0.1, bandwidth_bps=50e6)) == expected


def test_predicted_gain_of_the_103_grows_with_the_think_time_and_is_bounded_by_it(monkeypatch):
    """RFC 8297 section 2: a 103 lets the client fetch during the server's think time, so the
    hinted requests leave earlier, and with a window counted in bytes the onLoad it saves
    cannot exceed how much earlier they left (the think time, the document's transfer and the
    parser's delay before it finds them); a longer think leaves more to save.  With the window
    as a Linux server keeps it (fidelity's servers: counted in segments and grown only while it
    limits the sender, RFC 7661 section 4.3), the hinted responses sent during the think also
    grow the connection's window before the document goes, so the gain is at least as large."""
    from simulator.studies.fidelity import study as fidelity_study
    from simulator.studies.fidelity.conditions import infer_conditions
    from simulator.studies.fidelity.study import FidelityParams, load_event_graph, moved_to, simulate_page

    har = PAGE.read_text()
    at = PathConditions(rtt_s=0.1, bandwidth_bps=50e6)
    links = hint_plan(load(str(PAGE)))["links"]

    def lab_gain(t):
        return predict_onload(har, str(PAGE), at, document_think_s=t) - predict_onload(
            har, str(PAGE), at, document_think_s=t, links=links
        )

    from simulator.lab import serve

    committed = serve.H2_SEND_AHEAD
    monkeypatch.setattr(serve, "H2_SEND_AHEAD", (0, 0))  # the window alone written
    linux_gains = [lab_gain(t) for t in (0.1, 0.5)]
    # The lab's server commits its preloads' bytes to the socket ahead of the wire, and the
    # document, ready after its 500 ms, goes out behind them: less of the think time is saved.
    monkeypatch.setattr(serve, "H2_SEND_AHEAD", committed)
    assert lab_gain(0.5) < linux_gains[1]
    # The byte-counted window (the push study's servers) for the bound below.
    monkeypatch.setattr(
        fidelity_study,
        "_linux_servers",
        lambda one_flight, *_: lambda sim, params, listener, cls: cls(sim, params, listener),
    )

    trace = load(str(PAGE))
    page = trace.pages[0]
    sub = load_event_graph(page_graph(trace, page.id), page.on_load_s, page.start_s)
    hinted = [r.index for r in sub.resources if any(f"<{r.url}>" in link for link in links)]
    assert hinted
    gains = []
    for think_s in (0.1, 0.5):
        none = predict_onload(har, str(PAGE), at, document_think_s=think_s)
        hints = predict_onload(har, str(PAGE), at, document_think_s=think_s, links=links)
        cond = moved_to(infer_conditions(sub, page.start_s, "h2"), at, "h2")
        cond = replace(cond, think_s={**cond.think_s, sub.document: think_s})
        params = FidelityParams(at=str(at), protocol="h2")
        asked = [
            simulate_page(sub, cond, params, scheduler="chromium", hints=h)
            .resources.set_index("index")
            .loc[hinted, "requested_s"]
            for h in ((), tuple(v.encode() for v in links))
        ]
        earlier = float((asked[0] - asked[1]).max())
        assert think_s <= earlier
        gains.append(none - hints)
        assert 0 <= none - hints <= earlier + 1e-9
    assert gains[1] > gains[0]
    assert all(linux >= byte for linux, byte in zip(linux_gains, gains)), (linux_gains, gains)
    # the think override itself: the page is later by the difference of think times
    slower = predict_onload(har, str(PAGE), at, document_think_s=0.5) - predict_onload(
        har, str(PAGE), at, document_think_s=0.1
    )
    assert slower == pytest.approx(0.4, abs=1e-6)


# ------------------------------------------------------------------------------ HTTP/3 against HTTP/2


def test_h3_minus_h2_pairs_signs_and_the_runs_spread():
    h2 = {"trace": "p", "measured_onload_s": [1.0, 1.1, 1.2], "predicted_onload_s": 1.0}
    h3 = {"trace": "p", "measured_onload_s": [0.8, 0.85, 0.9], "predicted_onload_s": 0.9}
    d = pair_difference(h2, h3)
    assert d["measured_difference_s"] == pytest.approx(-0.25)
    assert d["predicted_difference_s"] == pytest.approx(-0.1)
    assert d["spread_s"] == pytest.approx(0.15)
    assert d["determined"] and d["sign_agrees"]
    assert pair_difference(h2, {**h3, "predicted_onload_s": None}) is None
    slow = pair_difference(h2, {**h3, "predicted_onload_s": 1.2})
    assert not slow["sign_agrees"]


def test_h3_check_pairs_conditions_by_link_and_splits_loss():
    def entry(link, loss, proto, measured, predicted):
        return {
            "condition": {"conditions": link, "loss": loss, "protocol": proto},
            "pages": [{"trace": "p", "measured_onload_s": measured, "predicted_onload_s": predicted}],
        }

    v = {
        "reference": entry("rtt=20ms", "0", "h2", [1.0, 1.0], 1.0),
        "conditions": [
            entry("rtt=20ms", "0", "h3", [0.9, 0.9], 0.95),
            entry("rtt=100ms,loss=0.01", "0.01", "h2", [2.0, 2.0], 2.0),
            entry("rtt=100ms,loss=0.01", "0.01", "h3", [2.5, 2.5], 1.5),
            entry("rtt=300ms", "0", "h3", [3.0, 3.0], 3.0),
        ],
    }
    r = h3_against_h2(v)
    assert [c["condition"] for c in r["conditions"]] == ["rtt=20ms", "rtt=100ms,loss=0.01"]
    assert r["conditions"][0]["h2_in_sample"]
    assert r["summary"]["lossless"]["sign_agrees"] == 1
    assert r["summary"]["loss"]["sign_agrees"] == 0
    assert r["summary"]["all"]["pairs"] == 2


# ------------------------------------------------------------------------------ the lab


def _load(tmp_path, policy: str) -> tuple[dict, dict]:
    har = tmp_path / f"{policy}.har"
    argv = [
        *WORKBENCH,
        "lab-load",
        "--trace",
        str(PAGE),
        "--rtt",
        "20ms",
        "--bw",
        "50mbit",
        "--think",
        "100ms",
        "--policy",
        policy,
        "--har",
        str(har),
        "--json",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["summary"][0], json.loads(har.read_text())


@needs_lab
def test_lab_smoke_103_reaches_chromium_and_its_preloads_go_out_before_the_final_response(tmp_path):
    """RFC 8297 section 2: with policy ``hints`` the server sends one 103 on the document's
    request before its final response; Chromium reports it (``_earlyHints`` on the document's
    HAR entry) and asks for every hinted preload before the document's response begins (the
    server's own log).  Without hints no 103 is sent and none is reported."""
    plan = hint_plan(load(str(PAGE)))
    preloads = [v for v in plan["links"] if "rel=preload" in v]
    assert preloads
    # Up to three loads: on a loaded machine Chromium may take longer than the 100 ms think
    # time to act on the 103 (the server sent it and Chromium reported it every time).
    early = []
    for _ in range(3):
        row, har = _load(tmp_path, "hints")
        assert row["early_hints_sent"] and row["har_early_hints"]
        doc = next(e for e in har["log"]["entries"] if e.get("_earlyHints"))
        assert doc["request"]["url"] == plan["document_url"]
        sent = " ".join(h["value"] for h in doc["_earlyHints"] if h["name"].lower() == "link")
        assert all(v.split(">")[0] + ">" in sent for v in plan["links"])  # every Link value's target
        assert row["hinted_preloads"] == len(preloads)
        early.append(row["hinted_preloads_before_response"])
        if early[-1] == len(preloads):
            break
    assert early[-1] == len(preloads), f"hinted preloads before the final response, per load: {early}"

    row_none, har_none = _load(tmp_path, "none")
    assert "early_hints_sent" not in row_none
    assert not any(e.get("_earlyHints") for e in har_none["log"]["entries"])
    assert not [n for n in netns.lab_namespaces() if not netns._alive(int(n.split("-")[1]))]


def test_grid_keys_policy_and_think_reach_the_lab_load_and_defaults_keep_job_identity():
    """``policy`` and ``think`` are grid keys of ``lab-load``; a load at the defaults is the same
    batch job as before they existed (its identity has neither), so old results resume."""
    from simulator.batch.registry import check_grid, expand_grid, get_study

    study = get_study("lab-load")
    points = expand_grid(check_grid({"rtt": ["20ms"], "think": ["100ms"], "policy": ["none", "hints"]}, study), study)
    params = [study.params_dict(p.params) for p in points]
    assert [p["policy"] if "policy" in p else "none" for p in params] == ["none", "hints"]
    assert all(p["document_think_s"] == pytest.approx(0.1) for p in params)
    default = study.params_dict(expand_grid(check_grid({"rtt": ["20ms"]}, study), study)[0].params)
    assert "policy" not in default and "document_think_s" not in default


def test_fidelity_policy_hints_and_document_think_are_the_lab_checks_prediction():
    """``workbench fidelity --at C --policy hints --document-think T`` predicts what the hints
    check does (the page's own 103, RFC 8297), gives no error against the recorded load (it
    is another server), and leaves the parameters of a plain run as they were."""
    from simulator.lab.serve import H2_SEND_AHEAD
    from simulator.studies.fidelity import FidelityParams, run

    trace = load(str(PAGE))
    at = PathConditions(rtt_s=0.1, bandwidth_bps=50e6)
    for policy in ("none", "hints"):
        result = run(
            trace,
            FidelityParams(
                at=str(at), protocol="h2", policy=policy, document_think_s=0.5, server_send_ahead=H2_SEND_AHEAD
            ),
        )
        links = hint_plan(trace)["links"] if policy == "hints" else ()
        expected = predict_onload(PAGE.read_text(), str(PAGE), at, links=links, document_think_s=0.5)
        assert result.pages["simulated_onload_s"].iloc[0] == pytest.approx(expected, abs=1e-9)
        assert result.pages["error_percent"].isna().all()
        assert result.params.get("policy", "none") == policy
    plain = FidelityParams().to_dict()
    assert "policy" not in plain and "document_think_s" not in plain
