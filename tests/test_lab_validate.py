"""The lab end to end: a HAR's page rebuilt, served and loaded by real Chromium over the
emulated link, and the page-load model's prediction at another condition held against it
(``workbench lab validate``), with the lab's run-to-run floor beside the error.

The smoke test (one page, a reference and two grid points, h2 and h3, two runs each) needs
root, /dev/net/tun, the relay and Chromium; it skips with the reason where one is missing.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from lab_needs import needs_lab

from simulator.lab import netns
from simulator.lab.validate import floor_ape, spearman

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("lab")
WORKBENCH = [sys.executable, "-m", "simulator.cli"]


def test_floor_is_each_run_against_the_median_of_the_others():
    """Run-to-run floor: 1.0 against median(1.2, 1.1) = 1.15 is 13.04% off, and so on."""
    assert [round(v, 2) for v in floor_ape([1.0, 1.2, 1.1])] == [13.04, 14.29, 0.0]
    assert floor_ape([2.0]) == []


def test_spearman_is_pearson_of_ranks_and_needs_three_pairs():
    assert spearman([1, 2, 3, 4], [10, 30, 20, 40]) == 0.8
    assert spearman([1, 2], [2, 1]) is None


@needs_lab
def test_lab_smoke_validate_one_page_two_conditions_h2_and_h3(tmp_path):
    """One page, recorded at 20 ms and predicted at 100 ms over h2 and h3, two real loads
    each: the JSON has the issue's shape, the error is the prediction against the runs'
    median, every load went over the protocol asked for, a five times longer RTT makes the
    real load slower, nothing is left behind, and a second call resumes (no new load)."""
    grid = tmp_path / "grid.toml"
    grid.write_text('rtt = ["100ms"]\nbw = ["10mbit"]\nprotocol = ["h2", "h3"]\n')
    out = tmp_path / "results"
    argv = [
        *WORKBENCH,
        "lab",
        "validate",
        str(ROOT / "traces/har-real/http_http2-chrome.har"),
        "--grid",
        str(grid),
        "--reference",
        "rtt=20ms,bw=10mbit",
        "--runs",
        "2",
        "--out",
        str(out),
        "--json",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert [c["condition"]["protocol"] for c in result["conditions"]] == ["h2", "h3"]
    for c in result["conditions"]:
        assert c["condition"]["rtt_s"] == 0.1 and c["condition"]["bandwidth_bps"] == 10e6
        (page,) = c["pages"]
        median = statistics.median(page["measured_onload_s"])
        assert len(page["measured_onload_s"]) == 2 and page["predicted_onload_s"] > 0
        assert page["error_percent"] == pytest.approx(100 * (page["predicted_onload_s"] - median) / median, abs=0.01)
        assert c["floor_mape_percent"] is not None and c["mape_percent"] == pytest.approx(abs(page["error_percent"]))
        assert median > statistics.median(result["reference"]["pages"][0]["measured_onload_s"])
    assert set(result["summary"]) >= {
        "pages",
        "mape_percent",
        "median_ape_percent",
        "spearman_rho",
        "floor_mape_percent",
    }
    assert result["params"]["reference"]["conditions"] == "rtt=20ms,bw=10mbit"

    from simulator.batch.store import load

    rows = load(out, "summary")
    assert len(rows) == 6 and set(rows.columns) >= {"onload_s", "fcp_s", "lcp_s", "protocols_seen"}
    assert all(r.protocols_seen == r.protocol for r in rows.itertuples()), rows[["protocol", "protocols_seen"]]
    # nothing left by the loads (their owners, the batch's workers, are gone): no stale namespace
    assert not [n for n in netns.lab_namespaces() if not netns._alive(int(n.split("-")[1]))]

    stamp = {p: p.stat().st_mtime_ns for p in (out / "summary").glob("*.parquet")}
    again = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and json.loads(again.stdout) == result
    assert {p: p.stat().st_mtime_ns for p in (out / "summary").glob("*.parquet")} == stamp


def test_report_writes_the_table_json_and_figure(tmp_path):
    """``--report``: the Markdown table (a row per condition, the reference marked in
    sample, MAPE over floor), the JSON and the figure."""
    from simulator.lab.report import write_report

    def cond(rtt, proto):
        return {
            "conditions": f"rtt={rtt}ms,bw=10mbit",
            "rtt_s": rtt / 1e3,
            "bandwidth_bps": 1e7,
            "loss": "0",
            "queue_bytes": None,
            "protocol": proto,
        }

    page = {
        "trace": "a.har",
        "measured_onload_s": [1.0, 1.2, 1.1],
        "predicted_onload_s": 1.32,
        "error_percent": 20.0,
        "floor_ape_percent": [13.04, 14.29, 0.0],
    }

    def entry(rtt, proto):
        return {
            "condition": cond(rtt, proto),
            "pages": [page],
            "mape_percent": 20.0,
            "median_ape_percent": 20.0,
            "spearman_rho": None,
            "floor_mape_percent": 9.11,
        }

    result = {
        "conditions": [entry(100, "h2"), entry(100, "h3")],
        "reference": entry(20, "h2"),
        "summary": {
            "pages": 2,
            "mape_percent": 20.0,
            "median_ape_percent": 20.0,
            "spearman_rho": None,
            "floor_mape_percent": 9.11,
            "conditions": 2,
        },
        "params": {"reference": cond(20, "h2")},
    }
    written = write_report(result, tmp_path)
    table = (tmp_path / "validation.md").read_text()
    assert "| `rtt=20ms,bw=10mbit` (reference, in sample) | h2 | 1 | 20.0% |" in table
    assert table.count("| `rtt=100ms,bw=10mbit` |") == 2 and "2.20x" in table
    assert json.loads((tmp_path / "validation.json").read_text()) == result
    # A page kept outside the folder the validation ran from is named by its file name alone.
    outside = json.loads(json.dumps(result))
    outside["conditions"][0]["pages"][0]["trace"] = "../elsewhere/b.har"
    write_report(outside, tmp_path)
    assert json.loads((tmp_path / "validation.json").read_text())["conditions"][0]["pages"][0]["trace"] == "b.har"
    assert (tmp_path / "validation.png").stat().st_size > 10_000 and len(written) == 3


def test_reference_spread_is_the_mape_from_each_reference_run():
    """The reference HAR is one run of three (the median by onLoad); every prediction carries its
    browser delays.  ``reference_spread_mape_percent`` is the MAPE with every page predicted from
    its k-th reference run, lowest and highest over k: here run 1 gives APEs 0% and 10% (MAPE 5%),
    run 3 gives 20% and 30% (25%), and the reported MAPE (run 2) lies between them."""
    from simulator.lab.report import table_markdown
    from simulator.lab.validate import _stats

    pages = [
        {
            "measured_onload_s": [1.0, 1.0, 1.0],
            "predicted_onload_s": 1.1,
            "error_percent": 10.0,
            "floor_ape_percent": [0.0, 0.0, 0.0],
            "predicted_from_each_reference_s": [1.0, 1.1, 1.2],
        },
        {
            "measured_onload_s": [2.0, 2.0, 2.0],
            "predicted_onload_s": 2.4,
            "error_percent": 20.0,
            "floor_ape_percent": [0.0, 0.0, 0.0],
            "predicted_from_each_reference_s": [2.2, 2.4, 2.6],
        },
    ]
    stats = _stats(pages)
    assert stats["mape_percent"] == 15.0
    assert stats["reference_spread_mape_percent"] == [5.0, 25.0]
    # One reference run only: no spread to give.
    one = [dict(p, predicted_from_each_reference_s=[p["predicted_onload_s"]]) for p in pages]
    assert _stats(one)["reference_spread_mape_percent"] is None
    cond = {"conditions": "rtt=100ms,bw=2mbit", "protocol": "h3"}
    row = {**stats, "condition": cond, "pages": pages}
    table = table_markdown({"conditions": [row], "summary": {**stats, "conditions": 1}})
    assert "| 5.0-25.0% |" in table


def test_resent_beside_the_kernels_count_per_condition(tmp_path):
    """What was resent: per condition the lab server's kernel TCP segments resent per load
    (median and most, over every run of every page) beside the model's timeouts per load and
    those it found spurious (RFC 5682 F-RTO, RFC 3522 Eifel), and the report's table says so."""
    from simulator.lab.report import resent_markdown
    from simulator.lab.validate import _resent_stats

    pages = [
        {
            "measured_server_tcp_retransmits": [0, 2, 1],
            "predicted_resent": {"packets_lost": 0, "rtos": 1, "spurious_rtos": 1, "ptos": 0, "spurious_ptos": 0},
        },
        {
            "measured_server_tcp_retransmits": [0, 0, 5],
            "predicted_resent": {"packets_lost": 4, "rtos": 0, "spurious_rtos": 0, "ptos": 2, "spurious_ptos": 1},
        },
    ]
    r = _resent_stats(pages)["resent"]
    assert (r["lab_server_tcp_retransmits_median"], r["lab_server_tcp_retransmits_max"]) == (0.5, 5)
    assert (r["model_timeouts_median"], r["model_timeouts_max"], r["model_spurious_timeouts"]) == (1.5, 2, 2)
    assert r["model_packets_lost_median"] == 2
    assert _resent_stats([{"measured_onload_s": [1.0]}]) == {}
    cond = {"conditions": "rtt=100ms,bw=10mbit", "protocol": "h2"}
    table = resent_markdown({"conditions": [{"condition": cond, "resent": r}, {"condition": cond}]})
    assert table.count("\n") == 3 and "| `rtt=100ms,bw=10mbit` | h2 | 0.5, 5 | 1.5, 2 | 2 | 2 |" in table
    assert resent_markdown({"conditions": [{"condition": cond}]}) == ""


def test_fidelity_predicts_no_timeout_with_nothing_lost():
    """RFC 6298 section 5 with Linux's floor (SRTT + max(4 RTTVAR, 200 ms)): a page moved to
    loss-free links (the lab's grid) fires no retransmission timeout over h2 and loses nothing,
    as the lab's kernel resends about nothing.  Over h3 no PTO fires either, except at the
    handshake when the path's RTT reaches the first PTO (RFC 9002 section 6.2.2: initial RTT
    100 ms, RTTVAR half of it: 300 ms): those PTOs are all found spurious."""
    from simulator.studies.fidelity import FidelityParams, run
    from simulator.traces import load

    trace = load(str(ROOT / "traces/har-real/http_http2-chrome.har"))
    for protocol in ("h2", "h3"):
        for at in ("rtt=300ms,bw=2mbit", "rtt=20ms,bw=2mbit", "rtt=100ms,bw=50mbit", "rtt=200ms,bw=50mbit"):
            row = run(trace, FidelityParams(at=at, protocol=protocol, cc="cubic")).pages.iloc[0]
            assert row["packets_lost"] == 0 and row["packets_sent"] > 0, (protocol, at)
            assert row["rtos"] == 0, (protocol, at)
            if at.startswith("rtt=300ms") and protocol == "h3":
                assert 0 < row["ptos"] == row["spurious_ptos"], (protocol, at)
            else:
                assert row["ptos"] == 0, (protocol, at)


def test_the_lab_is_predicted_with_its_servers_order_of_sending(monkeypatch):
    """The lab's HTTP/2 server (hypercorn on h2) follows the browser's priorities (RFC 7540
    section 5.3's tree, which Chromium's exclusive chain makes an order by urgency); its HTTP/3
    server is aioquic, which sends its streams round-robin whatever their priority (RFC 9218
    section 10: a server may ignore them).  The prediction of a lab load uses the same order."""
    import simulator.studies.fidelity as fidelity
    from simulator.errors import InputError
    from simulator.lab import validate
    from simulator.studies.fidelity import FidelityParams

    seen, datagrams = [], []
    real = fidelity.run

    def spy(trace, params):
        seen.append((params.protocol, params.server_scheduler))
        datagrams.append(params.quic_datagram_bytes)
        return real(trace, params)

    monkeypatch.setattr(fidelity, "run", spy)
    har = (ROOT / "traces/har-real/http_http2-chrome.har").read_text()
    onloads = {}
    for protocol in ("h2", "h3"):
        onloads[protocol], why, _ = validate._predict(har, "chrome.har", (0.1, 50e6, "0", None, protocol), 1)
        assert why is None and onloads[protocol] > 0
    assert seen == [("h2", "urgency"), ("h3", "round-robin")]
    assert datagrams == [1200, 1200]
    assert "server_scheduler" not in FidelityParams().to_dict()  # outputs read as before
    with pytest.raises(InputError, match="unknown server scheduler"):
        FidelityParams(server_scheduler="lifo")


def test_the_lab_is_predicted_with_its_quic_servers_datagram_size(monkeypatch):
    """The lab's HTTP/3 server (hypercorn on aioquic) keeps aioquic's ``max_datagram_size``,
    1200 bytes of UDP payload, RFC 9000 section 14's least, and does no path MTU discovery: the
    model's QUIC connections of a predicted lab load send the same (the model's own default,
    1252, is another server's), and a response takes more of them."""
    from aioquic.quic.configuration import QuicConfiguration

    from simulator.errors import InputError
    from simulator.http import network
    from simulator.lab.serve import QUIC_DATAGRAM_BYTES, model_servers
    from simulator.studies.fidelity import FidelityParams, run
    from simulator.traces import load

    assert QUIC_DATAGRAM_BYTES == QuicConfiguration(is_client=False).max_datagram_size
    assert model_servers("h3")["quic_datagram_bytes"] == QUIC_DATAGRAM_BYTES
    seen = []
    stats = network.ModelNetwork.stats

    def spy(self):
        out = stats(self)
        seen.append(
            (
                {c.t.config.max_datagram_bytes for c in self.conns.values()},
                sum(c.t.server.stats()["packets_sent"] for c in self.conns.values()),
            )
        )
        return out

    monkeypatch.setattr(network.ModelNetwork, "stats", spy)
    trace = load(str(ROOT / "traces/har-real/http_http2-chrome.har"))
    for size in (None, QUIC_DATAGRAM_BYTES):
        run(trace, FidelityParams(at="rtt=100ms,bw=10mbit", protocol="h3", quic_datagram_bytes=size))
    (default, default_packets), (lab, lab_packets) = seen
    assert default == {1252} and lab == {QUIC_DATAGRAM_BYTES}
    assert lab_packets > default_packets
    assert "quic_datagram_bytes" not in FidelityParams().to_dict()  # outputs read as before
    with pytest.raises(InputError, match="QUIC datagram size"):
        FidelityParams(quic_datagram_bytes=1100)


def test_the_lab_is_predicted_with_what_its_http2_server_commits_ahead_of_the_wire():
    """The lab's HTTP/2 server (hypercorn on asyncio's TLS transport) writes each response as it
    comes ready: Linux keeps about a window unsent in the socket's buffer and asyncio pauses the
    writer only at its high-water mark, so a lab load's h2 prediction runs the model's servers
    with that send-ahead (over HTTP/3 none: aioquic takes each packet from its streams in turn),
    and the bytes committed before a later response go first (RFC 9293 section 3.10.2)."""
    import asyncio.constants

    from simulator.errors import InputError
    from simulator.lab.serve import H2_SEND_AHEAD, model_servers
    from simulator.studies.fidelity import FidelityParams

    assert H2_SEND_AHEAD == (1, asyncio.constants.FLOW_CONTROL_HIGH_WATER_SSL_WRITE * 1024)
    assert model_servers("h2")["server_send_ahead"] == H2_SEND_AHEAD
    assert "server_send_ahead" not in model_servers("h3")
    params = FidelityParams(protocol="h2", **model_servers("h2"))
    assert params.to_dict()["server_send_ahead"] == list(H2_SEND_AHEAD)
    assert "server_send_ahead" not in FidelityParams().to_dict()  # outputs read as before
    with pytest.raises(InputError, match="send-ahead"):
        FidelityParams(server_send_ahead=(1, -1))


def test_a_lossy_condition_is_predicted_as_the_models_median_over_seeds(monkeypatch):
    """Under random loss one model run is one draw, as one real load is: the lab's runs are
    reduced to their median, so the model's prediction of a lossy condition is the median of
    ``LOSSY_SEEDS`` seeded runs (the run in the middle), and without loss it is one run.  The
    seeds are the page's own: another page's draws are other seeds, so one lucky or unlucky
    seed cannot move every page's prediction the same way (as ``study.loss_seed`` for the lab)."""
    import simulator.studies.fidelity as fidelity
    from simulator.lab import validate

    seeds, onloads = [], []
    real = fidelity.run

    def spy(trace, params):
        seeds.append(params.seed)
        result = real(trace, params)
        onloads.append(float(result.pages["simulated_onload_s"].iloc[0]))
        return result

    monkeypatch.setattr(fidelity, "run", spy)
    har = (ROOT / "traces/har-real/http_http2-chrome.har").read_text()
    lossy, why, _ = validate._predict(har, "chrome.har", (0.1, 10e6, "0.02", None, "h2"), 1)
    page_url = json.loads(har)["log"]["pages"][0]["title"]
    assert why is None and seeds == [validate._model_seed(s, page_url) for s in range(1, 1 + validate.LOSSY_SEEDS)]
    assert len(set(seeds)) == validate.LOSSY_SEEDS
    assert validate._model_seed(1, page_url) != validate._model_seed(1, page_url + "x")
    assert lossy == sorted(onloads)[(validate.LOSSY_SEEDS - 1) // 2]
    assert len(set(onloads)) > 1  # the seeds draw different losses
    seeds.clear()
    validate._predict(har, "chrome.har", (0.1, 10e6, "0", None, "h2"), 1)
    assert seeds == [1]


def test_each_page_draws_its_own_lab_losses():
    """The relay's loss seed of a load is its run and its page together: the same run of the
    same page draws the same losses again (a load is repeatable), run k of two pages draws
    two sequences (so no one draw moves every page of a validation the same way), and the
    seed fits the relay's unsigned 64 bits."""
    from simulator.lab.study import loss_seed

    a, b = "https://www.news-site.example/", "https://run.sitespeed.io/"
    assert loss_seed(1, a) == loss_seed(1, a)
    assert len({loss_seed(1, a), loss_seed(1, b), loss_seed(2, a), loss_seed(2, b)}) == 4
    assert all(0 <= loss_seed(run, a) < 1 << 63 for run in range(1, 10))
